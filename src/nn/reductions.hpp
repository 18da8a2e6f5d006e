// Sums, extremes, rows, columns and blocks of a vector or matrix, as plain functions. Each is the xtensor
// expression its comment names, evaluated once here: the lessons call these instead of writing the
// expressions inline, so that xtensor's reducers and assigners are compiled once, at -O2 in attn_nn,
// rather than instantiated again in every lesson (issue 13: the lessons' share of a clean build).
// The results are those of the inline expressions, bit for bit (the same code sums in the same order).
#pragma once

#include "core/tensor.hpp"

#include <cstddef>

namespace attn::nn {

double sum_of(const Vec& v);  // xt::sum(v)(): v_0 + v_1 + ..., in order
double sum_of(const Mat& M);  // xt::sum(M)(), row by row
Vec row_sums(const Mat& M);  // xt::sum(M, {1}): entry i sums row i
Vec column_sums(const Mat& M);  // xt::sum(M, {0}): entry j sums column j

double max_of(const Vec& v);  // xt::amax(v)()
double max_of(const Mat& M);  // xt::amax(M)()
double min_of(const Vec& v);  // xt::amin(v)()
double min_of(const Mat& M);  // xt::amin(M)()
double max_abs_of(const Vec& v);  // xt::amax(xt::abs(v))(): the largest |v_i|
double max_abs_of(const Mat& M);  // xt::amax(xt::abs(M))()

double dot(const Vec& a, const Vec& b);  // xt::sum(a * b)(); throws ShapeError when the lengths differ
double norm_of(const Vec& v);  // std::sqrt(xt::sum(v * v)()): the Euclidean length

Vec row_of(const Mat& M, std::size_t i);  // xt::row(M, i), copied
Vec column_of(const Mat& M, std::size_t j);  // xt::col(M, j), copied
void set_row(Mat& M, std::size_t i, const Vec& v);  // xt::row(M, i) = v (ShapeError on a wrong length)
void set_column(Mat& M, std::size_t j, const Vec& v);  // xt::col(M, j) = v
Vec entries_of(const Vec& v, std::size_t first, std::size_t last);  // xt::view(v, xt::range(first, last)), copied
void set_entries(Vec& v, std::size_t first, const Vec& part);  // xt::view(v, xt::range(first, first + part's length)) = part

Vec zeros(std::size_t n);
Mat zeros(std::size_t rows, std::size_t cols);
Vec ones(std::size_t n);

Vec row_maxima(const Mat& M);  // xt::amax(M, {1}): entry i is the largest of row i
Vec column_maxima(const Mat& M);  // xt::amax(M, {0}): entry j is the largest of column j
Vec column_minima(const Mat& M);  // xt::amin(M, {0}): entry j is the smallest of column j
Vec row_max_abs_differences(const Mat& A, const Mat& B);  // xt::amax(xt::abs(A - B), {1}): max_j |A_ij - B_ij|
Mat ones(std::size_t rows, std::size_t cols);  // xt::ones<double>({rows, cols})
Mat identity(std::size_t n);  // xt::eye<double>(n)
Mat rows_of(const Mat& M, std::size_t first, std::size_t last);  // xt::view(M, xt::range(first, last), xt::all()), copied
Mat columns_of(const Mat& M, std::size_t first, std::size_t last);  // xt::view(M, xt::all(), xt::range(first, last)), copied
void set_rows(Mat& M, std::size_t first, const Mat& block);  // xt::view(M, xt::range(first, first + block rows), xt::all()) = block
void set_columns(Mat& M, std::size_t first, const Mat& block);  // xt::view(M, xt::all(), xt::range(first, first + block columns)) = block
Mat slice_of(const xt::xtensor<double, 3>& A, std::size_t k);  // xt::view(A, k, xt::all(), xt::all()), copied
void set_slice(Array& A, std::size_t k, const Mat& M);  // xt::view(A, k, xt::all(), xt::all()) = M (A has 3 axes)
Mat last_axis_sums(const xt::xtensor<double, 3>& A);  // xt::sum(A, {2}): entry (k, i) sums A(k, i, .)

}  // namespace attn::nn

// added for lessons 08, 09, 01, 07
namespace attn::nn {

Vec concatenated(const Vec& a, const Vec& b);  // [a; b]: xt::view(out, xt::range(0, a.size())) = a, then b after it
Vec entries_of(const Vec& v, std::size_t from, std::size_t to);  // xt::view(v, xt::range(from, to)), copied
Mat rows_of(const Mat& M, std::size_t from, std::size_t to);  // xt::view(M, xt::range(from, to), xt::all()), copied
Mat concatenated_rows(const Mat& top, const Mat& bottom);  // xt::concatenate(xt::xtuple(top, bottom), 0)
void add_to_row(Mat& M, std::size_t i, const Vec& v);  // xt::row(M, i) += v (ShapeError on a wrong length)
void add_scaled_to_row(Mat& M, std::size_t i, double a, const Vec& v);  // xt::row(M, i) += a * v

}  // namespace attn::nn
