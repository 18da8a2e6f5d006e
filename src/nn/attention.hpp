// Attention weights applied to values, and local attention windows.
// T_q = queries, T_k = keys/values (S, the source length, in local attention), d_v = value width,
// D = half-width of a local window.
#pragma once

#include "core/tensor.hpp"

namespace attn::nn {

// c_i = sum_j alpha_ij h_j, i.e. C = A H    — Bahdanau et al. 2015, eq. 5
// A: T_q x T_k attention weights, H: T_k x d_v values.
Mat context_vectors(const Mat& weights, const Mat& values);

// h~_t = tanh(W_c [c_t; h_t])    — Luong et al. 2015, eq. 5 (the attentional hidden state)
// C: T_q x d_c contexts, H: T_q x d_h decoder states, W_c: d_out x (d_c + d_h).
Mat attentional_states(const Mat& contexts, const Mat& states, const Mat& W_c);

// Local-p attention (Luong et al. 2015, section 3.2). Source positions s count from 1 to S.

// p_t = S * sigmoid(v_p^T tanh(W_p h_t))    — Luong et al. 2015, eq. 9 (arXiv:1508.04025v5)
// H: T_q x d, W_p: d_p x d, v_p: d_p. Every p_t lies in [0, S].
Vec predicted_positions(const Mat& states, const Mat& W_p, const Vec& v_p, std::size_t source_length);

// T_q x S: 1 where p_t - D <= s <= p_t + D, else 0. The window is clipped at the sentence edges:
// positions before 1 or after S do not exist, so an edge window holds fewer positions.
// Throws std::invalid_argument for D = 0 (sigma = D / 2 would be 0).
Mat local_window(const Vec& positions, std::size_t source_length, std::size_t half_width);

// T_q x S: exp(-(s - p_t)^2 / (2 sigma^2)) with sigma = D / 2    — Luong et al. 2015, eq. 10 (arXiv v5)
Mat gaussian_factors(const Vec& positions, std::size_t source_length, std::size_t half_width);

// a_t(s) = softmax of e_t over the window, times the Gaussian factor; exactly 0 outside the window.
// Not renormalised after the Gaussian (as in Luong et al. 2015, eq. 10), so a row sums to at most 1,
// usually less.
// scores: T_q x S, positions: T_q.
Mat local_p_weights(const Mat& scores, const Vec& positions, std::size_t half_width);

// p_t = t for t = 1..T: local-m's positions, as if target and source were aligned word for word.
Vec monotonic_positions(std::size_t T);

// Local-m (Luong et al. 2015, section 3.2): p_t = t (positions from 1), as if source and target
// were aligned word for word; the softmax of e_t over the window |s - t| <= D, exactly 0 outside,
// and no Gaussian. scores: T_q x S.
Mat local_m_weights(const Mat& scores, std::size_t half_width);

// Location-based alignment (Luong et al. 2015, eq. 8 of arXiv v5): a_t = softmax(W_a h_t), from
// the target state alone; the source words are never looked at. states: T_q x d, W_a: S x d.
Mat location_weights(const Mat& states, const Mat& W_a);

}  // namespace attn::nn
