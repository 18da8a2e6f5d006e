// Score functions, softmax, local-p attention and Luong's attentional state against independent
// computations written out with plain loops; lesson 3's checks and recorded tensors.
// T_q = queries, T_k = keys (source length S), d = widths, d_a = width of an additive layer.
#include "core/rng.hpp"
#include "nn/attention.hpp"
#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/scores.hpp"
#include "nn/softmax.hpp"
#include "run.hpp"

#include <catch2/catch.hpp>
#include <xtensor/xsort.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_scores {

using namespace attn;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

const double inf = std::numeric_limits<double>::infinity();

// The ops and the loops below add the same few products in different orders. Scores here are
// O(10) sums of at most 12 terms, so rounding differs by ~1e-14 at most; a wrong index or a
// missing term shows up as O(1).
constexpr double loop_tolerance = 1e-12;

struct Sizes {
    std::size_t T_q, T_k, d_q, d_k, d_a;
};

Mat loop_dot(const Mat& Q, const Mat& K) {
    Mat e = nn::zeros(Q.shape(0), K.shape(0));
    for (std::size_t i = 0; i < Q.shape(0); ++i)
        for (std::size_t j = 0; j < K.shape(0); ++j)
            for (std::size_t a = 0; a < Q.shape(1); ++a) e(i, j) += Q(i, a) * K(j, a);
    return e;
}

Mat loop_general(const Mat& Q, const Mat& W, const Mat& K) {
    Mat e = nn::zeros(Q.shape(0), K.shape(0));
    for (std::size_t i = 0; i < Q.shape(0); ++i)
        for (std::size_t j = 0; j < K.shape(0); ++j)
            for (std::size_t a = 0; a < Q.shape(1); ++a)
                for (std::size_t b = 0; b < K.shape(1); ++b) e(i, j) += Q(i, a) * W(a, b) * K(j, b);
    return e;
}

// v . tanh(W_q q_i + W_k k_j), one hidden unit at a time.
Mat loop_additive(const Mat& Q, const Mat& K, const Mat& W_q, const Mat& W_k, const Vec& v) {
    Mat e = nn::zeros(Q.shape(0), K.shape(0));
    for (std::size_t i = 0; i < Q.shape(0); ++i)
        for (std::size_t j = 0; j < K.shape(0); ++j)
            for (std::size_t a = 0; a < v.size(); ++a) {
                double pre = 0.0;
                for (std::size_t b = 0; b < Q.shape(1); ++b) pre += W_q(a, b) * Q(i, b);
                for (std::size_t b = 0; b < K.shape(1); ++b) pre += W_k(a, b) * K(j, b);
                e(i, j) += v(a) * std::tanh(pre);
            }
    return e;
}

// v . tanh(W [q_i; k_j]) with the concatenation indexed directly: column b < d_q reads q, the rest k.
Mat loop_concat(const Mat& Q, const Mat& K, const Mat& W, const Vec& v) {
    const std::size_t d_q = Q.shape(1);
    Mat e = nn::zeros(Q.shape(0), K.shape(0));
    for (std::size_t i = 0; i < Q.shape(0); ++i)
        for (std::size_t j = 0; j < K.shape(0); ++j)
            for (std::size_t a = 0; a < v.size(); ++a) {
                double pre = 0.0;
                for (std::size_t b = 0; b < W.shape(1); ++b) pre += W(a, b) * (b < d_q ? Q(i, b) : K(j, b - d_q));
                e(i, j) += v(a) * std::tanh(pre);
            }
    return e;
}

// Softmax of one row restricted to the source positions s (1-based) with |s - p| <= D,
// times exp(-(s - p)^2 / (2 (D/2)^2)); 0 elsewhere. Luong et al. 2015, eqs. 7 and 10 (arXiv v5).
Vec loop_local_row(const Mat& scores, std::size_t t, double p, std::size_t D) {
    const std::size_t S = scores.shape(1);
    const double sigma = static_cast<double>(D) / 2.0;
    std::vector<std::size_t> inside;
    for (std::size_t s = 1; s <= S; ++s)
        if (std::abs(static_cast<double>(s) - p) <= static_cast<double>(D)) inside.push_back(s);
    double largest = -inf, total = 0.0;
    for (auto s : inside) largest = std::max(largest, scores(t, s - 1));
    for (auto s : inside) total += std::exp(scores(t, s - 1) - largest);
    Vec out = nn::zeros(S);
    for (auto s : inside) {
        const double distance = static_cast<double>(s) - p;
        out(s - 1) = std::exp(scores(t, s - 1) - largest) / total * std::exp(-distance * distance / (2 * sigma * sigma));
    }
    return out;
}

// The source positions (1-based) that carry a non-zero weight in row t.
std::vector<std::size_t> nonzero_positions(const Mat& weights, std::size_t t) {
    std::vector<std::size_t> out;
    for (std::size_t s = 0; s < weights.shape(1); ++s)
        if (weights(t, s) != 0.0) out.push_back(s + 1);
    return out;
}

const Array& recorded(const Trace& trace, const std::string& step_id, const std::string& name) {
    const Step* step = trace.find_step(step_id);
    if (!step) throw std::out_of_range("no step " + step_id);
    for (const auto& t : step->tensors)
        if (t.name == name) return t.value;
    throw std::out_of_range("no tensor " + name + " in step " + step_id);
}

}  // namespace

// ---------------------------------------------------------------- score functions

TEST_CASE("every score function matches its loop form", "[scores]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    // 1 x 1, non-square with different query and key widths, a long source, more queries than keys
    const Sizes n = GENERATE(values<Sizes>({{1, 1, 1, 1, 1}, {3, 5, 4, 6, 2}, {2, 12, 6, 3, 5}, {5, 2, 8, 8, 4}}));
    INFO("seed " << seed << ", T_q " << n.T_q << ", T_k " << n.T_k << ", d_q " << n.d_q << ", d_k " << n.d_k);
    Rng rng(seed);
    const Mat Q = rng.normal_mat(n.T_q, n.d_q), K = rng.normal_mat(n.T_k, n.d_k);
    const Mat K_same = rng.normal_mat(n.T_k, n.d_q);  // keys as wide as the queries, for dot and scaled
    const Mat W = rng.normal_mat(n.d_q, n.d_k);
    const Mat W_q = rng.normal_mat(n.d_a, n.d_q), W_k = rng.normal_mat(n.d_a, n.d_k);
    const Mat W_joined = rng.normal_mat(n.d_a, n.d_q + n.d_k);
    const Vec v = rng.normal_vec(n.d_a);

    SECTION("dot: e_ij = q_i . k_j") {
        const Mat e = nn::dot_scores(Q, K_same);
        REQUIRE(shape_of(e) == Shape{n.T_q, n.T_k});
        CHECK_THAT(max_abs_difference(e, loop_dot(Q, K_same)), WithinAbs(0.0, loop_tolerance));
    }
    SECTION("general: e_ij = q_i^T W k_j") {
        const Mat e = nn::general_scores(Q, W, K);
        REQUIRE(shape_of(e) == Shape{n.T_q, n.T_k});
        CHECK_THAT(max_abs_difference(e, loop_general(Q, W, K)), WithinAbs(0.0, loop_tolerance));
    }
    SECTION("scaled: e_ij = q_i . k_j / sqrt(d)") {
        const Mat e = nn::scaled_dot_scores(Q, K_same);
        const Mat expected = loop_dot(Q, K_same) / std::sqrt(static_cast<double>(n.d_q));
        CHECK_THAT(max_abs_difference(e, expected), WithinAbs(0.0, loop_tolerance));
    }
    SECTION("additive: e_ij = v . tanh(W_q q_i + W_k k_j)") {
        const Mat e = nn::additive_scores(Q, K, W_q, W_k, v);
        REQUIRE(shape_of(e) == Shape{n.T_q, n.T_k});
        CHECK_THAT(max_abs_difference(e, loop_additive(Q, K, W_q, W_k, v)), WithinAbs(0.0, loop_tolerance));
    }
    SECTION("concat: e_ij = v . tanh(W [q_i; k_j])") {
        const Mat e = nn::concat_scores(Q, K, W_joined, v);
        REQUIRE(shape_of(e) == Shape{n.T_q, n.T_k});
        CHECK_THAT(max_abs_difference(e, loop_concat(Q, K, W_joined, v)), WithinAbs(0.0, loop_tolerance));
    }
    SECTION("concat with W = [W_q W_k] is additive") {
        Mat joined = xt::empty<double>({n.d_a, n.d_q + n.d_k});
        nn::set_columns(joined, 0, W_q);
        nn::set_columns(joined, n.d_q, W_k);
        CHECK_THAT(max_abs_difference(nn::concat_scores(Q, K, joined, v), nn::additive_scores(Q, K, W_q, W_k, v)),
                   WithinAbs(0.0, loop_tolerance));
    }
    SECTION("general with W = I is dot") {
        CHECK_THAT(max_abs_difference(nn::general_scores(Q, nn::identity(n.d_q), K_same), loop_dot(Q, K_same)),
                   WithinAbs(0.0, loop_tolerance));
    }
}

TEST_CASE("score functions name the tensor whose shape is wrong", "[scores]") {
    Rng rng(4);
    const Mat Q = rng.normal_mat(2, 3), K = rng.normal_mat(4, 5);
    CHECK_THROWS_WITH(nn::dot_scores(Q, K), Catch::Contains("dot scores"));
    CHECK_THROWS_AS(nn::scaled_dot_scores(Q, K), ShapeError);
    CHECK_THROWS_WITH(nn::general_scores(Q, rng.normal_mat(3, 3), K), Catch::Contains("general score weight W"));
    CHECK_THROWS_WITH(nn::concat_scores(Q, K, rng.normal_mat(2, 7), rng.normal_vec(2)),
                      Catch::Contains("concat score weight W"));
    CHECK_THROWS_WITH(nn::additive_scores(Q, K, rng.normal_mat(2, 3), rng.normal_mat(2, 4), rng.normal_vec(2)),
                      Catch::Contains("W_k"));
}

// ---------------------------------------------------------------- softmax

TEST_CASE("softmax rows sum to 1", "[scores][softmax]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    const auto cols = GENERATE(std::size_t{1}, std::size_t{2}, std::size_t{12});
    const double spread = GENERATE(0.1, 5.0, 50.0);
    Rng rng(seed);
    const Mat alpha = nn::softmax_rows(rng.normal_mat(4, cols, spread));
    for (std::size_t i = 0; i < 4; ++i) {
        double total = 0.0;
        for (std::size_t j = 0; j < cols; ++j) {
            CHECK(alpha(i, j) >= 0.0);
            total += alpha(i, j);
        }
        // 12 terms of at most 1 with a relative rounding of 2^-53 each: at most ~2e-15 apart.
        CHECK_THAT(total, WithinAbs(1.0, 1e-14));
    }
}

TEST_CASE("softmax is unchanged by adding a constant to a row", "[scores][softmax]") {
    const auto seed = GENERATE(1u, 2u);
    const double c = GENERATE(-745.0, -1.0, 0.5, 700.0, 1e5);
    Rng rng(seed);
    const Vec x = rng.normal_vec(7, 3.0);
    const Vec shifted_logits = x + c;
    // x + c is rounded to the grid of |c| + max|x|, moving each logit by at most half a unit in
    // the last place u; a logit moved by delta moves each weight by at most 2 |delta| (the
    // softmax Jacobian a_i (delta_ij - a_j) has rows of absolute sum at most 2 a_i <= 2). So the
    // weights may differ by up to u, plus their own rounding: a few ulps of logits below 20,
    // well under 1e-14.
    const double m = std::abs(c) + nn::max_abs_of(x);
    const double u = std::nextafter(m, inf) - m;
    const double tolerance = u + 1e-14;
    CHECK_THAT(max_abs_difference(nn::softmax(shifted_logits), nn::softmax(x)), WithinAbs(0.0, tolerance));
    // The same per row of a matrix: row 1 is row 0 shifted.
    Mat rows = xt::empty<double>({std::size_t{2}, x.size()});
    nn::set_row(rows, 0, x);
    nn::set_row(rows, 1, shifted_logits);
    const Mat alpha = nn::softmax_rows(rows);
    CHECK_THAT(max_abs_difference(nn::row_of(alpha, 0), nn::row_of(alpha, 1)), WithinAbs(0.0, tolerance));
}

TEST_CASE("softmax of logits near +-1e300 is finite and correct", "[scores][softmax]") {
    SECTION("one huge logit takes all the weight") {
        // 1e300 - 1e300 = 0 gives exp(0) = 1; -1e300 - 1e300 = -2e300 gives exp = 0 exactly.
        const Vec a = nn::softmax(Vec{1e300, -1e300, 0.0});
        CHECK_THAT(a(0), WithinAbs(1.0, 1e-15));
        CHECK(a(1) == 0.0);
        CHECK(a(2) == 0.0);
    }
    SECTION("equal huge logits share equally") {
        const Vec up = nn::softmax(Vec{1e300, 1e300, 1e300});
        const Vec down = nn::softmax(Vec{-1e300, -1e300});
        for (const double w : up) CHECK_THAT(w, WithinRel(1.0 / 3.0, 1e-15));
        for (const double w : down) CHECK_THAT(w, WithinRel(0.5, 1e-15));
    }
    SECTION("differences that overflow to -inf still give 0, not NaN") {
        // -1.7e308 - 1.7e308 overflows to -inf; exp(-inf) = 0.
        const Vec a = nn::softmax(Vec{1.7e308, -1.7e308});
        CHECK(std::isfinite(a(0)));
        CHECK(std::isfinite(a(1)));
        CHECK_THAT(a(0), WithinAbs(1.0, 1e-15));
        CHECK(a(1) == 0.0);
    }
    SECTION("a huge row leaves an ordinary row alone") {
        Mat logits = {{1e300, -1e300, 5.0}, {0.0, std::log(3.0), -inf}};
        const Mat a = nn::softmax_rows(logits);
        CHECK_THAT(a(0, 0), WithinAbs(1.0, 1e-15));
        CHECK(a(0, 1) == 0.0);
        CHECK(a(0, 2) == 0.0);
        CHECK_THAT(a(1, 0), WithinRel(0.25, 1e-15));  // 1 / (1 + 3)
        CHECK_THAT(a(1, 1), WithinRel(0.75, 1e-15));  // 3 / (1 + 3)
        CHECK(a(1, 2) == 0.0);
    }
}

TEST_CASE("softmax of rows containing -inf", "[scores][softmax]") {
    SECTION("-inf entries get exactly 0, the rest share the weight") {
        const Vec a = nn::softmax(Vec{-inf, 0.0, std::log(3.0), -inf});
        CHECK(a(0) == 0.0);
        CHECK(a(3) == 0.0);
        CHECK_THAT(a(1), WithinRel(0.25, 1e-15));
        CHECK_THAT(a(2), WithinRel(0.75, 1e-15));
    }
    SECTION("a row that is -inf everywhere gets zeros, not NaN") {
        Mat logits = {{-inf, -inf, -inf}, {1.0, 1.0, -inf}};
        const Mat a = nn::softmax_rows(logits);
        for (std::size_t j = 0; j < 3; ++j) CHECK(a(0, j) == 0.0);
        CHECK_THAT(a(1, 0), WithinRel(0.5, 1e-15));
        CHECK_THAT(a(1, 1), WithinRel(0.5, 1e-15));
        CHECK(a(1, 2) == 0.0);
    }
    SECTION("-inf beside a huge logit") {
        const Vec a = nn::softmax(Vec{-1e300, -inf});
        CHECK_THAT(a(0), WithinAbs(1.0, 1e-15));
        CHECK(a(1) == 0.0);
    }
}

// ---------------------------------------------------------------- local-p attention

TEST_CASE("predicted positions match the loop form and lie in [0, S]", "[scores][local]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    const auto S = GENERATE(std::size_t{1}, std::size_t{4}, std::size_t{12});
    Rng rng(seed);
    const Mat H = rng.normal_mat(5, 3), W_p = rng.normal_mat(4, 3, 2.0);
    const Vec v_p = rng.normal_vec(4, 2.0);
    const Vec p = nn::predicted_positions(H, W_p, v_p, S);
    REQUIRE(p.size() == 5);
    for (std::size_t t = 0; t < 5; ++t) {
        double logit = 0.0;
        for (std::size_t a = 0; a < 4; ++a) {
            double pre = 0.0;
            for (std::size_t b = 0; b < 3; ++b) pre += W_p(a, b) * H(t, b);
            logit += v_p(a) * std::tanh(pre);
        }
        // p_t = S sigmoid(logit), Luong et al. 2015, eq. 9 (arXiv:1508.04025v5)
        CHECK_THAT(p(t), WithinRel(static_cast<double>(S) / (1.0 + std::exp(-logit)), 1e-14));
        CHECK(p(t) >= 0.0);
        CHECK(p(t) <= static_cast<double>(S));
    }
    CHECK_THROWS_AS(nn::predicted_positions(H, rng.normal_mat(4, 2), v_p, S), ShapeError);
}

TEST_CASE("the local window is [p - D, p + D] clipped to positions 1..S", "[scores][local]") {
    const std::size_t S = 10;
    // p, D, the positions expected inside (1-based), worked out by hand
    struct Case {
        double p;
        std::size_t D;
        std::vector<std::size_t> inside;
    };
    const Case c = GENERATE(values<Case>({
        {5.0, 2, {3, 4, 5, 6, 7}},           // integer centre: 2D + 1 positions
        {5.5, 2, {4, 5, 6, 7}},              // between positions: 2D positions
        {0.0, 2, {1, 2}},                    // clipped at the start: -2 .. 0 do not exist
        {1.2, 3, {1, 2, 3, 4}},              // clipped at the start
        {10.0, 2, {8, 9, 10}},               // clipped at the end: 11, 12 do not exist
        {9.7, 1, {9, 10}},                   // clipped at the end
        {5.0, 20, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},  // wider than the sentence: everything
    }));
    INFO("p = " << c.p << ", D = " << c.D);
    const Mat window = nn::local_window(Vec{c.p}, S, c.D);
    REQUIRE(shape_of(window) == Shape{1, S});
    CHECK(nonzero_positions(window, 0) == c.inside);
    for (const double x : window) CHECK((x == 0.0 || x == 1.0));

    // Local weights live exactly on the window.
    Rng rng(5);
    const Mat scores = rng.normal_mat(1, S, 2.0);
    CHECK(nonzero_positions(nn::local_p_weights(scores, Vec{c.p}, c.D), 0) == c.inside);
}

TEST_CASE("the Gaussian factor has sigma = D / 2", "[scores][local]") {
    const Mat g = nn::gaussian_factors(Vec{3.0, 4.5}, 8, 2);
    // exp(-(s - p)^2 / (2 sigma^2)) with sigma = 1
    CHECK_THAT(g(0, 2), WithinAbs(1.0, 1e-15));                   // s = p = 3
    CHECK_THAT(g(0, 4), WithinRel(std::exp(-2.0), 1e-15));        // |s - p| = D: exp(-D^2 / (2 D^2 / 4))
    CHECK_THAT(g(1, 3), WithinRel(std::exp(-0.125), 1e-15));      // s = 4, p = 4.5: exp(-0.25 / 2)
    CHECK_THAT(g(1, 7), WithinRel(std::exp(-6.125), 1e-15));      // s = 8: exp(-12.25 / 2)
    CHECK_THROWS_AS(nn::gaussian_factors(Vec{3.0}, 8, 0), std::invalid_argument);
    CHECK_THROWS_AS(nn::local_window(Vec{3.0}, 8, 0), std::invalid_argument);
}

TEST_CASE("local-p weights match the loop form", "[scores][local]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    const auto S = GENERATE(std::size_t{1}, std::size_t{5}, std::size_t{12});
    const auto D = GENERATE(std::size_t{1}, std::size_t{2}, std::size_t{4});
    INFO("seed " << seed << ", S " << S << ", D " << D);
    Rng rng(seed);
    const std::size_t T = 4;
    const Mat scores = rng.normal_mat(T, S, 3.0);
    // positions spread over [0, S], including both ends
    Vec p = {0.0, 0.37 * static_cast<double>(S), 0.81 * static_cast<double>(S), static_cast<double>(S)};
    const Mat local = nn::local_p_weights(scores, p, D);
    const Mat global = nn::softmax_rows(scores);
    const Mat window = nn::local_window(p, S, D);
    const Mat gaussian = nn::gaussian_factors(p, S, D);
    for (std::size_t t = 0; t < T; ++t) {
        INFO("row " << t << ", p = " << p(t));
        CHECK_THAT(max_abs_difference(nn::row_of(local, t),
                                      loop_local_row(scores, t, p(t), D)),
                   WithinAbs(0.0, 1e-15));
        double mass_in_window = 0.0, total = 0.0;
        for (std::size_t s = 0; s < S; ++s) mass_in_window += window(t, s) * global(t, s);
        for (std::size_t s = 0; s < S; ++s) {
            total += local(t, s);
            if (window(t, s) == 0.0) {
                CHECK(local(t, s) == 0.0);  // softmax of -inf is exactly 0, times the Gaussian still 0
            } else {
                // inside: the Gaussian times the global weight renormalised over the window; the two
                // routes round differently, by a few ulps of numbers at most 1
                CHECK_THAT(local(t, s), WithinAbs(gaussian(t, s) * global(t, s) / mass_in_window, 1e-14));
            }
        }
        // Not renormalised after the Gaussian: the factors are at most 1, so the total is at most 1.
        CHECK(total <= 1.0 + 1e-15);
    }
}

TEST_CASE("local-p weights are not renormalised after the Gaussian", "[scores][local]") {
    // Equal scores over a window of 3 at p = 2, D = 2 (sigma = 1) on S = 3: the window softmax gives
    // 1/3 each, the Gaussian exp(-1/2), 1, exp(-1/2), so the row sums to (1 + 2 exp(-0.5)) / 3.
    const Mat local = nn::local_p_weights(nn::zeros(1, 3), Vec{2.0}, 2);
    const double total = local(0, 0) + local(0, 1) + local(0, 2);
    CHECK_THAT(total, WithinRel((1.0 + 2.0 * std::exp(-0.5)) / 3.0, 1e-15));
    CHECK_THAT(local(0, 1), WithinRel(1.0 / 3.0, 1e-15));
    CHECK_THROWS_AS(nn::local_p_weights(nn::zeros(2, 3), Vec{2.0}, 2),
                    ShapeError);
}

// ---------------------------------------------------------------- attentional state

TEST_CASE("Luong's attentional state matches the loop form", "[scores][attentional]") {
    const auto seed = GENERATE(1u, 2u);
    const auto d_c = GENERATE(std::size_t{1}, std::size_t{4});
    const auto d_h = GENERATE(std::size_t{1}, std::size_t{3});
    Rng rng(seed);
    const Mat C = rng.normal_mat(3, d_c), H = rng.normal_mat(3, d_h), W_c = rng.normal_mat(5, d_c + d_h);
    const Mat h_tilde = nn::attentional_states(C, H, W_c);
    REQUIRE(shape_of(h_tilde) == Shape{3, 5});
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t a = 0; a < 5; ++a) {
            double pre = 0.0;
            for (std::size_t b = 0; b < d_c; ++b) pre += W_c(a, b) * C(t, b);
            for (std::size_t b = 0; b < d_h; ++b) pre += W_c(a, d_c + b) * H(t, b);
            // h~_t = tanh(W_c [c_t; h_t]), Luong et al. 2015, eq. 5
            CHECK_THAT(h_tilde(t, a), WithinAbs(std::tanh(pre), loop_tolerance));
        }
    CHECK_THROWS_AS(nn::attentional_states(C, H, rng.normal_mat(5, d_c + d_h + 1)), ShapeError);
    CHECK_THROWS_AS(nn::attentional_states(C, rng.normal_mat(2, d_h), W_c), ShapeError);
}

// ---------------------------------------------------------------- the lesson

TEST_CASE("lesson 3 holds its checks, for its own seed and others", "[scores][lessons]") {
    const Lesson* lesson = find_lesson("scores");
    REQUIRE(lesson);
    Config config = lesson->defaults;
    config.seed = GENERATE(7u, 1u, 2024u);
    INFO("seed " << config.seed);
    const Trace trace = run_lesson(*lesson, config);
    for (const auto& step : trace.steps())
        for (const auto& check : step.checks) {
            INFO(step.id << ": " << check.claim << " (" << check.max_abs_error << " vs " << check.tolerance << ")");
            CHECK(check.holds);
        }
}

TEST_CASE("lesson 3's aimed step says when d is too narrow to aim five windows, and claims nothing", "[scores][lessons]") {
    const Lesson* lesson = find_lesson("scores");
    REQUIRE(lesson);
    Config config = lesson->defaults;
    for (auto& [key, value] : config.values)
        if (key == "d") value = 3;
    const Trace trace = run_lesson(*lesson, config);
    const Step* aimed = trace.find_step("aimed");
    REQUIRE(aimed);
    CHECK(aimed->checks.empty());
    REQUIRE(aimed->tensors.size() == 1);
    CHECK(aimed->tensors[0].name == "aim");
    CHECK(aimed->explanation.find("At d = 3 it cannot") != std::string::npos);
    CHECK(trace.all_checks_hold());
}

TEST_CASE("lesson 3's recorded tensors recompute each other", "[scores][lessons]") {
    const Lesson* lesson = find_lesson("scores");
    REQUIRE(lesson);
    const Trace trace = run_lesson(*lesson, lesson->defaults);
    const double d = static_cast<double>(lesson->defaults.get("d"));
    const std::size_t D = static_cast<std::size_t>(lesson->defaults.get("D"));
    const Mat Q = recorded(trace, "inputs", "Q"), K = recorded(trace, "inputs", "K");
    // Weights and scores are recorded one column per query: transpose back.
    const Mat e_dot = nn::transposed(Mat(recorded(trace, "dot", "e_dot")));
    const Mat e_scaled = nn::transposed(Mat(recorded(trace, "scaled", "e_scaled")));

    SECTION("recorded scaled scores are the recorded dot scores / sqrt(d)") {
        REQUIRE(shape_of(e_scaled) == shape_of(e_dot));
        for (std::size_t i = 0; i < e_dot.size(); ++i)
            CHECK_THAT(e_scaled.flat(i), WithinAbs(e_dot.flat(i) / std::sqrt(d), 1e-14));
    }
    SECTION("dot scores from the recorded Q and K") {
        CHECK_THAT(max_abs_difference(e_dot, loop_dot(Q, K)), WithinAbs(0.0, loop_tolerance));
    }
    SECTION("local weights from the recorded scores and positions") {
        const Vec p = recorded(trace, "window", "p");
        const Mat a_local = nn::transposed(Mat(recorded(trace, "local", "a_local")));
        for (std::size_t t = 0; t < p.size(); ++t)
            CHECK_THAT(max_abs_difference(nn::row_of(a_local, t),
                                          loop_local_row(e_dot, t, p(t), D)),
                       WithinAbs(0.0, 1e-14));
    }
    SECTION("the aimed v_p sends every p_t a quarter position before its partner, and the window holds it") {
        const Mat W_p = recorded(trace, "window", "W_p");
        const Vec v_p = recorded(trace, "aimed", "v_p_aimed"), partner = recorded(trace, "inputs", "partner");
        const double S = static_cast<double>(K.shape(0));
        const Mat a_aimed = nn::transposed(Mat(recorded(trace, "aimed", "a_aimed")));
        for (std::size_t t = 0; t < Q.shape(0); ++t) {
            double logit = 0.0;
            for (std::size_t a = 0; a < W_p.shape(0); ++a) {
                double pre = 0.0;
                for (std::size_t b = 0; b < W_p.shape(1); ++b) pre += W_p(a, b) * Q(t, b);
                logit += v_p(a) * std::tanh(pre);
            }
            const double p = S / (1.0 + std::exp(-logit));
            CHECK_THAT(p, WithinAbs(partner(t) - 0.25, 1e-10));
            const auto partner_index = static_cast<std::size_t>(partner(t)) - 1;
            CHECK(a_aimed(t, partner_index) > 0.5);  // inside the window, and its dot score wins there
            CHECK_THAT(max_abs_difference(nn::row_of(a_aimed, t),
                                          loop_local_row(e_dot, t, p, D)),
                       WithinAbs(0.0, 1e-10));
        }
    }
    SECTION("the keys have length sqrt(d) and, with the default seed, every query's partner wins") {
        const Vec partner = recorded(trace, "inputs", "partner");
        for (std::size_t s = 0; s < K.shape(0); ++s) {
            double length_squared = 0.0;
            for (std::size_t a = 0; a < K.shape(1); ++a) length_squared += K(s, a) * K(s, a);
            CHECK_THAT(length_squared, WithinRel(d, 1e-14));
        }
        // The lesson's pictures rely on this: with equal key lengths the dot score ranks keys by
        // direction, and the planted partner comes out on top for every query.
        for (std::size_t t = 0; t < Q.shape(0); ++t) {
            const auto best = static_cast<std::size_t>(xt::argmax(nn::row_of(e_dot, t))());
            CHECK(best + 1 == static_cast<std::size_t>(partner(t)));
        }
    }
}

}  // namespace test_scores
