// The signal of a classroom exercise that is not written yet. The student's version of an
// exercised function starts as a stub that throws this; the commands catch it per lesson and
// tell the student which file to edit, instead of crashing.
#pragma once

#include <stdexcept>
#include <string>

namespace attn {

struct ExerciseNotDone : std::logic_error {
    explicit ExerciseNotDone(const std::string& exercise_id)
        : std::logic_error("exercise " + exercise_id + " is not done yet"), exercise(exercise_id) {}

    std::string exercise;  // the exercise's id, e.g. "softmax"
};

}  // namespace attn
