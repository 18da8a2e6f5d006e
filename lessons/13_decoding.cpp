// Lesson 13: decoding. Lesson 12's trained Transformer produces its translations one word at a
// time: first by re-running the decoder over the whole prefix for every word, then with a
// key-value cache that changes no bit, with the causal mask aligned for fewer queries than keys,
// with fewer key-value heads, by beam search and by sampling; BLEU, and lesson 12's three models
// scored by it against source length; then its decoder alone, trained as a language model.
// T = decoder positions, T_q / T_k = queries / keys, T_x = source words, d = d_model, h = heads,
// L = decoder blocks, V = target vocabulary.
#include "registry.hpp"
#include "support.hpp"
#include "transformer_race.hpp"
#include "translation.hpp"

#include "core/portable_math.hpp"
#include "core/rng.hpp"
#include "nn/beam_search.hpp"
#include "nn/bleu.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/grouped_query.hpp"
#include "nn/kv_cache.hpp"
#include "nn/language_model.hpp"
#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/sampling.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <memory>
#include <string>
#include <vector>

namespace attn {

namespace decoding {  // this lesson's own names (the lessons compile as unity files: meson.build)
namespace {

using namespace translation;  // lesson 9's corpus (lessons/translation.hpp)

// ---------------------------------------------------------------- parameters (--set)

// epochs, sentences and test are lesson 12's, passed on: at their defaults (lesson 12's) the
// models are those lesson 12 trains, and `attn run all` trains them once for both lessons.
namespace param {
const Param epochs{"epochs", 8, 1, 60, "lesson 12's training: passes over the training set"};
const Param sentences{"sentences", 800, 50, 20000, "lesson 12's training: sentence pairs in the training set"};
const Param test{"test", 200, 20, 2000, "lesson 12's held-out test set, decoded here"};
const Param queries{"queries", 2, 1, 8, "step [mask]: new positions T_q attending to the cache at once"};
const Param beam{"beam", 4, 2, 12, "step [beam]: the beam width k"};
const Param long_count{"long", 40, 5, 400, "step [beam]: sentences longer than the corpus's (24 to 40 words, every length as often) decoded"};
const Param top_k{"top_k", 3, 1, 10, "step [sampling]: the k words top-k sampling keeps"};
const Param top_p{"top_p", 90, 1, 100, "step [sampling]: the mass top-p sampling keeps, in percent"};
const Param lm_steps{"lm_steps", 100, 100, 1000, "step [language-model]: Adam steps of the decoder-only language model"};
}  // namespace param

std::string limits(const Config&) { return ""; }

// Decoding the test set twice (with and without the cache) costs about a fifth of a greedy
// decoding of it per pass of lesson 12's training: measured, the default run took 0.9 s beyond
// lesson 12's training at a load of 2; 2 s on the safe side, growing with the test set. Step [bleu]'s
// greedy decodings (three models, the test set and the longer sentences) added 0.2 s of CPU.
constexpr double seconds_at_default = 2.0;
// Step [language-model]: 1000 Adam steps of the language model took 3.6 s of CPU at a load of 7 on
// two cores, so its default 100 about 0.4 s; 1 s on the safe side, growing with lm_steps.
constexpr double lm_seconds_at_default = 1.0;

TimeEstimate time_estimate(const Config& c) {
    // lesson 12's estimate covers its training twice over (step [chaos] retrains the Transformer):
    // the race alone is about two thirds of it
    const Lesson& race = *find_lesson("transformer");
    const double training = race.time(transformer::race_config(c)).seconds * 2.0 / 3.0;
    const double own = seconds_at_default *
                       (as_double(c.size(param::test)) / 200.0 +
                        as_double(c.size(param::beam)) / 4.0 * (as_double(c.size(param::test)) + 4.0 * as_double(c.size(param::long_count))) / 360.0);
    const double language_model = lm_seconds_at_default * as_double(c.size(param::lm_steps)) / 100.0;
    return {training + own + language_model, "training (lesson 12's race), decoding and the language model",
            fmt::format("lesson 12's race, then the test set decoded with and without the cache and by beam search, "
                        "{:.0f} s at the defaults, growing with test, beam and long, and the language model's "
                        "training, {:.0f} s at the defaults, growing with lm_steps",
                        seconds_at_default, lm_seconds_at_default),
            {{&param::epochs, 1.0}, {&param::sentences, 1.0}, {&param::test, 1.0}, {&param::beam, 1.0},
             {&param::long_count, 1.0}, {&param::lm_steps, 1.0}}};
}

// ---------------------------------------------------------------- decoding, both ways

// One sentence decoded greedily: the words (without <eos>) and the next-word distribution of every
// step, with the work of every step.
struct Decoded {
    std::vector<std::size_t> words;
    std::vector<Vec> probabilities;  // one per step: the row the choice was made from
    std::vector<nn::DecodingWork> work;
    nn::DecodingWork once;           // the cache's start: the cross-attention's keys and values
    double cache_bytes = 0.0;
};

// Without a cache: the decoder over <sos> and every word so far, for every word (nn's greedy pass).
Decoded uncached(const nn::EncoderDecoder& m, const Mat& H, std::size_t max_words) {
    Decoded out;
    std::vector<std::size_t> in = {sos};
    while (out.words.size() < max_words) {
        const Mat P = nn::decoder_probabilities(m, H, in);
        out.probabilities.push_back(nn::row_of(P, in.size() - 1));
        out.work.push_back(nn::uncached_decoder_work(m, in.size(), H.shape(0)));
        const std::size_t y = nn::most_likely(out.probabilities.back());
        if (y == eos) break;
        out.words.push_back(y);
        in.push_back(y);
    }
    return out;
}

// With the cache: one row per word.
Decoded cached(const nn::EncoderDecoder& m, const Mat& H, std::size_t max_words) {
    Decoded out;
    nn::DecoderCache cache = nn::start_decoder_cache(m, H, out.once);
    std::size_t word = sos;
    while (out.words.size() < max_words) {
        nn::DecodingWork w;
        out.probabilities.push_back(nn::cached_decoder_step(m, cache, word, w));
        out.work.push_back(w);
        const std::size_t y = nn::most_likely(out.probabilities.back());
        if (y == eos) break;
        out.words.push_back(y);
        word = y;
    }
    out.cache_bytes = nn::cache_bytes(cache);
    return out;
}

std::vector<std::string> step_labels(const Corpus& c, const std::vector<std::size_t>& words, std::size_t steps) {
    std::vector<std::string> labels;
    for (std::size_t t = 0; t < steps; ++t)
        labels.push_back(fmt::format("t={} {}", t + 1, t == 0 ? std::string("<sos>") : c.target.words[words[t - 1]]));
    return labels;
}

// The test pair with the longest reference (the first of them): its decoding shows the growth.
const Pair& longest(const std::vector<Pair>& pairs) {
    return *std::max_element(pairs.begin(), pairs.end(),
                             [](const Pair& a, const Pair& b) { return a.tgt.size() < b.tgt.size(); });
}

// ---------------------------------------------------------------- step [uncached]

void record_uncached(Trace& trace, const Corpus& c, const nn::EncoderDecoder& m, const Pair& p, const Decoded& d,
                     std::size_t max_words) {
    const std::size_t T = d.work.size(), L = m.decoder.size(), dm = m.E_tgt.shape(1);
    trace.step("uncached", "Decoding without a cache: the whole prefix again for every word",
               "y_t = argmax_w p(w | y_<t, x),  p(. | y_<t, x) = last row of Decoder(<sos> y_1 .. y_{t-1}, H)",
               fmt::format(
                   "The models are lesson 12's, trained at this configuration (epochs, sentences and test are "
                   "lesson 12's): the run's own result when lesson 12 ran first in this process (attn run all), "
                   "else trained here once; training is deterministic, so the numbers are the same either way. "
                   "Its Transformer translates the longest reference of the test set, {}, greedily: the encoder "
                   "runs once, then for every word the decoder runs over <sos> and all the words so far, and only "
                   "its last row is used (nn::encoder_decoder_greedy does exactly this; so did lesson 12). The "
                   "work of each step, counted from the shapes of its matrix products: the projections and the "
                   "network grow like t d^2 at step t, the self-attention's scores and weighted sums like "
                   "t^2 d, and the cross-attention's keys and values of the encoder's output (2 T_x d^2 per "
                   "block) are computed again every time. L = {} blocks, d = {}.",
                   pair_text(c, p), L, dm));
    Mat work = xt::empty<double>({T, std::size_t{3}});
    double total = 0.0;
    for (std::size_t t = 0; t < T; ++t) {
        total += d.work[t].multiply_adds;
        work(t, 0) = d.work[t].multiply_adds, work(t, 1) = d.work[t].attention, work(t, 2) = total;
    }
    Vec ids = xt::empty<double>({d.words.size()});
    std::vector<std::string> words;
    for (std::size_t k = 0; k < d.words.size(); ++k) ids(k) = as_double(d.words[k]), words.push_back(c.target.words[d.words[k]]);
    trace.tensor("output", "greedy, uncached: word ids", ids, words)
        .foreign_trained(decoded_with_race());
    trace.tensor("work", "multiply-adds of the products", work, step_labels(c, d.words, T),
                 {"step", "attention", "total so far"})
        .foreign_trained(decoded_with_race());
    const std::vector<std::size_t> greedy = nn::encoder_decoder_greedy(m, p.src, sos, eos, max_words);
    trace.check("the words are lesson 12's greedy translation (words that differ)",
                greedy == d.words ? 0.0 : 1.0 + as_double(std::max(greedy.size(), d.words.size())), 0.0);
    // the self-attention's share grows like t^2: its second difference over t is constant, 4 L d
    if (T >= 3) {
        double worst = 0.0;
        for (std::size_t t = 2; t < T; ++t) {
            const double second = work(t, 1) - 2.0 * work(t - 1, 1) + work(t - 2, 1);
            worst = std::max(worst, std::abs(second - 4.0 * as_double(L * dm)));
        }
        trace.check("the attention's work per step grows like t^2: its second difference is 4 L d at every step",
                    worst, 0.0);
    }
}

// ---------------------------------------------------------------- step [cache]

// Bytes per token of a decoder's cache: keys and values, every block, 2 bytes a number (16-bit
// floats, as published models are served) and 8 (the doubles here).
struct Published {
    const char* name;
    double layers, width;  // decoder blocks; d_model, or the width of the keys of all key-value heads
};

void record_cache(Trace& trace, const Corpus& c, const nn::EncoderDecoder& m, const Pair& p, const Decoded& plain,
                  const Decoded& fast, const Apart& apart, std::size_t steps_checked, std::size_t sentences) {
    const std::size_t T = fast.work.size(), L = m.decoder.size(), dm = m.E_tgt.shape(1);
    const double T_x = as_double(p.src.size());
    trace.step("cache", "The key-value cache: one row of work per word, the same bits",
               "K_t = [K_{t-1}; x_t W^K],  V_t = [V_{t-1}; x_t W^V],  o_t = softmax(q_t K_t^T / sqrt(d_k)) V_t",
               fmt::format(
                   "At step t the uncached pass recomputes rows 1 .. t-1 of every block, and they come out as "
                   "before: causal self-attention keeps each row from reading later ones, so row i never "
                   "changes once computed. Only the new row is needed, and of the earlier rows only their keys "
                   "and values, per block and head: the cache. Each step appends one key and one value per head "
                   "and block (nn::kv_cache_step), attends with the new query to the t cached positions, and "
                   "the cross-attention's keys and values of the encoder's output are computed once per sentence. "
                   "Every operation is the one the uncached pass does for its last row, in the same order "
                   "(the scale 1/sqrt(d_k) folded into W^Q, the products summed in the order of k, the same "
                   "softmax), so the probabilities are the same to the bit: checked at every step of the {} test "
                   "sentences ({} steps). The work per step now grows like t (the attention: 2 L d (t + T_x)), "
                   "and the cache holds 2 L d numbers per token: {} bytes here in doubles.",
                   sentences, steps_checked, 2 * L * dm * 8));
    Mat work = xt::empty<double>({T, std::size_t{4}});
    for (std::size_t t = 0; t < T; ++t) {
        work(t, 0) = plain.work[t].multiply_adds, work(t, 1) = fast.work[t].multiply_adds;
        work(t, 2) = fast.work[t].attention, work(t, 3) = plain.work[t].multiply_adds / fast.work[t].multiply_adds;
    }
    trace.tensor("work", "multiply-adds per step", work, step_labels(c, fast.words, T),
                 {"uncached", "cached", "cached attention", "ratio"})
        .foreign_trained(decoded_with_race());
    double plain_total = 0.0, fast_total = fast.once.multiply_adds;
    for (std::size_t t = 0; t < T; ++t) plain_total += plain.work[t].multiply_adds, fast_total += fast.work[t].multiply_adds;
    trace.tensor("totals", "the whole sentence", Vec{plain_total, fast_total, fast.once.multiply_adds},
                 {"uncached", "cached", "of it, the encoder's keys and values"})
        .foreign_trained(decoded_with_race());
    trace.check("at every step of every test sentence the cached probabilities equal the uncached pass's last row, "
                "bit for bit (entries that differ)",
                apart.bits, 0.0, attn_bits_only);
    trace.check("and where a student's functions ran, to rounding (largest |difference|; 0 here, 1e-12 there)",
                apart.largest, 0.0, others_rounding);
    double counted_error = 0.0;
    for (std::size_t t = 0; t < T; ++t)
        counted_error = std::max(counted_error, std::abs(fast.work[t].attention -
                                                         2.0 * as_double(L * dm) * (as_double(t + 1) + T_x)));
    trace.check("the cached step's attention does 2 L d (t + T_x) multiply-adds at step t: the cache holds t keys",
                counted_error, 0.0);
    const nn::DecodingWork first = nn::uncached_decoder_work(m, 1, p.src.size());
    trace.check("at step 1 the uncached pass does the cached step's work plus the encoder's keys and values",
                std::abs(first.multiply_adds - fast.work[0].multiply_adds - fast.once.multiply_adds), 0.0);
    trace.check("the cache holds 2 L d doubles per token (bytes per token against 16 L d)",
                std::abs(fast.cache_bytes / as_double(T) - 16.0 * as_double(L * dm)), 0.0);
    // published sizes (decoder blocks, width), computed, not run
    const std::vector<Published> models = {{"this Transformer", as_double(L), as_double(dm)},
                                           {"Transformer base (Vaswani 2017)", 6, 512},
                                           {"Transformer big (Vaswani 2017)", 6, 1024},
                                           {"GPT-2 1.5B (Radford 2019)", 48, 1600},
                                           {"GPT-3 175B (Brown 2020)", 96, 12288}};
    Mat table = xt::empty<double>({models.size(), std::size_t{4}});
    std::vector<std::string> names;
    for (std::size_t k = 0; k < models.size(); ++k) {
        const double per_token = 2.0 * models[k].layers * models[k].width;
        table(k, 0) = models[k].layers, table(k, 1) = models[k].width, table(k, 2) = per_token * 2.0;
        table(k, 3) = per_token * 2.0 * 2048.0 / (1024.0 * 1024.0);
        names.push_back(models[k].name);
    }
    trace.tensor("memory", "2 L d numbers per token, 2 bytes each", table, names,
                 {"L", "d_model", "bytes per token", "MiB at 2048 tokens"});
}

// ---------------------------------------------------------------- step [mask]

// What each wrong alignment does to new query i (T_q x 4): the weight the right attention puts where
// the top-left mask hides, that mask's output error, the weight the unmasked attention puts on later
// positions, and its output error, against the uncached pass's rows offset + i of `full`.
Mat wrong_alignments(const Mat& right, const Mat& top_left, const Mat& none, const Mat& V, const Mat& full,
                     std::size_t offset) {
    const std::size_t T_q = right.shape(0), T_k = right.shape(1), d_k = V.shape(1);
    Mat wrong = xt::empty<double>({T_q, std::size_t{4}});
    for (std::size_t i = 0; i < T_q; ++i) {
        double hidden = 0.0, leaked = 0.0, top_error = 0.0, none_error = 0.0;
        for (std::size_t j = i + 1; j <= offset + i; ++j) hidden += right(i, j);
        for (std::size_t j = offset + i + 1; j < T_k; ++j) leaked += none(i, j);
        for (std::size_t a = 0; a < d_k; ++a) {
            double o_top = 0.0, o_none = 0.0;
            for (std::size_t j = 0; j < T_k; ++j) o_top += top_left(i, j) * V(j, a), o_none += none(i, j) * V(j, a);
            top_error = std::max(top_error, std::abs(o_top - full(offset + i, a)));
            none_error = std::max(none_error, std::abs(o_none - full(offset + i, a)));
        }
        wrong(i, 0) = hidden, wrong(i, 1) = top_error, wrong(i, 2) = leaked, wrong(i, 3) = none_error;
    }
    return wrong;
}

// LN_1 of the decoder's inputs E[in] sqrt(d) + PE in the first block: what its self-attention reads.
Mat first_block_input(const nn::EncoderDecoder& m, const std::vector<std::size_t>& in) {
    const nn::LayerNormParams& n = m.decoder[0].norm_1;
    return nn::layer_norm(nn::embedded_inputs(m.E_tgt, m.P_tgt, in), n.gain, n.bias, n.eps).output;
}

// The checks of step [mask]: the cached step's T_q rows r against the uncached pass's rows `full`.
void record_mask_checks(Trace& trace, const nn::AttentionResult& r, const Mat& full, std::size_t offset) {
    const std::size_t T_q = r.weights.shape(0), T_k = r.weights.shape(1);
    Apart rows;
    for (std::size_t i = 0; i < T_q; ++i) rows.add(Vec(nn::row_of(r.output, i)), Vec(nn::row_of(full, offset + i)));
    trace.check("the cached step's outputs equal the uncached pass's last T_q rows, bit for bit (entries that differ)",
                rows.bits, 0.0, attn_bits_only);
    trace.check("and where a student's functions ran, to rounding (largest |difference|; 0 here, 1e-12 there)",
                rows.largest, 0.0, others_rounding);
    trace.check("every query of the cached step reads every key up to its own position (weights above 0)",
                [&] {
                    double zeros = 0.0;
                    for (std::size_t i = 0; i < T_q; ++i)
                        for (std::size_t j = 0; j <= offset + i; ++j) zeros += r.weights(i, j) > 0.0 ? 0.0 : 1.0;
                    return zeros;
                }(),
                0.0);
    trace.check("and none after it (largest weight past its position)",
                [&] {
                    double largest = 0.0;
                    for (std::size_t i = 0; i < T_q; ++i)
                        for (std::size_t j = offset + i + 1; j < T_k; ++j) largest = std::max(largest, r.weights(i, j));
                    return largest;
                }(),
                0.0);
}

void record_mask(Trace& trace, const Corpus& c, const nn::EncoderDecoder& m, const Pair& p, std::size_t T_q_wanted) {
    // the first block's first head on the reference's decoder inputs, as the uncached pass sees them
    const std::vector<std::size_t> in = decoder_inputs(p);
    const std::size_t T_k = in.size(), T_q = std::min(T_q_wanted, T_k), offset = T_k - T_q;
    const std::size_t dm = m.E_tgt.shape(1), d_k = dm / m.heads;
    const nn::DecoderBlockParams& b = m.decoder[0];
    const Mat n_1 = first_block_input(m, in);
    Mat W_Q = nn::columns_of(b.self_attention.W_Q, 0, d_k);
    for (std::size_t k = 0; k < W_Q.size(); ++k) W_Q.data()[k] = W_Q.data()[k] / std::sqrt(as_double(d_k));
    const Mat Q = nn::matmul(n_1, W_Q, "X W_1^Q / sqrt(d_k)");
    const Mat K = nn::matmul(n_1, nn::columns_of(b.self_attention.W_K, 0, d_k), "X W_1^K");
    const Mat V = nn::matmul(n_1, nn::columns_of(b.self_attention.W_V, 0, d_k), "X W_1^V");
    // the uncached pass: all T_k queries under the square causal mask
    const Mat full_weights = nn::masked_softmax(nn::matmul(Q, nn::transposed(K), "Q K^T"), nn::causal_mask(T_k));
    const Mat full = nn::matmul(full_weights, V, "A V");
    // the cache holds the first T_k - T_q positions; the last T_q arrive together
    nn::KVCache cache{nn::rows_of(K, 0, offset), nn::rows_of(V, 0, offset)};
    const nn::AttentionResult r =
        nn::kv_cache_step(cache, nn::rows_of(Q, offset, T_k), nn::rows_of(K, offset, T_k), nn::rows_of(V, offset, T_k));
    // the same T_q queries under the top-left mask, and under none
    const Mat S = nn::matmul(nn::rows_of(Q, offset, T_k), nn::transposed(K), "Q K^T");
    const Mat top_left = nn::masked_softmax(S, nn::shifted_causal_mask(T_q, T_k, 0));
    const Mat none = nn::softmax_rows(S);
    std::vector<std::string> keys, queries;
    for (std::size_t j = 0; j < T_k; ++j) keys.push_back(c.target.words[in[j]]);
    for (std::size_t i = 0; i < T_q; ++i) queries.push_back(fmt::format("q{} = pos {}", i + 1, offset + i + 1));
    trace.step("mask", "Fewer queries than keys: the causal mask aligned to the bottom right",
               "M_ij = 0 if j <= i + T_k - T_q, else -inf   (query i is position T_k - T_q + i)",
               fmt::format(
                   "With a cache, T_q new positions meet T_k >= T_q keys: the keys of all earlier positions and "
                   "their own. Query i is position T_k - T_q + i, so it may read keys up to that position: the "
                   "causal mask's diagonal runs into the bottom-right corner of the T_q x T_k matrix. Here the "
                   "first decoder block's first head on the reference \"{}\" (its decoder inputs, T_k = {}): the "
                   "cache holds the first {} positions and the last T_q = {} arrive at once. Aligned to the top "
                   "left (the square mask's first rows, j <= i, which is what a mask made for T_q = T_k gives "
                   "when it is cut to T_q rows), query i reads only keys 1 .. i: the start of the sentence "
                   "instead of its own prefix, and nothing warns. With no mask at all (a single new query needs "
                   "none, and the habit stays), the first new query reads the word after it: the future leaks "
                   "into its output, as it cannot at translation time.",
                   joined(c.target, p.tgt), T_k, offset, T_q));
    trace.tensor("bottom_right", "M, aligned to the bottom right", nn::shifted_causal_mask(T_q, T_k, offset), queries,
                 keys, View::heatmap)
        .axes("new queries", "cached keys");
    trace.tensor("weights", "softmax(Q K^T + M), the cached step", r.weights, queries, keys, View::heatmap)
        .axes("new queries", "cached keys")
        .foreign_trained(decoded_with_race());
    trace.tensor("top_left", "softmax(Q K^T + M), M aligned to the top left", top_left, queries, keys, View::heatmap)
        .axes("new queries", "cached keys")
        .foreign_trained(decoded_with_race());
    trace.tensor("no_mask", "softmax(Q K^T), no mask", none, queries, keys, View::heatmap)
        .axes("new queries", "cached keys")
        .foreign_trained(decoded_with_race());
    const Mat wrong = wrong_alignments(r.weights, top_left, none, V, full, offset);
    trace.tensor("wrong", "what the wrong masks change, per query", wrong, queries,
                 {"weight hidden by top-left", "its output error", "weight on the future, no mask",
                  "its output error"})
        .foreign_trained(decoded_with_race());
    record_mask_checks(trace, r, full, offset);
}

// ---------------------------------------------------------------- step [kv-heads]

// W_kv's key-value heads (d_k columns each) laid out as h heads for multi-head attention: head i is
// a copy of key-value head group(i).
Mat copied_heads(const Mat& W_kv, std::size_t h, std::size_t d_k, const std::function<std::size_t(std::size_t)>& group) {
    Mat out = xt::empty<double>({W_kv.shape(0), h * d_k});
    for (std::size_t i = 0; i < h; ++i) nn::set_columns(out, i * d_k, nn::columns_of(W_kv, group(i) * d_k, (group(i) + 1) * d_k));
    return out;
}

// Lesson 6's multi-head attention with its W^K and W^V made of the grouped layer's heads, copied
// so that query head i reads key-value head group(i): what the grouped layer must compute.
Mat as_multi_head(const Mat& X, const nn::MultiHeadParams& mha, const nn::GroupedQueryParams& g, std::size_t h,
                  const std::function<std::size_t(std::size_t)>& group, const Mat& causal) {
    const std::size_t d_k = X.shape(1) / h;
    nn::MultiHeadParams p = mha;
    p.W_K = copied_heads(g.W_K, h, d_k, group), p.W_V = copied_heads(g.W_V, h, d_k, group);
    return nn::multi_head_attention(X, X, p, h, &causal).output;
}

// n_kv = h, h / 2 and 1, each once (h = 1: only 1).
std::vector<std::size_t> kv_head_counts(std::size_t h) {
    std::vector<std::size_t> n = {h};
    if (h % 2 == 0 && h / 2 > 1) n.push_back(h / 2);
    if (h > 1) n.push_back(1);
    return n;
}

void record_kv_heads(Trace& trace, const Corpus& c, const nn::EncoderDecoder& m, const Pair& p) {
    const std::vector<std::size_t> in = decoder_inputs(p);
    const std::size_t h = m.heads, L = m.decoder.size(), dm = m.E_tgt.shape(1), d_k = dm / h;
    const Mat X = first_block_input(m, in), causal = nn::causal_mask(in.size());
    const nn::MultiHeadParams& mha = m.decoder[0].self_attention;
    const nn::MultiHeadResult full = nn::multi_head_attention(X, X, mha, h, &causal);
    trace.step("kv-heads", "Fewer key-value heads: multi-query and grouped-query attention",
               "head_i = Attention(X W_i^Q, X W_g^K, X W_g^V),  g = floor(i / (h / n_kv)),  cache: 2 L n_kv d_k "
               "numbers per token",
               fmt::format(
                   "The cache holds a key and a value per head, block and position; at serving time reading it "
                   "dominates each step. Shazeer 2019 (multi-query attention) lets all h query heads share one "
                   "key-value head; Ainslie et al. 2023 (grouped-query attention) take the middle way: n_kv "
                   "key-value heads, each shared by a group of h / n_kv consecutive query heads, so query head i "
                   "reads key-value head floor(i / (h / n_kv)) (nn::grouped_query_attention). The cache shrinks by "
                   "h / n_kv. Ainslie et al. start such a model from a multi-head one by averaging the key and "
                   "value projections of each group (nn::mean_pooled_heads), then train it a little more; here "
                   "the averaged heads are used untrained, on the first decoder block's self-attention over the "
                   "reference \"{}\", so the output moves (the last column). With n_kv = h nothing is shared and "
                   "the layer is lesson 6's multi-head attention, to the bit: the products and the softmax are the "
                   "same ones. Numbering the groups the other way (query head i reading head i mod n_kv) also "
                   "shares every key-value head h / n_kv times, but between other heads: for h = {} and n_kv = {} "
                   "it differs, and the checks tell. L = {}, d_k = {}.",
                   joined(c.target, p.tgt), h, h / 2, L, d_k));
    const std::vector<std::size_t> counts = kv_head_counts(h);
    Mat table = xt::empty<double>({counts.size(), std::size_t{5}});
    std::vector<std::string> rows;
    Apart as_lesson_6, grouped;
    double modular = -1.0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
        const std::size_t n_kv = counts[r];
        const nn::GroupedQueryParams g = nn::grouped_query_params(mha, h, n_kv);
        const nn::MultiHeadResult gqa = nn::grouped_query_attention(X, X, g, h, n_kv, &causal);
        if (n_kv == h) as_lesson_6.add(gqa.output, full.output), as_lesson_6.add(gqa.weights, full.weights);
        // the grouping written out again: query heads i n_kv / h share a head
        grouped.add(gqa.output, as_multi_head(X, mha, g, h, [&](std::size_t i) { return i * n_kv / h; }, causal));
        if (n_kv > 1 && n_kv < h)
            modular = differing_bits(gqa.output, as_multi_head(X, mha, g, h, [&](std::size_t i) { return i % n_kv; }, causal));
        table(r, 0) = as_double(n_kv), table(r, 1) = as_double(h / n_kv), table(r, 2) = as_double(2 * L * n_kv * d_k);
        table(r, 3) = 8.0 * table(r, 2), table(r, 4) = xt::amax(xt::abs(gqa.output - full.output))();
        rows.push_back(n_kv == h ? "multi-head" : n_kv == 1 ? "multi-query" : "grouped-query");
    }
    trace.tensor("kv_heads", "the cache per token, and the output's change by mean-pooled heads", table, rows,
                 {"n_kv", "query heads per kv head", "numbers per token", "bytes per token", "max |GQA - MHA|"})
        .foreign_trained(decoded_with_race());
    trace.check("with n_kv = h grouped-query attention is lesson 6's multi-head attention, bit for bit (entries of "
                "the output and the weights that differ)",
                as_lesson_6.bits, 0.0, attn_bits_only);
    trace.check("query head i reads key-value head floor(i n_kv / h): the layer equals multi-head attention with "
                "the key-value heads copied so, bit for bit, for every n_kv (entries that differ)",
                grouped.bits, 0.0, attn_bits_only);
    trace.check("both, where a student's functions ran, to rounding (largest |difference|; 0 here, 1e-12 there)",
                std::max(as_lesson_6.largest, grouped.largest), 0.0, others_rounding);
    if (modular >= 0.0)
        trace.check(fmt::format("the grouping i mod n_kv gives another output at n_kv = {} (1 when it gives the same)",
                                h / 2),
                    modular > 0.0 ? 0.0 : 1.0, 0.0);
}

// ---------------------------------------------------------------- step [beam]

// The natural log of the probability greedy decoding gave its own translation, <eos> included
// when it said it (summed in the order of the words, as beam search sums).
double greedy_log_prob(const Decoded& d) {
    double sum = 0.0;
    for (std::size_t t = 0; t < d.probabilities.size(); ++t)
        sum += portable::log(d.probabilities[t](t < d.words.size() ? d.words[t] : eos));
    return sum;
}

std::vector<std::size_t> without_eos(const nn::Hypothesis& h) {
    std::vector<std::size_t> w = h.words;
    if (h.finished) w.pop_back();
    return w;
}

// One set of pairs by greedy decoding and beam search: exact matches of greedy, of width k with
// alpha 0 and 0.6, the sentences where the best beam's log-probability is below greedy's, and
// the mean log-probability of greedy's and of the beam's translation.
struct BeamRow {
    double greedy = 0.0, beam = 0.0, penalised = 0.0, below = 0.0, greedy_log_p = 0.0, beam_log_p = 0.0;
    double width1_words = 0.0, width1_log_p = 0.0;  // differences from greedy of width 1 (checked)
};

BeamRow beam_row(const nn::EncoderDecoder& m, const std::vector<Pair>& pairs, std::size_t k, std::size_t max_words) {
    BeamRow r;
    for (const Pair& p : pairs) {
        const Mat H = nn::encoder_output(m, p.src);
        const Decoded g = cached(m, H, max_words);
        const double g_log_p = greedy_log_prob(g);
        const std::vector<nn::Hypothesis> one = nn::beam_search(m, H, sos, eos, 1, max_words, 0.0);
        r.width1_words += without_eos(one[0]) == g.words ? 0.0 : 1.0;
        r.width1_log_p = std::max(r.width1_log_p, std::abs(one[0].log_prob - g_log_p));
        const std::vector<nn::Hypothesis> wide = nn::beam_search(m, H, sos, eos, k, max_words, 0.0);
        const std::vector<nn::Hypothesis> penalised = nn::beam_search(m, H, sos, eos, k, max_words, 0.6);
        r.greedy += g.words == p.tgt ? 1.0 : 0.0;
        r.beam += without_eos(wide[0]) == p.tgt ? 1.0 : 0.0;
        r.penalised += without_eos(penalised[0]) == p.tgt ? 1.0 : 0.0;
        r.below += wide[0].log_prob < g_log_p ? 1.0 : 0.0;
        r.greedy_log_p += g_log_p / as_double(pairs.size());
        r.beam_log_p += wide[0].log_prob / as_double(pairs.size());
    }
    const double n = as_double(pairs.size());
    r.greedy /= n, r.beam /= n, r.penalised /= n;
    return r;
}

void record_beam(Trace& trace, const nn::EncoderDecoder& m, const std::vector<Pair>& test,
                 const std::vector<Pair>& longer, std::size_t k, std::size_t max_words, std::size_t long_max_words) {
    trace.step("beam", "Beam search: the k most likely beginnings kept",
               "score(y_1..y_t) = sum_i log p(y_i | y_<i, x);  at the end: log p(Y) / lp(Y),  "
               "lp(Y) = ((5 + |Y|) / 6)^alpha",
               fmt::format(
                   "Greedy decoding commits to the most likely word at every step, and a word that looked best "
                   "may leave only poor continuations. Beam search (Sutskever et al. 2014, section 3.1) keeps "
                   "the k = {} most likely partial translations: at every step each is extended by every word, "
                   "scored by the sum of the logs of its words' probabilities (a product of probabilities "
                   "underflows), and the k best of all candidates are kept (nn::beam_step); a hypothesis that "
                   "says <eos> is finished and competes as it is, until the k best are all finished. Each "
                   "hypothesis decodes with its own key-value cache, copied when it branches. A sum of logs "
                   "favours short translations, each word costing a little; Wu et al. 2016 divide by a length "
                   "penalty lp(Y) when choosing among the finished ones (alpha = 0.6 here). With k = 1 beam "
                   "search is greedy decoding, checked on every sentence. A wider beam finds translations at "
                   "least as likely as greedy's most of the time, but not always: the greedy beginning may "
                   "fall out of the beam early while the hypotheses that pushed it out end worse; counted "
                   "below, not checked. The test set, and {} sentences longer than any the models were "
                   "trained on (24 to 40 source words, every length as often).",
                   k, longer.size()));
    // the searches after the step's header: a beam step that throws stops this step, not the one before
    const BeamRow a = beam_row(m, test, k, max_words), b = beam_row(m, longer, k, long_max_words);
    const Mat table = {{a.greedy, a.beam, a.penalised, a.below, a.greedy_log_p, a.beam_log_p},
                       {b.greedy, b.beam, b.penalised, b.below, b.greedy_log_p, b.beam_log_p}};
    trace.tensor("beam", "exact matches (shares), sentences, mean log p", table,
                 {fmt::format("test ({})", test.size()), fmt::format("long ({})", longer.size())},
                 {"greedy", fmt::format("beam {}", k), fmt::format("beam {}, alpha 0.6", k), "beam log p below greedy",
                  "greedy log p", "beam log p"})
        .foreign_trained(decoded_with_race());
    trace.check("beam search of width 1 gives greedy decoding's words on every sentence (sentences that differ)",
                a.width1_words + b.width1_words, 0.0);
    trace.check("and greedy's log-probability, summed in the same order (largest difference)",
                std::max(a.width1_log_p, b.width1_log_p), 0.0, 1e-9);
}


// ---------------------------------------------------------------- step [bleu]

using Sentences = std::vector<std::vector<std::size_t>>;

// A BLEU's parts in a row: p_1 .. p_4, BP, BLEU.
Vec bleu_parts(const nn::BleuScore& s) {
    return {s.precisions[0], s.precisions[1], s.precisions[2], s.precisions[3], s.brevity_penalty, s.bleu};
}

// The example worked by hand in the step's text: a candidate that says "the" four times where its
// reference says it three times, two words short; then the same with a second pair translated exactly.
void record_bleu_example(Trace& trace) {
    Vocabulary v;
    const std::vector<std::size_t> cand = ids_of(v, {"the", "the", "the", "cat", "sat", "on", "the", "mat"});
    const std::vector<std::size_t> ref = ids_of(v, {"the", "cat", "sat", "on", "the", "red", "mat", "near", "the", "door"});
    const std::vector<std::size_t> exact = ids_of(v, {"a", "dog", "ran", "to", "the", "door"});
    const nn::BleuScore one = nn::bleu({cand}, {ref}), two = nn::bleu({cand, exact}, {ref, exact});
    Mat counts = xt::empty<double>({std::size_t{4}, std::size_t{3}});
    for (std::size_t n = 0; n < 4; ++n) counts(n, 0) = one.matches[n], counts(n, 1) = one.totals[n], counts(n, 2) = one.precisions[n];
    trace.tensor("example", "the example's n-grams, clipped", counts, {"n=1", "n=2", "n=3", "n=4"},
                 {"matches (clipped)", "candidate n-grams", "p_n"});
    const Mat score = {{one.candidate_length, one.reference_length, one.brevity_penalty, one.bleu},
                       {two.candidate_length, two.reference_length, two.brevity_penalty, two.bleu}};
    trace.tensor("example_bleu", "c, r, BP and BLEU", score, {"the pair", "with a second pair, exact"},
                 {"c", "r", "BP", "BLEU"});
    const std::array<double, 4> by_hand = {7.0 / 8.0, 4.0 / 7.0, 3.0 / 6.0, 2.0 / 5.0};
    double worst = 0.0;
    for (std::size_t n = 0; n < 4; ++n) worst = std::max(worst, std::abs(one.precisions[n] - by_hand[n]));
    trace.check("the example's precisions are 7/8, 4/7, 3/6 and 2/5, as counted by hand (largest difference)", worst, 0.0);
    trace.check("its brevity penalty is exp(1 - 10/8) = 0.7788 and its BLEU 0.4380, as by hand (to 4 decimals)",
                std::max(std::abs(one.brevity_penalty - 0.7788), std::abs(one.bleu - 0.4380)), 5e-5);
    trace.check("with the exact pair, BLEU is 0.6441 from the summed counts, as by hand, not the mean of the "
                "sentences' BLEU, 0.7190 (to 4 decimals)",
                std::abs(two.bleu - 0.6441), 5e-5);
}

// Source lengths from `first` to `last`, and the pairs of that length with each model's translations.
struct LengthBin {
    std::size_t first, last;
    std::array<Sentences, 3> outputs;  // lesson 9's GRU without and with attention, the Transformer
    Sentences references;
};

// The pairs sorted into `bins` by source length, each model translating each pair greedily (the
// Transformer with its key-value cache: the same words as without, step [cache]).
void fill_bins(std::vector<LengthBin>& bins, const transformer::RaceModels& models, const std::vector<Pair>& pairs,
               std::size_t max_words) {
    for (const Pair& p : pairs)
        for (LengthBin& b : bins) {
            if (p.src.size() < b.first || p.src.size() > b.last) continue;
            b.outputs[0].push_back(greedy(models.without, p, max_words));
            b.outputs[1].push_back(greedy(models.with, p, max_words));
            b.outputs[2].push_back(cached(models.transformer, nn::encoder_output(models.transformer, p.src), max_words).words);
            b.references.push_back(p.tgt);
        }
}

// The largest difference between the sums of the bins' counts and lengths and the whole set's.
double unsummed(const std::vector<nn::BleuScore>& parts, const nn::BleuScore& whole) {
    nn::BleuScore sum;
    for (const nn::BleuScore& s : parts) {
        for (std::size_t n = 0; n < 4; ++n) sum.matches[n] += s.matches[n], sum.totals[n] += s.totals[n];
        sum.candidate_length += s.candidate_length, sum.reference_length += s.reference_length;
    }
    double worst = std::max(std::abs(sum.candidate_length - whole.candidate_length), std::abs(sum.reference_length - whole.reference_length));
    for (std::size_t n = 0; n < 4; ++n)
        worst = std::max({worst, std::abs(sum.matches[n] - whole.matches[n]), std::abs(sum.totals[n] - whole.totals[n])});
    return worst;
}

// The step's text: the definition, the example worked by hand (record_bleu_example checks its
// numbers), and what the models' table shows.
std::string bleu_explanation(const Mat& whole, const Mat& table, const std::vector<std::string>& labels,
                             std::size_t test_bins) {
    const std::size_t last = test_bins - 1, beyond = labels.size() - 1;
    return fmt::format(
        "BLEU (Papineni et al. 2002) scores translations by the word n-grams they share with their references, n = 1 "
        "to 4. A candidate's n-gram matches at most as often as its reference holds it (clipped: else \"the the the "
        "the\" would match every word of any reference with a \"the\"); the matches and the candidates' n-grams are "
        "summed over the whole corpus before dividing (p_n); the four precisions meet in their geometric mean; and "
        "the brevity penalty exp(1 - r/c), for candidates of c words in all against references of r (1 when c > r), "
        "keeps short candidates from scoring on precision alone. A p_n of 0 makes BLEU 0 (the geometric mean's "
        "limit, not log 0), and so does an empty candidate (c = 0, BP 0). By hand: the candidate \"the the the cat "
        "sat on the mat\" against the reference \"the cat sat on the red mat near the door\". Of its 8 words, \"the\" "
        "comes 4 times where the reference has it 3 times: it matches 3 times, cat, sat, on and mat once each, "
        "p_1 = 7/8 (8/8 unclipped). Of its 7 bigrams, the cat, cat sat, sat on and on the match: p_2 = 4/7; of its "
        "6 trigrams, the cat sat, cat sat on and sat on the: p_3 = 3/6; of its 5 4-grams, the cat sat on and cat sat "
        "on the: p_4 = 2/5. Their product is 1/10, and (1/10)^(1/4) = 0.5623. c = 8 < r = 10: BP = exp(1 - 10/8) = "
        "0.7788, and BLEU = 0.7788 x 0.5623 = 0.4380. With a second pair translated exactly, \"a dog ran to the "
        "door\": p_n = 13/14, 9/12, 7/10 and 5/8, c = 14, r = 16, BP = exp(-1/7) = 0.8669, and BLEU = 0.8669 x "
        "(4095/13440)^(1/4) = 0.8669 x 0.7430 = 0.6441: not the mean of the two sentences' BLEU, (0.4380 + 1) / 2 "
        "= 0.7190. Then Bahdanau et al. 2015's figure 2 on the generated corpus: the BLEU of lesson 12's three "
        "models (greedy; the Transformer with its cache) by source length, the test set in lesson 12's bins and "
        "step [beam]'s sentences, longer than any trained on, in two more. Over the test set BLEU is {:.3f} without "
        "attention, {:.3f} with and {:.3f} for the Transformer; at {} {:.3f}, {:.3f} and {:.3f}; at {}, beyond "
        "training, {:.3f}, {:.3f} and {:.3f}. A bin holds few pairs (counted below), so neighbouring bins differ "
        "by chance too: reported, not checked.",
        whole(0, 5), whole(1, 5), whole(2, 5), labels[last], table(last, 0), table(last, 1), table(last, 2),
        labels[beyond], table(beyond, 0), table(beyond, 1), table(beyond, 2));
}

void record_bleu(Trace& trace, const transformer::RaceModels& models, const std::vector<Pair>& test,
                 const std::vector<Pair>& longer, std::size_t min_len, std::size_t max_len, std::size_t max_words,
                 std::size_t long_max_words) {
    Step& step = trace.step("bleu", "BLEU: the n-grams a translation shares with its reference, over a corpus",
                            "p_n = sum clipped n-gram matches / sum candidate n-grams,  BP = min(1, exp(1 - r/c)),  "
                            "BLEU = BP exp(sum_{n=1..4} log(p_n) / 4)",
                            "");
    record_bleu_example(trace);
    // the test set in lesson 12's bins (step [length]), the longer sentences in two more
    const std::size_t width = std::max<std::size_t>(1, (max_len - min_len + 1) / 5);
    std::vector<LengthBin> bins;
    for (std::size_t first = min_len; first <= max_len; first += width) bins.push_back({first, std::min(max_len, first + width - 1), {}, {}});
    const std::size_t test_bins = bins.size();
    bins.push_back({24, 31, {}, {}}), bins.push_back({32, 40, {}, {}});
    fill_bins(bins, models, test, max_words);
    fill_bins(bins, models, longer, long_max_words);
    Mat table = xt::empty<double>({bins.size(), std::size_t{3}}), whole = xt::empty<double>({std::size_t{3}, std::size_t{6}});
    Vec count = xt::empty<double>({bins.size()});
    std::vector<std::string> labels;
    double unsummed_counts = 0.0;
    for (std::size_t m = 0; m < 3; ++m) {
        Sentences outputs, references;
        std::vector<nn::BleuScore> parts;
        for (std::size_t b = 0; b < bins.size(); ++b) {
            table(b, m) = nn::bleu(bins[b].outputs[m], bins[b].references).bleu;
            if (b >= test_bins) continue;
            parts.push_back(nn::bleu(bins[b].outputs[m], bins[b].references));
            outputs.insert(outputs.end(), bins[b].outputs[m].begin(), bins[b].outputs[m].end());
            references.insert(references.end(), bins[b].references.begin(), bins[b].references.end());
        }
        const nn::BleuScore all = nn::bleu(outputs, references);
        nn::set_row(whole, m, bleu_parts(all));
        unsummed_counts = std::max(unsummed_counts, unsummed(parts, all));
    }
    for (const LengthBin& b : bins) {
        count(labels.size()) = as_double(b.references.size());
        labels.push_back(b.first == b.last ? fmt::format("T_x {}", b.first) : fmt::format("T_x {}-{}", b.first, b.last));
    }
    step.explanation = bleu_explanation(whole, table, labels, test_bins);
    trace.tensor("test", "the test set, each model's greedy translations", whole,
                 {"without attention", "with attention", "Transformer"}, {"p_1", "p_2", "p_3", "p_4", "BP", "BLEU"})
        .foreign_trained(decoded_with_race());
    trace.tensor("by_length", fmt::format("BLEU by source length; from {} on longer than any training sentence", labels[test_bins]),
                 table, labels, {"without attention", "with attention", "Transformer"}, View::plot)
        .foreign_trained(decoded_with_race());
    trace.tensor("pairs", "pairs per bin", count, labels, {}, View::bars);
    trace.check("corpus level: each model's counts and lengths over the test set are the sums of its bins' (largest "
                "difference)",
                unsummed_counts, 0.0);
    Sentences references;
    for (const Pair& p : test) references.push_back(p.tgt);
    // (a set whose references are all shorter than 4 words has no 4-gram: BLEU 0, by the definition)
    if (std::any_of(references.begin(), references.end(), [](const auto& r) { return r.size() >= 4; }))
        trace.check("the test set's references against themselves score BLEU 1 (difference)",
                    std::abs(nn::bleu(references, references).bleu - 1.0), 0.0, others_rounding);
}

// ---------------------------------------------------------------- step [sampling]

// The step of a decoding whose next-word distribution is the least certain (the largest entropy,
// the first of equal ones): where the ways of sampling differ most.
std::size_t least_certain(const Decoded& d) {
    std::size_t best = 0;
    double largest = -1.0;
    for (std::size_t t = 0; t < d.probabilities.size(); ++t) {
        double entropy = 0.0;
        for (const double p : d.probabilities[t]) entropy -= p > 0.0 ? p * portable::log(p) : 0.0;
        if (entropy > largest) largest = entropy, best = t;
    }
    return best;
}

// A translation drawn word by word with the cache, each word from pick(the step's distribution).
std::vector<std::size_t> sampled_translation(const nn::EncoderDecoder& m, const Mat& H, std::size_t max_words,
                                             const std::function<Vec(const Vec&)>& pick, Rng& rng) {
    nn::DecodingWork work;
    nn::DecoderCache cache = nn::start_decoder_cache(m, H, work);
    std::vector<std::size_t> words;
    std::size_t word = sos;
    while (words.size() < max_words) {
        word = nn::sampled(pick(nn::cached_decoder_step(m, cache, word, work)), rng.uniform());
        if (word == eos) break;
        words.push_back(word);
    }
    return words;
}

// The largest |sum_j q_j - 1| of the distributions.
double worst_sum(const std::vector<Vec>& qs) {
    double worst = 0.0;
    for (const Vec& q : qs) worst = std::max(worst, std::abs(xt::sum(q)() - 1.0));
    return worst;
}

// Rows: the `shown` most likely words of p, then all the others together; a column per distribution.
Mat shown_words(const std::vector<Vec>& qs, const std::vector<std::size_t>& order, std::size_t shown) {
    Mat table = xt::zeros<double>({shown + 1, qs.size()});
    for (std::size_t c = 0; c < qs.size(); ++c)
        for (std::size_t r = 0; r < order.size(); ++r) table(std::min(r, shown), c) += qs[c](order[r]);
    return table;
}

// The checks of step [sampling] on the distributions qs = {p, T = 0.5, T = 2, top-k, top-p} of step t.
void record_sampling_checks(Trace& trace, std::size_t t, const std::vector<Vec>& qs,
                            const std::vector<std::size_t>& order, std::size_t k, double mass) {
    const Vec& P = qs[0];
    const std::size_t V = P.size(), greedy = nn::most_likely(P);
    trace.check("each distribution sums to 1 (largest |sum - 1|, against V eps)", worst_sum(qs),
                as_double(V) * std::numeric_limits<double>::epsilon());
    trace.check("T = 1 gives p back (largest difference)", xt::amax(xt::abs(nn::with_temperature(P, 1.0) - P))(), 1e-13);
    // cooling: the greedy word's weight never falls as T falls, and T = 1e-300 leaves it all
    double fall = 0.0, before = 0.0;
    for (const double T : {1.0, 0.1, 0.01, 0.001, 1e-300}) {
        const double w = nn::with_temperature(P, T)(greedy);
        fall = std::max(fall, before - w), before = w;
    }
    trace.check("as T falls through 1, 0.1, 0.01, 0.001 the greedy word's weight never falls (largest fall)", fall, 0.0);
    trace.check(fmt::format("T -> 0 (1e-300) puts all weight on greedy's word at step {} (|1 - its weight|)", t + 1),
                std::abs(1.0 - before), 0.0);
    // top-k: exactly k kept, none dropped more likely than one kept
    double kept = 0.0, least_kept = 1.0, most_dropped = 0.0;
    for (std::size_t j = 0; j < V; ++j) {
        if (qs[3](j) > 0.0) kept += 1.0, least_kept = std::min(least_kept, P(j));
        else most_dropped = std::max(most_dropped, P(j));
    }
    trace.check(fmt::format("top-k keeps exactly k = {} words (kept minus k)", k), std::abs(kept - as_double(k)), 0.0);
    trace.check("and no word it drops is more likely than one it keeps", std::max(0.0, most_dropped - least_kept), 0.0);
    // top-p: the kept words are the first n of the ranking, their mass reaches p, the first n - 1 do not
    std::size_t n = 0, prefix = 0, positive = 0;
    for (std::size_t r = 0; r < V; ++r) {
        n += qs[4](order[r]) > 0.0 ? 1 : 0, positive += P(order[r]) > 0.0 ? 1 : 0;
        if (prefix == r && qs[4](order[r]) > 0.0) prefix = r + 1;
    }
    double reached = 0.0, short_of = 0.0;
    for (std::size_t r = 0; r < n; ++r) reached += P(order[r]), short_of += r + 1 < n ? P(order[r]) : 0.0;
    trace.check(fmt::format("top-p keeps the most likely words, whose mass (summed in rank order) reaches p = {} "
                            "or is everything (p - mass, plus words kept out of rank order)",
                            mass),
                (reached >= mass || n == positive ? 0.0 : mass - reached) + as_double(n - prefix), 0.0);
    trace.check("and the fewest such: without its least likely word the mass stays below p (1 when not)",
                n >= 1 && short_of < mass ? 0.0 : 1.0, 0.0);
}

// Translations of p drawn whole with the cache: at T -> 0 (checked to be greedy's), then from p itself
// and from its top-p reshaping.
void record_sampled_translations(Trace& trace, const Corpus& c, const nn::EncoderDecoder& m, const Pair& p,
                                 const Decoded& d, std::size_t max_words, Rng& rng, double mass) {
    const Mat H = nn::encoder_output(m, p.src);
    const auto cold = [](const Vec& q) { return nn::with_temperature(q, 1e-300); };
    const auto itself = [](const Vec& q) { return q; };
    const auto nucleus = [mass](const Vec& q) { return nn::top_p(q, mass); };
    const std::vector<std::size_t> frozen = sampled_translation(m, H, max_words, cold, rng);
    constexpr std::size_t each = 3;
    Mat table = xt::empty<double>({2 * each, std::size_t{2}});
    std::vector<std::string> rows;
    for (std::size_t r = 0; r < 2 * each; ++r) {
        const std::vector<std::size_t> w =
            sampled_translation(m, H, max_words, r < each ? std::function<Vec(const Vec&)>(itself) : nucleus, rng);
        table(r, 0) = as_double(w.size()), table(r, 1) = w == p.tgt ? 1.0 : 0.0;
        rows.push_back(fmt::format("{}: {}", r < each ? "p" : "top-p", joined(c.target, w)));
    }
    trace.tensor("translations", "whole translations drawn from p and from top-p", table, rows,
                 {"words", "the reference"})
        .foreign_trained(decoded_with_race());
    trace.check("a translation drawn at T -> 0 is greedy's, word for word (1 when not)", frozen == d.words ? 0.0 : 1.0,
                0.0);
}

void record_sampling(Trace& trace, const Corpus& c, const nn::EncoderDecoder& m, const Pair& p, const Decoded& d,
                     const Config& config, std::size_t max_words) {
    const std::size_t t = least_certain(d), k = config.size(param::top_k);
    const double mass = as_double(config.size(param::top_p)) / 100.0;
    const Vec& P = d.probabilities[t];
    const std::vector<std::size_t> order = nn::ranked(P);
    const std::vector<Vec> qs = {P, nn::with_temperature(P, 0.5), nn::with_temperature(P, 2.0), nn::top_k(P, k),
                                 nn::top_p(P, mass)};
    const std::vector<std::string> names = {"p", "T = 0.5", "T = 2", fmt::format("top-k, k = {}", k),
                                            fmt::format("top-p, p = {}", mass)};
    trace.step("sampling", "Sampling: temperature, top-k and top-p",
               "q_j = p_j^(1/T) / sum_k p_k^(1/T);  top-k: p on the k largest / their mass;  top-p: p on the "
               "fewest largest with mass >= p / that mass",
               fmt::format(
                   "Greedy decoding and beam search look for the most likely translation; a system that should "
                   "vary (a dialogue, a story) draws each word from the distribution instead. Drawn as it is, a "
                   "rare word is drawn now and then and derails the rest, so the distribution is reshaped first: "
                   "a temperature T (q = softmax(log p / T): below 1 sharper, above 1 flatter, towards 0 all "
                   "weight on the greedy word); top-k (Fan et al. 2018) keeps the k most likely words; top-p or "
                   "nucleus sampling (Holtzman et al. 2020) keeps the fewest most likely words whose mass reaches "
                   "p, as many as the model's doubt needs. Each is renormalised to sum to 1; equal probabilities "
                   "are ranked by word id, so top-k keeps exactly k. Here step {} of the greedy translation of "
                   "\"{}\", the step where the model is least certain (largest entropy). Draws use the inverse "
                   "of the cumulative distribution on uniform numbers from the lesson's seed (nn::sampled, the "
                   "project's own generator): the same words on every machine.",
                   t + 1, joined(c.source, p.src)));
    const std::size_t shown = std::min<std::size_t>(8, P.size());
    std::vector<std::string> rows;
    for (std::size_t r = 0; r < shown; ++r) rows.push_back(c.target.words[order[r]]);
    rows.push_back("all others");
    trace.tensor("distributions", "p and its reshapings at this step", shown_words(qs, order, shown), rows, names)
        .foreign_trained(decoded_with_race());
    Rng rng(config.seed ^ 0x53414D504C45ULL);
    std::vector<Vec> drawn(qs.size(), Vec(xt::zeros<double>({P.size()})));
    constexpr std::size_t draws = 1000;
    for (std::size_t q = 0; q < qs.size(); ++q)
        for (std::size_t n = 0; n < draws; ++n) drawn[q](nn::sampled(qs[q], rng.uniform())) += 1.0 / as_double(draws);
    trace.tensor("frequencies", fmt::format("shares of {} draws from each", draws), shown_words(drawn, order, shown),
                 rows, names)
        .foreign_trained(decoded_with_race());
    record_sampling_checks(trace, t, qs, order, k, mass);
    record_sampled_translations(trace, c, m, p, d, max_words, rng, mass);
}

// ---------------------------------------------------------------- step [language-model]

// steps x batch sentence pairs drawn by lesson 9's rules within lesson 12's lengths, none with the
// source of a test pair or of the two shown pairs: the language model's stream, each seen once.
std::vector<Pair> fresh_pairs(Rng& rng, Corpus& c, std::size_t count, const Config& race) {
    std::set<std::vector<std::size_t>> held_out;
    for (const Pair& p : c.test) held_out.insert(p.src);
    held_out.insert(ids_of(c.source, lights_src)), held_out.insert(ids_of(c.source, pickup_src));
    const auto fewest = static_cast<std::size_t>(race.get("min_len")), most = static_cast<std::size_t>(race.get("max_len"));
    std::vector<Pair> out;
    while (out.size() < count) {
        const Sentence s = sentence(rng);
        if (s.src.size() < fewest || s.src.size() > most) continue;
        Pair p{ids_of(c.source, s.src), ids_of(c.target, s.tgt), s.partners};
        if (held_out.count(p.src) == 0) out.push_back(std::move(p));
    }
    return out;
}

// The language model trained `steps` Adam steps on the target sentences of `stream`, in minibatches
// of lesson 12's size taken in order, at lesson 12's warmed-up rate.
nn::LanguageModel trained_language_model(Trace& trace, const nn::LanguageModel& start, const std::vector<Pair>& stream,
                                         std::size_t steps, const Config& race) {
    auto t = trainer(start);
    std::vector<std::size_t> order(stream.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    double words = 0.0;
    for (std::size_t step = 0; step < steps; ++step) {
        const std::size_t first = std::min(order.size(), step * batch), last = std::min(order.size(), first + batch);
        train_batch(t, stream, order, first, last, words, transformer::transformer_adam(step + 1, race));
        if ((step + 1) % 25 == 0)
            trace.progress(fmt::format("training the language model: step {} of {}", step + 1, steps));
    }
    return t.model;
}

// Per-word scores of a model on the test targets (every word and <eos>): the probability given
// to each, in order, and the sum of their negative logs.
struct WordScores {
    std::vector<double> p;
    double nll = 0.0;
    double perplexity() const { return portable::exp(nll / as_double(p.size())); }
};

WordScores language_model_scores(const nn::LanguageModel& m, const std::vector<Pair>& pairs) {
    WordScores s;
    for (const Pair& pair : pairs) {
        const std::vector<std::size_t> out = decoder_outputs(pair);
        const nn::LanguageModelPass pass = nn::language_model_forward(m, decoder_inputs(pair), out);
        s.nll += pass.loss;
        for (std::size_t t = 0; t < out.size(); ++t) s.p.push_back(pass.P(t, out[t]));
    }
    return s;
}

// The unigram model of the targets of `train` (each word's and <eos>'s count plus 1, over all V
// words) scored on the test targets.
WordScores unigram_scores(const std::vector<Pair>& train, const std::vector<Pair>& test, std::size_t V) {
    std::vector<double> count(V, 1.0);
    double total = as_double(V);
    for (const Pair& p : train)
        for (const std::size_t w : decoder_outputs(p)) count[w] += 1.0, total += 1.0;
    WordScores s;
    for (const Pair& p : test)
        for (const std::size_t w : decoder_outputs(p)) {
            s.p.push_back(count[w] / total);
            s.nll -= portable::log(s.p.back());
        }
    return s;
}

// The perplexity again, from the product of the probabilities (kept as a mantissa and a power of
// 2, so that it never underflows) instead of the sum of their logs.
double perplexity_from_product(const std::vector<double>& p) {
    double mantissa = 1.0;
    int exponent = 0;
    for (const double q : p) {
        int e = 0;
        mantissa = std::frexp(mantissa * q, &e);
        exponent += e;
    }
    const double log_product = portable::log(mantissa) + static_cast<double>(exponent) * portable::log(2.0);
    return portable::exp(-log_product / as_double(p.size()));
}

// A sentence drawn from the language model word by word from <sos>, until <eos> or max_words.
std::vector<std::size_t> sampled_sentence(const nn::LanguageModel& m, std::size_t max_words, Rng& rng) {
    std::vector<std::size_t> in = {sos};
    while (in.size() <= max_words) {
        const Mat P = nn::next_word_probabilities(m, in);
        const std::size_t y = nn::sampled(nn::row_of(P, in.size() - 1), rng.uniform());
        if (y == eos) break;
        in.push_back(y);
    }
    return std::vector<std::size_t>(in.begin() + 1, in.end());
}

// A few sentences drawn from the trained language model, each with its length and whether it is
// one of the sentences it was trained on.
void record_sampled_sentences(Trace& trace, const Corpus& c, const nn::LanguageModel& lm,
                              const std::vector<Pair>& trained_on, std::size_t max_words, Rng& rng) {
    std::set<std::vector<std::size_t>> seen;
    for (const Pair& p : trained_on) seen.insert(p.tgt);
    constexpr std::size_t count = 5;
    Mat table = xt::empty<double>({count, std::size_t{2}});
    std::vector<std::string> rows;
    for (std::size_t r = 0; r < count; ++r) {
        const std::vector<std::size_t> w = sampled_sentence(lm, max_words, rng);
        table(r, 0) = as_double(w.size()), table(r, 1) = seen.count(w) > 0 ? 1.0 : 0.0;
        rows.push_back(joined(c.target, w));
    }
    trace.tensor("sentences", "drawn from the trained language model", table, rows, {"words", "trained on"})
        .foreign_shown(trained_here());
}

void record_language_model(Trace& trace, Corpus& c, const nn::EncoderDecoder& drawn, const Config& config,
                           const Config& race, std::size_t max_words) {
    const std::size_t steps = config.size(param::lm_steps), V = drawn.W_o.shape(0);
    trace.need_next_step();  // the training below is this step's alone
    Rng rng(config.seed ^ 0x4C414E47ULL);
    const nn::LanguageModel start = nn::decoder_only(drawn);
    const std::vector<Pair> stream = fresh_pairs(rng, c, steps * batch, race);
    const nn::LanguageModel lm = trained_language_model(trace, start, stream, steps, race);
    const WordScores before = language_model_scores(start, c.test), after = language_model_scores(lm, c.test);
    const WordScores unigram = unigram_scores(stream, c.test, V);
    trace.step("language-model", "A decoder alone is a language model",
               "p(w_1 .. w_T) = prod_t p(w_t | w_<t),  perplexity = exp(-(1/N) sum_t log p(w_t | w_<t))",
               fmt::format(
                   "Take away the cross-attention and the decoder reads only its own words: each block is lesson "
                   "11's pre-LN block under the causal mask, and the output at position t is a distribution over "
                   "the word after w_1 .. w_t, a language model (the decoder-only models of Radford et al. 2018 "
                   "are such stacks). This one is lesson 12's decoder as drawn (the same initial weights, its "
                   "cross-attention removed: nn::decoder_only), trained here on target sentences alone, {} Adam "
                   "steps of {} sentences at lesson 12's warmed-up rate. Its sentences are drawn afresh from lesson "
                   "9's rules (never a test pair's), each seen once: on lesson 12's training set it would learn "
                   "those sentences by heart within a few hundred steps when the set is small, and its perplexity "
                   "on new ones would rise. The backward pass is assembled from lesson 11's stack and the output "
                   "layer's (nn::language_model_backward, checked against central differences in "
                   "tests/test_encoder_decoder.cpp). Its perplexity "
                   "on the {} test targets ({} words with <eos>) is exp of the mean negative log-likelihood per "
                   "word: the number of words a uniform choice would have to pick among to be as surprised. A "
                   "uniform distribution over the V = {} words has perplexity V; a unigram model (each word's "
                   "frequency in the same sentences, plus one) knows which words are common but not where. "
                   "Sentences drawn from the trained model (inverse cumulative distribution, the lesson's seed) "
                   "show what it learnt of the target language's order: the verb last, postpositions after "
                   "their nouns.",
                   steps, batch, c.test.size(), after.p.size(), V));
    const Mat table = {{before.nll / as_double(before.p.size()), before.perplexity()},
                       {after.nll / as_double(after.p.size()), after.perplexity()},
                       {unigram.nll / as_double(unigram.p.size()), unigram.perplexity()},
                       {portable::log(as_double(V)), as_double(V)}};
    trace.tensor("perplexity", "on the test targets", table,
                 {"decoder alone, as drawn", "decoder alone, trained", "unigram", "uniform"},
                 {"mean -log p per word", "perplexity"})
        .foreign_shown(trained_here());
    const double again = perplexity_from_product(after.p);
    trace.check("perplexity = exp(mean NLL): the same from the product of the test words' probabilities "
                "(relative difference)",
                std::abs(again - after.perplexity()) / after.perplexity(), 1e-12);
    trace.check(fmt::format("the trained language model's perplexity is below the uniform one's, V = {} "
                            "(its perplexity minus V when not)",
                            V),
                std::max(0.0, after.perplexity() - as_double(V)), 0.0);
    record_sampled_sentences(trace, c, lm, stream, max_words, rng);
}

// ---------------------------------------------------------------- the lesson

void lesson_decoding(Trace& trace, const Config& config) {
    const Config race = transformer::race_config(config);
    transformer::RaceStart start = transformer::race_start(race);
    const Corpus& corpus = start.corpus;  // long_pairs below adds no word: its vocabulary is complete
    const std::shared_ptr<const transformer::Race> trained = transformer::trained_race(race, trace);
    const nn::EncoderDecoder& m = trained->trained.transformer;
    // a decoder that never says <eos> is stopped here, as in lesson 12
    const std::size_t max_words = 2 * static_cast<std::size_t>(race.get("max_len")) + 4;
    const Pair& shown = longest(corpus.test);
    const Mat H = nn::encoder_output(m, shown.src);
    const Decoded plain = uncached(m, H, max_words), fast = cached(m, H, max_words);
    record_uncached(trace, corpus, m, shown, plain, max_words);
    // what this lesson decodes with and from (attn export only): lesson 12's corpus and trained Transformer
    translation::export_corpus(trace, corpus);
    translation::export_weights(trace, "trained.transformer", m, "trained weight");
    // the bit-for-bit check at every step of every test sentence
    Apart cached_apart;
    std::size_t steps = 0;
    for (const Pair& p : corpus.test) {
        const Mat H_p = nn::encoder_output(m, p.src);
        const Decoded a = uncached(m, H_p, max_words), b = cached(m, H_p, max_words);
        steps += a.probabilities.size();
        if (a.probabilities.size() != b.probabilities.size())
            cached_apart.bits += 1.0, cached_apart.largest = std::numeric_limits<double>::infinity();
        for (std::size_t t = 0; t < std::min(a.probabilities.size(), b.probabilities.size()); ++t)
            cached_apart.add(a.probabilities[t], b.probabilities[t]);
    }
    record_cache(trace, corpus, m, shown, plain, fast, cached_apart, steps, corpus.test.size());
    // "turn off the lights" -> "lait band karo": short enough to show every key
    const Pair lights = pair_of(start.corpus, lights_src, lights_tgt);
    record_mask(trace, corpus, m, lights, config.size(param::queries));
    record_kv_heads(trace, corpus, m, lights);
    // sentences of 3 to 7 phrases, longer than the corpus's, from a generator of their own
    Rng rng(config.seed ^ 0x5DEECE66DULL);
    const std::vector<Pair> longer = long_pairs(rng, start.corpus, config.size(param::long_count), 24, 40);
    record_beam(trace, m, corpus.test, longer, config.size(param::beam), max_words, 2 * 40 + 4);
    record_sampling(trace, corpus, m, shown, fast, config, max_words);
    record_bleu(trace, trained->trained, corpus.test, longer, static_cast<std::size_t>(race.get("min_len")),
                static_cast<std::size_t>(race.get("max_len")), max_words, 2 * 40 + 4);
    // lesson 12's decoder as drawn, without cross-attention, trained on the target sentences alone
    record_language_model(trace, start.corpus, start.start.transformer, config, race, max_words);
}

}  // namespace
}  // namespace decoding

Lesson decoding_lesson() {
    using namespace decoding;
    return make_lesson(13, "decoding",
                       "Decoding: a key-value cache that changes no bit, the mask it needs, fewer key-value heads, "
                       "beam search, sampling, BLEU, and a decoder alone as a language model",
                       "Sutskever et al. 2014; Wu et al. 2016; Vaswani et al. 2017; Pope et al. 2023; Shazeer 2019; "
                       "Ainslie et al. 2023; Fan et al. 2018; Holtzman et al. 2020; Papineni et al. 2002; "
                       "Bahdanau et al. 2015; Radford et al. 2018",
                       {param::epochs, param::sentences, param::test, param::queries, param::beam, param::long_count,
                        param::top_k, param::top_p, param::lm_steps},
                       limits, time_estimate, lesson_decoding,
                       {"uncached", "cache", "mask", "kv-heads", "beam", "sampling", "bleu", "language-model"},
                       {{"epochs", 1}, {"sentences", 50}, {"test", 20}, {"long", 5}});
}

}  // namespace attn
