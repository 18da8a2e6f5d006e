// Attention for speed: softmax(Q K^T / sqrt(d_k) (+ causal mask)) V without the T_q x T_k scores
// or weights, in blocks of queries against blocks of keys with a running maximum and sum per query
// (the bookkeeping of nn::tiled_attention), the tiles multiplied by the register-blocked product
// kernel (nn::matmul_packed) and the query blocks shared between two threads; and its backward pass
// from the output and each row's log-sum-exp. For the benchmark (tests/bench) and lesson 7's
// timings. Its numbers differ from
// nn::scaled_dot_product_attention's in the last bits (1/sqrt(d_k) is applied to Q, the tiles' sums
// are added in another order; tests/test_online_softmax.cpp compares the two, within 1e-12).
// `arithmetic` (nn/kernels.hpp) says whether they must also be the same on every processor:
//   Arithmetic::portable  the same bits everywhere, as the kernels' (each query block on one thread,
//                         no fused multiply-add): what lesson 7 uses, since it records how far the
//                         outputs are from the plain form's;
//   Arithmetic::native    fused multiply-add and a fused exp where the processor has FMA (the
//                         benchmark): about 1.7 times as fast (products and softmax rows at T = 1024,
//                         d = 64 on the project's AMD EPYC with AVX-512), as close to the plain form,
//                         but its last bits depend on the processor. Never for a number a lesson
//                         records.
// T_q = queries, T_k = keys/values, d_k = query/key width, d_v = value width, h = heads.
#pragma once

#include "core/tensor.hpp"
#include "nn/kernels.hpp"
#include "nn/multi_head.hpp"

namespace attn::nn {

// Q: T_q x d_k, K: T_k x d_k, V: T_k x d_v; returns T_q x d_v. With `causal` (T_q = T_k) query i
// sees keys j <= i: key blocks wholly after a query block are not multiplied, and no exponential
// is computed for a masked key. Memory besides the result: Q scaled, K and V packed (T_q d_k +
// T_k (d_k + d_v) doubles, rounded up to 8 keys and 8 value columns) and per query block in flight
// a 64 x 256 tile. Throws ShapeError on mismatched shapes, std::invalid_argument for `causal` with
// T_q != T_k.
Mat fast_attention(const Mat& Q, const Mat& K, const Mat& V, bool causal, Arithmetic arithmetic);

// fast_attention's output and each row's log-sum-exp L_i = m_i + log l_i (-inf for a row that saw
// no key), all its backward pass needs of the forward besides the output.
struct FastAttentionForward {
    Mat output;  // T_q x d_v
    Vec L;       // T_q
};
FastAttentionForward fast_attention_forward(const Mat& Q, const Mat& K, const Mat& V, bool causal,
                                            Arithmetic arithmetic);

// The gradients of fast attention, laid out as nn::AttentionGrads without its T_q x T_k dP and dS.
struct FastAttentionGrads {
    Mat dQ;  // T_q x d_k
    Mat dK;  // T_k x d_k
    Mat dV;  // T_k x d_v
};

// FlashAttention's backward pass (Dao et al. 2022, algorithm 4) on the register-tiled product: from
// the forward's O and L (fast_attention_forward) and dO = dL/dO (T_q x d_v), with D_i = dO_i . o_i,
// per tile of 64 queries by 128 keys P = e^{S - L}, dV += P^T dO, dP = dO V^T, dS = P * (dP - D),
// dK += dS^T Q / sqrt(d_k), dQ += dS K / sqrt(d_k). The key blocks are dealt to two groups (even and
// odd blocks, on the two threads), each owning its blocks' rows of dK and dV and a dQ of its own; the
// two dQ are added at the end, in that order, so the result does not depend on the threads. With
// `causal`, the tiles above the diagonal are skipped and no exponential is taken for a masked pair.
// Memory besides the inputs and the result: Q scaled, K, V, Q and dO packed, the second dQ, D (about
// 6 T d doubles) and per group in flight four 64 x 128 tiles: O(T d), never T_q x T_k. Within 1e-12 of
// nn::scaled_dot_product_attention_backward's gradients, relative to their largest entry
// (tests/test_online_softmax.cpp), not the same bits. Throws as fast_attention does, and ShapeError
// when O, L or dO do not fit.
FastAttentionGrads fast_attention_backward(const Mat& Q, const Mat& K, const Mat& V, const Mat& O, const Vec& L,
                                           const Mat& dO, bool causal, Arithmetic arithmetic);

// Concat(head_1, ..., head_h) W^O with head_i = fast_attention(X_q W_i^Q, X_kv W_i^K, X_kv W_i^V,
// causal): nn::multi_head_attention's output (HeadWeights::drop, a causal mask or none) by the fast
// path. The heads are shared between the threads, each whole on one (its three projections in one
// product when X_q and X_kv are the same matrix, then its attention; one head's projections per
// thread held at a time), then Concat W^O on both threads (nn::matmul_span). Throws as
// multi_head_attention and fast_attention do.
Mat fast_multi_head_attention(const Mat& X_q, const Mat& X_kv, const MultiHeadParams& p, std::size_t heads,
                              bool causal, Arithmetic arithmetic);

}  // namespace attn::nn
