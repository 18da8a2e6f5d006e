// Lesson 13: decoding. Lesson 12's trained Transformer produces its translations one word at a
// time: first by re-running the decoder over the whole prefix for every word, then with a
// key-value cache that changes no bit, with the causal mask aligned for fewer queries than keys,
// then by beam search; last, BLEU, and lesson 12's three models scored by it against source length.
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
#include "nn/kv_cache.hpp"
#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
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
}  // namespace param

// Lesson 12's configuration: its defaults with this lesson's seed and training settings.
Config race_config(const Config& c) {
    const Lesson& race = *find_lesson("transformer");
    return apply_settings(race.params, c.seed,
                          {{"epochs", c.get("epochs")}, {"sentences", c.get("sentences")}, {"test", c.get("test")}});
}

std::string limits(const Config&) { return ""; }

// Decoding the test set twice (with and without the cache) costs about a fifth of a greedy
// decoding of it per pass of lesson 12's training: measured, the default run took 0.9 s beyond
// lesson 12's training at a load of 2; 2 s on the safe side, growing with the test set. Step [bleu]'s
// greedy decodings (three models, the test set and the longer sentences) added 0.2 s of CPU.
constexpr double seconds_at_default = 2.0;

TimeEstimate time_estimate(const Config& c) {
    // lesson 12's estimate covers its training twice over (step [chaos] retrains the Transformer):
    // the race alone is about two thirds of it
    const Lesson& race = *find_lesson("transformer");
    const double training = race.time(race_config(c)).seconds * 2.0 / 3.0;
    const double own = seconds_at_default *
                       (as_double(c.size(param::test)) / 200.0 +
                        as_double(c.size(param::beam)) / 4.0 * (as_double(c.size(param::test)) + 4.0 * as_double(c.size(param::long_count))) / 360.0);
    return {training + own, "training (lesson 12's race) and decoding",
            fmt::format("lesson 12's race, then the test set decoded with and without the cache and by beam search, "
                        "{:.0f} s at the defaults, growing with test, beam and long",
                        seconds_at_default),
            {{&param::epochs, 1.0}, {&param::sentences, 1.0}, {&param::test, 1.0}, {&param::beam, 1.0},
             {&param::long_count, 1.0}}};
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

// The entries of a and b whose bits differ (-0 and +0 differ, two equal NaNs do not), and every
// entry when the lengths differ.
double differing_bits(const Vec& a, const Vec& b) {
    if (a.size() != b.size()) return as_double(std::max(a.size(), b.size()));
    double n = 0.0;
    for (std::size_t j = 0; j < a.size(); ++j) n += std::memcmp(&a(j), &b(j), sizeof(double)) == 0 ? 0.0 : 1.0;
    return n;
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
    trace.tensor("output", "greedy, uncached: word ids", ids, words);
    trace.tensor("work", "multiply-adds of the products", work, step_labels(c, d.words, T),
                 {"step", "attention", "total so far"});
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
                  const Decoded& fast, double bits_differing, std::size_t steps_checked, std::size_t sentences) {
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
                 {"uncached", "cached", "cached attention", "ratio"});
    double plain_total = 0.0, fast_total = fast.once.multiply_adds;
    for (std::size_t t = 0; t < T; ++t) plain_total += plain.work[t].multiply_adds, fast_total += fast.work[t].multiply_adds;
    trace.tensor("totals", "the whole sentence", Vec{plain_total, fast_total, fast.once.multiply_adds},
                 {"uncached", "cached", "of it, the encoder's keys and values"});
    trace.check("at every step of every test sentence the cached probabilities equal the uncached pass's last row, "
                "bit for bit (entries that differ)",
                bits_differing, 0.0);
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

void record_mask(Trace& trace, const Corpus& c, const nn::EncoderDecoder& m, const Pair& p, std::size_t T_q_wanted) {
    // the first block's first head on the reference's decoder inputs, as the uncached pass sees them
    const std::vector<std::size_t> in = decoder_inputs(p);
    const std::size_t T_k = in.size(), T_q = std::min(T_q_wanted, T_k), offset = T_k - T_q;
    const std::size_t dm = m.E_tgt.shape(1), d_k = dm / m.heads;
    const nn::DecoderBlockParams& b = m.decoder[0];
    const Mat n_1 = nn::layer_norm(nn::embedded_inputs(m.E_tgt, m.P_tgt, in), b.norm_1.gain, b.norm_1.bias,
                                   b.norm_1.eps)
                        .output;
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
        .axes("new queries", "cached keys");
    trace.tensor("top_left", "softmax(Q K^T + M), M aligned to the top left", top_left, queries, keys, View::heatmap)
        .axes("new queries", "cached keys");
    trace.tensor("no_mask", "softmax(Q K^T), no mask", none, queries, keys, View::heatmap)
        .axes("new queries", "cached keys");
    const Mat wrong = wrong_alignments(r.weights, top_left, none, V, full, offset);
    trace.tensor("wrong", "what the wrong masks change, per query", wrong, queries,
                 {"weight hidden by top-left", "its output error", "weight on the future, no mask",
                  "its output error"});
    trace.check("the cached step's outputs equal the uncached pass's last T_q rows, bit for bit (entries that differ)",
                [&] {
                    double n = 0.0;
                    for (std::size_t i = 0; i < T_q; ++i)
                        n += differing_bits(nn::row_of(r.output, i), nn::row_of(full, offset + i));
                    return n;
                }(),
                0.0);
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
                  "greedy log p", "beam log p"});
    trace.check("beam search of width 1 gives greedy decoding's words on every sentence (sentences that differ)",
                a.width1_words + b.width1_words, 0.0);
    trace.check("and greedy's log-probability, summed in the same order (largest difference)",
                std::max(a.width1_log_p, b.width1_log_p), 0.0);
}


// ---------------------------------------------------------------- step [bleu]
// (issue 31's step [sampling] is to come between [beam] and this one)

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
                 {"without attention", "with attention", "Transformer"}, {"p_1", "p_2", "p_3", "p_4", "BP", "BLEU"});
    trace.tensor("by_length", fmt::format("BLEU by source length; from {} on longer than any training sentence", labels[test_bins]),
                 table, labels, {"without attention", "with attention", "Transformer"}, View::plot);
    trace.tensor("pairs", "pairs per bin", count, labels, {}, View::bars);
    trace.check("corpus level: each model's counts and lengths over the test set are the sums of its bins' (largest "
                "difference)",
                unsummed_counts, 0.0);
    Sentences references;
    for (const Pair& p : test) references.push_back(p.tgt);
    // (a set whose references are all shorter than 4 words has no 4-gram: BLEU 0, by the definition)
    if (std::any_of(references.begin(), references.end(), [](const auto& r) { return r.size() >= 4; }))
        trace.check("the test set's references against themselves score BLEU 1 (difference)",
                    std::abs(nn::bleu(references, references).bleu - 1.0), 0.0);
}

// ---------------------------------------------------------------- the lesson

void lesson_decoding(Trace& trace, const Config& config) {
    const Config race = race_config(config);
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
    // the bit-for-bit check at every step of every test sentence
    double differing = 0.0;
    std::size_t steps = 0;
    for (const Pair& p : corpus.test) {
        const Mat H_p = nn::encoder_output(m, p.src);
        const Decoded a = uncached(m, H_p, max_words), b = cached(m, H_p, max_words);
        steps += a.probabilities.size();
        if (a.probabilities.size() != b.probabilities.size()) differing += 1.0;
        for (std::size_t t = 0; t < std::min(a.probabilities.size(), b.probabilities.size()); ++t)
            differing += differing_bits(a.probabilities[t], b.probabilities[t]);
    }
    record_cache(trace, corpus, m, shown, plain, fast, differing, steps, corpus.test.size());
    // "turn off the lights" -> "lait band karo": short enough to show every key
    record_mask(trace, corpus, m, pair_of(start.corpus, lights_src, lights_tgt), config.size(param::queries));
    // sentences of 3 to 7 phrases, longer than the corpus's, from a generator of their own
    Rng rng(config.seed ^ 0x5DEECE66DULL);
    const std::vector<Pair> longer = long_pairs(rng, start.corpus, config.size(param::long_count), 24, 40);
    record_beam(trace, m, corpus.test, longer, config.size(param::beam), max_words, 2 * 40 + 4);
    // [sampling] will come here
    record_bleu(trace, trained->trained, corpus.test, longer, static_cast<std::size_t>(race.get("min_len")),
                static_cast<std::size_t>(race.get("max_len")), max_words, 2 * 40 + 4);
}

}  // namespace
}  // namespace decoding

Lesson decoding_lesson() {
    using namespace decoding;
    return make_lesson(13, "decoding",
                       "Decoding: a key-value cache that changes no bit, the mask it needs, beam search, and BLEU",
                       "Sutskever et al. 2014; Wu et al. 2016; Vaswani et al. 2017; Pope et al. 2023; Papineni et al. "
                       "2002; Bahdanau et al. 2015",
                       {param::epochs, param::sentences, param::test, param::queries, param::beam, param::long_count}, limits, time_estimate,
                       lesson_decoding, {{"epochs", 1}, {"sentences", 50}, {"test", 20}, {"long", 5}});
}

}  // namespace attn
