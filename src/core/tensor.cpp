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

void expect_shape(const std::string& what, const Shape& actual, const Shape& expected) {
    if (actual != expected)
        throw ShapeError(what + ": expected shape " + shape_string(expected) + ", got " +
                         shape_string(actual));
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

bool rows_are_distributions(const Array& values) {
    if (values.size() == 0 || values.dimension() == 0) return false;
    const std::size_t width = values.shape().back();
    if (width == 0) return false;
    for (std::size_t at = 0; at < values.size(); at += width) {
        double sum = 0;
        for (std::size_t k = at; k < at + width; ++k) {
            const double x = values.data()[k];
            if (!(x >= 0.0 && x <= 1.0)) return false;  // NaN too
            sum += x;
        }
        if (std::abs(sum - 1.0) > 1e-9 && sum != 0.0) return false;
    }
    return true;
}

}  // namespace attn
