#include "nn/reductions.hpp"

#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace attn::nn {

namespace {

std::ptrdiff_t signed_index(std::size_t i) { return static_cast<std::ptrdiff_t>(i); }

}  // namespace

double sum_of(const Vec& v) { return xt::sum(v)(); }
double sum_of(const Mat& M) { return xt::sum(M)(); }
Vec row_sums(const Mat& M) { return xt::sum(M, {1}); }
Vec column_sums(const Mat& M) { return xt::sum(M, {0}); }
Mat last_axis_sums(const Tensor3& A) { return xt::sum(A, {2}); }
double dot(const Vec& a, const Vec& b) {
    expect_shape("dot: the second vector", b, {a.size()});
    return xt::sum(a * b)();
}
double norm_of(const Vec& v) { return std::sqrt(xt::sum(v * v)()); }

double max_of(const Vec& v) { return xt::amax(v)(); }
double max_of(const Mat& M) { return xt::amax(M)(); }
double min_of(const Vec& v) { return xt::amin(v)(); }
double min_of(const Mat& M) { return xt::amin(M)(); }
double max_abs_of(const Vec& v) { return xt::amax(xt::abs(v))(); }
double max_abs_of(const Mat& M) { return xt::amax(xt::abs(M))(); }
Vec row_maxima(const Mat& M) { return xt::amax(M, {1}); }
Vec column_maxima(const Mat& M) { return xt::amax(M, {0}); }
Vec column_minima(const Mat& M) { return xt::amin(M, {0}); }
Vec row_max_abs_differences(const Mat& A, const Mat& B) {
    expect_shape("row_max_abs_differences: the second matrix", B, shape_of(A));
    return xt::amax(xt::abs(A - B), {1});
}

// The parts are copied by plain loops over contiguous rows: xtensor's strided views cost several
// times the copy for the small blocks a training step takes thousands of times (the heads' columns of
// the Transformer's projections; issue 34). Copies only, so the numbers are those of the views.
// Ranges are clamped as xt::range clamps them; a block written in must fit (ShapeError otherwise).

Vec row_of(const Mat& M, std::size_t i) { return xt::row(M, signed_index(i)); }
Vec column_of(const Mat& M, std::size_t j) { return xt::col(M, signed_index(j)); }
Vec entries_of(const Vec& v, std::size_t first, std::size_t last) { return xt::view(v, xt::range(first, last)); }
Mat rows_of(const Mat& M, std::size_t first, std::size_t last) {
    const std::size_t cols = M.shape(1);
    last = std::min(last, M.shape(0)), first = std::min(first, last);
    Mat out = xt::empty<double>({last - first, cols});
    std::copy(M.data() + first * cols, M.data() + last * cols, out.data());
    return out;
}
Mat columns_of(const Mat& M, std::size_t first, std::size_t last) {
    const std::size_t rows = M.shape(0), cols = M.shape(1);
    last = std::min(last, cols), first = std::min(first, last);
    const std::size_t width = last - first;
    Mat out = xt::empty<double>({rows, width});
    for (std::size_t r = 0; r < rows; ++r)
        std::copy(M.data() + r * cols + first, M.data() + r * cols + last, out.data() + r * width);
    return out;
}
Mat slice_of(const Tensor3& A, std::size_t k) {
    if (k >= A.shape(0))
        throw ShapeError("slice_of: slice " + std::to_string(k) + " of " + shape_string(shape_of(A)));
    const std::size_t size = A.shape(1) * A.shape(2);
    Mat out = xt::empty<double>({A.shape(1), A.shape(2)});
    std::copy(A.data() + k * size, A.data() + (k + 1) * size, out.data());
    return out;
}

void set_row(Mat& M, std::size_t i, const Vec& v) {
    expect_shape("set_row: the row", v, {M.shape(1)});
    xt::row(M, signed_index(i)) = v;
}
void set_column(Mat& M, std::size_t j, const Vec& v) {
    expect_shape("set_column: the column", v, {M.shape(0)});
    xt::col(M, signed_index(j)) = v;
}
void set_entries(Vec& v, std::size_t first, const Vec& part) {
    xt::view(v, xt::range(first, first + part.size())) = part;
}
void set_rows(Mat& M, std::size_t first, const Mat& block) {
    expect_shape("set_rows: the block's width", Shape{block.shape(1)}, {M.shape(1)});
    if (first + block.shape(0) > M.shape(0))
        throw ShapeError("set_rows: " + std::to_string(block.shape(0)) + " rows from row " + std::to_string(first) +
                         " do not fit in " + shape_string(shape_of(M)));
    std::copy(block.data(), block.data() + block.size(), M.data() + first * M.shape(1));
}
void set_columns(Mat& M, std::size_t first, const Mat& block) {
    expect_shape("set_columns: the block's height", Shape{block.shape(0)}, {M.shape(0)});
    const std::size_t rows = M.shape(0), cols = M.shape(1), width = block.shape(1);
    if (first + width > cols)
        throw ShapeError("set_columns: " + std::to_string(width) + " columns from column " + std::to_string(first) +
                         " do not fit in " + shape_string(shape_of(M)));
    for (std::size_t r = 0; r < rows; ++r)
        std::copy(block.data() + r * width, block.data() + (r + 1) * width, M.data() + r * cols + first);
}
void set_slice(Array& A, std::size_t k, const Mat& M) { xt::view(A, k, xt::all(), xt::all()) = M; }
void add_to_row(Mat& M, std::size_t i, const Vec& v) {
    expect_shape("add_to_row: the row", v, {M.shape(1)});
    xt::row(M, signed_index(i)) += v;
}
void add_scaled_to_row(Mat& M, std::size_t i, double a, const Vec& v) {
    expect_shape("add_scaled_to_row: the row", v, {M.shape(1)});
    xt::row(M, signed_index(i)) += a * v;
}

Vec zeros(std::size_t n) { return xt::zeros<double>({n}); }
Mat zeros(std::size_t rows, std::size_t cols) { return xt::zeros<double>({rows, cols}); }
Vec ones(std::size_t n) { return xt::ones<double>({n}); }
Mat ones(std::size_t rows, std::size_t cols) { return xt::ones<double>({rows, cols}); }
Mat identity(std::size_t n) { return xt::eye<double>(n); }
Vec concatenated(const Vec& a, const Vec& b) {
    Vec out = xt::empty<double>({a.size() + b.size()});
    xt::view(out, xt::range(0, a.size())) = a;
    xt::view(out, xt::range(a.size(), out.size())) = b;
    return out;
}
Mat concatenated_rows(const Mat& top, const Mat& bottom) {
    // two block copies: xt::concatenate indexed every entry through its general machinery, and was 43 %
    // of a quick run of lesson 13 (the key-value cache grows by a row at every decoded word)
    if (top.shape(1) != bottom.shape(1))
        throw ShapeError("concatenated_rows: a block of " + shape_string(shape_of(bottom)) + " cannot go below " +
                         shape_string(shape_of(top)) + " (the widths differ)");
    Mat out = xt::empty<double>({top.shape(0) + bottom.shape(0), top.shape(1)});
    std::copy(top.data(), top.data() + top.size(), out.data());
    std::copy(bottom.data(), bottom.data() + bottom.size(), out.data() + top.size());
    return out;
}

}  // namespace attn::nn
