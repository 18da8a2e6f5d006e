// The exercise commands of an exercise build (attn-student, attn-starter-<id>), and the
// instructor's (exercises/commands.cpp); cli/main.cpp parses their arguments. Each returns the
// process exit code (exercises/command_support.hpp).
#pragma once

#include "core/compare.hpp"

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace attn {

struct ExerciseOptions {
    std::vector<std::string> exercises;  // ids; empty: every exercise
    std::string format = "text";         // text, or json for graders (check)
    std::filesystem::path golden_dir;
    Tolerance tolerance;
};

// attn-student reset <exercise>: the starter back in place of the student's file.
struct ResetOptions {
    std::string exercise;
    bool yes = false;            // --yes: no question (needed when stdin is not a terminal)
    std::filesystem::path folder;  // --folder: the exercise folder (default: the one the program was built from)
};

struct InstructorOptions {
    std::filesystem::path golden_dir;
    std::filesystem::path starters_dir;  // holds attn-starter-<id> (the reference with exercise <id>'s untouched
                                         // starter), attn-through-<id> (the references up to <id>) and
                                         // attn-alone-<id> (<id> and what it declares, the rest starters)
    std::vector<std::string> exercises;  // only these exercises' rows and lessons (every exercise when empty)
    bool skip_lessons = false;           // --skip-lessons: no row of the reference's lessons against their golden
                                         // files (attn check's work, a minute of training)
};

int cmd_exercises(const ExerciseOptions& options);        // the exercises, their status, the file to edit
int cmd_check_exercises(const ExerciseOptions& options);  // why each exercise does not pass yet
int cmd_hint(const std::string& exercise);                // the next hint, one at a time
// attn-student watch: check, then check again (rebuilding first) whenever an exercise file
// changes; stops after `runs` checks when runs > 0, else at Ctrl-C.
int cmd_watch(const ExerciseOptions& options, std::size_t runs);
// attn-student reset: the exercise's starter back in its file, the old file kept as <file>.bak
// (written atomically first; an existing backup is never overwritten). Asks first on a terminal;
// elsewhere refuses unless --yes.
int cmd_reset(const ResetOptions& options);
int cmd_instructor_check(const InstructorOptions& options);

}  // namespace attn
