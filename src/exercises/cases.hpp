// Unit cases: an exercise's own functions called alone, on small inputs chosen to tell its
// typical mistakes from the right answer (a row of all -inf, logits of +-1e308, d_v != d_k, T = 1,
// a +inf score under the mask), against values computed here straight from the equation in long
// double, not by the reference. They run before the lesson-level check, so a wrong function fails
// at its own exercise with its own case, instead of steps later in someone else's lesson.
// Nothing here prints; a failed case carries its report.
#pragma once

#include "core/compare.hpp"

#include <string>
#include <vector>

namespace attn {

// How an exercise's unit cases went, stopping at the first that did not pass.
struct UnitCheck {
    std::size_t cases = 0;      // the exercise's unit cases (0: it has none yet)
    std::size_t passed = 0;     // of them, passed before the first that did not
    std::string not_done;       // an exercise not done yet stopped a case: its id (this one or one it calls)
    std::string not_done_function;  // and the function of it that did ("softmax_rows")
    std::string failed_case;    // the name of the case that failed ("" when none did)
    std::vector<std::string> calls;  // the exercises whose functions the failed case's code may call
    std::string report;         // the failed case: what it catches, its inputs, expected and actual values
    bool out_of_memory = false; // the failed case stopped at std::bad_alloc: an error, not a wrong answer
};

// Runs the unit cases of exercise `id`, in order, until one does not pass.
UnitCheck check_unit_cases(const std::string& id, const Tolerance& tol);

// What one unit case's code did where it ran: its result, or how it stopped. `attn grade
// --sources` observes the cases inside the student's sandbox and judges them in its own process,
// where the expected values are computed: the student's program only hands over numbers.
struct UnitOutcome {
    enum class Kind { value, not_done, out_of_memory, threw, wrong_shape };
    Kind kind = Kind::value;
    Array actual;      // value: the result as the case arranges it
    // not_done: the exercise that is not done; threw: the exception's message; wrong_shape: which
    // result had which shape, and the shape expected ("nn::dot_scores(Q, K) returned [3, 2], expected [2, 3]")
    std::string text;
    std::string function;  // not_done: the function that threw ("softmax_rows"; "" when unknown)
};

// Runs every unit case of exercise `id` with the functions linked into this program, in order.
std::vector<UnitOutcome> observe_unit_cases(const std::string& id);

// Judges outcomes observed elsewhere as check_unit_cases judges its own: in order, until one does
// not pass, each value against the expected one computed here (and the case's inputs built here).
// Outcomes missing at the end count as a case that stopped without a result.
UnitCheck judge_unit_cases(const std::string& id, const std::vector<UnitOutcome>& observed, const Tolerance& tol);

// The names of exercise `id`'s unit cases, in order.
std::vector<std::string> unit_case_names(const std::string& id);

// Every other exercise whose functions exercise `id`'s unit cases declare they may call, in the
// order the cases name them, each once.
std::vector<std::string> unit_case_calls(const std::string& id);

}  // namespace attn
