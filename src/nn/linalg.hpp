// Matrix products with shape checks that name the operands.
#pragma once

#include "core/tensor.hpp"

#include <vector>

namespace attn::nn {

// A B for A (r x k) and B (k x c); `what` names the product in a shape error ("Q K^T").
// Fixed order of operations (nn::matmul_span): the same bits on every processor, unlike BLAS, whose
// kernels sum in an order that depends on the processor it picks them for. In the arithmetic of the
// calling thread (nn::thread_arithmetic: portable unless a training lane asked for the fused kernels).
Mat matmul(const Mat& A, const Mat& B, const char* what);

// A B^T for A (r x k) and B (c x k): the bits of matmul(A, transposed(B)), without B^T in memory.
Mat matmul_transposed(const Mat& A, const Mat& B, const char* what);

// A (columns [first, last) of B)^T for A (r x (last - first)) and B (c x n): the bits of
// matmul(A, rows_of(transposed(B), first, last)), without copying either.
Mat matmul_transposed_columns(const Mat& A, const Mat& B, std::size_t first, std::size_t last, const char* what);

// Row i of the result is row ids[i] of `table`: an embedding lookup (table: V x d).
// Throws ShapeError naming the id when one is out of range.
Mat gather_rows(const Mat& table, const std::vector<std::size_t>& ids);

// The positions 0, 1, ..., n - 1 (a sequence read forwards) and n - 1, ..., 1, 0 (read backwards),
// as ids for gather_rows or an order for a recurrence.
std::vector<std::size_t> ascending_indices(std::size_t n);
std::vector<std::size_t> descending_indices(std::size_t n);

// M^T, evaluated into a contiguous matrix (as nn::matmul wants its operands).
Mat transposed(const Mat& M);

// The pivots of Gaussian elimination with partial pivoting (in a fixed order), a column counted as
// zero when every candidate is at most `zero` in magnitude: as many pivots as the rank of A.
Vec elimination_pivots(Mat A, double zero);

// The minimum-norm linear map M with M a_r = b_r for every row r of A:  M = B^T (A A^T)^{-1} A.
// Exact when the rows of A are linearly independent (A: k x n, B: k x m, M: m x n); throws
// std::invalid_argument when they are not. Solved through a Householder QR factorisation of A^T
// in a fixed order (no LAPACK, whose path depends on the processor): A^T = Q R gives
// (A A^T)^{-1} A = R^{-1} Q^T, so M = (Q R^{-T} B)^T, without forming A A^T, which would square
// the condition number.
Mat linear_map_sending(const Mat& A, const Mat& B);

}  // namespace attn::nn
