// Row-by-row kernels behind the softmax and attention ops: plain loops over contiguous memory,
// with large matrices split between two threads. Not an exercise: the exercised functions call them.
// n = entries of one row, T_q x T_k = rows x columns of a matrix of scores.
#pragma once

#include "core/tensor.hpp"

#include <cstddef>
#include <functional>

namespace attn::nn {

// out_j = exp(x_j) for n values (`out` may be `x`): the exp of the softmax, within 2 ulp of std::exp,
// with exp(-inf) = 0, exp(+inf) = +inf, exp(NaN) = NaN, and subnormal results rounded once.
void exp_span(const double* x, double* out, std::size_t n);

// alpha_j = exp(e_j - max_k e_k) / sum_k exp(e_k - max_k e_k) for n contiguous logits, into `out`
// (which may be `logits`), with the semantics of nn::softmax (nn/softmax.hpp): -inf gets weight 0,
// a row that is -inf everywhere gets zeros, +inf entries share the weight, NaN gives a NaN row.
void softmax_span(const double* logits, double* out, std::size_t n);

// s_j = e_j / divisor, then -inf wherever m_j = -inf and s_j + m_j elsewhere (the rule of
// nn::masked_scores: +inf + -inf would be NaN). `mask` may be nullptr (no mask); `out` may be `in`.
void scale_and_mask_span(const double* in, double divisor, const double* mask, double* out, std::size_t n);

// The same for every row of a T_q x T_k matrix of scores, in place: Q K^T becomes the scaled,
// masked scores of attention without a second T_q x T_k matrix. `mask` is T_q x T_k or nullptr.
void scale_and_mask_rows(Mat& scores, double divisor, const Mat* mask);

// Calls row(r) once for every r in [0, rows), on two threads when the rows x cols matrix is large
// enough to repay starting one. row(r) must touch row r only: then the result is the same, bit for
// bit, whichever thread computes which row.
void for_each_row(std::size_t rows, std::size_t cols, const std::function<void(std::size_t)>& row);

}  // namespace attn::nn
