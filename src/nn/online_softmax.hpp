// The softmax of a row in one pass over it: a running maximum and a running sum that is
// rescaled whenever the maximum grows (Milakov & Gimelshein 2018, "Online normalizer calculation
// for softmax", arXiv:1805.02867, algorithm 3). n = entries of a row, T_q x T_k = rows x columns.
#pragma once

#include "core/tensor.hpp"

namespace attn::nn {

// The normaliser of a row read once, entry after entry, from m_0 = -inf and l_0 = 0:
//   m_j = max(m_{j-1}, x_j),   l_j = l_{j-1} e^{m_{j-1} - m_j} + e^{x_j - m_j}
// so that l_n = sum_k e^{x_k - m_n} with m_n = max_k x_k. Returns n x 2: row j holds m_j and l_j
// after entry j (the table lesson 10 shows). While every entry so far is -inf, m_j = -inf and
// l_j = 0 (no exponential of -inf - (-inf) = NaN is taken). Exponentials by portable::exp.
// Part of the classroom exercise online-softmax (lesson 10's step [online] shows the table).
Mat online_normalizer_steps(const Vec& logits);

// alpha_i = e^{x_i - m_n} / l_n with m_n and l_n from one pass as above, then one pass for the
// weights: two reads of the row, where the max-shifted two-pass softmax (nn::softmax) reads it
// three times. The conventions of nn::softmax (nn/softmax.hpp): -inf entries get weight 0, a row
// that is -inf everywhere gets all zeros (not 0/0 = NaN), +inf entries share the weight
// equally, a NaN entry makes the whole row NaN.
// The classroom exercise online-softmax (lessons/exercises/online_softmax.cpp).
Vec online_softmax(const Vec& logits);

// The same, independently for each row of a T_q x T_k matrix.
Mat online_softmax_rows(const Mat& logits);

}  // namespace attn::nn
