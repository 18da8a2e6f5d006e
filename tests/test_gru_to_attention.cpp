// Lesson 5 (from a GRU to self-attention) and its ops in nn/unroll: the unrolled GRU weights
// against the recursion, the wrong product ranges, the loop forms against the matrix forms,
// and the lesson's recorded claims recomputed here with independent loops.
#include "core/rng.hpp"
#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/rnn.hpp"
#include "nn/self_attention.hpp"
#include "nn/unroll.hpp"
#include "run.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_gru_to_attention {

using namespace attn;
using Catch::Matchers::WithinAbs;

namespace {

// Small weights keep the gates away from saturation, so a wrong index shows in the states.
nn::UpdateOnlyGru small_gru(Rng& rng, std::size_t d_in, std::size_t d) {
    const double s = 0.6;
    return {rng.normal_mat(d, d_in, s), rng.normal_mat(d, d, s), rng.normal_vec(d, s),
            {rng.normal_mat(d, d_in, s), rng.normal_mat(d, d, s), rng.normal_vec(d, s)}};
}

struct GruCase {
    nn::UpdateOnlyGru gru;
    Mat X;
    Vec h0;
    nn::UpdateOnlyRun run;
};

GruCase random_gru_case(std::uint64_t seed, std::size_t T, std::size_t d) {
    Rng rng(seed);
    GruCase c{small_gru(rng, d, d), rng.normal_mat(T, d), rng.normal_vec(d), {}};
    c.run = nn::update_only_gru_forward(c.gru, c.X, c.h0);
    return c;
}

// max_k |closed-form h_t - recursive h_t| for one t.
double error_at(const Mat& closed, const Mat& states, std::size_t t) {
    const Vec a = nn::row_of(closed, t), b = nn::row_of(states, t);
    return max_abs_difference(a, b);
}

// Attention written with plain loops, independent of nn: row t is the softmax over the visible
// i of q_t . k_i / sqrt(d_k), applied to the values.
Mat attention_loops(const Mat& Q, const Mat& K, const Mat& V, bool causal) {
    const std::size_t T = Q.shape(0), d_k = Q.shape(1), d_v = V.shape(1);
    Mat out = nn::zeros(T, d_v);
    for (std::size_t t = 0; t < T; ++t) {
        const std::size_t visible = causal ? t + 1 : K.shape(0);
        std::vector<double> w(visible);
        double total = 0.0;
        for (std::size_t i = 0; i < visible; ++i) {
            double dot = 0.0;
            for (std::size_t c = 0; c < d_k; ++c) dot += Q(t, c) * K(i, c);
            total += (w[i] = std::exp(dot / std::sqrt(static_cast<double>(d_k))));
        }
        for (std::size_t i = 0; i < visible; ++i)
            for (std::size_t c = 0; c < d_v; ++c) out(t, c) += w[i] / total * V(i, c);
    }
    return out;
}

Mat times_transposed(const Mat& A, const Mat& W) {
    Mat out = nn::zeros(A.shape(0), W.shape(0));
    for (std::size_t r = 0; r < A.shape(0); ++r)
        for (std::size_t o = 0; o < W.shape(0); ++o)
            for (std::size_t c = 0; c < A.shape(1); ++c) out(r, o) += A(r, c) * W(o, c);
    return out;
}

// Heads take consecutive row blocks of the maps; outputs go side by side.
Mat heads_loops(const Mat& Z, const Mat& W_Q, const Mat& W_K, const Mat& W_V, std::size_t heads, bool causal) {
    const std::size_t d_h = W_V.shape(0) / heads;
    Mat H = xt::empty<double>({Z.shape(0), W_V.shape(0)});
    for (std::size_t n = 0; n < heads; ++n) {
        const auto rows = [&](const Mat& W) { return nn::rows_of(W, n * d_h, (n + 1) * d_h); };
        const Mat out = attention_loops(times_transposed(Z, rows(W_Q)), times_transposed(Z, rows(W_K)),
                                        times_transposed(Z, rows(W_V)), causal);
        nn::set_columns(H, n * d_h, out);
    }
    return H;
}

Trace run_lesson_5(std::uint64_t seed) {
    const Lesson* lesson = find_lesson("gru-to-attention");
    REQUIRE(lesson != nullptr);
    Config config = lesson->defaults;
    config.seed = seed;
    return run_lesson(*lesson, config);
}

const Step& recorded_step(const Trace& trace, const std::string& id) {
    const Step* s = trace.find_step(id);
    INFO("step " << id);
    REQUIRE(s != nullptr);
    return *s;
}

Array recorded(const Trace& trace, const std::string& step, const std::string& name) {
    const Step& s = recorded_step(trace, step);
    for (const auto& t : s.tensors)
        if (t.name == name) return t.value;
    FAIL("step " << step << " records no tensor " << name);
    return {};
}

Mat recorded_mat(const Trace& trace, const std::string& step, const std::string& name) {
    const Array a = recorded(trace, step, name);
    INFO("tensor " << name);
    REQUIRE(a.dimension() == 2);
    return a;
}

const CheckRecord& recorded_check(const Trace& trace, const std::string& step, const std::string& claim_start) {
    const Step& s = recorded_step(trace, step);
    for (const auto& c : s.checks)
        if (c.claim.rfind(claim_start, 0) == 0) return c;
    FAIL("step " << step << " has no check starting \"" << claim_start << "\"");
    return s.checks.front();
}

Mat reversed_rows(const Mat& M) {
    Mat out = xt::empty<double>({M.shape(0), M.shape(1)});
    for (std::size_t t = 0; t < M.shape(0); ++t)
        nn::set_row(out, t, nn::row_of(M, M.shape(0) - 1 - t));
    return out;
}

}  // namespace

TEST_CASE("the unrolled weights reproduce the GRU recursion at every t", "[gru_to_attention][unroll]") {
    const auto seed = GENERATE(1u, 2u, 3u, 4u);
    const std::size_t T = GENERATE(1u, 2u, 3u, 6u, 11u);
    const std::size_t d = 3;
    INFO("seed " << seed << ", T " << T);
    const GruCase c = random_gru_case(seed, T, d);

    const nn::Tensor3 A = nn::unrolled_weights(c.run.update_gates);
    REQUIRE(shape_of(A) == Shape{d, T, T + 1});
    const Mat closed = nn::weighted_states(A, c.h0, c.run.candidates);
    for (std::size_t t = 0; t < T; ++t) {
        INFO("t " << t + 1);
        CHECK_THAT(error_at(closed, c.run.states, t), WithinAbs(0.0, 1e-12));
        for (std::size_t k = 0; k < d; ++k) {
            double sum = 0.0;
            for (std::size_t i = 0; i <= T; ++i) sum += A(k, t, i);
            CHECK_THAT(sum, WithinAbs(1.0, 1e-12));
            // candidates written after step t get no weight: set, not computed, so exactly 0
            for (std::size_t i = t + 2; i <= T; ++i) CHECK(A(k, t, i) == 0.0);
        }
    }
}

TEST_CASE("the unrolled weights by hand", "[gru_to_attention][unroll]") {
    // one feature, gates u_1 = 0.5, u_2 = 0.8; columns h_0, h~_1, h~_2
    const Mat gates = {{0.5}, {0.8}};
    const nn::Tensor3 A = nn::unrolled_weights(gates);
    const nn::Tensor3 write_up = nn::write_up_unrolled_weights(gates);
    const nn::Tensor3 early = nn::off_by_one_unrolled_weights(gates);
    const double corrected[2][3] = {{0.5, 0.5, 0.0}, {0.5 * 0.8, 0.5 * 0.8, 0.2}};
    const double write_up_text[2][3] = {{0.0, 0.5, 0.0}, {0.0, 0.5 * 0.8, 0.5 * 0.5}};
    const double from_j_i[2][3] = {{0.5, 0.5 * 0.5, 0.0}, {0.5 * 0.8, 0.5 * 0.5 * 0.8, 0.2 * 0.8}};
    for (std::size_t t = 0; t < 2; ++t)
        for (std::size_t i = 0; i < 3; ++i) {
            INFO("t " << t + 1 << ", column " << i);
            CHECK_THAT(A(0, t, i), WithinAbs(corrected[t][i], 1e-15));
            CHECK_THAT(write_up(0, t, i), WithinAbs(write_up_text[t][i], 1e-15));
            CHECK_THAT(early(0, t, i), WithinAbs(from_j_i[t][i], 1e-15));
        }

    // the lesson's example: every gate 0.8, the weight of h~_1 in h_3
    const Mat constant = {{0.8}, {0.8}, {0.8}};
    CHECK_THAT(nn::unrolled_weights(constant)(0, 2, 1), WithinAbs(0.128, 1e-15));
    CHECK_THAT(nn::write_up_unrolled_weights(constant)(0, 2, 1), WithinAbs(0.512, 1e-15));
    CHECK_THAT(nn::unrolled_weights(constant)(0, 2, 0), WithinAbs(0.512, 1e-15));  // what h_0 should get
}

TEST_CASE("the wrong product ranges do not reproduce the recursion", "[gru_to_attention][unroll]") {
    const auto seed = GENERATE(1u, 2u, 3u, 4u);
    const std::size_t T = GENERATE(1u, 2u, 6u, 11u);
    INFO("seed " << seed << ", T " << T);
    const GruCase c = random_gru_case(seed, T, 3);
    const Mat write_up = nn::weighted_states(nn::write_up_unrolled_weights(c.run.update_gates), c.h0, c.run.candidates);
    const Mat early = nn::weighted_states(nn::off_by_one_unrolled_weights(c.run.update_gates), c.h0, c.run.candidates);
    double early_worst = 0.0;
    for (std::size_t t = 0; t < T; ++t) {
        INFO("t " << t + 1);
        CHECK(error_at(write_up, c.run.states, t) > 1e-3);
        early_worst = std::max(early_worst, error_at(early, c.run.states, t));
    }
    CHECK(early_worst > 1e-3);
}

TEST_CASE("update_only_gru_forward is nn::gru_forward with the reset gate held open", "[gru_to_attention][unroll]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    const std::size_t T = GENERATE(1u, 5u);
    Rng rng(seed);
    const nn::UpdateOnlyGru gru = small_gru(rng, 2, 3);
    const Mat X = rng.normal_mat(T, 2);
    const Vec h0 = rng.normal_vec(3);
    // sigmoid(40) = 1 - 4e-18 rounds to 1: the candidate sees all of h_{t-1}
    const nn::GruParams open{gru.W_u, gru.U_u, gru.b_u, nn::zeros(3, 2), nn::zeros(3, 3), Vec(40.0 * nn::ones(3)),
                             gru.candidate.W, gru.candidate.U, gru.candidate.b};
    const nn::GruRun full = nn::gru_forward(open, X, h0);
    const nn::UpdateOnlyRun run = nn::update_only_gru_forward(gru, X, h0);
    CHECK_THAT(max_abs_difference(run.states, full.states), WithinAbs(0.0, 1e-14));
    CHECK_THAT(max_abs_difference(run.update_gates, full.update_gates), WithinAbs(0.0, 1e-14));
    CHECK_THAT(max_abs_difference(run.candidates, full.candidates), WithinAbs(0.0, 1e-14));

    const Mat wrong_width = rng.normal_mat(T, 4);
    CHECK_THROWS_WITH(nn::update_only_gru_forward(gru, wrong_width, h0), Catch::Contains("update gate W_u"));
}

TEST_CASE("candidate attention: a causal softmax over the candidates, still a recurrence",
          "[gru_to_attention][unroll]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    const std::size_t T = GENERATE(1u, 2u, 6u);
    INFO("seed " << seed << ", T " << T);
    const std::size_t d = 3;
    Rng rng(seed);
    const nn::CandidateParams p = small_gru(rng, d, d).candidate;
    const Mat X = rng.normal_mat(T, d);
    const Vec h0 = rng.normal_vec(d);
    const nn::CandidateAttentionRun run = nn::candidate_attention_forward(p, X, h0);

    // the weights: rows sum to 1, nothing above the diagonal (never written, so exactly 0),
    // and together they are one masked softmax over the recorded candidates
    const Mat scores = times_transposed(X, run.candidates) / std::sqrt(static_cast<double>(d));
    CHECK_THAT(max_abs_difference(nn::masked_softmax(scores, nn::causal_mask(T)), run.weights), WithinAbs(0.0, 1e-12));
    for (std::size_t t = 0; t < T; ++t) {
        double sum = 0.0;
        for (std::size_t i = 0; i < T; ++i) sum += run.weights(t, i);
        CHECK_THAT(sum, WithinAbs(1.0, 1e-12));
        for (std::size_t i = t + 1; i < T; ++i) CHECK(run.weights(t, i) == 0.0);
    }
    CHECK_THAT(max_abs_difference(times_transposed(run.weights, nn::transposed(run.candidates)), run.states),
               WithinAbs(0.0, 1e-12));

    // each candidate read the state before it
    for (std::size_t t = 0; t < T; ++t) {
        const Vec previous = t == 0 ? h0 : nn::row_of(run.states, t - 1);
        const Vec expected = xt::tanh(nn::matvec(p.W, nn::row_of(X, t), "W x") +
                                      nn::matvec(p.U, previous, "U h") + p.b);
        const Vec actual = nn::row_of(run.candidates, t);
        CHECK_THAT(max_abs_difference(actual, expected), WithinAbs(0.0, 1e-15));
    }

    // a different last input leaves every earlier state as it was: the same operations on the same numbers
    Mat changed = X;
    for (std::size_t c = 0; c < d; ++c) changed(T - 1, c) += 1.0;
    const Mat before = nn::candidate_attention_forward(p, changed, h0).states;
    const Mat early_a = nn::rows_of(before, 0, T - 1);
    const Mat early_b = nn::rows_of(run.states, 0, T - 1);
    CHECK(max_abs_difference(early_a, early_b) == 0.0);
}

struct AttentionShape {
    std::size_t T, d_k, d_v;
};

TEST_CASE("attention_by_positions equals the masked and the unmasked matrix forms", "[gru_to_attention][loops]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    const auto shape = GENERATE(values<AttentionShape>({{1, 2, 3}, {2, 1, 1}, {6, 4, 4}, {9, 3, 5}}));
    INFO("seed " << seed << ", T " << shape.T << ", d_k " << shape.d_k << ", d_v " << shape.d_v);
    Rng rng(seed);
    const Mat Q = rng.normal_mat(shape.T, shape.d_k), K = rng.normal_mat(shape.T, shape.d_k);
    const Mat V = rng.normal_mat(shape.T, shape.d_v);

    const Mat causal = nn::attention_by_positions(Q, K, V, nn::Span::causal);
    const Mat full = nn::attention_by_positions(Q, K, V, nn::Span::full);
    CHECK_THAT(max_abs_difference(causal, nn::scaled_dot_product_attention(Q, K, V, nn::causal_mask(shape.T)).output),
               WithinAbs(0.0, 1e-12));
    CHECK_THAT(max_abs_difference(full, nn::scaled_dot_product_attention(Q, K, V).output), WithinAbs(0.0, 1e-12));
    // the first position sees only itself under the mask
    const Vec first = nn::row_of(causal, 0), v1 = nn::row_of(V, 0);
    CHECK_THAT(max_abs_difference(first, v1), WithinAbs(0.0, 1e-15));
}

TEST_CASE("attention_by_positions by hand", "[gru_to_attention][loops]") {
    // d_k = 1, so scores are q_t k_i; q_2 k_2 = ln 3 gives h_2 weights 1/4, 3/4 under the mask
    const double c = std::log(3.0);
    const Mat Q = {{5.0}, {c}}, K = {{0.0}, {1.0}}, V = {{1.0}, {3.0}};
    const Mat causal = nn::attention_by_positions(Q, K, V, nn::Span::causal);
    CHECK_THAT(causal(0, 0), WithinAbs(1.0, 1e-15));
    CHECK_THAT(causal(1, 0), WithinAbs(0.25 * 1.0 + 0.75 * 3.0, 1e-15));
    const Mat full = nn::attention_by_positions(Q, K, V, nn::Span::full);
    const double e5 = std::exp(5.0);
    CHECK_THAT(full(0, 0), WithinAbs((1.0 + 3.0 * e5) / (1.0 + e5), 1e-14));
    CHECK_THAT(full(1, 0), WithinAbs(2.5, 1e-15));
    CHECK_THROWS_AS(nn::attention_by_positions(Q, Mat{{1.0, 2.0}, {3.0, 4.0}}, V, nn::Span::full), ShapeError);
}

TEST_CASE("the position-wise network is W_2 max(0, W_1 h + b_1) + b_2 on each row", "[gru_to_attention][ffn]") {
    // g(h) = |h| + 0.5 for one feature: the ReLU keeps one of h and -h
    const nn::FeedForward absolute{Mat{{1.0}, {-1.0}}, Vec{0.0, 0.0}, Mat{{1.0, 1.0}}, Vec{0.5}};
    const Mat Y = nn::position_wise_feed_forward(absolute, Mat{{-2.0}, {3.0}, {0.0}});
    CHECK_THAT(Y(0, 0), WithinAbs(2.5, 1e-15));
    CHECK_THAT(Y(1, 0), WithinAbs(3.5, 1e-15));
    CHECK_THAT(Y(2, 0), WithinAbs(0.5, 1e-15));

    const auto seed = GENERATE(1u, 2u);
    Rng rng(seed);
    const nn::FeedForward g{rng.normal_mat(5, 3), rng.normal_vec(5), rng.normal_mat(2, 5), rng.normal_vec(2)};
    const Mat H = rng.normal_mat(4, 3);
    const Mat out = nn::position_wise_feed_forward(g, H);
    REQUIRE(shape_of(out) == Shape{4, 2});
    for (std::size_t t = 0; t < 4; ++t)
        for (std::size_t o = 0; o < 2; ++o) {
            double y = g.b_2(o);
            for (std::size_t m = 0; m < 5; ++m) {
                double pre = g.b_1(m);
                for (std::size_t c = 0; c < 3; ++c) pre += g.W_1(m, c) * H(t, c);
                y += g.W_2(o, m) * std::max(0.0, pre);
            }
            CHECK_THAT(out(t, o), WithinAbs(y, 1e-13));
        }
    CHECK_THROWS_WITH(nn::position_wise_feed_forward(g, rng.normal_mat(4, 2)), Catch::Contains("W_1"));
}

TEST_CASE("lesson 5: every identity check holds, for several seeds", "[gru_to_attention][lesson]") {
    const auto seed = GENERATE(1u, 2u, 3u, 7u, 11u, 42u);
    INFO("seed " << seed);
    const Trace trace = run_lesson_5(seed);
    std::size_t checks = 0;
    for (const auto& step : trace.steps())
        for (const auto& c : step.checks) {
            INFO("step " << step.id << ": " << c.claim << ", error " << c.max_abs_error);
            CHECK(c.holds);
            ++checks;
        }
    CHECK(checks >= 25);
    CHECK(trace.all_checks_hold());
}

TEST_CASE("lesson 5: each stage's loop form equals its matrix form", "[gru_to_attention][lesson]") {
    const auto seed = GENERATE(3u, 7u);
    const Trace trace = run_lesson_5(seed);
    const std::vector<std::pair<std::string, std::string>> loop_checks = {
        {"free-weights", "softmax(X H~^T"},   {"free-candidates", "the loop over t"}, {"qkv", "the loop over t"},
        {"heads", "the loop over t"},         {"non-causal", "the loop over t"},     {"positions", "the loop over t"},
        {"feed-forward", "g applied row by row"}};
    for (const auto& [step, claim] : loop_checks) {
        INFO("seed " << seed << ", step " << step);
        const CheckRecord& c = recorded_check(trace, step, claim);
        CHECK(c.holds);
        CHECK(c.max_abs_error <= 1e-12);
    }
}

TEST_CASE("lesson 5: the recorded stages, recomputed with independent loops", "[gru_to_attention][lesson]") {
    const auto seed = GENERATE(1u, 7u);
    INFO("seed " << seed);
    const Trace trace = run_lesson_5(seed);
    const Mat X = recorded_mat(trace, "tokens", "X");
    const std::size_t T = X.shape(0);

    SECTION("stage 2: H_2 = alpha_2 H_cand_2") {
        const Mat alpha = recorded_mat(trace, "free-weights", "alpha_2");
        const Mat C = recorded_mat(trace, "free-weights", "H_cand_2");
        const Mat H_2 = recorded_mat(trace, "free-weights", "H_2");
        CHECK_THAT(max_abs_difference(times_transposed(alpha, nn::transposed(C)), H_2), WithinAbs(0.0, 1e-12));
    }
    const Mat F = recorded_mat(trace, "free-candidates", "F");
    const Mat Z = recorded_mat(trace, "free-candidates", "Z");
    SECTION("stage 3: query, key and value are f(x_i)") {
        CHECK_THAT(max_abs_difference(times_transposed(X, F), Z), WithinAbs(0.0, 1e-12));
        CHECK_THAT(max_abs_difference(attention_loops(Z, Z, Z, true), recorded_mat(trace, "free-candidates", "H_3")),
                   WithinAbs(0.0, 1e-12));
    }
    const Mat W_Q = recorded_mat(trace, "qkv", "W_Q"), W_K = recorded_mat(trace, "qkv", "W_K");
    const Mat W_V = recorded_mat(trace, "qkv", "W_V");
    SECTION("stage 4: one head with separate maps") {
        CHECK_THAT(max_abs_difference(attention_loops(times_transposed(Z, W_Q), times_transposed(Z, W_K),
                                                      times_transposed(Z, W_V), true),
                                      recorded_mat(trace, "qkv", "H_4")),
                   WithinAbs(0.0, 1e-12));
    }
    SECTION("stages 5 and 6: two heads, with and without the mask") {
        CHECK_THAT(max_abs_difference(heads_loops(Z, W_Q, W_K, W_V, 2, true), recorded_mat(trace, "heads", "H_5")),
                   WithinAbs(0.0, 1e-12));
        const Mat H_6 = recorded_mat(trace, "non-causal", "H_6");
        CHECK_THAT(max_abs_difference(heads_loops(Z, W_Q, W_K, W_V, 2, false), H_6), WithinAbs(0.0, 1e-12));
        // order is lost: backwards in, backwards out; both "the" tokens (x_1 = x_5) agree
        CHECK_THAT(max_abs_difference(reversed_rows(H_6), recorded_mat(trace, "non-causal", "H_6_rev")),
                   WithinAbs(0.0, 1e-12));
        const Vec first_the = nn::row_of(H_6, 0), second_the = nn::row_of(H_6, 4);
        CHECK_THAT(max_abs_difference(first_the, second_the), WithinAbs(0.0, 1e-12));
    }
    const Mat P = recorded_mat(trace, "positions", "P");
    const Mat H_7 = recorded_mat(trace, "positions", "H_7");
    SECTION("stage 7: positions added before the heads") {
        CHECK_THAT(P(1, 0), WithinAbs(std::sin(1.0), 1e-15));  // PE(1, 0) = sin(1 / 10000^0)
        CHECK_THAT(P(2, 3), WithinAbs(std::cos(2.0 / 100.0), 1e-15));  // PE(2, 3) = cos(2 / 10000^(2/4))
        const Mat Z_7 = recorded_mat(trace, "positions", "Z_7");
        CHECK_THAT(max_abs_difference(Z + P, Z_7), WithinAbs(0.0, 1e-12));
        CHECK_THAT(max_abs_difference(heads_loops(Z_7, W_Q, W_K, W_V, 2, false), H_7), WithinAbs(0.0, 1e-12));
        const Vec first_the = nn::row_of(H_7, 0), second_the = nn::row_of(H_7, 4);
        CHECK(max_abs_difference(first_the, second_the) > 0.01);
    }
    SECTION("stage 8: g on every row") {
        const nn::FeedForward g{recorded_mat(trace, "feed-forward", "W_1"), recorded(trace, "feed-forward", "b_1"),
                                recorded_mat(trace, "feed-forward", "W_2"), recorded(trace, "feed-forward", "b_2")};
        const Mat Y = recorded_mat(trace, "feed-forward", "Y");
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t o = 0; o < Y.shape(1); ++o) {
                double y = g.b_2(o);
                for (std::size_t m = 0; m < g.W_1.shape(0); ++m) {
                    double pre = g.b_1(m);
                    for (std::size_t c = 0; c < H_7.shape(1); ++c) pre += g.W_1(m, c) * H_7(t, c);
                    y += g.W_2(o, m) * std::max(0.0, pre);
                }
                CHECK_THAT(Y(t, o), WithinAbs(y, 1e-12));
            }
    }
}

TEST_CASE("lesson 5: the unrolled weights and the wrong closed form it shows", "[gru_to_attention][lesson]") {
    const Trace trace = run_lesson_5(7);
    const Mat gates = recorded_mat(trace, "no-reset", "U_gates");
    const Mat A_1 = recorded_mat(trace, "unroll", "A_1");
    const Mat wrong = recorded_mat(trace, "wrong-range", "A_wrong_1");
    const std::size_t T = gates.shape(0);
    REQUIRE(shape_of(A_1) == Shape{T, T + 1});
    for (std::size_t t = 1; t <= T; ++t) {
        INFO("t " << t);
        double carried = 1.0;  // prod_{j=i+1..t} u_j, built from i = t downwards
        for (std::size_t i = t; i >= 1; --i) {
            CHECK_THAT(A_1(t - 1, i), WithinAbs((1.0 - gates(i - 1, 0)) * carried, 1e-15));
            carried *= gates(i - 1, 0);
        }
        CHECK_THAT(A_1(t - 1, 0), WithinAbs(carried, 1e-15));
        // the write-up's form hands h~_1 the weight that belongs to h_0
        CHECK_THAT(wrong(t - 1, 1), WithinAbs(A_1(t - 1, 0), 1e-15));
    }
    const Mat errors = recorded_mat(trace, "wrong-range", "errors");
    double early_worst = 0.0;
    for (std::size_t t = 0; t < T; ++t) {
        CHECK_THAT(errors(t, 0), WithinAbs(0.0, 1e-12));
        CHECK(errors(t, 1) > 0.01);
        early_worst = std::max(early_worst, errors(t, 2));
    }
    CHECK(early_worst > 0.01);
}

TEST_CASE("lesson 5: the measured dependency tables", "[gru_to_attention][lesson]") {
    const Trace trace = run_lesson_5(7);
    const std::vector<std::pair<std::string, std::string>> causal = {
        {"no-reset", "D_0"}, {"free-weights", "D_2"}, {"free-candidates", "D_3"}, {"qkv", "D_4"}, {"heads", "D_5"}};
    for (const auto& [step, name] : causal) {
        const Mat D = recorded_mat(trace, step, name);
        INFO(name);
        for (std::size_t t = 0; t < D.shape(0); ++t)
            for (std::size_t j = 0; j < D.shape(1); ++j) CHECK_THAT(D(t, j), WithinAbs(j <= t ? 1.0 : 0.0, 0.0));
    }
    for (const auto& [step, name] : std::vector<std::pair<std::string, std::string>>{
             {"non-causal", "D_6"}, {"positions", "D_7"}, {"feed-forward", "D_8"}}) {
        const Mat D = recorded_mat(trace, step, name);
        INFO(name);
        CHECK_THAT(nn::min_of(D), WithinAbs(1.0, 0.0));
    }
    const Mat D_g = recorded_mat(trace, "feed-forward", "D_g");
    CHECK_THAT(max_abs_difference(D_g, nn::identity(D_g.shape(0))), WithinAbs(0.0, 0.0));

    const Mat stages = recorded_mat(trace, "recap", "stages");
    const Array order = recorded(trace, "recap", "order");
    REQUIRE(order.size() == stages.shape(0));
    for (std::size_t s = 0; s < order.size(); ++s) {
        INFO("recap row " << s);
        // only the non-causal stage without positions (row 5) cannot tell the order
        if (s == 5)
            CHECK(order(s) <= 1e-12);
        else
            CHECK(order(s) > 0.01);
    }
}

}  // namespace test_gru_to_attention
