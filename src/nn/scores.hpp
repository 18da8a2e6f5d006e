// Score functions: how well query i matches key j, before the softmax.
// T_q = queries, T_k = keys, d_q / d_k = their widths, d_a = width of the additive layer.
#pragma once

#include "core/tensor.hpp"

namespace attn::nn {

// e_ij = q_i^T k_j                       — Luong et al. 2015, section 3.1 ("dot"); Q: T_q x d, K: T_k x d
Mat dot_scores(const Mat& Q, const Mat& K);

// e_ij = q_i^T W k_j                     — Luong et al. 2015, section 3.1 ("general"); W: d_q x d_k
Mat general_scores(const Mat& Q, const Mat& W, const Mat& K);

// e_ij = q_i^T k_j / sqrt(d)             — Vaswani et al. 2017, eq. 1
Mat scaled_dot_scores(const Mat& Q, const Mat& K);

// e_ij = v^T tanh(W_q q_i + W_k k_j)     — Bahdanau et al. 2015, appendix A.1.2 (eq. 6 normalises it);
// W_q: d_a x d_q, W_k: d_a x d_k, v: d_a. Computed as T_q x T_k independent dot products.
Mat additive_scores(const Mat& Q, const Mat& K, const Mat& W_q, const Mat& W_k, const Vec& v);

// The additive score with its projections already made: e_ij = v^T tanh(P_q[i] + P_k[j]), where
// P_q = Q W_q^T (T_q x d_a) and P_k = K W_k^T (T_k x d_a); the numbers of additive_scores, bit for
// bit. A decoder's keys stay fixed for a whole sentence while its query moves, so it projects
// them once per sentence instead of once per word (lesson 9's training). Part of the classroom
// exercise additive-score, with additive_scores.
Mat additive_scores_projected(const Mat& projected_q, const Mat& projected_k, const Vec& v);

// e_ij = v^T tanh(W [q_i; k_j])          — Luong et al. 2015, section 3.1 ("concat"); W: d_a x (d_q + d_k).
// The same function as additive_scores with W = [W_q W_k]: computed by it, with W's first d_q
// columns as W_q and the rest as W_k (so it is no way round the exercise additive-score).
Mat concat_scores(const Mat& Q, const Mat& K, const Mat& W, const Vec& v);

}  // namespace attn::nn
