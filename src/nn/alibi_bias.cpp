// ALiBi's slopes and linear biases (Press et al. 2022, Train Short, Test Long; see nn/rotary.hpp).
// The classroom exercise alibi-bias; the student's version is lessons/exercises/alibi_bias.cpp.
#include "nn/rotary.hpp"

#include "core/portable_math.hpp"

#include <cmath>
#include <limits>

namespace attn::nn {

namespace {

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

}  // namespace

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
