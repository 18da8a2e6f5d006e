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

}  // namespace attn
