// The classroom exercises: functions of src/nn/ that students write themselves. Each has a
// reference in src/nn/ and a starter with the same signature in lessons/exercises/; the
// program attn-student is linked with the student's versions, and an exercise passes when
// the lesson steps that use it match the golden file.
//
// Adding an exercise: move the function into its own file under src/nn/, write the starter
// lessons/exercises/<file> (the task and equation in a comment, then `throw
// ExerciseNotDone("<id>")`), add [id, reference file] to the `exercises` list in meson.build
// and a row to the table in src/exercises/table.cpp. `attn instructor-check` then proves that the
// reference passes and the starter reports itself not done.
#pragma once

#include <string>
#include <vector>

namespace attn {

struct Exercise {
    std::string id;     // "softmax": names it on the command line and in ExerciseNotDone
    std::string title;  // "Numerically stable softmax"
    std::string lesson;              // slug of the lesson that checks it
    std::vector<std::string> steps;  // the ids of the steps whose tensors check it, in lesson order
    // Other exercises whose functions the lesson runs before or within these steps, or before the
    // step after the last of them (a lesson stopped there may have left that step half recorded,
    // so it does not count as done): when an earlier
    // one has not passed, a divergence here may be theirs, so this one waits for it. A later one
    // (checked in the same lesson: causal-mask at scaled-attention's step [causal]) cannot have
    // passed yet; this one waits for it while its unit cases do not all pass.
    std::vector<std::string> uses;
    std::vector<std::string> hints;  // from "which equation" to "what typically goes wrong"; lines of <= 74 columns
    // The functions of attn (besides helper_functions()) that the exercise's file may call, "nn::softmax_rows":
    // its own, and those of the exercises it may build on. Any other function of namespace attn is refused,
    // so that no engine function computing the exercise's answer (nn::fast_attention for scaled-attention)
    // can stand in for the student's code (issue 40). std:: and xtensor are always allowed.
    std::vector<std::string> may_call = {};
};

// The helpers every exercise's file may call: the matrix and reduction helpers of nn/linalg.hpp and
// nn/reductions.hpp, the shape helpers of core/tensor.hpp ("nn::matmul", "expect_shape"), and
// nn::for_each_row and nn::kernel_path of nn/kernels.hpp.
const std::vector<std::string>& helper_functions();

// The functions of namespace attn that the object of exercise `x`'s file calls (its undefined
// symbols, as `nm -u -C` lists them in `nm_output`) and that `x` may not call, each once, in the
// order listed, without "attn::" and without their parameters ("nn::fast_attention").
std::vector<std::string> forbidden_calls(const Exercise& x, const std::string& nm_output);

// What a student is told: "scaled_attention.cpp calls nn::fast_attention, which exercise
// scaled-attention may not use: ...".
std::string forbidden_calls_message(const Exercise& x, const std::vector<std::string>& calls);

// Every exercise, in the order a student meets them in the lessons.
const std::vector<Exercise>& all_exercises();

// The exercise with this id, or nullptr.
const Exercise* find_exercise(const std::string& id);

// The file a student edits, inside the exercises folder: the id with '_' for '-', plus ".cpp"
// ("gru-step" -> "gru_step.cpp"). meson.build derives the same name from the same id.
std::string exercise_file(const Exercise& exercise);

}  // namespace attn
