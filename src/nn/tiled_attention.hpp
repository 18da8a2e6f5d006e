// Attention computed tile by tile, never holding the T_q x T_k scores or weights: the forward
// pass of FlashAttention (Dao et al. 2022, arXiv:2205.14135, algorithm 1), with the division by
// the running sum deferred to the end. T_q = queries, T_k = keys/values, d_k = query/key width,
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

}  // namespace attn::nn
