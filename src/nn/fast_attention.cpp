// Output-only attention in blocks (see nn/fast_attention.hpp). T_q = queries, T_k = keys,
// d_k = key width, d_v = value width.
#include "nn/fast_attention.hpp"

#include "core/portable_math.hpp"
#include "nn/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace attn::nn {

namespace {

constexpr std::size_t fast_query_block = 64, fast_key_block = 256;

void expect_fast_shapes(const Mat& Q, const Mat& K, const Mat& V, bool causal) {
    if (K.shape(1) != Q.shape(1) || K.shape(0) != V.shape(0))
        throw ShapeError("fast attention: queries " + shape_string(shape_of(Q)) + ", keys " +
                         shape_string(shape_of(K)) + " and values " + shape_string(shape_of(V)) +
                         " do not fit (Q and K need the same width, K and V the same rows)");
    if (causal && Q.shape(0) != K.shape(0))
        throw std::invalid_argument("fast attention: the causal flag needs as many queries as keys");
}

}  // namespace

Mat fast_attention(const Mat& Q, const Mat& K, const Mat& V, bool causal) {
    expect_fast_shapes(Q, K, V, causal);
    const double minus_inf = -std::numeric_limits<double>::infinity();
    const std::size_t T_q = Q.shape(0), T_k = K.shape(0), d_k = Q.shape(1), d_v = V.shape(1);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d_k));
    // K^T block by block: block b (keys j0 .. j0 + cols - 1) is a contiguous d_k x cols matrix at
    // offset j0 d_k, the right operand of matmul_span_serial
    std::vector<double> K_t(T_k * d_k);
    for (std::size_t j0 = 0; j0 < T_k; j0 += fast_key_block) {
        const std::size_t cols = std::min(fast_key_block, T_k - j0);
        double* block = K_t.data() + j0 * d_k;
        for (std::size_t c = 0; c < cols; ++c)
            for (std::size_t p = 0; p < d_k; ++p) block[p * cols + c] = K(j0 + c, p);
    }
    Mat O = xt::zeros<double>({T_q, d_v});
    const std::size_t query_blocks = (T_q + fast_query_block - 1) / fast_query_block;
    // the query blocks are shared between the two threads; each block's products stay on its thread
    // (matmul_span would start a helper thread for every tile, two per tile on top of these two)
    for_each_row(query_blocks, T_k * (d_k + d_v), [&](std::size_t qb) {
        const std::size_t i0 = qb * fast_query_block, rows = std::min(fast_query_block, T_q - i0);
        std::vector<double> S(rows * fast_key_block), PV(rows * d_v), m(rows, minus_inf), l(rows, 0.0);
        double* out = O.data() + i0 * d_v;
        for (std::size_t j0 = 0; j0 < T_k; j0 += fast_key_block) {
            if (causal && j0 > i0 + rows - 1) break;  // every later key block lies after every query here
            const std::size_t cols = std::min(fast_key_block, T_k - j0);
            matmul_span_serial(Q.data() + i0 * d_k, K_t.data() + j0 * d_k, S.data(), rows, d_k, cols);
            for (std::size_t a = 0; a < rows; ++a) {
                double* s = S.data() + a * cols;
                const std::size_t i = i0 + a;
                double tile_max = minus_inf;
                for (std::size_t c = 0; c < cols; ++c) {
                    s[c] = causal && j0 + c > i ? minus_inf : s[c] * scale;
                    tile_max = std::max(tile_max, s[c]);
                }
                const double m_new = std::max(m[a], tile_max);
                if (m_new == minus_inf) {
                    std::fill(s, s + cols, 0.0);
                    continue;
                }
                const double factor = m[a] == minus_inf ? 0.0 : portable::exp(m[a] - m_new);
                for (std::size_t c = 0; c < cols; ++c) s[c] -= m_new;
                exp_span(s, s, cols);
                double sum = 0.0;
                for (std::size_t c = 0; c < cols; ++c) sum += s[c];
                l[a] = l[a] * factor + sum;
                m[a] = m_new;
                for (std::size_t v = 0; v < d_v; ++v) out[a * d_v + v] *= factor;
            }
            // the tile's P (rows x cols, stored with row stride cols) times V's block of rows
            matmul_span_serial(S.data(), V.data() + j0 * d_v, PV.data(), rows, cols, d_v);
            for (std::size_t e = 0; e < rows * d_v; ++e) out[e] += PV[e];
        }
        for (std::size_t a = 0; a < rows; ++a)
            if (l[a] != 0.0)
                for (std::size_t v = 0; v < d_v; ++v) out[a * d_v + v] /= l[a];
    });
    return O;
}

}  // namespace attn::nn
