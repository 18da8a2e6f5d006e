#include "nn/unroll.hpp"

#include "nn/linalg.hpp"
#include "nn/rnn.hpp"
#include "nn/self_attention.hpp"

#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>

namespace attn::nn {

namespace {

// prod_{j=from..to} u_j of feature k, steps counted from 1; 1 when from > to.
double gate_product(const Mat& gates, std::size_t k, std::size_t from, std::size_t to) {
    double product = 1.0;
    for (std::size_t j = from; j <= to; ++j) product *= gates(j - 1, k);
    return product;
}

// prod_{j=from..to} (1 - u_j) of feature k; 1 when from > to.
double complement_product(const Mat& gates, std::size_t k, std::size_t from, std::size_t to) {
    double product = 1.0;
    for (std::size_t j = from; j <= to; ++j) product *= 1.0 - gates(j - 1, k);
    return product;
}

Tensor3 empty_weights(const Mat& gates) {
    const std::size_t T = gates.shape(0), d = gates.shape(1);
    return xt::zeros<double>({d, T, T + 1});
}

void check_candidate_params(const CandidateParams& p, std::size_t d_in) {
    const std::size_t d = p.U.shape(0);
    expect_shape("candidate W", p.W, {d, d_in});
    expect_shape("candidate U", p.U, {d, d});
    expect_shape("candidate b", p.b, {d});
}

// h~_t = tanh(W x_t + U h_{t-1} + b)
Vec candidate(const CandidateParams& p, const Vec& x, const Vec& h_prev) {
    return tanh_each(matvec(p.W, x, "W x_t") + matvec(p.U, h_prev, "U h_{t-1}") + p.b);
}

Mat row_matrix(const Vec& v) { return xt::eval(xt::view(v, xt::newaxis(), xt::all())); }

}  // namespace

UpdateOnlyRun update_only_gru_forward(const UpdateOnlyGru& p, const Mat& X, const Vec& h0) {
    const std::size_t T = X.shape(0), d_in = X.shape(1), d = p.U_u.shape(0);
    expect_shape("update gate W_u", p.W_u, {d, d_in});
    expect_shape("update gate U_u", p.U_u, {d, d});
    expect_shape("update gate b_u", p.b_u, {d});
    check_candidate_params(p.candidate, d_in);
    expect_shape("initial state h_0", h0, {d});
    UpdateOnlyRun run{xt::empty<double>({T, d}), xt::empty<double>({T, d}), xt::empty<double>({T, d})};
    Vec h = h0;
    for (std::size_t t = 0; t < T; ++t) {
        const auto r = static_cast<std::ptrdiff_t>(t);
        const Vec x = xt::row(X, r);
        const Vec u = sigmoid(matvec(p.W_u, x, "W_u x_t") + matvec(p.U_u, h, "U_u h_{t-1}") + p.b_u);
        const Vec h_cand = candidate(p.candidate, x, h);
        h = u * h + (1.0 - u) * h_cand;
        xt::row(run.update_gates, r) = u;
        xt::row(run.candidates, r) = h_cand;
        xt::row(run.states, r) = h;
    }
    return run;
}

Tensor3 write_up_unrolled_weights(const Mat& gates) {
    const std::size_t T = gates.shape(0), d = gates.shape(1);
    Tensor3 a = empty_weights(gates);
    for (std::size_t k = 0; k < d; ++k)
        for (std::size_t t = 1; t <= T; ++t)
            for (std::size_t i = 1; i <= t; ++i)
                a(k, t - 1, i) = gate_product(gates, k, 1, t - i + 1) * complement_product(gates, k, 1, i - 1);
    return a;
}

Tensor3 off_by_one_unrolled_weights(const Mat& gates) {
    const std::size_t T = gates.shape(0), d = gates.shape(1);
    Tensor3 a = empty_weights(gates);
    for (std::size_t k = 0; k < d; ++k)
        for (std::size_t t = 1; t <= T; ++t) {
            a(k, t - 1, 0) = gate_product(gates, k, 1, t);
            for (std::size_t i = 1; i <= t; ++i)
                a(k, t - 1, i) = (1.0 - gates(i - 1, k)) * gate_product(gates, k, i, t);
        }
    return a;
}

Mat weighted_states(const Tensor3& weights, const Vec& h0, const Mat& candidates) {
    const std::size_t d = weights.shape(0), T = weights.shape(1);
    expect_shape("unrolled weights", shape_of(weights), {d, T, T + 1});
    expect_shape("initial state h_0", h0, {d});
    expect_shape("candidates", candidates, {T, d});
    Mat states = xt::empty<double>({T, d});
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t k = 0; k < d; ++k) {
            double sum = weights(k, t, 0) * h0(k);
            for (std::size_t i = 1; i <= T; ++i) sum += weights(k, t, i) * candidates(i - 1, k);
            states(t, k) = sum;
        }
    return states;
}

CandidateAttentionRun candidate_attention_forward(const CandidateParams& p, const Mat& X, const Vec& h0) {
    const std::size_t T = X.shape(0), d = p.U.shape(0);
    check_candidate_params(p, X.shape(1));
    expect_shape("inputs X (x_t is compared with h~_i)", X, {T, d});
    expect_shape("initial state h_0", h0, {d});
    CandidateAttentionRun run{xt::zeros<double>({T, T}), xt::empty<double>({T, d}), xt::empty<double>({T, d})};
    Vec h = h0;
    for (std::size_t t = 0; t < T; ++t) {
        const auto r = static_cast<std::ptrdiff_t>(t);
        const Vec x = xt::row(X, r);
        xt::row(run.candidates, r) = candidate(p, x, h);
        // 1. the candidates so far are keys and values, x_t asks the query
        const Mat seen = xt::view(run.candidates, xt::range(0, t + 1), xt::all());
        const AttentionResult step = scaled_dot_product_attention(row_matrix(x), seen, seen);
        // 2. record this step's weights; the later columns of the row stay 0
        xt::view(run.weights, r, xt::range(0, t + 1)) = xt::row(step.weights, 0);
        h = xt::row(step.output, 0);
        xt::row(run.states, r) = h;
    }
    return run;
}

Mat attention_by_positions(const Mat& Q, const Mat& K, const Mat& V, Span span) {
    const std::size_t T = Q.shape(0), d_k = Q.shape(1), d_v = V.shape(1);
    expect_shape("keys K", K, {T, d_k});
    expect_shape("values V", V, {T, d_v});
    const double scale = 1.0 / std::sqrt(static_cast<double>(d_k));
    Mat out = xt::zeros<double>({T, d_v});
    for (std::size_t t = 0; t < T; ++t) {
        const std::size_t visible = span == Span::causal ? t + 1 : T;
        // 1. scores of query t against every key it may read
        std::vector<double> score(visible, 0.0);
        for (std::size_t i = 0; i < visible; ++i)
            for (std::size_t c = 0; c < d_k; ++c) score[i] += Q(t, c) * K(i, c) * scale;
        // 2. softmax; subtracting the largest score keeps exp() from overflowing
        const double largest = *std::max_element(score.begin(), score.end());
        double total = 0.0;
        for (auto& s : score) total += (s = portable::exp(s - largest));
        // 3. the weighted sum of the values
        for (std::size_t i = 0; i < visible; ++i)
            for (std::size_t c = 0; c < d_v; ++c) out(t, c) += score[i] / total * V(i, c);
    }
    return out;
}

Mat position_wise_feed_forward(const FeedForward& g, const Mat& H) {
    const std::size_t d = H.shape(1), d_ff = g.W_1.shape(0), d_out = g.W_2.shape(0);
    expect_shape("feed-forward W_1", g.W_1, {d_ff, d});
    expect_shape("feed-forward b_1", g.b_1, {d_ff});
    expect_shape("feed-forward W_2", g.W_2, {d_out, d_ff});
    expect_shape("feed-forward b_2", g.b_2, {d_out});
    const Mat pre = matmul_transposed(H, g.W_1, "H W_1^T") + g.b_1;
    const Mat hidden = xt::maximum(pre, 0.0);
    return matmul_transposed(hidden, g.W_2, "max(0, .) W_2^T") + g.b_2;
}

namespace {

// sum_t M_tj for every column j, the rows added in order.
Vec sums_down_columns(const Mat& M) {
    Vec out = xt::zeros<double>({M.shape(1)});
    for (std::size_t t = 0; t < M.shape(0); ++t)
        for (std::size_t j = 0; j < M.shape(1); ++j) out(j) += M(t, j);
    return out;
}

}  // namespace

FeedForwardGrads position_wise_feed_forward_backward(const FeedForward& g, const Mat& H, const Mat& dY) {
    const std::size_t T = H.shape(0), d_out = g.W_2.shape(0);
    expect_shape("feed-forward backward dL/dY", dY, {T, d_out});
    // 1. the forward's hidden layer again (cheaper to recompute than to keep)
    const Mat pre = matmul_transposed(H, g.W_1, "H W_1^T") + g.b_1;
    const Mat hidden = xt::maximum(pre, 0.0);
    FeedForwardGrads out;
    // 2. the second layer, 3. the ReLU passes the gradient where it was on, 4. the first layer
    out.params.W_2 = matmul(transposed(dY), hidden, "dY^T U");
    out.params.b_2 = sums_down_columns(dY);
    Mat d_pre = matmul(dY, g.W_2, "dY W_2");
    for (std::size_t k = 0; k < d_pre.size(); ++k)
        if (!(pre.data()[k] > 0.0)) d_pre.data()[k] = 0.0;
    out.params.W_1 = matmul(transposed(d_pre), H, "dA^T H");
    out.params.b_1 = sums_down_columns(d_pre);
    out.dH = matmul(d_pre, g.W_1, "dA W_1");
    return out;
}

}  // namespace attn::nn
