// The helpers the command files share (exercises/command_support.hpp).
#include "exercises/command_support.hpp"

#include "exercises/program.hpp"
#include "transformer_race.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>
#include <system_error>

namespace attn {

bool tolerance_ok(const Tolerance& tol) {
    try {
        validate_tolerance(tol);
        return true;
    } catch (const std::invalid_argument& e) {
        fmt::print(stderr, "attn: {}\n", e.what());
        return false;
    }
}

std::string shown_path(const std::filesystem::path& path) {
    std::error_code ec;
    const auto relative = std::filesystem::proximate(path, ec);
    const bool inside = !ec && !relative.empty() && *relative.begin() != "..";
    return inside ? relative.string() : path.string();
}

std::string program_command() {
    const Program& p = this_program();
    std::string program = shown_path(p.build_dir / p.name);
    if (program.find('/') == std::string::npos) program = "./" + program;
    return program;
}

std::string stop_message(const LessonRun& run) {
    const auto& steps = run.trace.steps();
    const std::string where =
        steps.empty() ? fmt::format("{}: stopped before its first step", run.trace.lesson())
                      : fmt::format("{}: stopped early, in or after step {} '{}'", run.trace.lesson(), steps.size(),
                                    steps.back().id);
    if (!run.not_done.empty())
        return fmt::format("{}: {}", where, not_done_message(run.not_done, shown_path(this_program().exercises_dir)));
    return fmt::format("{} with an error: {}", where, run.error);
}

std::filesystem::path reference_race_file() {
    const char* named = std::getenv("ATTN_RACE_FILE");
    return named && *named ? std::filesystem::path(named) : this_program().build_dir / transformer::kept_race_name;
}

std::filesystem::path checked_reference_race(const std::string& then, const std::string& needed_by) {
    const std::filesystem::path file = reference_race_file();
    try {
        (void)transformer::read_kept_race(file, transformer::kept_race_config());
    } catch (const transformer::RaceFileError& e) {
        throw transformer::RaceFileError(fmt::format("{}\n{}, which the build writes: run 'meson compile -C {}' and {}.",
                                                     e.what(), needed_by, shown_path(this_program().build_dir), then));
    }
    return file;
}

}  // namespace attn
