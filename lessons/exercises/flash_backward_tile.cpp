// Exercise flash-backward-tile: one tile of FlashAttention's backward pass (Dao et al. 2022,
// algorithm 4; Dao 2023).
// Checked by lesson 10 (online-softmax), steps [backward-tiles] and [backward-causal]: dQ, dK and
// dV (T = 10, d_k = 4, d_v = 3), added up tile by tile for tile shapes that do and do not divide T,
// must match the golden file (the lesson also checks them against lesson 8's dense gradients).
//
// Task: the forward kept only its output O and each row's log-sum-exp L_i = m_i + log l_i. For the
// queries i and keys j of `tile` (rows tile.first_query .. + tile.queries - 1 of Q, rows
// tile.first_key .. + tile.keys - 1 of K and V), with `causal` only the pairs j <= i, ADD to dQ,
// dK and dV (declared in src/nn/tiled_attention.hpp; other tiles add their parts too):
//
//   s_ij = q_i . k_j / sqrt(d_k),   P_ij = exp(s_ij - L_i)     (the weights, recomputed)
//   dV_j += P_ij dO_i
//   dP_ij = dO_i . v_j,             dS_ij = P_ij (dP_ij - D_i)
//   dQ_i += dS_ij k_j / sqrt(d_k),  dK_j += dS_ij q_i / sqrt(d_k)
//
// D_i = dO_i . o_i is given (nn::output_gradient_dots): it is sum_j P_ij dP_ij over the whole row,
// which one tile cannot see. A pair hidden by the mask adds nothing (give it P_ij = 0, and then
// dS_ij = +0). Available: portable::exp (core/portable_math.hpp; use it rather than std::exp, so
// that your numbers have the golden file's bits), std::sqrt, Q(i, p) to read an entry.
//
// Then: meson compile -C build attn-student && build/attn-student check flash-backward-tile
#include "nn/tiled_attention.hpp"

#include "core/portable_math.hpp"
#include "exercises/not_done.hpp"

#include <cmath>

namespace attn::nn {

void flash_backward_tile([[maybe_unused]] const Mat& Q, [[maybe_unused]] const Mat& K, [[maybe_unused]] const Mat& V,
                         [[maybe_unused]] const Mat& dO, [[maybe_unused]] const Vec& L, [[maybe_unused]] const Vec& D,
                         [[maybe_unused]] const TileSpan& tile, [[maybe_unused]] bool causal, [[maybe_unused]] Mat& dQ,
                         [[maybe_unused]] Mat& dK, [[maybe_unused]] Mat& dV) {
    throw ExerciseNotDone("flash-backward-tile");
}

}  // namespace attn::nn
