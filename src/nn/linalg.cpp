#include "nn/linalg.hpp"

#include "nn/kernels.hpp"

#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace attn::nn {

Mat matmul(const Mat& A, const Mat& B, const char* what) {
    if (A.shape(1) != B.shape(0))
        throw ShapeError(std::string(what) + ": cannot multiply " + shape_string(shape_of(A)) + " by " +
                         shape_string(shape_of(B)));
    Mat product = xt::empty<double>({A.shape(0), B.shape(1)});
    matmul_span(A.data(), B.data(), product.data(), A.shape(0), A.shape(1), B.shape(1), thread_arithmetic());
    return product;
}

Mat matmul_transposed(const Mat& A, const Mat& B, const char* what) {
    return matmul_transposed_columns(A, B, 0, B.shape(1), what);
}

Mat matmul_transposed_columns(const Mat& A, const Mat& B, std::size_t first, std::size_t last, const char* what) {
    if (first > last || last > B.shape(1) || A.shape(1) != last - first)
        throw ShapeError(std::string(what) + ": cannot multiply " + shape_string(shape_of(A)) + " by the transpose of " +
                         (first == 0 && last == B.shape(1) ? std::string()
                                                           : "columns " + std::to_string(first) + " to " +
                                                                 std::to_string(last) + " of ") +
                         shape_string(shape_of(B)));
    Mat product = xt::empty<double>({A.shape(0), B.shape(0)});
    matmul_transposed_span(A.data(), B.data() + first, B.shape(1), product.data(), A.shape(0), last - first, B.shape(0),
                           thread_arithmetic());
    return product;
}

Mat gather_rows(const Mat& table, const std::vector<std::size_t>& ids) {
    Mat out = xt::empty<double>({ids.size(), table.shape(1)});
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] >= table.shape(0))
            throw ShapeError("row lookup: id " + std::to_string(ids[i]) + " is outside a table of " +
                             std::to_string(table.shape(0)) + " rows");
        xt::row(out, static_cast<std::ptrdiff_t>(i)) = xt::row(table, static_cast<std::ptrdiff_t>(ids[i]));
    }
    return out;
}

std::vector<std::size_t> ascending_indices(std::size_t n) {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
}

std::vector<std::size_t> descending_indices(std::size_t n) {
    std::vector<std::size_t> out;
    for (std::size_t i = n; i > 0; --i) out.push_back(i - 1);
    return out;
}

Mat transposed(const Mat& M) {
    // a plain copy loop: xtensor's general strided assignment costs ten times more for the small
    // matrices a training step transposes thousands of times; in tiles of 16 x 16, so that the
    // column walk of one side stays in the cache (the untiled loop took a fifth of the
    // Transformer's training step at d_model = 128, issue 34)
    constexpr std::size_t tile = 16;
    const std::size_t rows = M.shape(0), cols = M.shape(1);
    Mat out = xt::empty<double>({cols, rows});
    const double* in = M.data();
    double* o = out.data();
    for (std::size_t i0 = 0; i0 < rows; i0 += tile)
        for (std::size_t j0 = 0; j0 < cols; j0 += tile) {
            const std::size_t i1 = std::min(rows, i0 + tile), j1 = std::min(cols, j0 + tile);
            for (std::size_t i = i0; i < i1; ++i)
                for (std::size_t j = j0; j < j1; ++j) o[j * rows + i] = in[i * cols + j];
        }
    return out;
}

Vec elimination_pivots(Mat A, double zero) {
    const std::size_t rows = A.shape(0), cols = A.shape(1);
    std::vector<double> pivots;
    std::size_t r = 0;
    for (std::size_t c = 0; c < cols && r < rows; ++c) {
        std::size_t best = r;
        for (std::size_t i = r + 1; i < rows; ++i)
            if (std::abs(A(i, c)) > std::abs(A(best, c))) best = i;
        if (std::abs(A(best, c)) <= zero) continue;
        for (std::size_t j = 0; j < cols; ++j) std::swap(A(r, j), A(best, j));
        for (std::size_t i = r + 1; i < rows; ++i) {
            const double factor = A(i, c) / A(r, c);
            for (std::size_t j = c; j < cols; ++j) A(i, j) -= factor * A(r, j);
        }
        pivots.push_back(A(r, c));
        ++r;
    }
    Vec out = xt::empty<double>({pivots.size()});
    std::copy(pivots.begin(), pivots.end(), out.begin());
    return out;
}

namespace {

// A^T = Q R for A^T (n x k, n >= k) by Householder reflections (Golub & Van Loan, Matrix
// Computations, algorithm 5.2.1), every sum in the order of its index. Q is n x k with orthonormal
// columns, R is k x k upper triangular.
struct QR {
    Mat Q, R;
};

QR householder_qr(Mat W) {
    const std::size_t n = W.shape(0), k = W.shape(1);
    std::vector<Vec> reflectors;  // v_c over rows c .. n-1; H_c = I - 2 v v^T / (v^T v)
    for (std::size_t c = 0; c < k; ++c) {
        double norm_squared = 0.0;
        for (std::size_t i = c; i < n; ++i) norm_squared += W(i, c) * W(i, c);
        const double norm = std::sqrt(norm_squared);
        // the sign that adds magnitudes rather than cancelling them
        const double alpha = W(c, c) >= 0.0 ? -norm : norm;
        Vec v = xt::empty<double>({n - c});
        for (std::size_t i = c; i < n; ++i) v(i - c) = W(i, c);
        v(0) -= alpha;
        double v_squared = 0.0;
        for (std::size_t i = 0; i < v.size(); ++i) v_squared += v(i) * v(i);
        if (v_squared > 0.0)
            for (std::size_t j = c; j < k; ++j) {
                double dot = 0.0;
                for (std::size_t i = c; i < n; ++i) dot += v(i - c) * W(i, j);
                const double factor = 2.0 * dot / v_squared;
                for (std::size_t i = c; i < n; ++i) W(i, j) -= factor * v(i - c);
            }
        reflectors.push_back(std::move(v));
    }
    QR qr{xt::zeros<double>({n, k}), xt::zeros<double>({k, k})};
    for (std::size_t r = 0; r < k; ++r)
        for (std::size_t c = r; c < k; ++c) qr.R(r, c) = W(r, c);
    // Q = H_0 H_1 ... H_{k-1} times the first k columns of the identity, the last reflection first
    for (std::size_t c = 0; c < k; ++c) qr.Q(c, c) = 1.0;
    for (std::size_t c = k; c-- > 0;) {
        const Vec& v = reflectors[c];
        double v_squared = 0.0;
        for (std::size_t i = 0; i < v.size(); ++i) v_squared += v(i) * v(i);
        if (v_squared == 0.0) continue;
        for (std::size_t j = 0; j < k; ++j) {
            double dot = 0.0;
            for (std::size_t i = c; i < n; ++i) dot += v(i - c) * qr.Q(i, j);
            const double factor = 2.0 * dot / v_squared;
            for (std::size_t i = c; i < n; ++i) qr.Q(i, j) -= factor * v(i - c);
        }
    }
    return qr;
}

}  // namespace

Mat linear_map_sending(const Mat& A, const Mat& B) {
    if (A.shape(0) != B.shape(0))
        throw ShapeError("linear map: " + shape_string(shape_of(A)) + " inputs and " + shape_string(shape_of(B)) +
                         " outputs must have as many rows");
    const std::size_t k = A.shape(0), n = A.shape(1), m = B.shape(1);
    if (k > n)
        throw std::invalid_argument("linear map: " + std::to_string(k) + " inputs of width " + std::to_string(n) +
                                    " cannot be linearly independent");
    const QR qr = householder_qr(transposed(A));
    // a diagonal entry of R at rounding level of the largest: the rows of A are (numerically) dependent
    double largest = 0.0;
    for (std::size_t r = 0; r < k; ++r) largest = std::max(largest, std::abs(qr.R(r, r)));
    const double negligible = static_cast<double>(n) * std::numeric_limits<double>::epsilon() * largest;
    // Y = R^{-T} B by forward substitution: R^T is lower triangular
    Mat Y = xt::zeros<double>({k, m});
    for (std::size_t r = 0; r < k; ++r) {
        if (!(std::abs(qr.R(r, r)) > negligible))
            throw std::invalid_argument("linear map: the inputs are linearly dependent (input " +
                                        std::to_string(r + 1) + " is a combination of the ones before)");
        for (std::size_t c = 0; c < m; ++c) {
            double rest = B(r, c);
            for (std::size_t s = 0; s < r; ++s) rest -= qr.R(s, r) * Y(s, c);
            Y(r, c) = rest / qr.R(r, r);
        }
    }
    // M = (Q Y)^T
    return transposed(matmul(qr.Q, Y, "Q R^{-T} B"));
}

}  // namespace attn::nn
