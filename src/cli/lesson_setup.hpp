// How `attn run` and `attn export` set a lesson up from the command line: --seed, --set and
// --input, checked before any work, and the reproducibility line that names the result.
#pragma once

#include "exercises/status.hpp"
#include "registry.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace attn {

struct LessonSetup {
    std::string seed;                   // --seed N (when seed_given; else the lesson's own, 7)
    bool seed_given = false;            // --seed was on the command line, even as --seed ""
    std::vector<std::string> settings;  // --set key=value, in order
    std::filesystem::path input;        // --input FILE|DIR ("" for none)

    bool given() const { return seed_given || !settings.empty() || !input.empty(); }
};

// The trace to run `lesson` into, configured as the user asked, or nullopt after reporting on
// stderr what is wrong (an unknown key, a value out of range, a bad seed, an unreadable input).
std::optional<Trace> prepare_trace(const Lesson& lesson, const LessonSetup& setup);

// After a run: false after reporting supplied tensors that are not tensors of the lesson at all;
// a note on stderr for supplied tensors the lesson computes itself (they are ignored).
bool inputs_were_used(const LessonRun& run, const LessonSetup& setup);

// Before the work of a lesson that takes time (lesson 9 trains, lesson 7 times): an unknown --step
// is refused against the lesson's declared steps (Lesson::steps, with a "did you mean"); with
// --input, a run at its quick configuration (the same steps and the same inputs, in a moment) learns
// the names of its inputs and the step that takes each, so that an --input tensor it does not take
// is refused before any work, and "<step>.<tensor>" keys are matched to the step that takes the
// tensor. True after reporting such a mistake as the full run would; false otherwise (also when the
// quick run stops early, at an exercise not done: the full run then says so). A run asked for one
// step without --input is told to stop after it (Trace::stop_after): the steps after it, and
// lesson 12's training, are not run for a step before them.
bool refused_before_work(const Lesson& lesson, Trace& prepared, const std::string& step, const LessonSetup& setup);

// One line that lets anyone reproduce a run:
// "attn 0.1.0 · lesson 6 multi-head · seed 3, d_model=16, heads=4 · golden format 1".
std::string reproducibility_line(const Lesson& lesson, const Config& config, const LessonSetup& setup);

// The parameters of a lesson, one per line, with default, range and description (run --help).
std::string parameter_help(const Lesson& lesson);

}  // namespace attn
