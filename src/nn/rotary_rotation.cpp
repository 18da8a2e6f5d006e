// RoPE's frequencies and its turn of a query or key (Su et al. 2021, RoFormer; see nn/rotary.hpp).
// The classroom exercise rope; the student's version is lessons/exercises/rope.cpp.
#include "nn/rotary.hpp"

#include "core/portable_math.hpp"

#include <string>

namespace attn::nn {

namespace {

// RoPE turns coordinates in pairs: d must be even and positive.
void require_pairs(const char* what, std::size_t d) {
    if (d % 2 == 1 || d == 0)
        throw ShapeError(std::string(what) + ": the width d must be even and positive (RoPE turns pairs of "
                                             "coordinates), got " + std::to_string(d));
}

// 10000^(2i/d), pair i's denominator: the bits nn::sinusoidal_encoding divides by (2.0 i is 2i exactly, the
// exponent the same double).
double denominator(std::size_t i, std::size_t d) {
    const double exponent = 2.0 * static_cast<double>(i) / static_cast<double>(d);
    return portable::pow10000(exponent);
}

}  // namespace

Vec rotary_frequencies(std::size_t d) {
    require_pairs("rotary frequencies", d);
    Vec theta = xt::empty<double>({d / 2});
    for (std::size_t i = 0; i < d / 2; ++i)
        theta(i) = 1.0 / denominator(i, d);
    return theta;
}

Mat rotary_rotation(const Mat& X, const std::vector<std::size_t>& positions, RotaryLayout layout) {
    const std::size_t T = X.shape(0), d = X.shape(1);
    require_pairs("rotary rotation", d);
    if (positions.size() != T)
        throw ShapeError("rotary rotation: one position per row of X needed, got " + std::to_string(positions.size()) +
                         " positions for " + std::to_string(T) + " rows");
    const std::size_t half = d / 2;
    Mat out = xt::empty<double>({T, d});
    for (std::size_t i = 0; i < half; ++i) {
        // pair i: its two columns in the layout, and its frequency's denominator 10000^(2i/d)
        const std::size_t a = layout == RotaryLayout::interleaved ? 2 * i : i;
        const std::size_t b = layout == RotaryLayout::interleaved ? 2 * i + 1 : i + half;
        const double slowness = denominator(i, d);
        for (std::size_t t = 0; t < T; ++t) {
            const double angle = static_cast<double>(positions[t]) / slowness;  // p theta_i
            const double c = portable::cos(angle), s = portable::sin(angle);
            const double x = X(t, a), y = X(t, b);
            out(t, a) = x * c - y * s;
            out(t, b) = x * s + y * c;
        }
    }
    return out;
}

}  // namespace attn::nn
