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

// Whose numbers are compared with a golden file: attn's own (every tensor at the tolerance asked, the
// whole lesson), or numbers attn did not compute: any subset of the steps and tensors, each tensor as
// its golden record's ForeignComparison says. A student's functions run in attn's lessons with attn's
// trained models loaded (attn-student check, attn grade --sources), a peer's numbers came from its
// own training too (attn compare, attn grade of files).
enum class Whose { attn, student, peer };

// How numbers not attn's are compared with a tensor: "at rtol 1e-06, atol 1e-09 at least", "never, only
// shown", "only where attn's trained models are loaded", "at the tolerance asked".
std::string foreign_rule(const ForeignComparison& f);

// The tolerance numbers not attn's meet for a tensor declaring `f`, when `asked` was asked.
Tolerance foreign_tolerance(const ForeignComparison& f, const Tolerance& asked);

// Whether `whose` numbers are compared with a tensor declaring `f` at all (else only shown).
bool compared(const ForeignComparison& f, Whose whose);

struct LessonComparison {
    bool ok = true;
    std::size_t steps_compared = 0;  // steps that matched, counting from the first
    std::size_t tensors_compared = 0;
    std::size_t tensors_shown = 0;  // of numbers not attn's: tensors given but declared shown, not compared
    std::string diverging_step;  // id of the first step that differs, when one does
    std::string report;          // empty when ok
};

// Compares a lesson's trace with its golden trace, step by step in golden order. Stops at the
// first step that diverges (a tensor that differs, is missing, is new, or changed labels),
// reports every differing tensor of that step, and lists the later steps as not reached.
// Whose::student and Whose::peer compare a student's or a peer's subset: steps and tensors left out are skipped,
// labels and configuration are not compared, a step or tensor the golden file lacks is an error, and
// each tensor is compared as its golden record declares (TensorRecord::foreign).
LessonComparison compare_traces(const Trace& actual, const Trace& golden, const Tolerance& tol,
                                Whose whose = Whose::attn);

// Every difference between an old golden trace and a new one, one line each (for bless):
// tensors changed (how many elements and by how much), added or removed; steps added or
// removed; configuration or text (titles, equations, explanations, labels, checks) changed.
// Empty when only the layout or the measured errors of the identity checks differ.
std::vector<std::string> describe_changes(const Trace& old, const Trace& now);

}  // namespace attn
