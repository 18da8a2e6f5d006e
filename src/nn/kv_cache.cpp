// The decoder with a key-value cache, the aligned causal mask and the work of decoding (see
// nn/kv_cache.hpp). T = decoder positions, T_x = source words, d = d_model, h = heads, d_k = d / h,
// d_ff = the network's hidden width, L = decoder blocks, V = target vocabulary.
#include "nn/kv_cache.hpp"

#include "nn/linalg.hpp"
#include "nn/positional.hpp"
#include "nn/reductions.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace attn::nn {

// Rows offset .. offset + T_q - 1 of causal_mask(T_k) (the exercise causal-mask's: a student's
// own mask is the one shown, and the alignment, kv-cache-step's point, is not written out here).
Mat shifted_causal_mask(std::size_t T_q, std::size_t T_k, std::size_t offset) {
    if (offset + T_q > T_k)
        throw ShapeError("shifted causal mask: " + std::to_string(T_q) + " queries from position " +
                         std::to_string(offset + 1) + " pass the " + std::to_string(T_k) + " keys");
    const Mat full = causal_mask(T_k);
    Mat mask = xt::empty<double>({T_q, T_k});
    for (std::size_t i = 0; i < T_q; ++i)
        for (std::size_t j = 0; j < T_k; ++j) mask(i, j) = full(offset + i, j);
    return mask;
}

namespace {

double as_double(std::size_t n) { return static_cast<double>(n); }

// A B through nn::matmul, its multiply-adds counted.
Mat counted(const Mat& A, const Mat& B, const char* what, DecodingWork& work) {
    work.multiply_adds += as_double(A.shape(0) * A.shape(1) * B.shape(1));
    return matmul(A, B, what);
}

// Columns [i d_k, (i+1) d_k) of W, each entry times `scale`: head i's block, as nn::multi_head_attention
// takes it (the same products, so the same bits).
Mat head_block(const Mat& W, std::size_t i, std::size_t d_k, double scale = 1.0) {
    Mat out = columns_of(W, i * d_k, (i + 1) * d_k);
    for (std::size_t k = 0; k < out.size(); ++k) out.data()[k] = scale * out.data()[k];
    return out;
}

// At least the first `rows` rows of nn::sinusoidal_encoding for width d (the exercise positional: a
// student's, in attn-student), from a table kept between calls and grown by doubling. A decoding step
// needs only its own row; computing the t + 1 rows again at every step made decoding quadratic in its
// length (a seventh of a quick run of lesson 13). Every row of the encoding depends only on its position.
const Mat& sinusoidal_rows(std::size_t rows, std::size_t d) {
    thread_local Mat table;
    if (table.shape(1) != d || table.shape(0) < rows) {
        const std::size_t kept = table.shape(1) == d ? table.shape(0) : 0;
        table = sinusoidal_encoding(std::max<std::size_t>({rows, 2 * kept, 64}), d);
    }
    return table;
}

// The input row of position t: E[word] sqrt(d) + PE(t), or + P[t] with learned positions, as
// nn::embedded_inputs computes each row.
Mat input_row(const Mat& table, const Mat& positions, std::size_t word, std::size_t t) {
    const std::size_t d = table.shape(1);
    if (positions.size() > 0 && t >= positions.shape(0))
        throw ShapeError("learned positions: position " + std::to_string(t + 1) + " is past the " +
                         std::to_string(positions.shape(0)) + " positions learned");
    const Mat& added = positions.size() > 0 ? positions : sinusoidal_rows(t + 1, d);
    const double scale = std::sqrt(as_double(d));
    Mat x = xt::empty<double>({std::size_t{1}, d});
    for (std::size_t j = 0; j < d; ++j) x(0, j) = table(word, j) * scale + added(t, j);
    return x;
}

// Multi-head attention of one new row against the caches of one block, head by head.
Mat cached_self_attention(const Mat& x, const MultiHeadParams& p, std::size_t heads, std::vector<KVCache>& caches,
                          DecodingWork& work) {
    const std::size_t d = x.shape(1), d_k = head_width(d, heads);
    const double scale = 1.0 / std::sqrt(as_double(d_k));
    Mat concat = xt::empty<double>({std::size_t{1}, d});
    for (std::size_t i = 0; i < heads; ++i) {
        const Mat q = counted(x, head_block(p.W_Q, i, d_k, scale), "x W_i^Q", work);
        const Mat k = counted(x, head_block(p.W_K, i, d_k), "x W_i^K", work);
        const Mat v = counted(x, head_block(p.W_V, i, d_k), "x W_i^V", work);
        const AttentionResult r = kv_cache_step(caches[i], q, k, v);
        const double attention = 2.0 * as_double(caches[i].K.shape(0) * d_k);  // q K^T and A V
        work.multiply_adds += attention;
        work.attention += attention;
        set_columns(concat, i * d_k, r.output);
    }
    return counted(concat, p.W_O, "Concat W^O", work);
}

// Cross-attention of one row against the encoder's keys and values, kept from the start.
Mat cached_cross_attention(const Mat& x, const MultiHeadParams& p, std::size_t heads, const std::vector<Mat>& K,
                           const std::vector<Mat>& V, DecodingWork& work) {
    const std::size_t d = x.shape(1), d_k = head_width(d, heads);
    const double scale = 1.0 / std::sqrt(as_double(d_k));
    Mat concat = xt::empty<double>({std::size_t{1}, d});
    for (std::size_t i = 0; i < heads; ++i) {
        const Mat q = counted(x, head_block(p.W_Q, i, d_k, scale), "x W_i^Q", work);
        const Mat weights = softmax_rows(matmul_transposed(q, K[i], "q K_i^T"));
        const Mat head = matmul(weights, V[i], "A_i V_i");
        const double attention = 2.0 * as_double(K[i].shape(0) * d_k);
        work.multiply_adds += attention;
        work.attention += attention;
        set_columns(concat, i * d_k, head);
    }
    return counted(concat, p.W_O, "Concat W^O", work);
}

}  // namespace

DecodingWork uncached_decoder_work(const EncoderDecoder& m, std::size_t T, std::size_t T_x) {
    const double t = as_double(T), x = as_double(T_x), d = as_double(m.E_tgt.shape(1));
    const double L = as_double(m.decoder.size()), V = as_double(m.W_o.shape(0));
    const double d_ff = m.decoder.empty() ? 0.0 : as_double(m.decoder[0].feed_forward.W_1.shape(0));
    DecodingWork w;
    // per block: self-attention's projections 4 T d^2, its scores and sums 2 T^2 d; cross-attention's
    // query and output projections 2 T d^2, keys and values 2 T_x d^2, scores and sums 2 T T_x d; the
    // network 2 T d d_ff. Then the output layer T d V.
    w.attention = L * (2.0 * t * t * d + 2.0 * t * x * d);
    w.multiply_adds = L * (6.0 * t * d * d + 2.0 * x * d * d + 2.0 * t * d * d_ff) + w.attention + t * d * V;
    return w;
}

DecoderCache start_decoder_cache(const EncoderDecoder& m, const Mat& H, DecodingWork& work) {
    if (m.positions != PositionScheme::added)
        throw ShapeError(std::string("decoder cache: it caches a model whose positions are added to the inputs; this "
                                     "one's are ") +
                         position_scheme_name(m.positions) + " (lesson 15's step [rope-cache] caches RoPE)");
    const std::size_t d = H.shape(1), d_k = head_width(d, m.heads);
    DecoderCache c;
    for (const DecoderBlockParams& p : m.decoder) {
        c.self.emplace_back(m.heads, KVCache{zeros(0, d_k), zeros(0, d_k)});
        c.cross_K.emplace_back();
        c.cross_V.emplace_back();
        for (std::size_t i = 0; i < m.heads; ++i) {
            c.cross_K.back().push_back(counted(H, head_block(p.cross_attention.W_K, i, d_k), "H W_i^K", work));
            c.cross_V.back().push_back(counted(H, head_block(p.cross_attention.W_V, i, d_k), "H W_i^V", work));
        }
    }
    return c;
}

Vec cached_decoder_step(const EncoderDecoder& m, DecoderCache& cache, std::size_t word, DecodingWork& work) {
    if (cache.self.size() != m.decoder.size())
        throw ShapeError("kv cache: the cache has " + std::to_string(cache.self.size()) + " blocks, the decoder " +
                         std::to_string(m.decoder.size()));
    Mat stream = input_row(m.E_tgt, m.P_tgt, word, cache.positions);
    for (std::size_t l = 0; l < m.decoder.size(); ++l) {
        const DecoderBlockParams& p = m.decoder[l];
        // the decoder block of nn::decoder_block, one row at a time
        const Mat n_1 = layer_norm(stream, p.norm_1.gain, p.norm_1.bias, p.norm_1.eps).output;
        const Mat r_1 = stream + cached_self_attention(n_1, p.self_attention, m.heads, cache.self[l], work);
        const Mat n_2 = layer_norm(r_1, p.norm_2.gain, p.norm_2.bias, p.norm_2.eps).output;
        const Mat r_2 =
            r_1 + cached_cross_attention(n_2, p.cross_attention, m.heads, cache.cross_K[l], cache.cross_V[l], work);
        const Mat n_3 = layer_norm(r_2, p.norm_3.gain, p.norm_3.bias, p.norm_3.eps).output;
        work.multiply_adds += 2.0 * as_double(p.feed_forward.W_1.size());
        stream = r_2 + position_wise_feed_forward(p.feed_forward, n_3);
    }
    cache.positions += 1;
    const Mat z = layer_norm(stream, m.decoder_norm.gain, m.decoder_norm.bias, m.decoder_norm.eps).output;
    Mat logits = counted(z, transposed(m.W_o), "z W_o^T", work);
    add_to_row(logits, 0, m.b_o);
    return row_of(softmax_rows(logits), 0);
}

std::size_t most_likely(const Vec& p) {
    std::size_t best = 0;
    for (std::size_t j = 1; j < p.size(); ++j)
        if (p(j) > p(best)) best = j;
    return best;
}

double cache_bytes(const DecoderCache& cache) {
    double doubles = 0.0;
    for (const std::vector<KVCache>& block : cache.self)
        for (const KVCache& c : block) doubles += as_double(c.K.size() + c.V.size());
    return 8.0 * doubles;
}

}  // namespace attn::nn
