// Attention tile by tile with a running max and sum per query (see nn/tiled_attention.hpp;
// Dao et al. 2022, algorithm 1). T_q = queries, T_k = keys, d_k = key width, d_v = value width,
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

}  // namespace attn::nn
