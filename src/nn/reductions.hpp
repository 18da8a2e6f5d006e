// Sums, extremes, rows, columns and blocks of vectors and matrices, as plain functions. Each is the
// xtensor expression its comment names, evaluated here: the lessons and the tests call these instead
// of writing the expressions inline, so that xtensor's reducers, views and assigners are compiled
// once, at -O2 in attn_nn, instead of being instantiated again in every file that writes them (most
// of a lesson's compile time; issue 13). The results are those of the inline expressions, bit for
// bit: the same code adds in the same order. Ranges are [first, last), as xt::range's.
#pragma once

#include "core/tensor.hpp"

#include <cstddef>

namespace attn::nn {

using Tensor3 = xt::xtensor<double, 3>;

// ---- sums
double sum_of(const Vec& v);  // xt::sum(v)(): v_0 + v_1 + ..., in order
double sum_of(const Mat& M);  // xt::sum(M)(), row by row
Vec row_sums(const Mat& M);  // xt::sum(M, {1}): entry i sums row i
Vec column_sums(const Mat& M);  // xt::sum(M, {0}): entry j sums column j
Mat last_axis_sums(const Tensor3& A);  // xt::sum(A, {2}): entry (k, i) sums A(k, i, .)
double dot(const Vec& a, const Vec& b);  // xt::sum(a * b)(); ShapeError when the lengths differ
double norm_of(const Vec& v);  // std::sqrt(xt::sum(v * v)()): the Euclidean length

// ---- extremes
double max_of(const Vec& v);  // xt::amax(v)()
double max_of(const Mat& M);  // xt::amax(M)()
double min_of(const Vec& v);  // xt::amin(v)()
double min_of(const Mat& M);  // xt::amin(M)()
double max_abs_of(const Vec& v);  // xt::amax(xt::abs(v))(): the largest |v_i|
double max_abs_of(const Mat& M);  // xt::amax(xt::abs(M))()
Vec row_maxima(const Mat& M);  // xt::amax(M, {1}): entry i is the largest of row i
Vec column_maxima(const Mat& M);  // xt::amax(M, {0}): entry j is the largest of column j
Vec column_minima(const Mat& M);  // xt::amin(M, {0}): entry j is the smallest of column j
Vec row_max_abs_differences(const Mat& A, const Mat& B);  // xt::amax(xt::abs(A - B), {1}); ShapeError unless A, B match

// ---- parts, copied out
Vec row_of(const Mat& M, std::size_t i);  // xt::row(M, i)
Vec column_of(const Mat& M, std::size_t j);  // xt::col(M, j)
Vec entries_of(const Vec& v, std::size_t first, std::size_t last);  // xt::view(v, xt::range(first, last))
Mat rows_of(const Mat& M, std::size_t first, std::size_t last);  // xt::view(M, xt::range(first, last), xt::all())
Mat columns_of(const Mat& M, std::size_t first, std::size_t last);  // xt::view(M, xt::all(), xt::range(first, last))
Mat slice_of(const Tensor3& A, std::size_t k);  // xt::view(A, k, xt::all(), xt::all())

// ---- parts, written in (ShapeError when the part does not fit)
void set_row(Mat& M, std::size_t i, const Vec& v);  // xt::row(M, i) = v
void set_column(Mat& M, std::size_t j, const Vec& v);  // xt::col(M, j) = v
void set_entries(Vec& v, std::size_t first, const Vec& part);  // xt::view(v, xt::range(first, first + part.size())) = part
void set_rows(Mat& M, std::size_t first, const Mat& block);  // the block's rows from row `first` on
void set_columns(Mat& M, std::size_t first, const Mat& block);  // the block's columns from column `first` on
void set_slice(Array& A, std::size_t k, const Mat& M);  // xt::view(A, k, xt::all(), xt::all()) = M (A has 3 axes)
void add_to_row(Mat& M, std::size_t i, const Vec& v);  // xt::row(M, i) += v
void add_scaled_to_row(Mat& M, std::size_t i, double a, const Vec& v);  // xt::row(M, i) += a * v

// ---- whole tensors
Vec zeros(std::size_t n);  // xt::zeros<double>({n})
Mat zeros(std::size_t rows, std::size_t cols);
Vec ones(std::size_t n);  // xt::ones<double>({n})
Mat ones(std::size_t rows, std::size_t cols);
Mat identity(std::size_t n);  // xt::eye<double>(n)
Vec concatenated(const Vec& a, const Vec& b);  // [a; b]
Mat concatenated_rows(const Mat& top, const Mat& bottom);  // [top; bottom]: ShapeError when the widths differ

}  // namespace attn::nn
