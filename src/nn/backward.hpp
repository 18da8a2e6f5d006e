// Backward passes: given dL/d(output) of an op for some scalar loss L, the gradients dL/d(input)
// of each of its inputs, named after them (dQ is dL/dQ, dW_z is dL/dW_z).
// T = positions (time steps), T_q = queries, T_k = keys/values, d_q / d_k = query/key widths,
// d_v = value width, d_a = width of the additive layer, d_in = GRU input width, d = GRU hidden width.
#pragma once

#include "core/tensor.hpp"
#include "nn/multi_head.hpp"
#include "nn/rnn.hpp"
#include "nn/self_attention.hpp"

namespace attn::nn {

// dS = P * (dP - rowsum(dP * P) 1^T), P = softmax_rows(S)   — Dao et al. 2022, appendix B.2
// The softmax Jacobian of each row (softmax_jacobian) applied to that row of dP, without forming it.
// P, dP: T_q x T_k. A row of P that is all zero (masked everywhere) gets an all-zero row of dS, and
// an entry with P_ij = 0 (masked) gets dS_ij = 0 exactly.
Mat softmax_rows_backward(const Mat& P, const Mat& dP);

// J = diag(p) - p p^T, J_jk = dp_j / ds_k for p = softmax(s)   (T x T, symmetric)
// Its rows sum to 0 (adding a constant to every logit changes nothing), so its rank is at most
// T - 1, and exactly T - 1 when no p_j is 0.
Mat softmax_jacobian(const Vec& p);

// The gradients of scaled dot-product attention with respect to its inputs, and the two
// intermediate ones a lesson shows: dP for the weights and dS for the scaled, masked scores.
struct AttentionGrads {
    Mat dQ;  // T_q x d_k
    Mat dK;  // T_k x d_k
    Mat dV;  // T_k x d_v
    Mat dP;  // T_q x T_k, dL/d(weights)
    Mat dS;  // T_q x T_k, dL/d(scores); exactly 0 wherever the weight is 0 (masked)
};

// dV = P^T dO, dP = dO V^T, dS = softmax_rows_backward(P, dP), dQ = dS K / sqrt(d_k), dK = dS^T Q / sqrt(d_k)
// — the backward of Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + M) V (Vaswani et al. 2017, eq. 1);
// Dao et al. 2022, appendix B.2. `forward` is what scaled_dot_product_attention(Q, K, V[, M])
// returned (its weights P are reused, not recomputed); dO: T_q x d_v. The mask M is a constant
// and needs no gradient: its effect is in P.
AttentionGrads scaled_dot_product_attention_backward(const Mat& Q, const Mat& K, const Mat& V,
                                                     const AttentionResult& forward, const Mat& dO);

// The gradients of the additive score with respect to all its inputs.
struct AdditiveScoreGrads {
    Mat dQ;    // T_q x d_q
    Mat dK;    // T_k x d_k
    Mat dW_q;  // d_a x d_q
    Mat dW_k;  // d_a x d_k
    Vec dv;    // d_a
};

// With u_ij = W_q q_i + W_k k_j and e_ij = v^T tanh(u_ij)   — Bahdanau et al. 2015, appendix A.1.2:
// dv = sum_ij dE_ij tanh(u_ij),  du_ij = dE_ij v * (1 - tanh(u_ij)^2),
// dQ_i = W_q^T sum_j du_ij,  dK_j = W_k^T sum_i du_ij,  dW_q = sum_ij du_ij q_i^T,  dW_k = sum_ij du_ij k_j^T.
// Inputs as for additive_scores; dE: T_q x T_k.
AdditiveScoreGrads additive_scores_backward(const Mat& Q, const Mat& K, const Mat& W_q, const Mat& W_k,
                                            const Vec& v, const Mat& dE);

// The first half of that backward, for additive_scores_projected: dv and the gradients of the
// projections, dP_q = sum_j du_ij (T_q x d_a) and dP_k = sum_i du_ij (T_k x d_a). The rest is
// the projections' own: dQ = dP_q W_q, dW_q = dP_q^T Q (and so for K). additive_scores_backward
// is this, then that.
struct ProjectedScoreGrads {
    Mat d_projected_q;
    Mat d_projected_k;
    Vec dv;
};
ProjectedScoreGrads additive_scores_projected_backward(const Mat& projected_q, const Mat& projected_k, const Vec& v,
                                                       const Mat& dE);

// The gradients of a GRU's weights, laid out as GruParams (dW_z is dL/dW_z, d x d_in, ...).
struct GruGrads {
    Mat dW_z, dU_z;
    Vec db_z;
    Mat dW_r, dU_r;
    Vec db_r;
    Mat dW_h, dU_h;
    Vec db_h;
};

// Gradients of zero, shaped like p's weights: where gru_step_backward starts accumulating.
inline GruGrads zero_gru_grads(const GruParams& p) {
    const std::size_t d = p.hidden_width(), d_in = p.input_width();
    return {xt::zeros<double>({d, d_in}), xt::zeros<double>({d, d}), xt::zeros<double>({d}),
            xt::zeros<double>({d, d_in}), xt::zeros<double>({d, d}), xt::zeros<double>({d}),
            xt::zeros<double>({d, d_in}), xt::zeros<double>({d, d}), xt::zeros<double>({d})};
}

// The gradients of one step's inputs.
struct GruStepGrads {
    Vec dx;       // d_in, dL/dx_t
    Vec dh_prev;  // d, dL/dh_{t-1}
};

// The backward of one GRU step (Cho et al. 2014, eqs. 5-8, written out in nn/rnn.hpp), with
// a_z, a_r, a_h the pre-activations of z_t, r_t, h~_t:
// dz = dh * (h_{t-1} - h~),  dh~ = dh * (1 - z),  da_h = dh~ * (1 - h~^2),
// d(r * h_{t-1}) = U_h^T da_h,  dr = d(r * h_{t-1}) * h_{t-1},
// da_z = dz * z * (1 - z),  da_r = dr * r * (1 - r),
// dx = W_z^T da_z + W_r^T da_r + W_h^T da_h,
// dh_{t-1} = dh * z + d(r * h_{t-1}) * r + U_z^T da_z + U_r^T da_r,
// dW_* += da_* x^T, db_* += da_*, dU_z += da_z h_{t-1}^T, dU_r += da_r h_{t-1}^T, dU_h += da_h (r * h_{t-1})^T.
// `step` is what gru_step(p, x, h_prev) returned; dh (d) is dL/dh_t. The weight gradients are
// added to `grads` (a weight serves every step of a sequence, so its gradient is their sum).
GruStepGrads gru_step_backward(const GruParams& p, const Vec& x, const Vec& h_prev, const GruStep& step,
                               const Vec& dh, GruGrads& grads);

// The gradients of a whole run.
struct GruRunGrads {
    GruGrads params;  // summed over the steps
    Mat dX;           // T x d_in, row t is dL/dx_t
    Vec dh0;          // d
};

// Backpropagation through time (Werbos 1990): from t = T down to 1, dL/dh_t is dH's row t (the
// loss's direct use of h_t) plus what step t + 1 sends back through h_t, and gru_step_backward
// turns it into dL/dx_t, dL/dh_{t-1} and the step's share of the weight gradients.
// `run` is what gru_forward(p, X, h0) returned; X: T x d_in, h0: d, dH: T x d.
GruRunGrads gru_backward(const GruParams& p, const Mat& X, const Vec& h0, const GruRun& run, const Mat& dH);

// The gradients of multi-head self-attention, laid out as MultiHeadParams (dW_Q in W_Q, ...).
struct MultiHeadGrads {
    Mat dX;                  // T x d_model
    MultiHeadParams params;
};

// dW^O = Concat^T dY,  dConcat = dY W^O^T; for each head i, its columns of dConcat are the dO of
// scaled_dot_product_attention_backward on Q_i = X W_i^Q, K_i, V_i, whose dQ_i, dK_i, dV_i give
// head i's columns of dW^Q = X^T dQ_i (likewise K, V), and dX = sum_i dQ_i W_i^Q^T + dK_i W_i^K^T
// + dV_i W_i^V^T (X feeds the queries, the keys and the values of every head)
// — the backward of multi_head_attention(X, X, p, heads, mask) (Vaswani et al. 2017, section 3.2.2).
// `forward` is what that call returned, with its weights kept; dY: T x d_model.
MultiHeadGrads multi_head_self_attention_backward(const Mat& X, const MultiHeadParams& p, std::size_t heads,
                                                  const MultiHeadResult& forward, const Mat& dY);

}  // namespace attn::nn
