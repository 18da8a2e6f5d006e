// The backward passes of nn/backward.hpp against central finite differences of a scalar loss
// L = sum(G * output) with a fixed random G (so dL/d(output) = G), entry by entry, plus the
// properties of the softmax Jacobian and the exact zeros a mask must produce.
// T = positions, T_q = queries, T_k = keys, d_k / d_v = key / value widths, d_a = additive layer
// width, d_in / d = GRU input / hidden widths.
#include "core/rng.hpp"
#include "nn/backward.hpp"
#include "nn/finite_differences.hpp"
#include "nn/linalg.hpp"
#include "nn/scores.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"

#include <catch2/catch.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_backward {

using namespace attn;

namespace {

// The finite-difference step. The central difference (L(x + h) - L(x - h)) / 2h is off by the
// truncation error h^2 L''' / 6 and by the rounding of the two losses, about eps |L| / h; the sum
// is smallest where the two balance, near h = eps^(1/3) = 6e-6. At h = 1e-6, with |L| of order 1
// to 10 and |L'''| at most of order 100 here, truncation stays below 2e-11 and rounding is of
// order 1e-9.
constexpr double fd_step = 1e-6;

// |analytic - numeric| <= tolerance * max(1, |numeric|): twenty times the worst error measured
// (4.6e-9, dW_q of the additive score with saturated tanh units; most stay below 1.5e-9), and
// four orders of magnitude below a real mistake (a dropped term, a transpose, a missing
// 1 / sqrt(d_k)), which is of the order of the gradient itself: dropping the -p p^T term of the
// softmax is off by 0.28 to 0.77 in the tests below.
constexpr double tolerance = 1e-7;

const double minus_inf = -std::numeric_limits<double>::infinity();

// L = sum_ij G_ij Y_ij, summed in a fixed order.
template <class Tensor>
double weighted_sum(const Tensor& G, const Tensor& Y) {
    REQUIRE(shape_of(G) == shape_of(Y));
    double L = 0.0;
    for (std::size_t k = 0; k < Y.size(); ++k) L += G.data()[k] * Y.data()[k];
    return L;
}

// Compares `analytic` = dL/dx with central differences of loss() in x.
template <class Tensor, class Loss>
void check_gradient(const char* name, Tensor& x, const Tensor& analytic, const Loss& loss) {
    const Tensor numeric = nn::central_differences(x, loss, fd_step);
    INFO(name);
    CHECK(nn::gradient_error(analytic, numeric) <= tolerance);
}

// Exactly +0, the value a masked entry's gradient must have (not -0, not 1e-300).
bool is_plus_zero(double x) { return x == 0.0 && !std::signbit(x); }

nn::GruParams random_gru(Rng& rng, std::size_t d_in, std::size_t d, double stddev) {
    return {rng.normal_mat(d, d_in, stddev), rng.normal_mat(d, d, stddev), rng.normal_vec(d, stddev),
            rng.normal_mat(d, d_in, stddev), rng.normal_mat(d, d, stddev), rng.normal_vec(d, stddev),
            rng.normal_mat(d, d_in, stddev), rng.normal_mat(d, d, stddev), rng.normal_vec(d, stddev)};
}

// Every weight gradient of a GRU against central differences of loss() in that weight.
template <class Loss>
void check_gru_weight_gradients(nn::GruParams& p, const nn::GruGrads& g, const Loss& loss) {
    check_gradient("dW_z", p.W_z, g.dW_z, loss);
    check_gradient("dU_z", p.U_z, g.dU_z, loss);
    check_gradient("db_z", p.b_z, g.db_z, loss);
    check_gradient("dW_r", p.W_r, g.dW_r, loss);
    check_gradient("dU_r", p.U_r, g.dU_r, loss);
    check_gradient("db_r", p.b_r, g.db_r, loss);
    check_gradient("dW_h", p.W_h, g.dW_h, loss);
    check_gradient("dU_h", p.U_h, g.dU_h, loss);
    check_gradient("db_h", p.b_h, g.db_h, loss);
}

}  // namespace

TEST_CASE("softmax_rows_backward matches central differences", "[backward][softmax]") {
    struct Case {
        std::size_t rows, cols;
        double logit_scale;  // 30: most rows nearly one-hot, exp far below 1e-300 for the losers
    };
    const auto seed = GENERATE(1u, 2u, 3u);
    const auto c = GENERATE(values<Case>({{1, 1, 1.0}, {3, 5, 1.0}, {2, 7, 3.0}, {4, 6, 30.0}}));
    CAPTURE(seed, c.rows, c.cols, c.logit_scale);
    Rng rng(seed);
    Mat S = rng.normal_mat(c.rows, c.cols, c.logit_scale);
    const Mat G = rng.normal_mat(c.rows, c.cols);
    const Mat dS = nn::softmax_rows_backward(nn::softmax_rows(S), G);
    check_gradient("dS", S, dS, [&] { return weighted_sum(G, nn::softmax_rows(S)); });
}

TEST_CASE("softmax backward without the -p p^T term fails the finite-difference check", "[backward][softmax]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    Rng rng(seed);
    Mat S = rng.normal_mat(3, 5);
    const Mat G = rng.normal_mat(3, 5);
    const Mat P = nn::softmax_rows(S);
    const Mat numeric = nn::central_differences(S, [&] { return weighted_sum(G, nn::softmax_rows(S)); }, fd_step);
    // dS = P * dP: only the diagonal of the Jacobian, as if each weight depended on its own score only
    const Mat wrong = P * G;
    CHECK(nn::gradient_error(nn::softmax_rows_backward(P, G), numeric) <= tolerance);
    CHECK(nn::gradient_error(wrong, numeric) > 1e4 * tolerance);
}

TEST_CASE("softmax Jacobian: symmetric, rows sum to 0, rank T - 1", "[backward][softmax]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    const std::size_t T = GENERATE(1u, 2u, 5u, 8u);
    CAPTURE(seed, T);
    Rng rng(seed);
    const Vec p = nn::softmax(rng.normal_vec(T));
    const Mat J = nn::softmax_jacobian(p);
    REQUIRE(shape_of(J) == Shape{T, T});
    for (std::size_t j = 0; j < T; ++j) {
        double row_sum = 0.0;
        for (std::size_t k = 0; k < T; ++k) {
            CHECK(J(j, k) == J(k, j));  // p_j p_k and p_k p_j are the same product
            row_sum += J(j, k);
        }
        // p_j - p_j sum_k p_k: zero up to the rounding of sum_k p_k = 1
        CHECK(std::fabs(row_sum) <= 4 * T * std::numeric_limits<double>::epsilon());
    }
    // J 1 = 0 (the rows sum to 0) and J x = 0 only for x proportional to 1 when every p_j > 0
    // (p_j x_j = p_j p^T x for all j gives x_j = p^T x): rank T - 1. The elimination shows it with
    // a wide gap between the pivots it keeps and the rounding noise it calls zero.
    const Vec pivots = nn::elimination_pivots(J, 1e-12);
    CHECK(pivots.size() == T - 1);
    for (double pivot : pivots) CHECK(std::fabs(pivot) > 1e-4);
}

TEST_CASE("softmax Jacobian of a distribution with a zero entry loses one more rank", "[backward][softmax]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    Rng rng(seed);
    Vec logits = rng.normal_vec(6);
    logits(2) = minus_inf;
    const Mat J = nn::softmax_jacobian(nn::softmax(logits));
    // row and column 2 are exact zeros: a masked weight neither moves nor moves the others
    for (std::size_t k = 0; k < 6; ++k) CHECK((is_plus_zero(J(2, k)) && is_plus_zero(J(k, 2))));
    CHECK(nn::elimination_pivots(J, 1e-12).size() == 4);
}

TEST_CASE("softmax_rows_backward is the Jacobian applied row by row", "[backward][softmax]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    Rng rng(seed);
    const Mat P = nn::softmax_rows(rng.normal_mat(4, 6, 2.0));
    const Mat dP = rng.normal_mat(4, 6);
    const Mat dS = nn::softmax_rows_backward(P, dP);
    for (std::size_t i = 0; i < 4; ++i) {
        const Mat J = nn::softmax_jacobian(xt::row(P, static_cast<std::ptrdiff_t>(i)));
        for (std::size_t j = 0; j < 6; ++j) {
            double Jt_dp = 0.0;  // (J^T dp)_j = (J dp)_j: J is symmetric
            for (std::size_t k = 0; k < 6; ++k) Jt_dp += J(k, j) * dP(i, k);
            // the same numbers summed in another order: equal to a few roundings of |dP| ~ 1
            CHECK_THAT(dS(i, j), Catch::Matchers::WithinAbs(Jt_dp, 1e-15));
        }
    }
}

TEST_CASE("softmax_rows_backward: masked entries and fully masked rows get exactly +0", "[backward][softmax]") {
    Rng rng(5);
    Mat S = rng.normal_mat(3, 4);
    S(0, 3) = minus_inf;
    S(1, 0) = S(1, 2) = minus_inf;
    for (std::size_t j = 0; j < 4; ++j) S(2, j) = minus_inf;  // nothing to attend to
    const Mat P = nn::softmax_rows(S);
    const Mat dP = rng.normal_mat(3, 4);
    const Mat dS = nn::softmax_rows_backward(P, dP);
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < 4; ++j) {
            CAPTURE(i, j);
            if (S(i, j) == minus_inf) CHECK(is_plus_zero(dS(i, j)));
            else CHECK(dS(i, j) != 0.0);
        }
}

namespace {

enum class MaskKind { none, causal, padding };

struct AttentionCase {
    std::size_t T_q, T_k, d_k, d_v;
    MaskKind mask;
    double scale;  // of Q and K; 4 with d_k = 4 gives scores of order 16, nearly one-hot weights
};

// The mask of a case: causal (T_q = T_k), or padding the last key and the last query, which then
// has no key at all (a fully masked row).
Mat mask_for(const AttentionCase& c) {
    switch (c.mask) {
        case MaskKind::causal: return nn::causal_mask(c.T_q);
        case MaskKind::padding: return nn::padding_mask(c.T_q, c.T_k, c.T_q - 1, c.T_k - 1);
        default: return xt::zeros<double>({c.T_q, c.T_k});
    }
}

nn::AttentionResult attention(const Mat& Q, const Mat& K, const Mat& V, const AttentionCase& c, const Mat& mask) {
    return c.mask == MaskKind::none ? nn::scaled_dot_product_attention(Q, K, V)
                                    : nn::scaled_dot_product_attention(Q, K, V, mask);
}

}  // namespace

TEST_CASE("attention backward matches central differences", "[backward][attention]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    const auto c = GENERATE(values<AttentionCase>({
        {3, 5, 4, 2, MaskKind::none, 1.0},     // d_v != d_k, T_q != T_k
        {1, 1, 3, 2, MaskKind::none, 1.0},     // T = 1: the one weight is 1 whatever the score
        {4, 4, 3, 5, MaskKind::causal, 1.0},   // the upper triangle masked
        {4, 5, 2, 3, MaskKind::padding, 1.0},  // the last query fully masked
        {3, 4, 4, 2, MaskKind::none, 4.0},     // large logits
    }));
    CAPTURE(seed, c.T_q, c.T_k, c.d_k, c.d_v, static_cast<int>(c.mask), c.scale);
    Rng rng(seed);
    Mat Q = rng.normal_mat(c.T_q, c.d_k, c.scale);
    Mat K = rng.normal_mat(c.T_k, c.d_k, c.scale);
    Mat V = rng.normal_mat(c.T_k, c.d_v);
    const Mat G = rng.normal_mat(c.T_q, c.d_v);
    const Mat mask = mask_for(c);
    const nn::AttentionResult forward = attention(Q, K, V, c, mask);
    const nn::AttentionGrads g = nn::scaled_dot_product_attention_backward(Q, K, V, forward, G);
    const auto loss = [&] { return weighted_sum(G, attention(Q, K, V, c, mask).output); };
    check_gradient("dQ", Q, g.dQ, loss);
    check_gradient("dK", K, g.dK, loss);
    check_gradient("dV", V, g.dV, loss);
    // dS and dP against differences in the (unmasked) scores and in the weights themselves
    Mat scores = nn::scaled_dot_scores(Q, K);
    check_gradient("dS", scores, g.dS,
                   [&] { return weighted_sum(G, nn::matmul(nn::masked_softmax(scores, mask), V, "P V")); });
    Mat P = forward.weights;
    check_gradient("dP", P, g.dP, [&] { return weighted_sum(G, nn::matmul(P, V, "P V")); });
    // masked entries: exactly +0, not merely small
    for (std::size_t i = 0; i < c.T_q; ++i)
        for (std::size_t j = 0; j < c.T_k; ++j)
            if (mask(i, j) == minus_inf) CHECK(is_plus_zero(g.dS(i, j)));
    if (c.mask == MaskKind::padding)
        for (std::size_t k = 0; k < c.d_k; ++k) CHECK(is_plus_zero(g.dQ(c.T_q - 1, k)));
}

TEST_CASE("attention backward without the -p p^T term fails the finite-difference check", "[backward][attention]") {
    Rng rng(4);
    Mat Q = rng.normal_mat(3, 4);
    const Mat K = rng.normal_mat(5, 4), V = rng.normal_mat(5, 2), G = rng.normal_mat(3, 2);
    const nn::AttentionResult forward = nn::scaled_dot_product_attention(Q, K, V);
    const nn::AttentionGrads g = nn::scaled_dot_product_attention_backward(Q, K, V, forward, G);
    const Mat numeric =
        nn::central_differences(
            Q, [&] { return weighted_sum(G, nn::scaled_dot_product_attention(Q, K, V).output); }, fd_step);
    const Mat wrong_dQ = nn::matmul(forward.weights * g.dP, K, "(P * dP) K") / 2.0;  // sqrt(d_k) = 2
    CHECK(nn::gradient_error(g.dQ, numeric) <= tolerance);
    CHECK(nn::gradient_error(wrong_dQ, numeric) > 1e4 * tolerance);
}

TEST_CASE("additive score backward matches central differences", "[backward][additive]") {
    struct Case {
        std::size_t T_q, T_k, d_q, d_k, d_a;
        double scale;  // of the weights; 3 drives most tanh units into saturation
    };
    const auto seed = GENERATE(1u, 2u, 3u);
    const auto c = GENERATE(values<Case>({{3, 4, 2, 5, 3, 1.0}, {1, 1, 2, 2, 4, 1.0}, {2, 3, 3, 2, 4, 3.0}}));
    CAPTURE(seed, c.T_q, c.T_k, c.d_q, c.d_k, c.d_a, c.scale);
    Rng rng(seed);
    Mat Q = rng.normal_mat(c.T_q, c.d_q), K = rng.normal_mat(c.T_k, c.d_k);
    Mat W_q = rng.normal_mat(c.d_a, c.d_q, c.scale), W_k = rng.normal_mat(c.d_a, c.d_k, c.scale);
    Vec v = rng.normal_vec(c.d_a);
    const Mat G = rng.normal_mat(c.T_q, c.T_k);
    const nn::AdditiveScoreGrads g = nn::additive_scores_backward(Q, K, W_q, W_k, v, G);
    const auto loss = [&] { return weighted_sum(G, nn::additive_scores(Q, K, W_q, W_k, v)); };
    check_gradient("dQ", Q, g.dQ, loss);
    check_gradient("dK", K, g.dK, loss);
    check_gradient("dW_q", W_q, g.dW_q, loss);
    check_gradient("dW_k", W_k, g.dW_k, loss);
    check_gradient("dv", v, g.dv, loss);
}

TEST_CASE("GRU step backward matches central differences", "[backward][gru]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    const auto widths = GENERATE(values<std::pair<std::size_t, std::size_t>>({{3, 4}, {5, 2}, {1, 1}}));
    const std::size_t d_in = widths.first, d = widths.second;
    CAPTURE(seed, d_in, d);
    Rng rng(seed);
    nn::GruParams p = random_gru(rng, d_in, d, 0.8);
    Vec x = rng.normal_vec(d_in), h_prev = rng.normal_vec(d);
    const Vec G = rng.normal_vec(d);
    const nn::GruStep step = nn::gru_step(p, x, h_prev);
    nn::GruGrads grads = nn::zero_gru_grads(p);
    const nn::GruStepGrads g = nn::gru_step_backward(p, x, h_prev, step, G, grads);
    const auto loss = [&] { return weighted_sum(G, nn::gru_step(p, x, h_prev).state); };
    check_gradient("dx", x, g.dx, loss);
    check_gradient("dh_prev", h_prev, g.dh_prev, loss);
    check_gru_weight_gradients(p, grads, loss);
}

TEST_CASE("GRU step backward adds to the weight gradients it is given", "[backward][gru]") {
    Rng rng(7);
    const nn::GruParams p = random_gru(rng, 3, 2, 0.8);
    const Vec x = rng.normal_vec(3), h_prev = rng.normal_vec(2), dh = rng.normal_vec(2);
    const nn::GruStep step = nn::gru_step(p, x, h_prev);
    nn::GruGrads once = nn::zero_gru_grads(p), twice = nn::zero_gru_grads(p);
    nn::gru_step_backward(p, x, h_prev, step, dh, once);
    nn::gru_step_backward(p, x, h_prev, step, dh, twice);
    nn::gru_step_backward(p, x, h_prev, step, dh, twice);
    // 0 + a + a = 2a exactly
    CHECK((twice.dW_z == 2.0 * once.dW_z));
    CHECK((twice.dU_r == 2.0 * once.dU_r));
    CHECK((twice.db_h == 2.0 * once.db_h));
    CHECK(xt::any(xt::not_equal(once.dU_h, 0.0)));
}

TEST_CASE("GRU backward through time matches central differences", "[backward][gru]") {
    struct Case {
        std::size_t T, d_in, d;
        bool last_state_only;  // the loss reads h_T only: every other gradient arrives through time
    };
    const auto seed = GENERATE(1u, 2u, 3u);
    const auto c = GENERATE(values<Case>({{1, 3, 2, false}, {5, 3, 4, false}, {6, 2, 3, true}}));
    CAPTURE(seed, c.T, c.d_in, c.d, c.last_state_only);
    Rng rng(seed);
    nn::GruParams p = random_gru(rng, c.d_in, c.d, 0.8);
    Mat X = rng.normal_mat(c.T, c.d_in);
    Vec h0 = rng.normal_vec(c.d);
    Mat G = rng.normal_mat(c.T, c.d);
    if (c.last_state_only) xt::view(G, xt::range(0, c.T - 1), xt::all()) = 0.0;
    const nn::GruRun run = nn::gru_forward(p, X, h0);
    const nn::GruRunGrads g = nn::gru_backward(p, X, h0, run, G);
    const auto loss = [&] { return weighted_sum(G, nn::gru_forward(p, X, h0).states); };
    check_gradient("dX", X, g.dX, loss);
    check_gradient("dh0", h0, g.dh0, loss);
    check_gru_weight_gradients(p, g.params, loss);
}

TEST_CASE("GRU backward through one step is the step's backward", "[backward][gru]") {
    Rng rng(8);
    const nn::GruParams p = random_gru(rng, 3, 4, 0.8);
    const Mat X = rng.normal_mat(1, 3), dH = rng.normal_mat(1, 4);
    const Vec h0 = rng.normal_vec(4);
    const nn::GruRunGrads run_grads = nn::gru_backward(p, X, h0, nn::gru_forward(p, X, h0), dH);
    const Vec x = xt::row(X, 0), dh = xt::row(dH, 0);
    nn::GruGrads step_weights = nn::zero_gru_grads(p);
    const nn::GruStepGrads step_grads = nn::gru_step_backward(p, x, h0, nn::gru_step(p, x, h0), dh, step_weights);
    CHECK((run_grads.dh0 == step_grads.dh_prev));
    CHECK((Vec(xt::row(run_grads.dX, 0)) == step_grads.dx));
    CHECK((run_grads.params.dU_h == step_weights.dU_h));
}

TEST_CASE("GRU backward through no steps sends dh0 = 0", "[backward][gru]") {
    Rng rng(9);
    const nn::GruParams p = random_gru(rng, 3, 2, 0.8);
    const Mat X = xt::zeros<double>({std::size_t{0}, std::size_t{3}});
    const Mat dH = xt::zeros<double>({std::size_t{0}, std::size_t{2}});
    const Vec h0 = rng.normal_vec(2);
    const nn::GruRunGrads g = nn::gru_backward(p, X, h0, nn::gru_forward(p, X, h0), dH);
    CHECK((g.dh0 == Vec(xt::zeros<double>({2}))));
    CHECK(shape_of(g.dX) == Shape{0, 3});
}

TEST_CASE("backward passes reject gradients of the wrong shape, naming them", "[backward][shapes]") {
    Rng rng(10);
    const Mat Q = rng.normal_mat(3, 4), K = rng.normal_mat(5, 4), V = rng.normal_mat(5, 2);
    const nn::AttentionResult forward = nn::scaled_dot_product_attention(Q, K, V);
    CHECK_THROWS_WITH(nn::scaled_dot_product_attention_backward(Q, K, V, forward, rng.normal_mat(3, 4)),
                      Catch::Contains("dO") && Catch::Contains("[3, 2]") && Catch::Contains("[3, 4]"));
    CHECK_THROWS_AS(nn::softmax_rows_backward(forward.weights, rng.normal_mat(5, 3)), ShapeError);
    const nn::GruParams p = random_gru(rng, 3, 2, 0.8);
    const Vec x = rng.normal_vec(3), h = rng.normal_vec(2);
    nn::GruGrads wrong = nn::zero_gru_grads(random_gru(rng, 3, 4, 0.8));
    CHECK_THROWS_WITH(nn::gru_step_backward(p, x, h, nn::gru_step(p, x, h), rng.normal_vec(2), wrong),
                      Catch::Contains("dW_z"));
}

}  // namespace test_backward
