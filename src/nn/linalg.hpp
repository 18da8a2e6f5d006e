// Matrix products with shape checks that name the operands.
#pragma once

#include "core/tensor.hpp"

namespace attn::nn {

// A B for A (r x k) and B (k x c); `what` names the product in a shape error ("Q K^T").
// Goes to BLAS (dgemm) through xtensor-blas: the operands are evaluated and contiguous.
Mat matmul(const Mat& A, const Mat& B, const char* what);

}  // namespace attn::nn
