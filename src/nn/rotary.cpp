// Rotary position embeddings and ALiBi's linear biases (see nn/rotary.hpp).
#include "nn/rotary.hpp"

#include "core/portable_math.hpp"

#include <cmath>
#include <limits>
#include <string>

namespace attn::nn {

namespace {

void expect_even_width(const char* what, std::size_t d) {
    if (d == 0 || d % 2 != 0)
        throw ShapeError(std::string(what) + ": RoPE turns coordinates in pairs, so the width d must be even and "
                                             "positive, got " +
                         std::to_string(d));
}

// 2^e for e = -8k/n with n a power of two: e is exact in binary; 2^e = 2^floor(e) 2^f with f in [0, 1),
// 2^f = exp(f ln 2) from attn's portable exp (exactly 1 when f = 0, so powers of two stay exact).
double power_of_two(double e) {
    const double whole = std::floor(e), f = e - whole;
    constexpr double ln2 = 0.69314718055994530942;
    return std::ldexp(f == 0.0 ? 1.0 : portable::exp(f * ln2), static_cast<int>(whole));
}

// m_k = 2^(-8k/n), k = 1 .. n, for n a power of two.
std::vector<double> geometric_slopes(std::size_t n) {
    std::vector<double> out;
    for (std::size_t k = 1; k <= n; ++k)
        out.push_back(power_of_two(-8.0 * static_cast<double>(k) / static_cast<double>(n)));
    return out;
}

// 10000^(2i/d), pair i's denominator: the bits nn::sinusoidal_encoding divides by (2.0 i is 2i exactly, the
// exponent the same double), written here on its own, since positional.cpp is an exercise's reference.
double denominator(std::size_t i, std::size_t d) {
    const double exponent = 2.0 * static_cast<double>(i) / static_cast<double>(d);
    return portable::pow10000(exponent);
}

}  // namespace

Vec rotary_frequencies(std::size_t d) {
    expect_even_width("rotary frequencies", d);
    Vec theta = xt::empty<double>({d / 2});
    for (std::size_t i = 0; i < d / 2; ++i)
        theta(i) = 1.0 / denominator(i, d);
    return theta;
}

Mat rotary_rotation(const Mat& X, const std::vector<std::size_t>& positions, RotaryLayout layout) {
    const std::size_t T = X.shape(0), d = X.shape(1);
    expect_even_width("rotary rotation", d);
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

Mat rotary_rotation(const Mat& X, std::size_t first, RotaryLayout layout) {
    std::vector<std::size_t> positions(X.shape(0));
    for (std::size_t t = 0; t < positions.size(); ++t) positions[t] = first + t;
    return rotary_rotation(X, positions, layout);
}

std::vector<std::size_t> halves_from_interleaved(std::size_t d) {
    expect_even_width("halves from interleaved", d);
    std::vector<std::size_t> order(d);
    for (std::size_t i = 0; i < d / 2; ++i) {
        order[i] = 2 * i;
        order[i + d / 2] = 2 * i + 1;
    }
    return order;
}

Vec alibi_slopes(std::size_t heads) {
    if (heads == 0) throw ShapeError("alibi slopes: at least one head needed, got 0");
    std::size_t n = 1;
    while (n * 2 <= heads) n *= 2;  // the largest power of two not above h
    std::vector<double> slopes = geometric_slopes(n);
    if (n < heads) {
        const std::vector<double> finer = geometric_slopes(2 * n);
        for (std::size_t k = 0; slopes.size() < heads; k += 2) slopes.push_back(finer[k]);
    }
    Vec out = xt::empty<double>({heads});
    for (std::size_t k = 0; k < heads; ++k) out(k) = slopes[k];
    return out;
}

Mat alibi_bias(std::size_t T, double slope) {
    Mat B = xt::empty<double>({T, T});
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) B(i, j) = slope * (static_cast<double>(j) - static_cast<double>(i));  // +0 on the diagonal
    return B;
}

Mat causal_alibi_bias(std::size_t T, double slope) {
    Mat B = alibi_bias(T, slope);
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = i + 1; j < T; ++j) B(i, j) = -std::numeric_limits<double>::infinity();
    return B;
}

}  // namespace attn::nn
