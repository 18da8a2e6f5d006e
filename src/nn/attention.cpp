#include "nn/attention.hpp"

#include "nn/activations.hpp"
#include "nn/linalg.hpp"
#include "nn/softmax.hpp"

#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace attn::nn {

Mat attentional_states(const Mat& contexts, const Mat& states, const Mat& W_c) {
    const std::size_t T = contexts.shape(0), d_c = contexts.shape(1), d_h = states.shape(1);
    expect_shape("attentional state: decoder states H", states, {T, d_h});
    expect_shape("attentional state weight W_c", W_c, {W_c.shape(0), d_c + d_h});
    // 1. row t is [c_t; h_t]
    Mat joined = xt::empty<double>({T, d_c + d_h});
    xt::view(joined, xt::all(), xt::range(0, d_c)) = contexts;
    xt::view(joined, xt::all(), xt::range(d_c, d_c + d_h)) = states;
    // 2. one matrix on the concatenation, then the nonlinearity
    const Mat pre_activation = matmul(joined, xt::eval(xt::transpose(W_c)), "[C H] W_c^T");
    return tanh_each(pre_activation);
}

namespace {

void expect_half_width(std::size_t half_width) {
    if (half_width == 0) throw std::invalid_argument("local attention: the half-width D must be at least 1");
}

// Source position s (1-based) of column j.
double position_of(std::size_t j) { return static_cast<double>(j + 1); }

bool in_window(std::size_t j, double p, std::size_t half_width) {
    return std::abs(position_of(j) - p) <= static_cast<double>(half_width);
}

}  // namespace

Vec predicted_positions(const Mat& states, const Mat& W_p, const Vec& v_p, std::size_t source_length) {
    expect_shape("local-p weight W_p", W_p, {v_p.size(), states.shape(1)});
    const Mat hidden = tanh_each(matmul(states, xt::eval(xt::transpose(W_p)), "H W_p^T"));
    Vec positions = xt::empty<double>({states.shape(0)});
    for (std::size_t t = 0; t < states.shape(0); ++t) {
        double logit = 0.0;
        for (std::size_t a = 0; a < v_p.size(); ++a) logit += v_p(a) * hidden(t, a);
        positions(t) = static_cast<double>(source_length) / (1.0 + portable::exp(-logit));
    }
    return positions;
}

Mat local_window(const Vec& positions, std::size_t source_length, std::size_t half_width) {
    expect_half_width(half_width);
    Mat window = xt::zeros<double>({positions.size(), source_length});
    for (std::size_t t = 0; t < positions.size(); ++t)
        for (std::size_t j = 0; j < source_length; ++j)
            if (in_window(j, positions(t), half_width)) window(t, j) = 1.0;
    return window;
}

Mat gaussian_factors(const Vec& positions, std::size_t source_length, std::size_t half_width) {
    expect_half_width(half_width);
    const double sigma = static_cast<double>(half_width) / 2.0;
    Mat factors = xt::empty<double>({positions.size(), source_length});
    for (std::size_t t = 0; t < positions.size(); ++t)
        for (std::size_t j = 0; j < source_length; ++j) {
            const double distance = position_of(j) - positions(t);
            factors(t, j) = portable::exp(-distance * distance / (2.0 * sigma * sigma));
        }
    return factors;
}

namespace {

// The softmax of each row over the positions its window holds: scores outside it become -inf,
// so they get exactly 0.
Mat softmax_in_window(const Mat& scores, const Mat& window) {
    Mat windowed = scores;
    for (std::size_t t = 0; t < scores.shape(0); ++t)
        for (std::size_t j = 0; j < scores.shape(1); ++j)
            if (window(t, j) == 0.0) windowed(t, j) = -std::numeric_limits<double>::infinity();
    return softmax_rows(windowed);
}

}  // namespace

Mat local_p_weights(const Mat& scores, const Vec& positions, std::size_t half_width) {
    const std::size_t T = scores.shape(0), S = scores.shape(1);
    expect_shape("local-p positions p", positions, {T});
    const Mat window = local_window(positions, S, half_width);
    const Mat gaussian = gaussian_factors(positions, S, half_width);
    // softmax over the window, then the Gaussian centred on p_t; no renormalisation
    return softmax_in_window(scores, window) * gaussian;
}

Vec monotonic_positions(std::size_t T) {
    Vec positions = xt::empty<double>({T});
    for (std::size_t t = 0; t < T; ++t) positions(t) = static_cast<double>(t + 1);
    return positions;
}

Mat local_m_weights(const Mat& scores, std::size_t half_width) {
    return softmax_in_window(scores, local_window(monotonic_positions(scores.shape(0)), scores.shape(1), half_width));
}

Mat location_weights(const Mat& states, const Mat& W_a) {
    expect_shape("location-based W_a", W_a, {W_a.shape(0), states.shape(1)});
    return softmax_rows(matmul_transposed(states, W_a, "H W_a^T"));
}

}  // namespace attn::nn
