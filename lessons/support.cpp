#include "support.hpp"

#include "core/portable_math.hpp"

#include "nn/reductions.hpp"

#include <xtensor/xsort.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attn {

std::vector<std::string> numbered(const std::string& prefix, std::size_t first, std::size_t count) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < count; ++i) out.push_back(prefix + std::to_string(first + i));
    return out;
}

std::vector<std::string> prefixed(const std::string& prefix, const std::vector<std::string>& words) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < words.size(); ++i) out.push_back(prefix + std::to_string(i + 1) + " " + words[i]);
    return out;
}

Mat as_row(const Vec& v) { return xt::eval(xt::view(v, xt::newaxis(), xt::all())); }

Vec weighted_sum(const Vec& alpha, const Mat& H) {
    Vec sum = nn::zeros(H.shape(1));
    for (std::size_t j = 0; j < H.shape(0); ++j) sum += alpha(j) * nn::row_of(H, j);
    return sum;
}

double largest_above_diagonal(const Mat& A) {
    double worst = 0.0;
    for (std::size_t i = 0; i < A.shape(0); ++i)
        for (std::size_t j = i + 1; j < A.shape(1); ++j) worst = std::max(worst, std::abs(A(i, j)));
    return worst;
}

double solve_tolerance(const Mat& M, const Mat& A) {
    const double map_norm = std::sqrt(nn::sum_of(Mat(M * M)));
    double widest = 0.0;
    for (std::size_t r = 0; r < A.shape(0); ++r) {
        widest = std::max(widest, nn::norm_of(nn::row_of(A, r)));
    }
    return 256.0 * std::numeric_limits<double>::epsilon() * map_norm * widest;
}

double row_sum_error(const Mat& weights) {
    return max_abs_difference(nn::row_sums(weights), nn::ones(weights.shape(0)));
}

double row_sum_error(const xt::xtensor<double, 3>& weights) {
    return max_abs_difference(nn::last_axis_sums(weights), nn::ones(weights.shape(0), weights.shape(1)));
}

double negativity(const Mat& weights) { return std::max(0.0, -nn::min_of(weights)); }

Mat row_averages_two_ways(const Mat& P, const Mat& dP, const Mat& O, const Mat& dO) {
    Mat out = nn::zeros(P.shape(0), 2);
    for (std::size_t i = 0; i < P.shape(0); ++i) {
        for (std::size_t j = 0; j < P.shape(1); ++j) out(i, 0) += P(i, j) * dP(i, j);
        for (std::size_t c = 0; c < O.shape(1); ++c) out(i, 1) += dO(i, c) * O(i, c);
    }
    return out;
}

std::string central_difference_noise() {
    return "central differences at h = 1e-6 carry the rounding of the loss, about eps |L| / h, which right answers "
           "rounding otherwise do not share: compared at the lesson's tolerance for them, 100 eps max(1, |L|) / h or "
           "its own where it says so";
}

std::string trained_here() {
    return "made by a training run, which turns a difference in the last bit of anything before it into another "
           "trajectory (lesson 12, step [chaos]): shown, not compared";
}

std::string decoded_with_race() {
    return "computed with lesson 12's trained models: compared where they are loaded (the exercise checks), shown "
           "for numbers from a training of their own";
}

Vec unshifted_softmax(const Vec& x) {
    Vec e = xt::empty<double>({x.size()});
    double sum = 0.0;
    for (std::size_t j = 0; j < x.size(); ++j) e(j) = portable::exp(x(j)), sum += e(j);
    for (std::size_t j = 0; j < x.size(); ++j) e(j) /= sum;
    return e;
}

Mat unshifted_softmax_rows(const Mat& S) {
    Mat out = S;
    for (std::size_t i = 0; i < S.shape(0); ++i) {
        const Vec row = unshifted_softmax(xt::eval(xt::row(S, static_cast<std::ptrdiff_t>(i))));
        for (std::size_t j = 0; j < S.shape(1); ++j) out(i, j) = row(j);
    }
    return out;
}

}  // namespace attn
