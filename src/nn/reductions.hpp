// Sums, extremes, rows and columns of a vector or matrix, as plain functions. Each is the xtensor
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

Vec zeros(std::size_t n);
Mat zeros(std::size_t rows, std::size_t cols);
Vec ones(std::size_t n);

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
