// Attention computed tile by tile, never holding the T_q x T_k scores or weights: the forward
// pass of FlashAttention (Dao et al. 2022, arXiv:2205.14135, algorithm 1), with the division by
// the running sum deferred to the end; and its backward pass from the output and each row's
// log-sum-exp alone (Dao et al. 2022, algorithm 4; Dao 2023, FlashAttention-2, algorithm 2). T_q = queries, T_k = keys/values, d_k = query/key width,
// d_v = value width, B_r x B_c = queries x keys of one tile.
#pragma once

#include "core/tensor.hpp"

#include <cstddef>

namespace attn::nn {

// Everything one tiled attention call computed, and what it cost.
struct TiledAttention {
    Mat output;    // T_q x d_v: softmax(Q K^T / sqrt(d_k) (+ causal mask)) V
    Vec row_max;   // T_q: m_i, the largest score of row i (over the keys row i may see)
    Vec row_sum;   // T_q: l_i = sum_j e^{s_ij - m_i} over those keys
    Mat max_after_block;   // T_q x (key blocks): m_i after each key block (-inf where the block was skipped)
    std::size_t exponentials = 0;  // e^{s_ij - m} evaluated, one per score that takes part
    std::size_t rescalings = 0;    // accumulators rescaled by e^{m_old - m_new} < 1 (the max grew)
    std::size_t tiles = 0;         // tiles computed
    std::size_t tiles_skipped = 0; // tiles wholly above the diagonal under the causal flag: never computed
    // bytes of the buffers the algorithm needs: O, m, l and one B_r x B_c tile (max_after_block,
    // kept only for lesson 10 to show, is not counted)
    double working_bytes = 0.0;
};

// For each block of B_r queries (rows i0 .. i0 + B_r - 1, fewer in the last block) and each block
// of B_c keys in order, with m_i = -inf, l_i = 0 and O_i = 0 to start:
//   S = Q_block K_block^T / sqrt(d_k)                               (one B_r x B_c tile)
//   m_new = max(m_i, max_j s_ij),  c = e^{m_i - m_new}
//   l_i = c l_i + sum_j e^{s_ij - m_new},  O_i = c O_i + sum_j e^{s_ij - m_new} v_j
// and O_i / l_i at the end. With `causal`, query i sees keys j <= i: a key block starting after
// the block's last query is skipped whole, and in a tile across the diagonal the entries j > i are
// neither exponentiated nor added. Every number in a fixed order (dot products in the order of
// the width, keys in increasing order), exponentials by portable::exp, one thread: the same bits
// on every x86-64 machine. Throws ShapeError on mismatched shapes and std::invalid_argument for a
// block size of 0, or `causal` with T_q != T_k.
TiledAttention tiled_attention(const Mat& Q, const Mat& K, const Mat& V, std::size_t block_rows,
                               std::size_t block_cols, bool causal);

// L_i = m_i + log l_i, the log of row i's normaliser sum_j e^{s_ij}: all the backward pass keeps of
// the forward's softmax besides the output (-inf for a row that saw no key, l_i = 0). By portable::log.
Vec row_log_sum_exp(const Vec& row_max, const Vec& row_sum);

// D_i = sum_v dO_iv O_iv = dO_i . o_i, in the order of the width: the row term of the softmax's
// backward, sum_j P_ij dP_ij, found without P (o_i = sum_j P_ij v_j; lesson 8, step
// [softmax-backward]). dO, O: T_q x d_v. Throws ShapeError when their shapes differ.
Vec output_gradient_dots(const Mat& dO, const Mat& O);

// One tile of the backward pass: queries first_query .. first_query + queries - 1 against keys
// first_key .. first_key + keys - 1.
struct TileSpan {
    std::size_t first_query = 0, queries = 0, first_key = 0, keys = 0;
};

// One tile's contribution to the gradients, added into dQ (T_q x d_k), dK (T_k x d_k) and dV
// (T_k x d_v), for the queries i and keys j of `tile` (with `causal`, only j <= i):
//   s_ij = q_i . k_j / sqrt(d_k),   P_ij = e^{s_ij - L_i}         (the weights, recomputed)
//   dV_j += P_ij dO_i,              dP_ij = dO_i . v_j,
//   dS_ij = P_ij (dP_ij - D_i),     dQ_i += dS_ij k_j / sqrt(d_k),   dK_j += dS_ij q_i / sqrt(d_k)
// L is row_log_sum_exp of the forward (T_q), D is output_gradient_dots(dO, O) (T_q), dO: T_q x d_v.
// In order: the tile's P (queries by rows, keys in increasing order), then dV, then dS, then dQ and
// dK, each sum in increasing order of its index; exponentials by portable::exp. The classroom
// exercise flash-backward-tile (lessons/exercises/flash_backward_tile.cpp); lesson 10's steps
// [backward-tiles] and [backward-causal] check it. Throws ShapeError on mismatched shapes and
// std::invalid_argument for a tile outside the matrices.
void flash_backward_tile(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO, const Vec& L, const Vec& D,
                         const TileSpan& tile, bool causal, Mat& dQ, Mat& dK, Mat& dV);

// The gradients of tiled attention, and what computing them held and did.
struct TiledAttentionGrads {
    Mat dQ, dK, dV;  // T_q x d_k, T_k x d_k, T_k x d_v
    Vec D;           // T_q: D_i = dO_i . o_i
    std::size_t tiles = 0;          // tiles computed
    std::size_t tiles_skipped = 0;  // tiles wholly above the diagonal under the causal flag
    // bytes held besides Q, K, V and dO: the saved O and L, D, dQ, dK, dV, and the two B_r x B_c
    // tiles one call of flash_backward_tile holds at a time (P and dS)
    double working_bytes = 0.0;
};

// FlashAttention's backward (Dao et al. 2022, algorithm 4, without dropout): D from dO and O,
// then for each block of B_c keys in order (the outer loop, which keeps dK_j and dV_j of the block
// in fast memory on a GPU) and each block of B_r queries in order, flash_backward_tile. With
// `causal`, a tile whose first key comes after its last query is skipped whole. O and L are what
// the forward saved (tiled_attention's output and row_log_sum_exp of its row_max and row_sum).
// Fixed order, one thread: the same bits on every x86-64 machine. Throws as tiled_attention does,
// and ShapeError when O, L or dO do not fit.
TiledAttentionGrads tiled_attention_backward(const Mat& Q, const Mat& K, const Mat& V, const Mat& O, const Vec& L,
                                             const Mat& dO, std::size_t block_rows, std::size_t block_cols,
                                             bool causal);

}  // namespace attn::nn
