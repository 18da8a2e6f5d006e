// One step of attention with a key-value cache (see nn/kv_cache.hpp).
// The classroom exercise kv-cache-step; the student's version is lessons/exercises/kv_cache_step.cpp.
// T_q = new positions (queries), T_k = positions cached after the step, d_k = d_v = head width.
#include "nn/kv_cache.hpp"

#include "nn/linalg.hpp"
#include "nn/reductions.hpp"

#include <limits>

namespace attn::nn {

AttentionResult kv_cache_step(KVCache& cache, const Mat& Q, const Mat& K_new, const Mat& V_new) {
    const std::size_t T_q = Q.shape(0);
    expect_shape("kv-cache step: K_new", K_new, {T_q, Q.shape(1)});
    if (V_new.shape(0) != T_q) throw ShapeError("kv-cache step: V_new needs one row per query");
    // 1. append: the new positions' keys and values go below the cached ones
    cache.K = cache.K.shape(0) == 0 ? K_new : concatenated_rows(cache.K, K_new);
    cache.V = cache.V.shape(0) == 0 ? V_new : concatenated_rows(cache.V, V_new);
    // 2. the causal mask aligned to the bottom right: query i is position T_k - T_q + i
    const std::size_t T_k = cache.K.shape(0), offset = T_k - T_q;
    Mat mask = zeros(T_q, T_k);
    for (std::size_t i = 0; i < T_q; ++i)
        for (std::size_t j = offset + i + 1; j < T_k; ++j) mask(i, j) = -std::numeric_limits<double>::infinity();
    // 3. attention against every cached position (the scale is already in Q)
    const Mat S = matmul(Q, transposed(cache.K), "Q K^T");
    AttentionResult r;
    r.scores = S;
    for (std::size_t k = 0; k < S.size(); ++k) r.scores.data()[k] += mask.data()[k];  // S + M
    r.weights = masked_softmax(S, mask);
    r.output = matmul(r.weights, cache.V, "A V");
    return r;
}

}  // namespace attn::nn
