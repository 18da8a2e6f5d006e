// From a GRU to self-attention (lesson 5): the GRU without its reset gate, its state unrolled into
// a weighted sum of candidates, the recurrence with attention weights in place of the gate
// products, attention written position by position, and the position-wise feed-forward network.
// T = time steps (positions), d = state width, d_k = query/key width, d_v = value width,
// d_ff = hidden width of the feed-forward network.
#pragma once

#include "core/tensor.hpp"

#include <xtensor/xtensor.hpp>

namespace attn::nn {

using Tensor3 = xt::xtensor<double, 3>;

// The candidate's weights: h~_t = tanh(W x_t + U h_{t-1} + b); W: d x d_in, U: d x d, b: d.
struct CandidateParams {
    Mat W, U;
    Vec b;
};

// A GRU whose reset gate is dropped (held at r_t = 1), the simplification the unrolling needs.
// W_u: d x d_in, U_u: d x d, b_u: d.
struct UpdateOnlyGru {
    Mat W_u, U_u;
    Vec b_u;
    CandidateParams candidate;
};

struct UpdateOnlyRun {
    Mat update_gates;  // T x d, row t-1 is u_t
    Mat candidates;    // T x d, row t-1 is h~_t
    Mat states;        // T x d, row t-1 is h_t
};

// u_t  = sigmoid(W_u x_t + U_u h_{t-1} + b_u)    — Cho et al. 2014, eq. 6 (their z_t)
// h~_t = tanh(W x_t + U h_{t-1} + b)             — eq. 8 with r_t = 1
// h_t  = u_t * h_{t-1} + (1 - u_t) * h~_t         — eq. 7 (elementwise)
// X: T x d_in, h0: d.
UpdateOnlyRun update_only_gru_forward(const UpdateOnlyGru& p, const Mat& X, const Vec& h0);

// The weights of the unrolled update, feature by feature (an empty product is 1):
//   h_t = a_{t,0} * h_0 + sum_{i=1..t} a_{t,i} * h~_i,
//   a_{t,0} = prod_{j=1..t} u_j,   a_{t,i} = (1 - u_i) * prod_{j=i+1..t} u_j,   a_{t,i} = 0 for i > t.
// update_gates: T x d. Returns d x T x (T + 1): [k][t-1][i] is a_{t,i} of feature k, column 0 for h_0.
// Each row sums to 1: the state is a convex combination of h_0 and the candidates so far.
Tensor3 unrolled_weights(const Mat& update_gates);

// Two wrong closed forms, kept so that the lesson and the tests can show that they fail.
// A popular write-up's:  a_{t,0} = 0,  a_{t,i} = prod_{j=1..t-i+1} u_j * prod_{k=1..i-1} (1 - u_k).
Tensor3 write_up_unrolled_weights(const Mat& update_gates);
// The product started one step early, so the step's own gate is counted twice:
//   a_{t,0} as above,  a_{t,i} = (1 - u_i) * prod_{j=i..t} u_j.
Tensor3 off_by_one_unrolled_weights(const Mat& update_gates);

// h_t[k] = a_{t,0}[k] h_0[k] + sum_i a_{t,i}[k] h~_i[k] for weights from the functions above.
// weights: d x T x (T + 1), h0: d, candidates: T x d. Returns T x d.
Mat weighted_states(const Tensor3& weights, const Vec& h0, const Mat& candidates);

struct CandidateAttentionRun {
    Mat weights;     // T x T, row t-1 is alpha_{t,.}; zero above the diagonal
    Mat candidates;  // T x d, row t-1 is h~_t
    Mat states;      // T x d, row t-1 is h_t
};

// The recurrence with its gate products replaced by attention weights:
//   h~_t = tanh(W x_t + U h_{t-1} + b),
//   alpha_{t,i} = softmax over i <= t of h~_i . x_t / sqrt(d),   h_t = sum_{i<=t} alpha_{t,i} h~_i.
// The candidate still reads h_{t-1}, so the steps run in order. X: T x d (x_t is compared with h~_i,
// so inputs and states have one width), h0: d.
CandidateAttentionRun candidate_attention_forward(const CandidateParams& p, const Mat& X, const Vec& h0);

// Which positions a query may read: its own and earlier ones, or all of them.
enum class Span { causal, full };

// h_t = sum_i alpha_{t,i} v_i,  alpha_{t,i} = exp(s_{t,i}) / sum_{i'} exp(s_{t,i'}),  s_{t,i} = q_t . k_i / sqrt(d_k),
// with i and i' over the span of t — Vaswani et al. 2017, eq. 1, one query at a time with explicit
// sums: the loop form that the matrix form must equal. Q: T x d_k, K: T x d_k, V: T x d_v.
Mat attention_by_positions(const Mat& Q, const Mat& K, const Mat& V, Span span);

// The position-wise feed-forward network. W_1: d_ff x d, b_1: d_ff, W_2: d_out x d_ff, b_2: d_out.
struct FeedForward {
    Mat W_1;
    Vec b_1;
    Mat W_2;
    Vec b_2;
};

// g(h) = W_2 max(0, W_1 h + b_1) + b_2 for each row h of H    — Vaswani et al. 2017, eq. 2
// H: T x d. Returns T x d_out.
Mat position_wise_feed_forward(const FeedForward& g, const Mat& H);

// The gradients of the network's input and weights, laid out as FeedForward (dW_1 in W_1, ...).
struct FeedForwardGrads {
    Mat dH;             // T x d
    FeedForward params;
};

// With A = H W_1^T + b_1 and U = max(0, A):  dW_2 = dY^T U,  db_2 = sum_t dY_t,  dU = dY W_2,
// dA = dU * [A > 0],  dW_1 = dA^T H,  db_1 = sum_t dA_t,  dH = dA W_1 — the chain rule through
// eq. 2 of Vaswani et al. 2017 (the ReLU's derivative taken as 0 at 0). H: T x d, dY: T x d_out.
FeedForwardGrads position_wise_feed_forward_backward(const FeedForward& g, const Mat& H, const Mat& dY);

}  // namespace attn::nn
