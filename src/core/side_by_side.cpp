#include "side_by_side.hpp"

#include "render.hpp"

#include <algorithm>
#include <vector>

namespace attn {

namespace {

using Lines = std::vector<std::string>;

// The numbers as a table of equal-width cells; each cell ends in '*' when `marks` says so, in a
// space otherwise, so that both tables line up column by column.
Lines number_rows(const Array& values, std::size_t rows, std::size_t cols, const std::vector<bool>& marks,
                  std::size_t width, int precision) {
    Lines out;
    for (std::size_t r = 0; r < rows; ++r) {
        std::string line = values.dimension() == 2 ? pad("[" + std::to_string(r) + "]", 5) : std::string();
        for (std::size_t c = 0; c < cols; ++c) {
            const std::size_t i = r * cols + c;
            line += " " + pad(format_number(values.data()[i], precision), width, true) + (marks[i] ? "*" : " ");
        }
        out.push_back(line);
    }
    return out;
}

std::string trimmed(std::string line) {
    line.erase(line.find_last_not_of(' ') + 1);
    return line;
}

}  // namespace

std::string render_side_by_side(const Array& actual, const Array& expected, const Tolerance& tol,
                                const SideBySideOptions& opt) {
    const std::size_t rank = expected.dimension();
    if (rank > 2 || shape_of(actual) != shape_of(expected)) return "";
    const std::size_t rows = rank == 2 ? expected.shape(0) : 1, cols = rank == 0 ? 1 : expected.shape(rank - 1);
    if (rows > opt.max_rows || cols > opt.max_cols) return "";
    // Storage order is row-major for both (xarray's default), so entry i is row i / cols, column i % cols.
    std::vector<bool> differs(expected.size()), none(expected.size(), false);
    std::size_t width = 1;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        differs[i] = !close(actual.data()[i], expected.data()[i], tol);
        width = std::max({width, format_number(actual.data()[i], opt.precision).size(),
                          format_number(expected.data()[i], opt.precision).size()});
    }
    const Lines left = number_rows(expected, rows, cols, none, width, opt.precision);
    const Lines right = number_rows(actual, rows, cols, differs, width, opt.precision);
    const std::string expected_title = "expected", actual_title = "actual (* differs)";
    const std::size_t block = std::max(left.front().size(), expected_title.size()), gap = 4;
    std::string out;
    if (opt.indent.size() + block + gap + std::max(right.front().size(), actual_title.size()) <= opt.line_width) {
        out += trimmed(opt.indent + pad(expected_title, block + gap) + actual_title) + "\n";
        for (std::size_t r = 0; r < rows; ++r) out += trimmed(opt.indent + pad(left[r], block + gap) + right[r]) + "\n";
        return out;
    }
    out += opt.indent + expected_title + "\n";
    for (const auto& line : left) out += trimmed(opt.indent + line) + "\n";
    out += opt.indent + actual_title + "\n";
    for (const auto& line : right) out += trimmed(opt.indent + line) + "\n";
    return out;
}

}  // namespace attn
