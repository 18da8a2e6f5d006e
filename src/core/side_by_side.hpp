// Expected and actual values of one small tensor next to each other, every entry that is not
// close marked with '*': the picture a student needs beside the mismatch report.
#pragma once

#include "compare.hpp"

#include <cstddef>
#include <string>

namespace attn {

struct SideBySideOptions {
    int precision = 4;            // decimals shown
    std::size_t max_rows = 8;     // larger tensors are left to the mismatch report
    std::size_t max_cols = 8;
    std::size_t line_width = 78;  // side by side when both tables fit, else expected above actual
    std::string indent = "  ";    // before every line
};

// For tensors of rank 0 to 2, equal shapes and at most max_rows x max_cols entries:
//   "expected" / "actual (* differs)" headings, then the rows, labelled "[i]" for a matrix.
// Returns "" for anything else. Every line ends in '\n'.
std::string render_side_by_side(const Array& actual, const Array& expected, const Tolerance& tol,
                                const SideBySideOptions& opt = {});

}  // namespace attn
