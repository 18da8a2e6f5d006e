// Small helpers the lessons share: labels for rows and columns, and the measures their
// identity checks report. The maths itself lives in src/nn.
#pragma once

#include "core/tensor.hpp"

#include <algorithm>
#include <limits>
#include <cstring>
#include <cmath>
#include <string>
#include <vector>

namespace attn {

inline double as_double(std::size_t n) { return static_cast<double>(n); }

// Why numbers not attn's (a student's functions, a peer's numbers) are compared with central
// differences and their errors at the lesson's tolerance for them, not at 1e-9: TensorRecord::foreign.
std::string central_difference_noise();

// Why numbers not attn's are not compared with what a training run in the same program made: it turns a
// difference in the last bit into another trajectory (lesson 12, step [chaos]).
std::string trained_here();

// Why numbers not attn's are compared with what lesson 12's trained models compute only where those
// models are loaded (the exercise checks), and shown for a peer's numbers.
std::string decoded_with_race();

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

// The tolerance of "M a_r = b_r" for a map M solved from the rows a_r of A by
// nn::linear_map_sending: 256 eps |M|_F max_r |a_r|. Rounding in the Householder solve, which is
// backward stable (Golub & Van Loan, section 5.3), and in the product M a_r leaves about n eps |M|
// |a_r| in each entry, and |M| is where the conditioning enters: it is about |B| / sigma_min(A),
// large when the rows are close to dependent (lesson 2's three decoder states often are at n = 4:
// |W_a| reaches 1000). Over 20,000 random settings of tests/test_properties.cpp the error stayed
// below 25 eps |M|_F max |a_r| (24.2, for lesson 2's W_a at d=1, n=4, u=8); 256 leaves a margin of ten.
double solve_tolerance(const Mat& M, const Mat& A);

// How far the rows' sums lie from 1, max_i |sum_j W_ij - 1|: the error of a "every row sums to 1"
// check (0 for weights whose rows are distributions, NaN when a sum is NaN).
double row_sum_error(const Mat& weights);
// The same for a stack of such matrices (one per head), summed along the last axis.
double row_sum_error(const xt::xtensor<double, 3>& weights);

// How many values lie at or below `bound`, as a double: the error of a "every value is more than
// bound" check (0 when none misses). Takes a Vec, a std::vector or a braced list: {a, b}.
template <class Values = std::vector<double>>
double count_at_most(const Values& values, double bound) {
    return as_double(static_cast<std::size_t>(
        std::count_if(values.begin(), values.end(), [bound](double x) { return x <= bound; })));
}

// e^{x_j} / sum_k e^{x_k} without subtracting the largest entry first: the textbook softmax that
// overflows to inf / inf = NaN past e^709.78 (lesson 10's step [two-pass], lesson 15's [alibi-decay]).
// The sum runs in the order of j; attn's portable exp.
Vec unshifted_softmax(const Vec& x);
// The same to each row of S.
Mat unshifted_softmax_rows(const Mat& S);

// How far the smallest entry lies below 0 (0 when none is negative): a weight check's error.
double negativity(const Mat& weights);

// D_i = sum_j P_ij dP_ij, and the same from the outputs, dO_i . o_i: column 0 and column 1 (the
// softmax backward's row term two ways: lesson 8's step [softmax-backward], lesson 10's [backward-saved]).
Mat row_averages_two_ways(const Mat& P, const Mat& dP, const Mat& O, const Mat& dO);

// ---------------------------------------------------------------- bits against rounding (lessons 13 and 15)

// The entries of a and b whose bits differ (-0 and +0 differ, two equal NaNs do not), and every
// entry when the shapes differ.
template <class Tensor>
double differing_bits(const Tensor& a, const Tensor& b) {
    if (a.shape() != b.shape()) return as_double(std::max(a.size(), b.size()));
    double n = 0.0;
    for (std::size_t j = 0; j < a.size(); ++j)
        n += std::memcmp(a.data() + j, b.data() + j, sizeof(double)) == 0 ? 0.0 : 1.0;
    return n;
}

// The largest |a - b| over the entries; infinite when the shapes differ.
template <class Tensor>
double largest_difference(const Tensor& a, const Tensor& b) {
    if (a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
    double largest = 0.0;
    for (std::size_t j = 0; j < a.size(); ++j) largest = std::max(largest, std::abs(a.data()[j] - b.data()[j]));
    return largest;
}

// A claim of attn's own bits (entries that differ, tolerance 0) holds only for attn's arithmetic; where
// a student's functions ran, its companion with the largest difference holds them to rounding: 1e-12
// for probabilities and attention outputs of order 1, a thousand times what a right answer written
// another way leaves (about 1e-15 measured), far below what a mistake moves.
constexpr double others_rounding = 1e-12;
constexpr double attn_bits_only = std::numeric_limits<double>::infinity();

// How far pairs of tensors are apart, summed over the pairs: entries whose bits differ (attn's own
// claim) and the largest |difference| (a student's functions' claim).
struct Apart {
    double bits = 0.0, largest = 0.0;
    template <class Tensor>
    void add(const Tensor& a, const Tensor& b) {
        bits += differing_bits(a, b);
        largest = std::max(largest, largest_difference(a, b));
    }
    template <class Tensor>
    static Apart of(const Tensor& a, const Tensor& b) {
        Apart apart;
        apart.add(a, b);
        return apart;
    }
};

}  // namespace attn
