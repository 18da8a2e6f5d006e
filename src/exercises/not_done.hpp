// The signal of a classroom exercise that is not written yet. The student's version of an
// exercised function starts as a stub that throws this; the commands catch it per lesson and
// tell the student which file to edit, instead of crashing.
#pragma once

#include <stdexcept>
#include <string>

namespace attn {

// The function that throws it is named without being written out: the default argument takes the
// name of the function whose `throw` builds it (GCC and Clang), so that a starter's one line
// `throw ExerciseNotDone("softmax");` says which of the exercise's functions is still to write.
struct ExerciseNotDone : std::logic_error {
    explicit ExerciseNotDone(const std::string& exercise_id, const char* function_name = __builtin_FUNCTION())
        : std::logic_error("exercise " + exercise_id + " is not done yet"),
          exercise(exercise_id),
          function(function_name ? function_name : "") {}

    std::string exercise;  // the exercise's id, e.g. "softmax"
    std::string function;  // the function that threw it, unqualified, e.g. "softmax_rows"
};

}  // namespace attn
