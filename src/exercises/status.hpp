// Where each classroom exercise stands in this build: run the lesson that checks it, compare
// the lesson's steps up to the exercise's last step with the golden file, and say why when it
// does not pass. Nothing here prints; the commands decide how to show it.
#pragma once

#include "core/compare.hpp"
#include "exercises/cases.hpp"
#include "exercises/table.hpp"
#include "registry.hpp"
#include "run.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace attn {

// "exercise softmax is not done yet: write it in <folder>/softmax.cpp"
std::string not_done_message(const std::string& exercise_id, const std::filesystem::path& exercises_dir);

enum class ExerciseState {
    passed,          // every step of its lesson up to its last one matches the golden file
    not_started,     // its starter throws ExerciseNotDone before any of its steps is complete
    not_finished,    // some of its steps pass, then a function of it is still the starter
    blocked,         // an exercise it depends on has not passed (see Exercise::uses): not its fault
    diverges,        // a tensor differs, or an identity check fails, at or before its steps
    error,           // the lesson stopped with an exception before its steps were complete
    golden_problem,  // the golden file is missing, corrupt, or lacks the exercise's steps
};

// A tensor of the diverging step that differs from the golden file.
struct TensorMismatch {
    std::string name;
    Array actual, expected;
};

struct ExerciseStatus {
    const Exercise* exercise = nullptr;
    ExerciseState state = ExerciseState::passed;
    std::string waiting_for;  // blocked: the exercise that stops it (the first of `unmet`)
    std::string root;         // blocked: where the chain of blocked exercises ends, the one to fix first
    std::vector<std::string> unmet;  // blocked: every exercise it depends on that has not passed
    std::string unit_case;    // diverges: the unit case that failed (exercises/cases.hpp), before any lesson ran
    std::vector<std::string> refused_calls;  // diverges: functions of attn its file calls and may not (issue 40)
    std::string step;         // diverges: the first step that differs; error: the last step recorded
    std::size_t step_number = 0, step_count = 0;  // that step's place in the lesson, 1-based
    std::string missing_function;  // not started, not finished: the function of its starter that stopped it
    std::string message;  // not done: the not-done message; diverges: the mismatch report; error, golden_problem: why
    std::vector<TensorMismatch> mismatches;  // diverges: the differing tensors of `step`
    // Points, one per unit case passed (cases run in order and stop at the first that fails) and
    // one for the lesson's steps; of 1 + the number of unit cases.
    std::size_t unit_cases = 0, unit_cases_passed = 0;
    std::size_t points() const {
        return unit_cases_passed + (state == ExerciseState::passed ? 1 : 0);
    }
    std::size_t max_points() const { return unit_cases + 1; }
};

// The exercises of `wanted` (every exercise when it is empty) and those they use (Exercise::uses,
// whose state decides whether a wanted one waits), in table order; each lesson they need runs
// once, and no other lesson runs: checking one exercise costs only its own lesson's time.
std::vector<ExerciseStatus> evaluate_exercises(const std::filesystem::path& golden_dir,
                                               const std::filesystem::path& exercises_dir, const Tolerance& tol,
                                               bool catch_errors, const std::vector<const Exercise*>& wanted = {});

// What a program linked with some exercise files did for the exercises asked about: the outcomes
// of their unit cases and the runs of their lessons. `attn grade --sources` observes them inside
// the student's sandbox and judges them in its own process (judge_exercises): what the student's
// program hands over is numbers, never a verdict.
struct ExerciseObservations {
    std::map<std::string, std::vector<UnitOutcome>> unit;  // exercise id -> its unit cases' outcomes
    std::map<std::string, LessonRun> lessons;              // lesson slug -> its run
};

// The exercises of `wanted` (all when empty) and every exercise they use, in table order.
std::vector<const Exercise*> exercises_needed(const std::vector<const Exercise*>& wanted);

// How many steps of each lesson the exercises `needed` need, from the golden files; 0 (the whole
// lesson) where the golden file cannot be read or lacks a step, so the judge names the problem.
std::map<std::string, std::size_t> steps_to_run(const std::filesystem::path& golden_dir,
                                                const std::vector<const Exercise*>& needed);

// Runs the unit cases and the lessons of `needed` in this program, each lesson as far as
// steps[slug] (its end when absent or 0); a student's exception stops a lesson, never this.
ExerciseObservations observe_exercises(const std::vector<const Exercise*>& needed,
                                       const std::map<std::string, std::size_t>& steps);

// The states of `wanted` (all when empty) from observations made elsewhere: unit cases judged
// against the expected values computed here, lessons against the golden files, identity checks
// against the golden files' tolerances. Whatever the observations lack counts against them.
std::vector<ExerciseStatus> judge_exercises(const ExerciseObservations& seen, const std::filesystem::path& golden_dir,
                                            const std::filesystem::path& exercises_dir, const Tolerance& tol,
                                            const std::vector<const Exercise*>& wanted = {});

// For people: "passed", "not started", "blocked by softmax (unmet: softmax; unit cases 2/2 pass)",
// "diverges at step 6/8 'decoder' of lesson 1 bottleneck", ...
std::string describe(const ExerciseStatus& status);

// For programs: "passed", "not_started", "not_finished", "blocked", "diverges", "error", "golden_problem".
std::string state_name(ExerciseState state);

}  // namespace attn
