// Lesson 15's maths (nn/rotary.hpp): RoPE's frequencies and turn against the explicit block-diagonal
// rotation built in long double and multiplied, its relative property and its two layouts; ALiBi's
// slopes against the published lists and the reference code's rule written out again, and its bias
// against matrices written by hand. Hostile shapes: odd and zero widths, T = 0 and 1, zero heads.
#include "core/rng.hpp"
#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/rotary.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

// Everything of this file in a namespace of its own (the test program is built as unity files).
namespace test_positions {

using namespace attn;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

using LongMat = std::vector<std::vector<long double>>;

// R_m for the layout, d x d, in long double: pair i's columns (a, b) hold [[cos, -sin], [sin, cos]] of
// m theta_i with theta_i = 10000^(-2i/d) by powl; every other entry 0.
LongMat explicit_rotation(std::size_t d, std::size_t m, nn::RotaryLayout layout) {
    LongMat R(d, std::vector<long double>(d, 0.0L));
    for (std::size_t i = 0; i < d / 2; ++i) {
        const std::size_t a = layout == nn::RotaryLayout::interleaved ? 2 * i : i;
        const std::size_t b = layout == nn::RotaryLayout::interleaved ? 2 * i + 1 : i + d / 2;
        const long double angle =
            static_cast<long double>(m) * std::pow(10000.0L, -2.0L * static_cast<long double>(i) / static_cast<long double>(d));
        R[a][a] = std::cos(angle), R[a][b] = -std::sin(angle);
        R[b][a] = std::sin(angle), R[b][b] = std::cos(angle);
    }
    return R;
}

// Row t of X multiplied by R_(positions[t]) as a column vector, in long double: the largest |difference| from Y.
double against_explicit(const Mat& X, const std::vector<std::size_t>& positions, nn::RotaryLayout layout, const Mat& Y) {
    const std::size_t d = X.shape(1);
    double worst = 0.0;
    for (std::size_t t = 0; t < X.shape(0); ++t) {
        const LongMat R = explicit_rotation(d, positions[t], layout);
        for (std::size_t r = 0; r < d; ++r) {
            long double sum = 0.0L;
            for (std::size_t c = 0; c < d; ++c) sum += R[r][c] * static_cast<long double>(X(t, c));
            worst = std::max(worst, static_cast<double>(std::fabs(sum - static_cast<long double>(Y(t, r)))));
        }
    }
    return worst;
}

// The ALiBi reference code's get_slopes (Press et al.), written again in long double.
std::vector<long double> reference_slopes(std::size_t n) {
    const auto power_of_2 = [](std::size_t m) {
        const long double start = std::pow(2.0L, -std::pow(2.0L, -(std::log2(static_cast<long double>(m)) - 3.0L)));
        std::vector<long double> out;
        for (std::size_t i = 0; i < m; ++i) out.push_back(start * std::pow(start, static_cast<long double>(i)));
        return out;
    };
    if ((n & (n - 1)) == 0) return power_of_2(n);
    std::size_t closest = 1;
    while (closest * 2 < n) closest *= 2;
    std::vector<long double> out = power_of_2(closest);
    const std::vector<long double> finer = reference_slopes(2 * closest);
    for (std::size_t k = 0; out.size() < n; k += 2) out.push_back(finer[k]);
    return out;
}

std::vector<std::size_t> count_from(std::size_t first, std::size_t T) {
    std::vector<std::size_t> p(T);
    for (std::size_t t = 0; t < T; ++t) p[t] = first + t;
    return p;
}

// Equal shapes and values, entry by entry (-inf equals -inf; +0 equals -0).
template <class A, class B>
bool same_values(const A& a, const B& b) {
    if (a.shape().size() != b.shape().size() || !std::equal(a.shape().begin(), a.shape().end(), b.shape().begin()))
        return false;
    for (std::size_t j = 0; j < a.size(); ++j)
        if (!(a.data()[j] == b.data()[j])) return false;
    return true;
}

bool same_bits(const Mat& a, const Mat& b) {
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

}  // namespace

TEST_CASE("RoPE's frequencies are 10000^(-2i/d) by pair index, from 1", "[positions]") {
    // d = 8: 10000^(-i/4) = 10^(-i), known without a computer; an index off by one gives 0.1, 0.01, ...
    const Vec theta = nn::rotary_frequencies(8);
    REQUIRE(theta.size() == 4);
    CHECK(theta(0) == 1.0);
    CHECK_THAT(theta(1), WithinRel(0.1, 1e-15));
    CHECK_THAT(theta(2), WithinRel(0.01, 1e-15));
    CHECK_THAT(theta(3), WithinRel(0.001, 1e-15));
    for (const std::size_t d : {2u, 6u, 64u}) {
        const Vec t = nn::rotary_frequencies(d);
        for (std::size_t i = 0; i < d / 2; ++i)
            CHECK_THAT(t(i), WithinRel(static_cast<double>(std::pow(10000.0L, -2.0L * i / static_cast<long double>(d))), 4e-16));
    }
}

TEST_CASE("RoPE turns each pair as the explicit block-diagonal rotation R_m does, in both layouts", "[positions]") {
    Rng rng(15);
    for (const std::size_t d : {2u, 6u, 64u}) {
        const Mat X = rng.normal_mat(7, d);
        for (const auto layout : {nn::RotaryLayout::interleaved, nn::RotaryLayout::halves}) {
            INFO("d = " << d << ", layout " << (layout == nn::RotaryLayout::interleaved ? "interleaved" : "halves"));
            const std::vector<std::size_t> far = {0, 1, 2, 17, 63, 200, 4095};
            // the angle m theta_i rounds to within m 2^-53 of its true value: 5e-13 at m = 4095
            CHECK(against_explicit(X, far, layout, nn::rotary_rotation(X, far, layout)) < 2e-12);
            CHECK(against_explicit(X, count_from(5, 7), layout, nn::rotary_rotation(X, 5, layout)) < 1e-14);
        }
    }
    // the sign by hand: (1, 0) at position 1 turns by +1 radian to (cos 1, sin 1); (0, 1) to (-sin 1, cos 1)
    const Mat e = {{1.0, 0.0}, {0.0, 1.0}};
    const Mat turned = nn::rotary_rotation(e, std::vector<std::size_t>{1, 1});
    CHECK_THAT(turned(0, 0), WithinAbs(0.5403023058681398, 1e-16));
    CHECK_THAT(turned(0, 1), WithinAbs(0.8414709848078965, 1e-16));
    CHECK_THAT(turned(1, 0), WithinAbs(-0.8414709848078965, 1e-16));
    CHECK_THAT(turned(1, 1), WithinAbs(0.5403023058681398, 1e-16));
    // the layouts differ for d >= 4: the halves layout on interleaved data is another rotation
    const Mat X = rng.normal_mat(3, 4);
    CHECK(max_abs_difference(nn::rotary_rotation(X, 3), nn::rotary_rotation(X, 3, nn::RotaryLayout::halves)) > 1e-3);
}

TEST_CASE("R_m q . R_n k depends on m - n only, and on it", "[positions]") {
    Rng rng(16);
    const std::size_t d = 10;
    const Mat q = rng.normal_mat(1, d), k = rng.normal_mat(1, d);
    const auto score = [&](std::size_t m, std::size_t n) {
        const Mat a = nn::rotary_rotation(q, m), b = nn::rotary_rotation(k, n);
        return nn::dot(nn::row_of(a, 0), nn::row_of(b, 0));
    };
    for (const std::size_t shift : {1u, 5u, 300u}) {
        CHECK_THAT(score(3, 1), WithinAbs(score(3 + shift, 1 + shift), 1e-12));
        CHECK_THAT(score(0, 4), WithinAbs(score(shift, 4 + shift), 1e-12));
    }
    // offsets 2 and -2 and 3 give other scores
    CHECK(std::abs(score(3, 1) - score(1, 3)) > 1e-6);
    CHECK(std::abs(score(3, 1) - score(4, 1)) > 1e-6);
}

TEST_CASE("the halves layout on columns reordered by halves_from_interleaved is the interleaved turn, bit for bit",
          "[positions]") {
    CHECK(nn::halves_from_interleaved(6) == std::vector<std::size_t>{0, 2, 4, 1, 3, 5});
    Rng rng(17);
    const Mat X = rng.normal_mat(9, 8);
    const auto order = nn::halves_from_interleaved(8);
    Mat X_h = xt::empty<double>({9u, 8u}), Y_reordered = xt::empty<double>({9u, 8u});
    const Mat Y = nn::rotary_rotation(X, 2);
    for (std::size_t j = 0; j < 8; ++j) {
        nn::set_column(X_h, j, nn::column_of(X, order[j]));
        nn::set_column(Y_reordered, j, nn::column_of(Y, order[j]));
    }
    CHECK(same_bits(nn::rotary_rotation(X_h, 2, nn::RotaryLayout::halves), Y_reordered));
}

TEST_CASE("RoPE refuses odd and zero widths and miscounted positions; T = 0 and position 0 change nothing",
          "[positions]") {
    Rng rng(18);
    CHECK_THROWS_WITH(nn::rotary_rotation(rng.normal_mat(2, 5), 0), Catch::Contains("must be even") && Catch::Contains("got 5"));
    CHECK_THROWS_AS(nn::rotary_rotation(Mat(xt::empty<double>({2u, 0u})), 0), ShapeError);
    CHECK_THROWS_AS(nn::rotary_frequencies(3), ShapeError);
    CHECK_THROWS_AS(nn::halves_from_interleaved(7), ShapeError);
    CHECK_THROWS_WITH(nn::rotary_rotation(rng.normal_mat(3, 4), std::vector<std::size_t>{0, 1}),
                      Catch::Contains("one position per row"));
    const Mat none = nn::rotary_rotation(Mat(xt::empty<double>({0u, 6u})), 4);
    CHECK(none.shape(0) == 0);
    CHECK(none.shape(1) == 6);
    const Mat one = rng.normal_mat(1, 6);
    CHECK(same_bits(nn::rotary_rotation(one, 0), one));
    CHECK_FALSE(same_bits(nn::rotary_rotation(one, 1), one));
}

TEST_CASE("ALiBi's slopes: the published lists, and the reference code's rule for any number of heads", "[positions]") {
    CHECK(same_values(nn::alibi_slopes(8), Vec{0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625}));
    // 6 heads: the four-head slopes, then every other eight-head slope; not 2^(-8k/6) (0.397 first)
    CHECK(same_values(nn::alibi_slopes(6), Vec{0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125}));
    CHECK(same_values(nn::alibi_slopes(1), Vec{0.00390625}));
    CHECK(same_values(nn::alibi_slopes(3), Vec{0.0625, 0.00390625, 0.25}));
    for (const std::size_t h : {2u, 5u, 7u, 12u, 16u, 20u, 32u, 64u}) {
        INFO(h << " heads");
        const Vec got = nn::alibi_slopes(h);
        const std::vector<long double> expected = reference_slopes(h);
        REQUIRE(got.size() == h);
        for (std::size_t k = 0; k < h; ++k) CHECK_THAT(got(k), WithinRel(static_cast<double>(expected[k]), 1e-15));
    }
    CHECK_THROWS_AS(nn::alibi_slopes(0), ShapeError);
}

TEST_CASE("ALiBi's bias -m (i - j) and its causal form, by hand", "[positions]") {
    const double inf = std::numeric_limits<double>::infinity();
    const Mat B = nn::alibi_bias(3, 0.5);
    CHECK(same_values(B, Mat{{0.0, 0.5, 1.0}, {-0.5, 0.0, 0.5}, {-1.0, -0.5, 0.0}}));
    for (std::size_t i = 0; i < 3; ++i) CHECK_FALSE(std::signbit(B(i, i)));  // +0, not -0, on the diagonal
    CHECK(same_values(nn::causal_alibi_bias(3, 0.25), Mat{{0.0, -inf, -inf}, {-0.25, 0.0, -inf}, {-0.5, -0.25, 0.0}}));
    CHECK(same_values(nn::causal_alibi_bias(1, 0.5), Mat{{0.0}}));
    CHECK(nn::alibi_bias(0, 0.5).size() == 0);
}

}  // namespace test_positions
