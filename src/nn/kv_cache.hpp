// Decoding with a key-value cache (lesson 13): the keys and values of the decoder's earlier
// positions kept per block and head, so that each new word costs one row of work instead of a
// pass over the whole prefix; the causal mask when there are fewer queries than keys; the work of
// both ways counted.
// T_q = new positions (queries), T_k = positions cached (keys), d_k = d_v = d_model / h = head
// width, T_x = source words, L = decoder blocks, V = target vocabulary.
#pragma once

#include "core/tensor.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/self_attention.hpp"

#include <cstddef>
#include <vector>

namespace attn::nn {

// One head's cache: row t of K and of V are the key and the value of position t.
struct KVCache {
    Mat K;  // T_k x d_k; empty (0 rows) before the first step
    Mat V;  // T_k x d_v
};

// T_q x T_k: 0 where query i may read key j (j <= i + offset), -inf elsewhere. offset = T_k - T_q
// aligns the causal mask to the bottom right (query i is position T_k - T_q + i); offset 0 to the
// top left, as causal_mask(T) for T_q = T_k. Needs offset + T_q <= T_k (ShapeError otherwise).
Mat shifted_causal_mask(std::size_t T_q, std::size_t T_k, std::size_t offset);

// One step of attention with a cache: appends K_new and V_new (T_q rows each) to the cache, then
// the T_q new queries attend to all T_k cached positions under the causal mask aligned to the
// bottom right: query i is position T_k - T_q + i and reads keys 0 .. T_k - T_q + i.
//   Attention = softmax(Q K^T + M) V,  Q already scaled by 1/sqrt(d_k)
// (nn::multi_head_attention folds the scale into W^Q: so do the callers, so that the cached step
// repeats its operations exactly). Q, K_new: T_q x d_k, V_new: T_q x d_v. Returns the masked
// scores and the weights (T_q x T_k) and the output (T_q x d_v).
// The classroom exercise kv-cache-step (src/nn/kv_cache_step.cpp).
AttentionResult kv_cache_step(KVCache& cache, const Mat& Q, const Mat& K_new, const Mat& V_new);

// The multiply-adds of the matrix products of decoding, the attention's share (scores and
// weighted sums of the self-attention and the cross-attention) apart.
struct DecodingWork {
    double multiply_adds = 0.0;
    double attention = 0.0;
};

// The decoder's caches for one source sentence: per block and head the self-attention's growing
// KVCache, and the cross-attention's keys H W_i^K and values H W_i^V of the encoder's output,
// computed once.
struct DecoderCache {
    std::vector<std::vector<KVCache>> self;     // [block][head]
    std::vector<std::vector<Mat>> cross_K;      // [block][head], T_x x d_k
    std::vector<std::vector<Mat>> cross_V;      // [block][head], T_x x d_v
    std::size_t positions = 0;                  // positions decoded so far
};

// The uncached pass is nn::decoder_probabilities (nn/encoder_decoder.hpp); the multiply-adds of
// its products on T decoder positions against T_x source words:
DecodingWork uncached_decoder_work(const EncoderDecoder& m, std::size_t T, std::size_t T_x);

// Empty self-attention caches, and the cross-attention's keys and values from H (their products
// added to `work`).
DecoderCache start_decoder_cache(const EncoderDecoder& m, const Mat& H, DecodingWork& work);

// One decoding step with the cache: the word at position cache.positions goes through every block
// (its keys and values appended to the caches, its query against them with nn::kv_cache_step),
// the last norm and the output layer; returns the next word's probabilities (V) and adds the
// products' multiply-adds to `work`. Every operation is the one the uncached pass does for its last
// row, in the same order, so the row is the same to the bit. Learned positions: ShapeError past
// the table.
Vec cached_decoder_step(const EncoderDecoder& m, DecoderCache& cache, std::size_t word, DecodingWork& work);

// The index of the largest entry, the first of equal ones: the greedy choice.
std::size_t most_likely(const Vec& p);

// Bytes the self-attention caches hold: 8 per double.
double cache_bytes(const DecoderCache& cache);

}  // namespace attn::nn
