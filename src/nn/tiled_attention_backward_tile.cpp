// One tile of FlashAttention's backward pass (see nn/tiled_attention.hpp; Dao et al. 2022,
// algorithm 4, lines 11-20). An exercise-sized function; a student's version would replace this file.
// T_q = queries, T_k = keys/values, d_k = query/key width, d_v = value width.
#include "nn/tiled_attention.hpp"

#include "core/portable_math.hpp"

#include <cmath>
#include <stdexcept>

namespace attn::nn {

namespace {

void expect_tile_shapes(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO, const Vec& L, const Vec& D,
                        const TileSpan& t, const Mat& dQ, const Mat& dK, const Mat& dV) {
    const std::size_t T_q = Q.shape(0), T_k = K.shape(0), d_k = Q.shape(1), d_v = V.shape(1);
    expect_shape("backward tile: keys K", K, {T_k, d_k});
    expect_shape("backward tile: values V", V, {T_k, d_v});
    expect_shape("backward tile: dO", dO, {T_q, d_v});
    expect_shape("backward tile: the log-sum-exp L", L, {T_q});
    expect_shape("backward tile: D", D, {T_q});
    expect_shape("backward tile: dQ", dQ, {T_q, d_k});
    expect_shape("backward tile: dK", dK, {T_k, d_k});
    expect_shape("backward tile: dV", dV, {T_k, d_v});
    if (t.first_query + t.queries > T_q || t.first_key + t.keys > T_k)
        throw std::invalid_argument("backward tile: the tile reaches past the " + std::to_string(T_q) +
                                    " queries or " + std::to_string(T_k) + " keys");
}

}  // namespace

void flash_backward_tile(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO, const Vec& L, const Vec& D,
                         const TileSpan& tile, bool causal, Mat& dQ, Mat& dK, Mat& dV) {
    expect_tile_shapes(Q, K, V, dO, L, D, tile, dQ, dK, dV);
    const std::size_t d_k = Q.shape(1), d_v = V.shape(1), i0 = tile.first_query, j0 = tile.first_key;
    const double scale = std::sqrt(static_cast<double>(d_k));
    // P_ij = e^{s_ij - L_i}: the forward's weights, recomputed; 0 where the mask hides key j from query i
    Mat P = xt::zeros<double>({tile.queries, tile.keys});
    for (std::size_t a = 0; a < tile.queries; ++a)
        for (std::size_t c = 0; c < tile.keys && (!causal || j0 + c <= i0 + a); ++c) {
            double s = 0.0;
            for (std::size_t p = 0; p < d_k; ++p) s += Q(i0 + a, p) * K(j0 + c, p);
            P(a, c) = portable::exp(s / scale - L(i0 + a));
        }
    // dV_j += sum_i P_ij dO_i
    for (std::size_t c = 0; c < tile.keys; ++c)
        for (std::size_t a = 0; a < tile.queries; ++a)
            for (std::size_t v = 0; v < d_v; ++v) dV(j0 + c, v) += P(a, c) * dO(i0 + a, v);
    // dS_ij = P_ij (dO_i . v_j - D_i), divided by sqrt(d_k) as the scores were
    Mat dS = xt::zeros<double>({tile.queries, tile.keys});
    for (std::size_t a = 0; a < tile.queries; ++a)
        for (std::size_t c = 0; c < tile.keys; ++c) {
            if (P(a, c) == 0.0) continue;  // masked (or underflowed): no gradient, and +0, not -0
            double dP = 0.0;
            for (std::size_t v = 0; v < d_v; ++v) dP += dO(i0 + a, v) * V(j0 + c, v);
            dS(a, c) = P(a, c) * (dP - D(i0 + a)) / scale;
        }
    // dQ_i += sum_j dS_ij k_j,  dK_j += sum_i dS_ij q_i
    for (std::size_t a = 0; a < tile.queries; ++a)
        for (std::size_t c = 0; c < tile.keys; ++c)
            for (std::size_t p = 0; p < d_k; ++p) dQ(i0 + a, p) += dS(a, c) * K(j0 + c, p);
    for (std::size_t c = 0; c < tile.keys; ++c)
        for (std::size_t a = 0; a < tile.queries; ++a)
            for (std::size_t p = 0; p < d_k; ++p) dK(j0 + c, p) += dS(a, c) * Q(i0 + a, p);
}

}  // namespace attn::nn
