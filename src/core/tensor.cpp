#include "tensor.hpp"

#include <cmath>
#include <limits>

namespace attn {

std::string shape_string(const Shape& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) out += ", ";
        out += std::to_string(shape[i]);
    }
    return out + "]";
}

void throw_shape_error(std::string_view what, const Shape& actual, const Shape& expected) {
    throw ShapeError(std::string(what) + ": expected shape " + shape_string(expected) + ", got " +
                     shape_string(actual));
}

void expect_shape(std::string_view what, const Shape& actual, const Shape& expected) {
    if (actual != expected) throw_shape_error(what, actual, expected);
}

double max_abs_difference(const Array& a, const Array& b) {
    expect_shape("max_abs_difference operand", shape_of(a), shape_of(b));
    double worst = 0.0;
    auto ia = a.begin();
    for (auto ib = b.begin(); ib != b.end(); ++ia, ++ib) {
        if (*ia == *ib) continue;  // equal infinities differ by 0, not NaN
        const double d = std::abs(*ia - *ib);
        if (std::isnan(d)) return std::numeric_limits<double>::quiet_NaN();
        if (d > worst) worst = d;
    }
    return worst;
}

namespace {

// Entries in [0, 1] and every line (`count` of them, `length` long, `stride` apart within a line,
// `step` apart from line to line) summing to 1 within 1e-9, or to exactly 0.
bool lines_are_distributions(const double* data, std::size_t count, std::size_t length, std::size_t stride,
                             std::size_t step) {
    for (std::size_t line = 0; line < count; ++line) {
        double sum = 0;
        for (std::size_t k = 0; k < length; ++k) {
            const double x = data[line * step + k * stride];
            if (!(x >= 0.0 && x <= 1.0)) return false;  // NaN too
            sum += x;
        }
        if (std::abs(sum - 1.0) > 1e-9 && sum != 0.0) return false;
    }
    return true;
}

}  // namespace

bool rows_are_distributions(const Array& values) {
    if (values.size() == 0 || values.dimension() == 0) return false;
    const std::size_t width = values.shape().back();
    if (width == 0) return false;
    if (lines_are_distributions(values.data(), values.size() / width, width, 1, width)) return true;
    if (values.dimension() != 2) return false;
    const std::size_t rows = values.shape()[0];
    return lines_are_distributions(values.data(), width, rows, width, 1);  // columns
}

}  // namespace attn
