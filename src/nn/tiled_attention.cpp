// Attention tile by tile with a running max and sum per query, and its backward pass from the
// output and the rows' log-sum-exp (see nn/tiled_attention.hpp; Dao et al. 2022, algorithms 1
// and 4). T_q = queries, T_k = keys, d_k = key width, d_v = value width,
// B_r x B_c = one tile.
#include "nn/tiled_attention.hpp"

#include "core/portable_math.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace attn::nn {

namespace {

void expect_tiled_shapes(const Mat& Q, const Mat& K, const Mat& V, std::size_t block_rows, std::size_t block_cols,
                         bool causal) {
    if (K.shape(1) != Q.shape(1))
        throw ShapeError("tiled attention: queries " + shape_string(shape_of(Q)) + " and keys " +
                         shape_string(shape_of(K)) + " must have the same width d_k");
    if (K.shape(0) != V.shape(0))
        throw ShapeError("tiled attention: keys " + shape_string(shape_of(K)) + " and values " +
                         shape_string(shape_of(V)) + " must have the same number of rows");
    if (block_rows == 0 || block_cols == 0)
        throw std::invalid_argument("tiled attention: the block sizes must be at least 1");
    if (causal && Q.shape(0) != K.shape(0))
        throw std::invalid_argument("tiled attention: the causal flag needs as many queries as keys");
}

}  // namespace

TiledAttention tiled_attention(const Mat& Q, const Mat& K, const Mat& V, std::size_t block_rows,
                               std::size_t block_cols, bool causal) {
    expect_tiled_shapes(Q, K, V, block_rows, block_cols, causal);
    const double minus_inf = -std::numeric_limits<double>::infinity();
    const std::size_t T_q = Q.shape(0), T_k = K.shape(0), d_k = Q.shape(1), d_v = V.shape(1);
    const std::size_t key_blocks = (T_k + block_cols - 1) / block_cols;
    const double scale = std::sqrt(static_cast<double>(d_k));

    TiledAttention r;
    r.output = xt::zeros<double>({T_q, d_v});  // the accumulators O_i, divided by l_i at the end
    r.row_max = xt::empty<double>({T_q});
    r.row_sum = xt::zeros<double>({T_q});
    std::fill(r.row_max.begin(), r.row_max.end(), minus_inf);
    r.max_after_block = xt::empty<double>({T_q, key_blocks});
    std::fill(r.max_after_block.begin(), r.max_after_block.end(), minus_inf);
    Mat tile = xt::empty<double>({std::min(block_rows, T_q), std::min(block_cols, T_k)});
    r.working_bytes = static_cast<double>((r.output.size() + r.row_max.size() + r.row_sum.size() + tile.size()) *
                                          sizeof(double));

    for (std::size_t i0 = 0; i0 < T_q; i0 += block_rows) {
        const std::size_t rows = std::min(block_rows, T_q - i0);
        for (std::size_t b = 0; b < key_blocks; ++b) {
            const std::size_t j0 = b * block_cols, cols = std::min(block_cols, T_k - j0);
            // under the causal flag the last query of the block sees keys up to i0 + rows - 1
            if (causal && j0 > i0 + rows - 1) {
                ++r.tiles_skipped;
                continue;
            }
            ++r.tiles;
            for (std::size_t a = 0; a < rows; ++a) {
                const std::size_t i = i0 + a;
                // keys j0 .. j0 + seen - 1 of this block take part in row i
                const std::size_t seen = causal ? (i < j0 ? 0 : std::min(cols, i - j0 + 1)) : cols;
                double* s = &tile(a, 0);
                // 1. the scores of the tile's row, each dot product in the order of the width
                double tile_max = minus_inf;
                for (std::size_t c = 0; c < seen; ++c) {
                    double dot = 0.0;
                    for (std::size_t p = 0; p < d_k; ++p) dot += Q(i, p) * K(j0 + c, p);
                    s[c] = dot / scale;
                    tile_max = std::max(tile_max, s[c]);
                }
                // 2. the new running max, and the factor that brings what was added before onto it
                const double m_old = r.row_max(i), m_new = std::max(m_old, tile_max);
                r.max_after_block(i, b) = m_new;
                if (seen == 0) continue;
                double factor = 1.0;
                if (m_old == minus_inf) {
                    factor = 0.0;  // nothing added yet
                } else if (m_new > m_old) {
                    factor = portable::exp(m_old - m_new);
                    ++r.rescalings;
                }
                double l = r.row_sum(i) * factor;
                for (std::size_t v = 0; v < d_v; ++v) r.output(i, v) *= factor;
                // 3. p_ij = e^{s_ij - m_new}, into l_i and O_i, keys in increasing order
                for (std::size_t c = 0; c < seen; ++c) {
                    const double p = portable::exp(s[c] - m_new);
                    ++r.exponentials;
                    l += p;
                    for (std::size_t v = 0; v < d_v; ++v) r.output(i, v) += p * V(j0 + c, v);
                }
                r.row_max(i) = m_new;
                r.row_sum(i) = l;
            }
        }
    }
    // O_i / l_i: divided, not multiplied by a rounded 1 / l_i
    // (a row that saw no key keeps O_i = 0, as nn::softmax gives a fully masked row zeros)
    for (std::size_t i = 0; i < T_q; ++i)
        if (r.row_sum(i) != 0.0)
            for (std::size_t v = 0; v < d_v; ++v) r.output(i, v) /= r.row_sum(i);
    return r;
}

Vec row_log_sum_exp(const Vec& row_max, const Vec& row_sum) {
    expect_shape("log-sum-exp: the running sums l", row_sum, shape_of(row_max));
    Vec L = xt::empty<double>({row_max.size()});
    for (std::size_t i = 0; i < L.size(); ++i)
        L(i) = row_sum(i) == 0.0 ? -std::numeric_limits<double>::infinity() : row_max(i) + portable::log(row_sum(i));
    return L;
}

Vec output_gradient_dots(const Mat& dO, const Mat& O) {
    expect_shape("D = rowsum(dO * O): dO", dO, shape_of(O));
    Vec D = xt::zeros<double>({O.shape(0)});
    for (std::size_t i = 0; i < O.shape(0); ++i)
        for (std::size_t v = 0; v < O.shape(1); ++v) D(i) += dO(i, v) * O(i, v);
    return D;
}

TiledAttentionGrads tiled_attention_backward(const Mat& Q, const Mat& K, const Mat& V, const Mat& O, const Vec& L,
                                             const Mat& dO, std::size_t block_rows, std::size_t block_cols,
                                             bool causal) {
    expect_tiled_shapes(Q, K, V, block_rows, block_cols, causal);
    const std::size_t T_q = Q.shape(0), T_k = K.shape(0), d_k = Q.shape(1), d_v = V.shape(1);
    expect_shape("tiled attention backward: the saved output O", O, {T_q, d_v});
    expect_shape("tiled attention backward: the saved log-sum-exp L", L, {T_q});
    expect_shape("tiled attention backward: dL/d(output) dO", dO, {T_q, d_v});
    TiledAttentionGrads g;
    g.D = output_gradient_dots(dO, O);
    g.dQ = xt::zeros<double>({T_q, d_k});
    g.dK = xt::zeros<double>({T_k, d_k});
    g.dV = xt::zeros<double>({T_k, d_v});
    const std::size_t tile = std::min(block_rows, T_q) * std::min(block_cols, T_k);
    g.working_bytes = static_cast<double>((O.size() + L.size() + g.D.size() + g.dQ.size() + g.dK.size() +
                                           g.dV.size() + 2 * tile) *
                                          sizeof(double));
    // the outer loop over key blocks, the inner over query blocks (algorithm 4, lines 6 and 8)
    for (std::size_t j0 = 0; j0 < T_k; j0 += block_cols) {
        const std::size_t cols = std::min(block_cols, T_k - j0);
        for (std::size_t i0 = 0; i0 < T_q; i0 += block_rows) {
            const std::size_t rows = std::min(block_rows, T_q - i0);
            if (causal && j0 > i0 + rows - 1) {  // every key of the block comes after every query of it
                ++g.tiles_skipped;
                continue;
            }
            ++g.tiles;
            flash_backward_tile(Q, K, V, dO, L, g.D, TileSpan{i0, rows, j0, cols}, causal, g.dQ, g.dK, g.dV);
        }
    }
    return g;
}

}  // namespace attn::nn
