// Lesson 4 (self-attention) and its ops: masks and the masked softmax, scaled dot-product attention
// and Lin et al.'s structured self-attention against explicit loops; permutation equivariance and
// future-token invariance as properties over seeds; the sinusoidal encoding against hand values;
// the lesson's own checks and recorded tensors.
// T_q = queries, T_k = keys/values, d_k = query/key width, d_v = value width, n = tokens,
// 2u = encoder state width, d_a = Lin's tanh width, r = hops.
#include "core/rng.hpp"
#include "nn/linalg.hpp"
#include "nn/positional.hpp"
#include "nn/reductions.hpp"
#include "nn/rnn.hpp"
#include "nn/scores.hpp"
#include "nn/softmax.hpp"
#include "nn/self_attention.hpp"
#include "nn/structured.hpp"
#include "run.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_self_attention {

using namespace attn;
using Catch::Matchers::WithinAbs;

namespace {

const double inf = std::numeric_limits<double>::infinity();

// The ops and the loops add the same few products in different orders (and the ops go through
// BLAS); on O(1) numbers rounding differs by ~1e-15, while a wrong index or a lost term is O(0.01).
constexpr double loop_tolerance = 1e-12;

std::size_t nan_count(const Mat& M) {
    std::size_t count = 0;
    for (double x : M) count += std::isnan(x) ? 1 : 0;
    return count;
}

// softmax_j(S_ij + M_ij) written out: unmasked entries only, the largest subtracted, masked entries
// 0, a fully masked row all 0.
Mat loop_masked_softmax(const Mat& S, const Mat& M) {
    Mat out = nn::zeros(S.shape(0), S.shape(1));
    for (std::size_t i = 0; i < S.shape(0); ++i) {
        double largest = -inf;
        for (std::size_t j = 0; j < S.shape(1); ++j)
            if (M(i, j) != -inf) largest = std::max(largest, S(i, j) + M(i, j));
        if (largest == -inf) continue;
        double total = 0.0;
        for (std::size_t j = 0; j < S.shape(1); ++j)
            if (M(i, j) != -inf) total += std::exp(S(i, j) + M(i, j) - largest);
        for (std::size_t j = 0; j < S.shape(1); ++j)
            if (M(i, j) != -inf) out(i, j) = std::exp(S(i, j) + M(i, j) - largest) / total;
    }
    return out;
}

// o_i = sum_j a_ij v_j with a_i the masked softmax of q_i . k_j / sqrt(d_k), one product at a time.
struct LoopAttention {
    Mat scores, weights, output;
};

LoopAttention loop_attention(const Mat& Q, const Mat& K, const Mat& V, const Mat& M) {
    LoopAttention r{nn::zeros(Q.shape(0), K.shape(0)), {}, nn::zeros(Q.shape(0), V.shape(1))};
    for (std::size_t i = 0; i < Q.shape(0); ++i)
        for (std::size_t j = 0; j < K.shape(0); ++j) {
            for (std::size_t c = 0; c < Q.shape(1); ++c) r.scores(i, j) += Q(i, c) * K(j, c);
            r.scores(i, j) /= std::sqrt(static_cast<double>(Q.shape(1)));
        }
    r.weights = loop_masked_softmax(r.scores, M);
    for (std::size_t i = 0; i < Q.shape(0); ++i)
        for (std::size_t j = 0; j < K.shape(0); ++j)
            for (std::size_t c = 0; c < V.shape(1); ++c) r.output(i, c) += r.weights(i, j) * V(j, c);
    return r;
}

// Each entry -inf with probability `share`, else 0; rows may end up fully masked.
Mat random_mask(Rng& rng, std::size_t T_q, std::size_t T_k, double share) {
    Mat M = nn::zeros(T_q, T_k);
    for (auto& x : M) x = rng.uniform() < share ? -inf : 0.0;
    return M;
}

// A uniformly random order of 0..n-1 (Fisher-Yates with the engine's generator).
std::vector<std::size_t> random_permutation(Rng& rng, std::size_t n) {
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
    return order;
}

Mat permuted_rows(const Mat& X, const std::vector<std::size_t>& order) {
    Mat out = xt::empty<double>({X.shape(0), X.shape(1)});
    for (std::size_t t = 0; t < order.size(); ++t)
        nn::set_row(out, t, nn::row_of(X, order[t]));
    return out;
}

Mat first_rows(const Mat& M, std::size_t count) { return nn::rows_of(M, 0, count); }

struct SelfAttentionWeights {
    Mat W_Q, W_K, W_V;
};

SelfAttentionWeights draw_weights(Rng& rng, std::size_t d, std::size_t d_k) {
    const double s = 1.0 / std::sqrt(static_cast<double>(d));
    return {rng.normal_mat(d, d_k, s), rng.normal_mat(d, d_k, s), rng.normal_mat(d, d_k, s)};
}

Mat self_attention(const SelfAttentionWeights& w, const Mat& X, const Mat& mask) {
    return nn::scaled_dot_product_attention(nn::matmul(X, w.W_Q, "X W_Q"), nn::matmul(X, w.W_K, "X W_K"),
                                            nn::matmul(X, w.W_V, "X W_V"), mask)
        .output;
}

// sum_i sum_j (a_i . a_j - [i = j])^2 over the entries.
double loop_penalty(const Mat& A) {
    double total = 0.0;
    for (std::size_t i = 0; i < A.shape(0); ++i)
        for (std::size_t j = 0; j < A.shape(0); ++j) {
            double e = i == j ? -1.0 : 0.0;
            for (std::size_t t = 0; t < A.shape(1); ++t) e += A(i, t) * A(j, t);
            total += e * e;
        }
    return total;
}

const Step& step_of(const Trace& trace, const std::string& id) {
    const Step* s = trace.find_step(id);
    REQUIRE(s);
    return *s;
}

const Array& recorded(const Trace& trace, const std::string& step, const std::string& name) {
    for (const auto& t : step_of(trace, step).tensors)
        if (t.name == name) return t.value;
    FAIL("no tensor " << name << " in step " << step);
    throw std::logic_error("unreachable");
}

}  // namespace

// ---------------------------------------------------------------- masks and the masked softmax

TEST_CASE("causal and padding masks hold 0 and -inf where they should", "[self_attention][mask]") {
    const Mat causal = nn::causal_mask(4);
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 0; j < 4; ++j) CHECK(causal(i, j) == (j > i ? -inf : 0.0));
    const Mat keys = nn::padding_mask(2, 5, 3);
    for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 5; ++j) CHECK(keys(i, j) == (j >= 3 ? -inf : 0.0));
    const Mat both = nn::padding_mask(4, 5, 2, 3);
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 0; j < 5; ++j) CHECK(both(i, j) == (i >= 2 || j >= 3 ? -inf : 0.0));
    CHECK_THROWS_AS(nn::padding_mask(2, 5, 6), ShapeError);
    CHECK_THROWS_AS(nn::padding_mask(2, 5, 3, 3), ShapeError);
}

TEST_CASE("masked softmax equals an explicit loop", "[self_attention][mask]") {
    const std::uint64_t seed = GENERATE(1u, 2u, 3u);
    const auto shape = GENERATE(std::make_pair(1u, 1u), std::make_pair(3u, 5u), std::make_pair(6u, 6u),
                                std::make_pair(5u, 2u));
    const std::size_t T_q = shape.first, T_k = shape.second;
    Rng rng(seed);
    const Mat S = rng.normal_mat(T_q, T_k, 3.0);
    INFO("seed " << seed << ", " << T_q << " x " << T_k);

    SECTION("padding mask, every valid length") {
        for (std::size_t valid = 0; valid <= T_k; ++valid) {
            const Mat M = nn::padding_mask(T_q, T_k, valid);
            CHECK(max_abs_difference(nn::masked_softmax(S, M), loop_masked_softmax(S, M)) <= loop_tolerance);
        }
    }
    SECTION("padding mask on queries and keys") {
        const Mat M = nn::padding_mask(T_q, T_k, T_q / 2, (T_k + 1) / 2);
        const Mat A = nn::masked_softmax(S, M);
        CHECK(max_abs_difference(A, loop_masked_softmax(S, M)) <= loop_tolerance);
        for (std::size_t i = T_q / 2; i < T_q; ++i)
            for (std::size_t j = 0; j < T_k; ++j) CHECK(A(i, j) == 0.0);  // fully masked: exact zeros
    }
    SECTION("causal mask") {
        const Mat square = rng.normal_mat(T_k, T_k, 3.0), M = nn::causal_mask(T_k);
        const Mat A = nn::masked_softmax(square, M);
        CHECK(max_abs_difference(A, loop_masked_softmax(square, M)) <= loop_tolerance);
        for (std::size_t i = 0; i < T_k; ++i)
            for (std::size_t j = i + 1; j < T_k; ++j) CHECK(A(i, j) == 0.0);  // exp(-inf) is exactly 0
    }
    SECTION("random masks, some rows fully masked") {
        const Mat M = random_mask(rng, T_q, T_k, 0.4);
        const Mat A = nn::masked_softmax(S, M);
        CHECK(nan_count(A) == 0);
        CHECK(max_abs_difference(A, loop_masked_softmax(S, M)) <= loop_tolerance);
    }
}

TEST_CASE("a fully masked row gives zero weights and a zero output, never NaN", "[self_attention][mask]") {
    Rng rng(11);
    const Mat Q = rng.normal_mat(3, 4), K = rng.normal_mat(5, 4), V = rng.normal_mat(5, 2);
    Mat M = nn::zeros(3, 5);
    for (std::size_t j = 0; j < 5; ++j) M(1, j) = -inf;  // query 2 may look at nothing
    const nn::AttentionResult r = nn::scaled_dot_product_attention(Q, K, V, M);
    CHECK(nan_count(r.weights) == 0);
    CHECK(nan_count(r.output) == 0);
    for (std::size_t j = 0; j < 5; ++j) CHECK(r.weights(1, j) == 0.0);
    for (std::size_t c = 0; c < 2; ++c) CHECK(r.output(1, c) == 0.0);
    // the other rows are untouched by it
    for (std::size_t i : {0u, 2u}) CHECK_THAT(nn::sum_of(nn::row_of(r.weights, i)), WithinAbs(1.0, 1e-15));
}

TEST_CASE("masked softmax with -inf and very large logits", "[self_attention][mask]") {
    const Mat open = nn::zeros(1, 3);
    SECTION("a -inf logit gets weight 0, the rest as if it were absent") {
        const Mat A = nn::masked_softmax(Mat{{0.0, -inf, std::log(3.0)}}, open);
        CHECK(A(0, 1) == 0.0);
        CHECK_THAT(A(0, 0), WithinAbs(0.25, 1e-15));  // 1 / (1 + 3)
        CHECK_THAT(A(0, 2), WithinAbs(0.75, 1e-15));
    }
    SECTION("huge logits do not overflow: only their differences count") {
        // exp(1e308) overflows; two equal maxima share the weight, and exp(-2e308) is 0
        const Mat A = nn::masked_softmax(Mat{{1e308, 1e308, -1e308}}, open);
        CHECK_THAT(A(0, 0), WithinAbs(0.5, 1e-15));
        CHECK_THAT(A(0, 1), WithinAbs(0.5, 1e-15));
        CHECK(A(0, 2) == 0.0);
        // 1e15 + 1 is exact (below 2^53), so the two leaders differ by exactly 1
        const double sigmoid_1 = 1.0 / (1.0 + std::exp(-1.0));
        const Mat B = nn::masked_softmax(Mat{{1e15 + 1.0, 1e15, -1000.0}}, open);
        CHECK_THAT(B(0, 0), WithinAbs(sigmoid_1, 1e-15));
        CHECK_THAT(B(0, 1), WithinAbs(1.0 - sigmoid_1, 1e-15));
        CHECK(B(0, 2) == 0.0);
    }
    SECTION("a masked +inf score stays masked instead of turning the row into NaN") {
        const Mat A = nn::masked_softmax(Mat{{inf, 1.0, 1.0}}, Mat{{-inf, 0.0, 0.0}});
        CHECK(nan_count(A) == 0);
        CHECK(A(0, 0) == 0.0);
        CHECK_THAT(A(0, 1), WithinAbs(0.5, 1e-15));
    }
    SECTION("a NaN score is not hidden") {
        const Mat A = nn::masked_softmax(Mat{{std::nan(""), 1.0, 1.0}}, open);
        CHECK(nan_count(A) == 3);
    }
}

// ---------------------------------------------------------------- scaled dot-product attention

TEST_CASE("scaled dot-product attention equals explicit loops", "[self_attention]") {
    const std::uint64_t seed = GENERATE(5u, 6u, 7u);
    const auto sizes = GENERATE(std::vector<std::size_t>{1, 1, 1, 1}, std::vector<std::size_t>{4, 4, 3, 2},
                                std::vector<std::size_t>{3, 6, 5, 4}, std::vector<std::size_t>{7, 2, 8, 1});
    const std::size_t T_q = sizes[0], T_k = sizes[1], d_k = sizes[2], d_v = sizes[3];
    INFO("seed " << seed << ", T_q " << T_q << ", T_k " << T_k << ", d_k " << d_k << ", d_v " << d_v);
    Rng rng(seed);
    const Mat Q = rng.normal_mat(T_q, d_k), K = rng.normal_mat(T_k, d_k), V = rng.normal_mat(T_k, d_v);

    const LoopAttention open = loop_attention(Q, K, V, nn::zeros(T_q, T_k));
    const nn::AttentionResult r = nn::scaled_dot_product_attention(Q, K, V);
    CHECK(max_abs_difference(r.scores, open.scores) <= loop_tolerance);
    CHECK(max_abs_difference(r.weights, open.weights) <= loop_tolerance);
    CHECK(max_abs_difference(r.output, open.output) <= loop_tolerance);

    const Mat M = nn::padding_mask(T_q, T_k, (T_k + 1) / 2);
    const LoopAttention padded = loop_attention(Q, K, V, M);
    const nn::AttentionResult p = nn::scaled_dot_product_attention(Q, K, V, M);
    CHECK(max_abs_difference(p.weights, padded.weights) <= loop_tolerance);
    CHECK(max_abs_difference(p.output, padded.output) <= loop_tolerance);
}

TEST_CASE("large causal attention, on two threads, equals the simple form", "[self_attention][mask]") {
    // T x T = 65536 scores, above the size the row kernels split over two threads
    const std::size_t T = 256, d_k = 16, d_v = 8;
    Rng rng(17);
    const Mat Q = rng.normal_mat(T, d_k), K = rng.normal_mat(T, d_k), V = rng.normal_mat(T, d_v);
    const Mat M = nn::causal_mask(T);
    const nn::AttentionResult r = nn::scaled_dot_product_attention(Q, K, V, M);

    SECTION("the simple form: scores, mask, softmax, product, one op after another, bit for bit") {
        const Mat S = nn::scaled_dot_scores(Q, K) + M;  // the causal mask's scores are finite
        const Mat A = nn::softmax_rows(S);
        CHECK(max_abs_difference(r.scores, S) == 0.0);
        CHECK(max_abs_difference(r.weights, A) == 0.0);
        CHECK(max_abs_difference(r.output, nn::matmul(A, V, "A V")) == 0.0);
        CHECK(max_abs_difference(nn::masked_softmax(nn::scaled_dot_scores(Q, K), M), A) == 0.0);
    }
    SECTION("explicit loops") {
        const LoopAttention loop = loop_attention(Q, K, V, M);
        CHECK(max_abs_difference(r.weights, loop.weights) <= loop_tolerance);
        CHECK(max_abs_difference(r.output, loop.output) <= loop_tolerance);
    }
    SECTION("rows sum to 1, zeros above the diagonal") {
        std::size_t nonzero_above = 0;
        double worst_sum_error = 0.0;
        for (std::size_t i = 0; i < T; ++i) {
            double total = 0.0;
            for (std::size_t j = 0; j < T; ++j) {
                total += r.weights(i, j);
                if (j > i && r.weights(i, j) != 0.0) ++nonzero_above;  // exp(-inf) is exactly 0
            }
            worst_sum_error = std::max(worst_sum_error, std::abs(total - 1.0));
        }
        CHECK(nonzero_above == 0);
        CHECK(worst_sum_error <= 1e-12);
    }
    SECTION("unmasked, the same") {
        const nn::AttentionResult open = nn::scaled_dot_product_attention(Q, K, V);
        const Mat A = nn::softmax_rows(nn::scaled_dot_scores(Q, K));
        CHECK(max_abs_difference(open.weights, A) == 0.0);
        CHECK(max_abs_difference(open.output, nn::matmul(A, V, "A V")) == 0.0);
    }
}

TEST_CASE("attention rejects keys and values of different lengths", "[self_attention]") {
    Rng rng(3);
    const Mat Q = rng.normal_mat(2, 3), K = rng.normal_mat(4, 3), V = rng.normal_mat(5, 2);
    CHECK_THROWS_AS(nn::scaled_dot_product_attention(Q, K, V), ShapeError);
    CHECK_THROWS_AS(nn::scaled_dot_product_attention(Q, K, rng.normal_mat(4, 2), nn::zeros(2, 3)),
                    ShapeError);
}

// ---------------------------------------------------------------- structured self-attention

TEST_CASE("structured self-attention equals explicit loops", "[self_attention][structured]") {
    const std::uint64_t seed = GENERATE(1u, 2u, 3u);
    const auto sizes = GENERATE(std::vector<std::size_t>{5, 3, 4, 2}, std::vector<std::size_t>{1, 2, 3, 1},
                                std::vector<std::size_t>{7, 3, 4, 3});
    const std::size_t n = sizes[0], u = sizes[1], d_a = sizes[2], r = sizes[3];
    Rng rng(seed);
    const Mat H = rng.normal_mat(n, 2 * u), W_s1 = rng.normal_mat(d_a, 2 * u), W_s2 = rng.normal_mat(r, d_a, 2.0);
    const nn::StructuredAttention s = nn::structured_self_attention(H, W_s1, W_s2);

    Mat hidden = nn::zeros(d_a, n), scores = nn::zeros(r, n), M = nn::zeros(r, 2 * u);
    for (std::size_t a = 0; a < d_a; ++a)
        for (std::size_t t = 0; t < n; ++t) {
            for (std::size_t c = 0; c < 2 * u; ++c) hidden(a, t) += W_s1(a, c) * H(t, c);
            hidden(a, t) = std::tanh(hidden(a, t));
        }
    for (std::size_t k = 0; k < r; ++k)
        for (std::size_t t = 0; t < n; ++t)
            for (std::size_t a = 0; a < d_a; ++a) scores(k, t) += W_s2(k, a) * hidden(a, t);
    const Mat A = loop_masked_softmax(scores, nn::zeros(r, n));
    for (std::size_t k = 0; k < r; ++k)
        for (std::size_t t = 0; t < n; ++t)
            for (std::size_t c = 0; c < 2 * u; ++c) M(k, c) += A(k, t) * H(t, c);

    CHECK(max_abs_difference(s.hidden, hidden) <= loop_tolerance);
    CHECK(max_abs_difference(s.scores, scores) <= loop_tolerance);
    CHECK(max_abs_difference(s.weights, A) <= loop_tolerance);
    CHECK(max_abs_difference(s.embedding, M) <= loop_tolerance);
    CHECK_THROWS_AS(nn::structured_self_attention(H, rng.normal_mat(d_a, 2 * u + 1), W_s2), ShapeError);
    CHECK_THROWS_AS(nn::structured_self_attention(H, W_s1, rng.normal_mat(r, d_a + 1)), ShapeError);
}

TEST_CASE("Lin's penalty equals a direct sum over entries", "[self_attention][structured]") {
    SECTION("random attention matrices") {
        const std::uint64_t seed = GENERATE(1u, 2u, 3u, 4u);
        Rng rng(seed);
        const std::size_t r = 1 + rng.below(4), n = 2 + rng.below(6);
        const Mat A = nn::masked_softmax(rng.normal_mat(r, n, 2.0), nn::zeros(r, n));
        CHECK_THAT(nn::redundancy_penalty(A), WithinAbs(loop_penalty(A), 1e-12));
    }
    SECTION("one-hot rows on distinct tokens: A A^T = I, P = 0 exactly") {
        const Mat A = {{0.0, 1.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 1.0, 0.0}, {1.0, 0.0, 0.0, 0.0, 0.0}};
        CHECK(nn::redundancy_penalty(A) == 0.0);  // 0/1 products and sums are exact
        CHECK(loop_penalty(A) == 0.0);
    }
    SECTION("by hand") {
        // three one-hot rows on the same token: A A^T is all ones, so the 6 off-diagonal 1s count
        const Mat same = {{0.0, 1.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 1.0, 0.0}};
        CHECK_THAT(nn::redundancy_penalty(same), WithinAbs(6.0, 1e-15));
        // two uniform rows over 4 tokens: A A^T = 1/4 everywhere: 2 (1/4 - 1)^2 + 2 (1/4)^2 = 1.25
        CHECK_THAT(nn::redundancy_penalty(Mat(0.25 * nn::ones(2, 4))), WithinAbs(1.25, 1e-15));
    }
}

// ---------------------------------------------------------------- properties

TEST_CASE("without positions self-attention is permutation-equivariant, with them it is not",
          "[self_attention][property]") {
    const std::uint64_t seed = GENERATE(21u, 22u, 23u, 24u, 25u);
    Rng rng(seed);
    const std::size_t n = 6, d = 8, d_k = 4;
    const SelfAttentionWeights w = draw_weights(rng, d, d_k);
    const Mat X = rng.normal_mat(n, d), open = nn::zeros(n, n);
    std::vector<std::size_t> order = random_permutation(rng, n);
    const bool identity = [&] {
        for (std::size_t i = 0; i < n; ++i)
            if (order[i] != i) return false;
        return true;
    }();
    if (identity) std::swap(order[0], order[1]);  // a permutation that moves nothing would prove nothing
    INFO("seed " << seed);

    const Mat moved = self_attention(w, permuted_rows(X, order), open);
    CHECK(max_abs_difference(moved, permuted_rows(self_attention(w, X, open), order)) <= loop_tolerance);

    const Mat PE = nn::sinusoidal_encoding(n, d);
    const Mat moved_pe = self_attention(w, permuted_rows(X, order) + PE, open);
    CHECK(max_abs_difference(moved_pe, permuted_rows(self_attention(w, X + PE, open), order)) > 1e-6);
    // positions that travel with their words restore it
    const Mat travelled = self_attention(w, permuted_rows(Mat(X + PE), order), open);
    CHECK(max_abs_difference(travelled, permuted_rows(self_attention(w, X + PE, open), order)) <= loop_tolerance);
}

TEST_CASE("causal outputs at positions <= t ignore every token after t", "[self_attention][property]") {
    const std::uint64_t seed = GENERATE(31u, 32u, 33u, 34u);
    Rng rng(seed);
    const std::size_t n = 7, d = 6, d_k = 3;
    const SelfAttentionWeights w = draw_weights(rng, d, d_k);
    const Mat X = rng.normal_mat(n, d), other = rng.normal_mat(n, d, 3.0);
    const Mat causal = nn::causal_mask(n), open = nn::zeros(n, n);
    const Mat O = self_attention(w, X, causal), O_open = self_attention(w, X, open);
    for (std::size_t t = 0; t + 1 < n; ++t) {
        INFO("seed " << seed << ", t " << t);
        Mat changed = X;
        nn::set_rows(changed, t + 1, nn::rows_of(other, t + 1, n));
        const Mat O_changed = self_attention(w, changed, causal), O_open_changed = self_attention(w, changed, open);
        CHECK(max_abs_difference(first_rows(O_changed, t + 1), first_rows(O, t + 1)) <= loop_tolerance);
        // the property is not vacuous: without the mask the same change reaches the past
        CHECK(max_abs_difference(first_rows(O_open_changed, t + 1), first_rows(O_open, t + 1)) > 1e-6);
    }
}

// ---------------------------------------------------------------- sinusoidal encoding

TEST_CASE("sinusoidal encoding against hand values", "[self_attention][positional]") {
    const Mat PE = nn::sinusoidal_encoding(3, 4);
    REQUIRE(PE.shape(0) == 3);
    REQUIRE(PE.shape(1) == 4);
    // position 0: sin 0 = 0 and cos 0 = 1 in every pair
    for (std::size_t c = 0; c < 4; ++c) CHECK(PE(0, c) == (c % 2 == 0 ? 0.0 : 1.0));
    // PE(1, 2) = sin(1 / 10000^(2/4)) = sin(0.01) = 0.01 - 0.01^3/6 + 0.01^5/120 - ... = 0.009999833334166665
    CHECK_THAT(PE(1, 2), WithinAbs(0.009999833334166665, 1e-17));
    // PE(2, 1) = cos(2 / 10000^0) = cos 2 = -0.4161468365471424 (Abramowitz & Stegun, table 4.6)
    CHECK_THAT(PE(2, 1), WithinAbs(-0.4161468365471424, 1e-15));
    // PE(2, 3) = cos(2 / 100) = cos(0.02) = 1 - 0.0002 + 0.02^4/24 - ... = 0.9998000066665778
    CHECK_THAT(PE(2, 3), WithinAbs(0.9998000066665778, 1e-15));
    CHECK_THROWS_AS(nn::sinusoidal_encoding(3, 5), ShapeError);
    CHECK_THROWS_AS(nn::offset_rotation(5, 1), ShapeError);
}

TEST_CASE("moving k positions is one rotation R_k of the sinusoidal encoding, whatever the position", "[self_attention]") {
    const std::size_t n = 100, d = 64;
    const Mat PE = nn::sinusoidal_encoding(n, d);
    for (const std::size_t k : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{50}}) {
        const Mat R = nn::offset_rotation(d, k);
        // a rotation: R R^T = I
        CHECK(max_abs_difference(nn::matmul(R, nn::transposed(R), "R R^T"), nn::identity(d)) < 1e-15);
        double worst = 0;
        for (std::size_t p = 0; p + k < n; ++p)
            worst = std::max(worst, max_abs_difference(nn::matvec(R, nn::row_of(PE, p), "R PE_p"),
                                                        nn::row_of(PE, p + k)));
        CHECK(worst < 1e-12);
    }
    // the transposed rotation turns the wrong way: the check can fail
    const Mat back = nn::transposed(nn::offset_rotation(d, 3));
    CHECK(max_abs_difference(nn::matvec(back, nn::row_of(PE, 10), "R^T PE_p"), nn::row_of(PE, 13)) > 0.1);
    CHECK_THROWS_AS(nn::sinusoidal_encoding(3, 0), ShapeError);
}

TEST_CASE("PE_p . PE_(p+k) depends on the offset k only", "[self_attention][positional]") {
    const std::size_t d = GENERATE(2u, 6u, 16u, 64u);
    const std::size_t T = 40;
    const Mat PE = nn::sinusoidal_encoding(T, d);
    for (std::size_t k = 0; k < 12; ++k) {
        double at_zero = 0.0;
        for (std::size_t c = 0; c < d; ++c) at_zero += PE(0, c) * PE(k, c);
        for (std::size_t p = 1; p + k < T; ++p) {
            double dot = 0.0;
            for (std::size_t c = 0; c < d; ++c) dot += PE(p, c) * PE(p + k, c);
            INFO("d " << d << ", p " << p << ", k " << k);
            CHECK_THAT(dot, WithinAbs(at_zero, 1e-12));
        }
    }
}

// ---------------------------------------------------------------- the lesson

TEST_CASE("lesson 4 holds all its checks and shows what it claims", "[self_attention][lessons]") {
    const Lesson* lesson = find_lesson("self-attention");
    REQUIRE(lesson);
    REQUIRE(find_lesson("4") == lesson);
    const Trace trace = run_lesson(*lesson, lesson->defaults);
    for (const auto& step : trace.steps())
        for (const auto& check : step.checks) {
            INFO(step.id << ": " << check.claim << " (error " << check.max_abs_error << ")");
            CHECK(check.holds);
        }

    // hops: A is r x n and each row is a distribution
    const Array& A = recorded(trace, "hops", "A");
    REQUIRE(A.shape(0) == static_cast<std::size_t>(lesson->defaults.get("r")));
    const Vec row_totals = nn::row_sums(A);
    for (std::size_t k = 0; k < A.shape(0); ++k) CHECK_THAT(row_totals(k), WithinAbs(1.0, 1e-12));

    // penalty: our A, the copies of a, the one-hot hops; the last exactly 0 and the copies worst
    const Array& P = recorded(trace, "penalty", "P");
    CHECK(P(2) == 0.0);
    CHECK(P(1) > P(0));

    // causal weights vanish above the diagonal; the wrong way loses weight in every row but the last
    const Array& A_causal = recorded(trace, "causal", "A_causal");
    for (std::size_t i = 0; i < A_causal.shape(0); ++i)
        for (std::size_t j = i + 1; j < A_causal.shape(1); ++j) CHECK(A_causal(i, j) == 0.0);
    const Array& sums = recorded(trace, "wrong-way", "row_sums");
    for (std::size_t i = 0; i + 1 < sums.size(); ++i) CHECK(sums(i) < 0.999);
    CHECK_THAT(sums(sums.size() - 1), WithinAbs(1.0, 1e-12));

    // padding: the <pad> query rows are exactly 0, with no NaN
    const Array& O_pad = recorded(trace, "padding", "O_pad");
    for (std::size_t i = 4; i < O_pad.shape(0); ++i)
        for (std::size_t c = 0; c < O_pad.shape(1); ++c) CHECK(O_pad(i, c) == 0.0);

    // future: causal column 0 everywhere, the unmasked column non-zero before the last row
    const Array& change = recorded(trace, "future", "change");
    for (std::size_t t = 0; t < change.shape(0); ++t) {
        CHECK(change(t, 0) <= 1e-12);
        if (t + 1 < change.shape(0)) CHECK(change(t, 1) > 1e-3);
    }

    // order: without PE the mismatch is rounding, with PE it is visible in every row
    const Array& mismatch = recorded(trace, "order", "mismatch");
    for (std::size_t t = 0; t < mismatch.shape(0); ++t) {
        CHECK(mismatch(t, 0) <= 1e-12);
        CHECK(mismatch(t, 1) > 1e-3);
    }
}

}  // namespace test_self_attention
