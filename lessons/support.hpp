// Small helpers the lessons share: labels for rows and columns, and the measures their
// identity checks report. The maths itself lives in src/nn.
#pragma once

#include "core/tensor.hpp"

#include <string>
#include <vector>

namespace attn {

inline double as_double(std::size_t n) { return static_cast<double>(n); }

// {prefix + first, prefix + (first + 1), ...}, count labels: numbered("h_", 1, 3) = h_1 h_2 h_3.
std::vector<std::string> numbered(const std::string& prefix, std::size_t first, std::size_t count);

// {prefix + "1 " + words[0], ...}: prefixed("h_", {"turn", "off"}) = "h_1 turn", "h_2 off".
std::vector<std::string> prefixed(const std::string& prefix, const std::vector<std::string>& words);

// A vector as a 1 x n matrix.
Mat as_row(const Vec& v);

// sum_j alpha_j h_j as an explicit loop over the rows of H: the independent form that
// checks compare a matrix product with.
Vec weighted_sum(const Vec& alpha, const Mat& H);

// The largest |A_ij| above the diagonal (j > i): 0 when a causal mask held, the check's error.
double largest_above_diagonal(const Mat& A);

// How far the smallest entry lies below 0 (0 when none is negative): a weight check's error.
double negativity(const Mat& weights);

}  // namespace attn
