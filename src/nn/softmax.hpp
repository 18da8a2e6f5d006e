// Softmax over the last axis.  n = entries of a vector, T_q x T_k = rows x columns.
#pragma once

#include "core/tensor.hpp"

namespace attn::nn {

// alpha_i = exp(e_i - max_k e_k) / sum_k exp(e_k - max_k e_k)
// Subtracting the max changes nothing mathematically and keeps exp() from overflowing.
// Entries of -inf get weight 0; a vector that is -inf everywhere (fully masked) gets all
// zeros rather than 0/0 = NaN. Entries of +inf share the whole weight equally (the limit as
// they grow together). NaN logits give NaN weights, so callers' checks fail loudly.
Vec softmax(const Vec& logits);

// The same, independently for each row of a T_q x T_k matrix.
Mat softmax_rows(const Mat& logits);

}  // namespace attn::nn
