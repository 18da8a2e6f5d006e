// Exercise kv-cache-step: one step of attention with a key-value cache, the causal mask aligned
// to the bottom right (lesson 13).
// Checked by lesson 13 (decoding), steps [cache] and [mask]: the cached decoder must give the
// uncached pass's probabilities to the bit at every step of every test sentence, and T_q new
// queries against T_k cached keys must read exactly the keys up to their own positions.
//
// Task: for a cache (declared in src/nn/kv_cache.hpp: K is T_old x d_k, V is T_old x d_v, both
// with 0 rows before the first step), the new positions' queries Q (T_q x d_k, already divided
// by sqrt(d_k)), keys K_new (T_q x d_k) and values V_new (T_q x d_v):
//
//   1. append: cache.K = [cache.K; K_new], cache.V = [cache.V; V_new]   (now T_k = T_old + T_q rows)
//   2. scores S = Q K^T (T_q x T_k): no further scale, it is already in Q
//   3. the causal mask aligned to the bottom right: query i is position T_k - T_q + i, so
//      M_ij = 0 for j <= T_k - T_q + i, and -inf after
//   4. weights A = softmax_j(S_ij + M_ij), output O = A V
//
// and return AttentionResult{S + M, A, O} (src/nn/self_attention.hpp).
// Available: nn::concatenated_rows(top, bottom), nn::zeros(rows, cols), nn::transposed(M)
// (nn/reductions.hpp, nn/linalg.hpp), nn::matmul(A, B, "what"), S + M (xtensor adds two matrices
// entry by entry) and your exercise nn::masked_softmax(S, M); std::numeric_limits<double>::infinity(). The lesson checks
// bit for bit against multi-head attention, which sums its products with nn::matmul and takes its
// softmax with the library's kernels: use those calls, not loops of your own.
//
// Then: meson compile -C build attn-student && build/attn-student check kv-cache-step
#include "nn/kv_cache.hpp"

#include "exercises/not_done.hpp"
#include "nn/linalg.hpp"
#include "nn/reductions.hpp"

#include <limits>

namespace attn::nn {

AttentionResult kv_cache_step([[maybe_unused]] KVCache& cache, [[maybe_unused]] const Mat& Q,
                              [[maybe_unused]] const Mat& K_new, [[maybe_unused]] const Mat& V_new) {
    throw ExerciseNotDone("kv-cache-step");
}

}  // namespace attn::nn
