// Running a lesson: the one entry point that `attn run`, `check`, `bless`, `export`, `list`, the
// exercise checker and the tests all use. A lesson function records into a Trace; this runs it
// and says how it ended.
#pragma once

#include "registry.hpp"

#include <string>

namespace attn {

// A lesson run that an exercise not done yet, or a student's code, may stop.
struct LessonRun {
    Trace trace;           // the steps recorded; when stopped, the last one may be incomplete
    std::string not_done;  // the id of the exercise whose starter stopped it, if one did
    std::string not_done_function;  // the function of that starter which stopped it ("softmax_rows")
    std::string error;     // why it stopped ("" when it ran to the end)

    bool stopped() const { return !error.empty(); }
};

// Runs `lesson` into `prepared`, a trace that holds its configuration (and, from the command
// line, the --input tensors and a progress report). An exercise not done yet
// (exercises/not_done.hpp) always stops it; any other exception only when `catch_errors` (a
// student's code may throw, the reference must not). An InputError (a supplied tensor of the
// wrong shape) always escapes: it is the user's to fix. A trace told to stop_after(n) steps ends
// the run there, without an error.
LessonRun run_lesson(const Lesson& lesson, Trace prepared, bool catch_errors);

// The reference run with a configuration, for callers that expect it to finish: what it recorded.
// Every exception escapes, an exercise not done yet included.
Trace run_lesson(const Lesson& lesson, const Config& config);

}  // namespace attn
