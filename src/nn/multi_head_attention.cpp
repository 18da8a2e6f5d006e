// Multi-head attention, Concat(head_1, ..., head_h) W^O — Vaswani et al. 2017, section 3.2.2 (see
// nn/multi_head.hpp).
// The classroom exercise multi-head; the student's version is lessons/exercises/multi_head.cpp.
// h = heads, T_q = queries, T_k = keys/values, d_model = model width, d_k = d_v = d_model / h.
#include "nn/multi_head.hpp"

#include "nn/linalg.hpp"
#include "nn/kernels.hpp"
#include "nn/reference/softmax_row.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace attn::nn {

namespace {

// Columns [i d_k, (i+1) d_k) of W, times `scale`, as a contiguous d_model x d_k matrix: W_i.
Mat head_columns(const Mat& W, std::size_t i, std::size_t d_k, double scale = 1.0) {
    const std::size_t rows = W.shape(0), cols = W.shape(1);
    Mat out = xt::empty<double>({rows, d_k});
    for (std::size_t r = 0; r < rows; ++r) {
        const double* from = W.data() + r * cols + i * d_k;
        double* to = out.data() + r * d_k;
        for (std::size_t a = 0; a < d_k; ++a) to[a] = scale * from[a];
    }
    return out;
}

// Q_i K_i^T / sqrt(d_k) for head i, with Q_i = X_q W_i^Q and K_i = X_kv W_i^K. 1/sqrt(d_k) scales the
// d_model x d_k block of W^Q rather than the T_q x T_k scores; Q_i and K_i are gone on return.
Mat head_scores(const Mat& X_q, const Mat& X_kv, const MultiHeadParams& p, std::size_t i, std::size_t d_k) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(d_k));
    const Mat Q_i = matmul(X_q, head_columns(p.W_Q, i, d_k, scale), "X_q W_i^Q");
    const Mat K_i = matmul(X_kv, head_columns(p.W_K, i, d_k), "X_kv W_i^K");
    return matmul(Q_i, transposed(K_i), "Q_i K_i^T");
}

void expect_width(const char* what, const Mat& X, std::size_t d_model) {
    if (X.shape(1) != d_model)
        throw ShapeError(std::string("multi-head attention: ") + what + " " + shape_string(shape_of(X)) +
                         " must have d_model = " + std::to_string(d_model) + " columns, as X_q has");
}

}  // namespace

MultiHeadResult multi_head_attention(const Mat& X_q, const Mat& X_kv, const MultiHeadParams& p, std::size_t heads,
                                     const Mat* mask, HeadWeights keep) {
    const std::size_t T_q = X_q.shape(0), T_k = X_kv.shape(0), d_model = X_q.shape(1);
    const std::size_t d_k = head_width(d_model, heads);
    const double minus_inf = -std::numeric_limits<double>::infinity();
    expect_width("X_kv", X_kv, d_model);
    expect_shape("multi-head attention: W_Q", p.W_Q, {d_model, d_model});
    expect_shape("multi-head attention: W_K", p.W_K, {d_model, d_model});
    expect_shape("multi-head attention: W_V", p.W_V, {d_model, d_model});
    expect_shape("multi-head attention: W_O", p.W_O, {d_model, d_model});
    if (mask) expect_shape("multi-head attention: mask", *mask, {T_q, T_k});

    // Head by head, each with its own blocks of the projections. The products and multiply-adds are
    // those of one projection split into heads (see split_heads), but at most one head's
    // projections and one T_q x T_k matrix exist at a time: with the results, about 2.4 T_q T_k
    // doubles at T_k = d_model (HeadWeights::keep adds h T_q T_k).
    MultiHeadResult r;
    if (keep == HeadWeights::keep) r.weights = xt::empty<double>({heads, T_q, T_k});
    r.concat = xt::empty<double>({T_q, d_model});
    for (std::size_t i = 0; i < heads; ++i) {
        // 1. scores, 2. mask (-inf wherever M is), 3. softmax along each row, in place and row by
        // row: the scores become the weights without a second T_q x T_k matrix (the same numbers as
        // masked_softmax: the softmax is the reference's own, nn/reference/softmax_row.hpp)
        Mat weights = head_scores(X_q, X_kv, p, i, d_k);
        for_each_row(T_q, T_k, [&](std::size_t t) {
            double* row = weights.data() + t * T_k;
            if (mask) {
                // -inf wherever M is, whatever the score (+inf + -inf would be NaN)
                const double* m = mask->data() + t * T_k;
                for (std::size_t j = 0; j < T_k; ++j) row[j] = m[j] == minus_inf ? minus_inf : row[j] + m[j];
            }
            softmax_row(row, row, T_k);
        });
        // 4. head_i = A_i V_i, into its d_v columns of Concat(head_1, ..., head_h)
        const Mat V_i = matmul(X_kv, head_columns(p.W_V, i, d_k), "X_kv W_i^V");
        const Mat head = matmul(weights, V_i, "A_i V_i");
        for (std::size_t t = 0; t < T_q; ++t)
            std::copy(head.data() + t * d_k, head.data() + (t + 1) * d_k, r.concat.data() + t * d_model + i * d_k);
        if (keep == HeadWeights::keep)
            std::copy(weights.data(), weights.data() + T_q * T_k, r.weights.data() + i * T_q * T_k);
    }

    // 5. mix: W^O lets every output feature read every head
    r.output = matmul(r.concat, p.W_O, "Concat(heads) W^O");
    return r;
}

}  // namespace attn::nn
