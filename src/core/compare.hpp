// allclose semantics (numpy's assert_allclose) and the mismatch report.
#pragma once

#include "trace.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace attn {

struct Tolerance {
    double rtol = 1e-9;
    double atol = 1e-12;
};

// Throws std::invalid_argument naming the bad value unless both are finite and >= 0.
void validate_tolerance(const Tolerance& tol);

// |actual - expected| <= atol + rtol * |expected|; NaN equals only NaN, an infinity only
// the same infinity.
bool close(double actual, double expected, const Tolerance& tol);

struct ElementMismatch {
    std::vector<std::size_t> index;
    double actual = 0.0;
    double expected = 0.0;
};

struct TensorDiff {
    bool shape_matches = true;
    Shape actual_shape, expected_shape;
    std::size_t mismatched = 0;
    std::size_t non_finite = 0;  // of the mismatched: NaN or an infinity on one side (max_abs cannot see them)
    std::size_t total = 0;
    std::vector<ElementMismatch> first;  // the first 5 mismatches, row-major order
    double max_abs = 0.0;                // over finite pairs
    double max_rel = 0.0;                // over finite pairs with expected != 0

    bool ok() const { return shape_matches && mismatched == 0; }
};

TensorDiff compare_tensor(const Array& actual, const Array& expected, const Tolerance& tol);

// The numpy-style lines for one tensor that differs (no trailing newline).
std::string tensor_diff_report(const TensorDiff& d, const Tolerance& tol);

struct LessonComparison {
    bool ok = true;
    std::size_t steps_compared = 0;  // steps that matched, counting from the first
    std::size_t tensors_compared = 0;
    std::string diverging_step;  // id of the first step that differs, when one does
    std::string report;          // empty when ok
};

// Compares a lesson's trace with its golden trace, step by step in golden order. Stops at the
// first step that diverges (a tensor that differs, is missing, is new, or changed labels),
// reports every differing tensor of that step, and lists the later steps as not reached.
// `partial` compares a student's subset: steps and tensors left out are skipped, labels and
// configuration are not compared, and a step or tensor the golden file lacks is an error.
LessonComparison compare_traces(const Trace& actual, const Trace& golden, const Tolerance& tol, bool partial = false);

// Every difference between an old golden trace and a new one, one line each (for bless):
// tensors changed (how many elements and by how much), added or removed; steps added or
// removed; configuration or text (titles, equations, explanations, labels, checks) changed.
// Empty when only the layout or the measured errors of the identity checks differ.
std::vector<std::string> describe_changes(const Trace& old, const Trace& now);

}  // namespace attn
