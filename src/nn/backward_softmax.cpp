// The backward of the softmax: row by row, and the Jacobian of one row (see nn/backward.hpp).
// Exercise-sized functions; a student's version would replace this file.
// T = entries of one distribution, T_q x T_k = rows x columns.
#include "nn/backward.hpp"

namespace attn::nn {

// 1. D_i = sum_j dP_ij P_ij, the row's dP averaged under its own weights: the weights sum to 1, so
// raising them all alike is no move a softmax can make, and only dP_ij - D_i reaches the scores;
// 2. dS_ij = P_ij (dP_ij - D_i). A masked entry (P_ij = 0) gets +0, not 0 * (negative) = -0,
// which a lesson would print as "-0".
Mat softmax_rows_backward(const Mat& P, const Mat& dP) {
    expect_shape("softmax backward dL/d(weights) dP", dP, shape_of(P));
    const std::size_t rows = P.shape(0), cols = P.shape(1);
    Mat dS = xt::empty<double>({rows, cols});
    for (std::size_t i = 0; i < rows; ++i) {
        double D = 0.0;
        for (std::size_t j = 0; j < cols; ++j) D += dP(i, j) * P(i, j);
        for (std::size_t j = 0; j < cols; ++j) dS(i, j) = P(i, j) == 0.0 ? 0.0 : P(i, j) * (dP(i, j) - D);
    }
    return dS;
}

Mat softmax_jacobian(const Vec& p) {
    const std::size_t T = p.size();
    Mat J = xt::empty<double>({T, T});
    for (std::size_t j = 0; j < T; ++j)
        for (std::size_t k = 0; k < T; ++k) J(j, k) = (j == k ? p(j) : 0.0) - p(j) * p(k);
    return J;
}

}  // namespace attn::nn
