// Grouped-query and multi-query attention (see nn/grouped_query.hpp).
// h = query heads, n_kv = key-value heads, d_model = model width, d_k = d_model / h.
#include "nn/grouped_query.hpp"

#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace attn::nn {

namespace {

// Columns [i d_k, (i+1) d_k) of W, each times `scale` (as nn::multi_head_attention scales W_i^Q).
Mat scaled_head(const Mat& W, std::size_t i, std::size_t d_k, double scale) {
    Mat out = columns_of(W, i * d_k, (i + 1) * d_k);
    for (std::size_t k = 0; k < out.size(); ++k) out.data()[k] = scale * out.data()[k];
    return out;
}

void expect_groups(std::size_t heads, std::size_t kv_heads) {
    if (kv_heads == 0 || kv_heads > heads || heads % kv_heads != 0)
        throw ShapeError("grouped-query attention: " + std::to_string(kv_heads) +
                         " key-value heads must be at least 1 and divide the " + std::to_string(heads) +
                         " query heads");
}

}  // namespace

std::size_t kv_head_of(std::size_t query_head, std::size_t heads, std::size_t kv_heads) {
    expect_groups(heads, kv_heads);
    if (query_head >= heads)
        throw ShapeError("grouped-query attention: query head " + std::to_string(query_head + 1) + " of " +
                         std::to_string(heads));
    return query_head / (heads / kv_heads);
}

MultiHeadResult grouped_query_attention(const Mat& X_q, const Mat& X_kv, const GroupedQueryParams& p,
                                        std::size_t heads, std::size_t kv_heads, const Mat* mask) {
    const std::size_t T_q = X_q.shape(0), T_k = X_kv.shape(0), d_model = X_q.shape(1);
    const std::size_t d_k = head_width(d_model, heads);
    expect_groups(heads, kv_heads);
    expect_shape("grouped-query attention: X_kv", X_kv, {T_k, d_model});
    expect_shape("grouped-query attention: W_Q", p.W_Q, {d_model, d_model});
    expect_shape("grouped-query attention: W_K", p.W_K, {d_model, kv_heads * d_k});
    expect_shape("grouped-query attention: W_V", p.W_V, {d_model, kv_heads * d_k});
    expect_shape("grouped-query attention: W_O", p.W_O, {d_model, d_model});
    if (mask) expect_shape("grouped-query attention: mask", *mask, {T_q, T_k});
    // 1. the n_kv keys and values, once each
    std::vector<Mat> K, V;
    for (std::size_t g = 0; g < kv_heads; ++g) {
        K.push_back(transposed(matmul(X_kv, columns_of(p.W_K, g * d_k, (g + 1) * d_k), "X_kv W_g^K")));
        V.push_back(matmul(X_kv, columns_of(p.W_V, g * d_k, (g + 1) * d_k), "X_kv W_g^V"));
    }
    // 2. every query head against its group's key and value
    const double scale = 1.0 / std::sqrt(static_cast<double>(d_k));
    MultiHeadResult r;
    r.weights = xt::empty<double>({heads, T_q, T_k});
    r.concat = xt::empty<double>({T_q, d_model});
    for (std::size_t i = 0; i < heads; ++i) {
        const std::size_t g = kv_head_of(i, heads, kv_heads);
        const Mat Q_i = matmul(X_q, scaled_head(p.W_Q, i, d_k, scale), "X_q W_i^Q");
        const Mat S = matmul(Q_i, K[g], "Q_i K_g^T");
        const Mat A = mask ? masked_softmax(S, *mask) : softmax_rows(S);
        set_columns(r.concat, i * d_k, matmul(A, V[g], "A_i V_g"));
        std::copy(A.data(), A.data() + T_q * T_k, r.weights.data() + i * T_q * T_k);
    }
    // 3. mix, as multi-head attention does
    r.output = matmul(r.concat, p.W_O, "Concat(heads) W^O");
    return r;
}

Mat mean_pooled_heads(const Mat& W, std::size_t heads, std::size_t kv_heads) {
    expect_groups(heads, kv_heads);
    const std::size_t rows = W.shape(0), d_k = head_width(W.shape(1), heads), group = heads / kv_heads;
    Mat out = zeros(rows, kv_heads * d_k);
    for (std::size_t g = 0; g < kv_heads; ++g)
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t a = 0; a < d_k; ++a) {
                double sum = W(r, g * group * d_k + a);
                for (std::size_t i = 1; i < group; ++i) sum += W(r, (g * group + i) * d_k + a);
                out(r, g * d_k + a) = sum / static_cast<double>(group);
            }
    return out;
}

Mat repeated_heads(const Mat& W_kv, std::size_t heads, std::size_t kv_heads) {
    expect_groups(heads, kv_heads);
    if (W_kv.shape(1) % kv_heads != 0)
        throw ShapeError("repeated heads: " + std::to_string(W_kv.shape(1)) + " columns are not " +
                         std::to_string(kv_heads) + " heads");
    const std::size_t d_k = W_kv.shape(1) / kv_heads;
    Mat out = xt::empty<double>({W_kv.shape(0), heads * d_k});
    for (std::size_t i = 0; i < heads; ++i) {
        const std::size_t g = kv_head_of(i, heads, kv_heads);
        set_columns(out, i * d_k, columns_of(W_kv, g * d_k, (g + 1) * d_k));
    }
    return out;
}

GroupedQueryParams grouped_query_params(const MultiHeadParams& p, std::size_t heads, std::size_t kv_heads) {
    return {p.W_Q, mean_pooled_heads(p.W_K, heads, kv_heads), mean_pooled_heads(p.W_V, heads, kv_heads), p.W_O};
}

}  // namespace attn::nn
