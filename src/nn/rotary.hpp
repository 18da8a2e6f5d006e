// Rotary position embeddings (RoPE, Su et al. 2021, RoFormer) and the linear biases of ALiBi
// (Press et al. 2022): positions that enter attention through the scores, not the inputs.
// T = positions (rows), d = width of a query or key (even for RoPE), h = heads.
#pragma once

#include "core/tensor.hpp"

#include <cstddef>
#include <vector>

namespace attn::nn {

// Which coordinates RoPE turns together. interleaved: pair i is (x_2i, x_2i+1), as in Su et al.
// (2021, section 3.4.2) and GPT-J; halves: pair i is (x_i, x_i+d/2), GPT-NeoX's and LLaMA's rotate_half.
enum class RotaryLayout { interleaved, halves };

// theta_i = 10000^(-2i/d), i = 0 .. d/2 - 1: the frequency of pair i (Su et al. 2021, section 3.2.2),
// those of the sinusoidal encoding (Vaswani et al. 2017, section 3.5). ShapeError for an odd or zero d.
Vec rotary_frequencies(std::size_t d);

// Row t of X (T x d) turned as a query or key at position positions[t]: each pair (x, y) of the
// layout by the angle a = positions[t] theta_i,
//   (x, y) -> (x cos a - y sin a,  x sin a + y cos a)        (Su et al. 2021, sections 3.2.2, 3.4.2)
// The angle is computed as p / 10000^(2i/d), as nn::sinusoidal_encoding computes it, and sin and cos
// are attn's portable ones: the same bits on every machine. ShapeError for an odd or zero d, or
// when positions does not hold one position per row. T = 0 gives a 0 x d matrix.
Mat rotary_rotation(const Mat& X, const std::vector<std::size_t>& positions,
                    RotaryLayout layout = RotaryLayout::interleaved);

// The same with rows at first, first + 1, ..., first + T - 1: a query or key block as it arrives.
Mat rotary_rotation(const Mat& X, std::size_t first, RotaryLayout layout = RotaryLayout::interleaved);

// The column order that takes the interleaved layout to halves: column j of X[:, order] is column
// order[j] of X, so pair i's (2i, 2i + 1) lands on (i, i + d/2). ShapeError for an odd or zero d.
std::vector<std::size_t> halves_from_interleaved(std::size_t d);

// The ALiBi slopes m_1 .. m_h, one per head (Press et al. 2022, section 3, and their reference code):
// for h a power of two the geometric sequence m_k = 2^(-8k/h); otherwise those of the largest power of
// two n below h, followed by every other slope of 2n (its 1st, 3rd, ...), h - n of them. 6 heads:
// 1/4, 1/16, 1/64, 1/256, then 1/2, 1/8. ShapeError for h = 0.
Vec alibi_slopes(std::size_t heads);

// B_ij = -m (i - j), T x T: the linear bias a head with slope m adds to the score of query i on key
// j (Press et al. 2022, figure 3). Positive above the diagonal: use it with the causal mask.
Mat alibi_bias(std::size_t T, double slope);

// The causal form: -m (i - j) for j <= i, -inf for j > i (the bias plus the causal mask).
Mat causal_alibi_bias(std::size_t T, double slope);

}  // namespace attn::nn
