// Where a Transformer's positions enter (lesson 15's race on length). Four schemes:
//   added  the inputs E[ids] sqrt(d_model) + PE: the sinusoids of Vaswani et al. 2017 (section 3.5),
//          or a learned table of positions (Gehring et al. 2017): nn::embedded_inputs.
//   rope   nothing added; self-attention turns each head's queries and keys by their positions
//          (RoPE, Su et al. 2021, section 3.4.2), so that every score depends on m - n only.
//   alibi  nothing added; self-attention adds -m_k (i - j) to head k's scores (ALiBi, Press et al.
//          2022, section 3); the encoder, which reads both ways, the symmetric -m_k |i - j|.
//   none   nothing in the decoder at all: its causal mask alone lets a position be told apart (Haviv et
//          al. 2022; Kazemnejad et al. 2023). An encoder without positions reads a bag of words, so the
//          encoder keeps the sinusoids.
// Cross-attention takes no positions in any scheme: a source position and a target position are not on
// one line, and both streams carry their own already.
// T = tokens, d_model = model width, h = heads, d_k = d_model / h (even for RoPE).
#pragma once

#include "core/tensor.hpp"
#include "nn/backward.hpp"
#include "nn/layer_norm.hpp"
#include "nn/multi_head.hpp"
#include "nn/transformer.hpp"

#include <cstddef>
#include <vector>

namespace attn::nn {

enum class PositionScheme { added, rope, alibi, none };

// "added", "rope", "alibi", "none"
const char* position_scheme_name(PositionScheme scheme);

// Whether the positions are added to a stack's inputs: both stacks under `added`, the encoder only
// under `none`, neither under rope and alibi.
bool adds_positions(PositionScheme scheme, bool decoder);

// B_ij = -m |i - j|, T x T: ALiBi's bias for a stack that reads both ways. Press et al. (2022) define
// only the causal form (nn::causal_alibi_bias); this is its mirror image above the diagonal.
Mat symmetric_alibi_bias(std::size_t T, double slope);

// Multi-head self-attention with the positions of `scheme`, the causal mask when `causal`:
//   rope:  head i's scores (R Q_i)(R K_i)^T / sqrt(d_k), R the rotation of nn::rotary_rotation at
//          positions 0 .. T-1 in the interleaved layout;
//   alibi: head i's scores Q_i K_i^T / sqrt(d_k) + B_i, B_i = causal_alibi_bias(T, m_i) or
//          symmetric_alibi_bias(T, m_i), m = nn::alibi_slopes(h);
//   added and none: nn::multi_head_attention(X, X, p, heads, causal mask or none), the same bits.
// Every head's weights are kept. ShapeError for an odd d_k under rope.
MultiHeadResult positioned_self_attention(const Mat& X, const MultiHeadParams& p, std::size_t heads,
                                          PositionScheme scheme, bool causal);

// Its backward: as nn::multi_head_self_attention_backward, with the rotation's transpose between each
// head's attention backward and its projections under rope (dQ_i = R^T dQ'_i: the rotation is
// orthogonal; the bias is a constant). `forward` is what positioned_self_attention returned.
MultiHeadGrads positioned_self_attention_backward(const Mat& X, const MultiHeadParams& p, std::size_t heads,
                                                  PositionScheme scheme, const MultiHeadResult& forward,
                                                  const Mat& dY);

// R^T G: each pair of G's rows' columns turned back by its angle (G: T x d, rows at positions 0 .. T-1).
Mat rotary_rotation_transposed(const Mat& G);

// A pre-LN encoder stack (no mask) whose self-attention takes the positions of `scheme`: under added and
// none, nn::transformer_stack(pre_ln, ...), the same bits.
StackForward positioned_encoder_stack(const Mat& X, const std::vector<BlockParams>& blocks,
                                      const LayerNormParams& final_norm, std::size_t heads, PositionScheme scheme);

// Its backward (nn::transformer_stack_backward under added and none).
StackGrads positioned_encoder_stack_backward(const Mat& X, const std::vector<BlockParams>& blocks,
                                             const LayerNormParams& final_norm, std::size_t heads,
                                             PositionScheme scheme, const StackForward& forward, const Mat& dY);

}  // namespace attn::nn
