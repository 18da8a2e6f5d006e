// Helpers shared by the command files (cli/commands.cpp, exercises/commands.cpp), defined in
// exercises/command_support.cpp: below the command line, so that the exercise commands need
// nothing of src/cli (ARCHITECTURE.md's arrows; the layout test holds it).
#pragma once

#include "core/compare.hpp"
#include "core/names.hpp"
#include "exercises/status.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace attn {

enum ExitCode : int {
    exit_ok = 0,
    exit_mismatch = 1,  // a tensor differs from its golden, or an identity check fails
    exit_usage = 2,     // bad arguments, unknown lesson or step
    exit_golden = 3,    // a golden file is missing, unreadable or corrupt
};

// `text` as one word of a shell command (printed commands, Slurm's --wrap).
inline std::string shell_quoted(const std::string& text) {
    std::string out = "'";
    for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// False after reporting a bad --rtol or --atol.
bool tolerance_ok(const Tolerance& tol);

// The exercises named on the command line (every one when none is); false after reporting an unknown id.
bool resolve_exercises(const std::vector<std::string>& ids, std::vector<const Exercise*>& out);

// `path` relative to the working directory when it lies inside it ("lessons/exercises"), else as it is.
std::string shown_path(const std::filesystem::path& path);

// This program as the user can type it from the working directory: "build/attn-student" from the
// source tree, "./attn-student" from the build directory, the full path from elsewhere. Programs
// are not on the PATH, so the commands attn prints name them so: they work as printed.
std::string program_command();

// One line on why a stopped lesson stopped: the not-done message (naming the file to edit) or the error.
std::string stop_message(const LessonRun& run);

// This build's race file (lessons/transformer_race.hpp): build/transformer-race.bin, or the file the
// environment variable ATTN_RACE_FILE names (for tests: a missing or stale file).
std::filesystem::path reference_race_file();

// reference_race_file(), read through to check it; throws transformer::RaceFileError saying what is
// wrong, what needs the file (`needed_by`, by default: the checks of lesson 13's exercises decode with
// it), that `meson compile -C <build>` writes it, and then `then` ("check again", "grade again").
std::filesystem::path checked_reference_race(
    const std::string& then,
    const std::string& needed_by = "The checks of lesson 13's exercises decode with the reference's trained race");

}  // namespace attn
