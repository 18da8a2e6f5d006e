// Lesson 9's translation task, shared by the lessons that train on it (9 learning-to-align, 12
// transformer): the generated parallel corpus (a lexicon and word-order rules: verb-final,
// postpositions, one many-to-one phrase), lesson 9's two recurrent models drawn from a generator,
// and the training and scoring of any model of nn/ that hands out its weights as blocks
// (nn::Seq2Seq, nn::EncoderDecoder): minibatches, gradient clipping and Adam, the loss per word,
// greedy decoding against the references.
// T_x / T_y = source / target words, u = GRU width, V_src / V_tgt = vocabulary sizes.
#pragma once

#include "support.hpp"

#include "core/rng.hpp"
#include "core/trace.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/encoder_decoder_batch.hpp"
#include "nn/kernels.hpp"
#include "nn/language_model.hpp"
#include "nn/optimizer.hpp"
#include "nn/seq2seq.hpp"

#include <array>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace attn::translation {

// ---------------------------------------------------------------- the corpus

// A word of the source language and its translation; an empty translation is dropped ("the").
struct Entry {
    std::string source, target;
};
extern const std::vector<Entry> nouns, adjectives, prepositions, adverbs;

// A verb phrase: its source words and its target words, verb last.
struct VerbPhrase {
    std::vector<std::string> source, target;
};
extern const std::vector<VerbPhrase> verbs;

constexpr std::size_t sos = 0, eos = 1;  // target ids of <sos> and <eos>

struct Vocabulary {
    std::vector<std::string> words;
    std::map<std::string, std::size_t> ids;
    std::size_t id(const std::string& w);
};

struct Pair {
    std::vector<std::size_t> src, tgt;  // tgt without <sos> and <eos>
    // The source positions each target word translates (one, or two for "pick up" -> "uthao"), as
    // the generator wrote them; empty for a pair it did not generate (pair_of).
    std::vector<std::vector<std::size_t>> partners{};
};

struct Corpus {
    Vocabulary source, target;
    std::vector<Pair> train, test;
};

// Two held-out pairs the lessons show: "turn off the lights" (crossing alignments; the partner of
// each target word) and "pick up the red box" (many-to-one: "pick up" -> "uthao").
extern const std::vector<std::string> lights_src, lights_tgt, pickup_src, pickup_tgt;
extern const std::vector<std::size_t> lights_partner;  // lait <- lights, band <- off, karo <- turn

// One sentence pair drawn from the rules, with between `fewest` and `most` prepositional phrases
// (0 to 3 in the corpus: at most 23 source words), and the partners of its target words.
struct Sentence {
    std::vector<std::string> src, tgt;
    std::vector<std::vector<std::size_t>> partners;  // per target word, its source positions
};
Sentence sentence(Rng& rng, std::size_t fewest = 0, std::size_t most = 3);
std::vector<std::size_t> ids_of(Vocabulary& v, const std::vector<std::string>& words);
std::string joined(const Vocabulary& v, const std::vector<std::size_t>& ids);

// The test set first, then the training set, which never repeats a test sentence nor the two
// shown pairs; every lexicon word has its id before any sentence is drawn.
Corpus generate_corpus(Rng& rng, std::size_t train, std::size_t test, std::size_t min_len, std::size_t max_len);

// `count` pairs of min_len to max_len source words, each length as often, drawn with up to 7
// prepositional phrases (up to 43 words) from the corpus's vocabulary: sentences longer than the
// corpus's own. 3 <= min_len <= max_len <= 40 (longer ones are rare draws).
std::vector<Pair> long_pairs(Rng& rng, Corpus& c, std::size_t count, std::size_t min_len, std::size_t max_len);

// The count of target words whose partners are not source words that translate to them by the
// lexicon (the verbs' phrases as wholes): 0 for every pair the generator wrote.
std::size_t wrong_partners(const Corpus& c, const std::vector<Pair>& pairs);

std::vector<std::size_t> decoder_inputs(const Pair& p);   // <sos> y_1 .. y_T
std::vector<std::size_t> decoder_outputs(const Pair& p);  // y_1 .. y_T <eos>
Pair pair_of(Corpus& c, const std::vector<std::string>& src, const std::vector<std::string>& tgt);
std::vector<std::string> with_eos(std::vector<std::string> words);
std::string pair_text(const Corpus& c, const Pair& p);

// ---------------------------------------------------------------- lesson 9's models

// Weights N(0, 1/fan_in), biases 0, embeddings N(0, 1), in a fixed order from one generator.
nn::GruParams drawn_gru(Rng& rng, std::size_t d_in, std::size_t u);
nn::Seq2Seq drawn_model(Rng& rng, bool attention, std::size_t V_src, std::size_t V_tgt, std::size_t u);
Mat teacher_forced_weights(const nn::Seq2Seq& m, const Pair& p);  // alpha, T_y x T_x

// Every weight of m named after its field of nn::Seq2Seq ("enc_fwd.W_z"), in the order of nn::blocks(m).
std::vector<std::pair<std::string, Array>> named_weights(const nn::Seq2Seq& m);

// ---------------------------------------------------------------- lesson 12's Transformer

// The sizes of a Transformer encoder-decoder: width, heads, blocks of the encoder and of the decoder,
// feed-forward width.
struct TransformerSizes {
    std::size_t d_model = 0, heads = 0, layers = 0, d_ff = 0;
};

// Drawn as lessons 12 and 14 draw it, from one generator in a fixed order: weights N(0, 1/fan_in), the
// layer norms' gains 1 and biases 0, embeddings N(0, 1/d_model), sinusoidal positions (nothing drawn).
nn::EncoderDecoder drawn_transformer(Rng& rng, const TransformerSizes& s, std::size_t V_src, std::size_t V_tgt);

// Sequential steps, multiply-adds and weights of one teacher-forced forward pass of lesson 9's two models
// (GRU width `width`) and the Transformer, at T_x source and T_y target positions (<eos> included) and a
// target vocabulary of V, counted from the equations; rows without, with, Transformer. `weights` are the
// three models' parameter counts, shown beside.
Mat pass_costs(std::size_t width, const TransformerSizes& s, const std::array<std::size_t, 3>& weights, double T_x,
               double T_y, double V);

// ---------------------------------------------------------------- any model: one pass, decoding

// What the training and scoring below need of a model, one overload per kind.
struct Forward {
    double loss = 0.0;
    std::vector<std::size_t> predicted;
};
Forward teacher_forced(const nn::Seq2Seq& m, const Pair& p);
Forward teacher_forced(const nn::EncoderDecoder& m, const Pair& p);
double backward_into(const nn::Seq2Seq& m, const Pair& p, nn::Seq2Seq& grads);  // returns the loss
double backward_into(const nn::EncoderDecoder& m, const Pair& p, nn::EncoderDecoder& grads);
// A language model (lesson 13) reads the target side alone: <sos> y_1 .. y_T, predicting y_1 .. <eos>.
Forward teacher_forced(const nn::LanguageModel& m, const Pair& p);
double backward_into(const nn::LanguageModel& m, const Pair& p, nn::LanguageModel& grads);
std::vector<std::size_t> greedy(const nn::Seq2Seq& m, const Pair& p, std::size_t max_words);
std::vector<std::size_t> greedy(const nn::EncoderDecoder& m, const Pair& p, std::size_t max_words);

template <class Model>
std::size_t parameter_count(Model m) {
    std::size_t n = 0;
    for (const nn::Block& b : nn::blocks(m)) n += b.size;
    return n;
}

// ---------------------------------------------------------------- training

const nn::AdamSettings adam{0.01, 0.9, 0.999, 1e-8};  // lesson 9's
constexpr double clip_threshold = 5.0;
constexpr std::size_t batch = 16;

// How a minibatch's gradient is summed and multiplied.
//   The lessons' way (fast = false, the default): sentence after sentence into one sum, on the calling
//   thread, in the portable arithmetic: the numbers every golden file records.
//   Fast (attn train, training_bench), in `arithmetic` (nn::Arithmetic::native: the fused kernels where
//   the processor has FMA, within a few ulp of portable per product, not the same bits) on `threads`
//   threads, the same bytes whatever `threads` is (1 or 16):
//   - a Transformer (nn::EncoderDecoder) stacks the batch (nn::encoder_decoder_batch_gradient) in
//     gradient_stacks stacks: sentence k of the batch in stack k mod gradient_stacks, every linear layer
//     one product over all of a stack's tokens, each weight's gradient one sum over them; the stacks run
//     side by side on the threads (their products split by rows between threads to spare) and their
//     gradients are added, stack 0 + stack 1;
//   - the GRUs and the language model sum in lanes: sentence k of the batch goes to lane k mod
//     gradient_lanes, each lane sums its sentences' gradients in their order, and the lanes are then
//     added in a fixed tree ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)); the threads take lanes as they
//     come free (more threads than lanes wait).
//   Not the lessons' bits either way: the sums' order differs; tests/test_training.cpp holds the two to a
//   tolerance on the same step. With nn::Arithmetic::single (attn train --float32) the fast way's products
//   are float32 (within 1e-4 of the gradient's largest entry there).
constexpr std::size_t gradient_lanes = 8;
constexpr std::size_t gradient_stacks = 2;
struct Training {
    bool fast = false;
    std::size_t threads = 1;
    nn::Arithmetic arithmetic = nn::Arithmetic::portable;
};

// The processor's cores, at most gradient_lanes: the threads of attn train and training_bench unless
// asked otherwise, and of for_each_independent.
std::size_t default_threads();

// fast, on `threads` threads, the fused products where the processor has them
Training fast_training(std::size_t threads);

// What a Training is, for a person and for a checkpoint: "the lessons' way (one sum, portable products)"
// or "stacked (Transformer) or in 8 lanes (GRU), fused products" ("portable products" where the processor
// has no FMA, or asked).
std::string training_name(const Training& how);

// training_name without its products: how the sums go, which a resumed run must keep.
std::string summation_name(const Training& how);

// training_name(how) and its threads: "in 8 lanes, fused products on 2 threads".
std::string training_text(const Training& how);

// Runs work(lane) once for each lane in [0, lanes) on `threads` threads (the calling one among them),
// each under nn::ScopedOneThread and nn::ScopedArithmetic(arithmetic); the first exception a lane
// throws is thrown again here once every thread has stopped.
void run_lanes(std::size_t lanes, std::size_t threads, nn::Arithmetic arithmetic,
               const std::function<void(std::size_t)>& work);

// Runs work(k) once for every k in [0, n) on the processor's cores (at most gradient_lanes threads), each
// on one thread, in the portable arithmetic: for work whose results do not depend on one another (each
// pair's loss or translation, into a slot of its own), so that they are the bytes a loop on one thread
// gives; the caller then sums them in order.
void for_each_independent(std::size_t n, const std::function<void(std::size_t)>& work);

// Calls work(b, from, to) for pieces [from, to) of blocks[b] that cover every entry of `blocks` once, in
// ranges of 2^14 entries split between `threads` threads: for work on each entry by itself (an Adam step,
// a sum of lanes), whose bytes do not depend on the split.
void for_each_piece(const std::vector<nn::Block>& blocks, std::size_t threads,
                    const std::function<void(std::size_t, std::size_t, std::size_t)>& work);

// sum_j lanes[j] into lanes[0] in a fixed tree, ((0 + 1) + (2 + 3)) + ... (two stacks: 0 + 1), block by
// block, split between `threads` threads by ranges of entries (the bytes do not depend on the split).
void add_lanes(const std::vector<std::vector<nn::Block>>& lanes, std::size_t threads);

template <class Model>
struct Trainer {
    Model model;
    std::vector<double> m, v;  // Adam's moments, in the order of nn::blocks
    double beta1_power = 1.0, beta2_power = 1.0;
    double clipped = 0.0, steps = 0.0;  // how many steps clipped their gradient, of how many
    Training how{};
    std::vector<Model> lane_grads{};  // with lanes: one gradient per lane, kept from batch to batch
};

template <class Model>
Trainer<Model> trainer(const Model& model, const Training& how = {}) {
    Trainer<Model> t{model, {}, {}};
    const std::size_t n = parameter_count(model);
    t.m.assign(n, 0.0);
    t.v.assign(n, 0.0);
    t.how = how;
    return t;
}

// The gradient of the summed loss of pairs[order[first]] .. pairs[order[last - 1]] in `t.how`'s way;
// returns the summed loss (in the same order as the gradient) and sets `count` to the target words.
template <class Model>
Model batch_gradient(Trainer<Model>& t, const std::vector<Pair>& pairs, const std::vector<std::size_t>& order,
                     std::size_t first, std::size_t last, double& loss, double& count) {
    count = 0.0;
    for (std::size_t k = first; k < last; ++k) count += as_double(pairs[order[k]].tgt.size() + 1);
    if (!t.how.fast) {
        Model grads = nn::zeros_like(t.model);
        loss = 0.0;
        for (std::size_t k = first; k < last; ++k) loss += backward_into(t.model, pairs[order[k]], grads);
        return grads;
    }
    // one gradient and loss per stack (the Transformer) or lane (the others), then added in a fixed tree
    constexpr bool stacked = std::is_same_v<Model, nn::EncoderDecoder>;
    constexpr std::size_t lanes = stacked ? gradient_stacks : gradient_lanes;
    std::array<double, lanes> lane_loss{};
    if constexpr (stacked) {
        std::array<std::vector<nn::TeacherForcedPair>, lanes> stacks;
        for (std::size_t k = first; k < last; ++k) {
            const Pair& p = pairs[order[k]];
            stacks[(k - first) % lanes].push_back({p.src, decoder_inputs(p), decoder_outputs(p)});
        }
        t.lane_grads.resize(lanes);
        const std::size_t inner = std::max<std::size_t>(1, t.how.threads / lanes);
        run_lanes(lanes, t.how.threads, t.how.arithmetic, [&](std::size_t s) {
            const nn::ScopedThreads split(inner);  // threads to spare split each stack's products
            t.lane_grads[s] = stacks[s].empty() ? nn::zeros_like(t.model)
                                                : nn::encoder_decoder_batch_gradient(t.model, stacks[s], lane_loss[s]);
        });
    } else {
        while (t.lane_grads.size() < lanes) t.lane_grads.push_back(nn::zeros_like(t.model));
        run_lanes(lanes, t.how.threads, t.how.arithmetic, [&](std::size_t lane) {
            for (const nn::Block& b : nn::blocks(t.lane_grads[lane])) std::fill(b.data, b.data + b.size, 0.0);
            for (std::size_t k = first + lane; k < last; k += lanes)
                lane_loss[lane] += backward_into(t.model, pairs[order[k]], t.lane_grads[lane]);
        });
    }
    std::vector<std::vector<nn::Block>> sums;
    for (Model& g : t.lane_grads) sums.push_back(nn::blocks(g));
    add_lanes(sums, t.how.threads);
    for (std::size_t step = 1; step < lanes; step *= 2)
        for (std::size_t j = 0; j + step < lanes; j += 2 * step) lane_loss[j] += lane_loss[j + step];
    loss = lane_loss[0];
    if constexpr (stacked) return std::move(t.lane_grads[0]);  // each stack's gradient is made anew
    return t.lane_grads[0];                                    // the lanes' are kept and cleared
}

// One minibatch: the gradient of the mean loss per target word (batch_gradient), clipped, then one
// Adam step with `settings` (its learning rate may change from step to step). Returns the summed
// loss and adds the words to `words`.
template <class Model>
double train_batch(Trainer<Model>& t, const std::vector<Pair>& pairs, const std::vector<std::size_t>& order,
                   std::size_t first, std::size_t last, double& words, const nn::AdamSettings& settings) {
    double loss = 0.0, count = 0.0;
    Model grads = batch_gradient(t, pairs, order, first, last, loss, count);
    words += count;
    // the mean and Adam entry by entry on the training's threads (the bytes of one thread)
    const std::vector<nn::Block> g = nn::blocks(grads);
    for_each_piece(g, t.how.threads, [&](std::size_t b, std::size_t from, std::size_t to) {
        for (std::size_t k = from; k < to; ++k) g[b].data[k] /= count;
    });
    if (nn::clip_by_global_norm(g, clip_threshold) > clip_threshold) t.clipped += 1.0;
    t.steps += 1.0;
    t.beta1_power *= settings.beta1;
    t.beta2_power *= settings.beta2;
    const std::vector<nn::Block> w = nn::blocks(t.model);
    std::vector<std::size_t> offsets(w.size() + 1, 0);  // of each block's first entry in m and v
    for (std::size_t b = 0; b < w.size(); ++b) offsets[b + 1] = offsets[b] + w[b].size;
    for_each_piece(w, t.how.threads, [&](std::size_t b, std::size_t from, std::size_t to) {
        const std::size_t at = offsets[b] + from;
        nn::adam_step(w[b].data + from, g[b].data + from, t.m.data() + at, t.v.data() + at, to - from, settings,
                      t.beta1_power, t.beta2_power);
    });
    return loss;
}

// One epoch's shuffle of the training pairs: Fisher-Yates with our generator, the same order on
// every machine. `order` holds the previous epoch's order (0, 1, .. before the first).
void shuffle_epoch(Rng& rng, std::vector<std::size_t>& order);

// The orders of `epochs` epochs of `pairs` training pairs that shuffle_epoch draws from `rng`
// (a copy: the caller's generator does not move). Row e - 1: epoch e. epochs x pairs.
Mat epoch_orders(Rng rng, std::size_t pairs, std::size_t epochs);

// ---------------------------------------------------------------- export-only data

// What another program needs to train the same models (README: the PyTorch script), written by
// `attn export` and never in a golden file (Trace::export_only), in the current step: both
// vocabularies ("source_words", "target_words"), every pair's word ids ("train_src", "test_tgt",
// "train_lengths", ...), and the batches' order of every epoch ("order").
void export_corpus(Trace& trace, const Corpus& c);
void export_orders(Trace& trace, const Mat& orders);
// Every weight of a model, "<model>.<name>": the fields of nn::Seq2Seq in the order of nn::blocks
// (named_weights), the tensors of nn::named_tensors. `what` heads each one's equation: "initial weight" as
// drawn, "trained weight" after training (lessons 12, 13 and 14 export both, so that what they compute from
// their trained models can be computed again outside attn).
void export_weights(Trace& trace, const std::string& model, const nn::Seq2Seq& m,
                    const std::string& what = "initial weight");
void export_weights(Trace& trace, const std::string& model, nn::EncoderDecoder m,
                    const std::string& what = "initial weight");

// The mean loss per target word over a set, teacher-forced.
template <class Model>
double mean_loss(const Model& m, const std::vector<Pair>& pairs) {
    std::vector<double> losses(pairs.size());
    for_each_independent(pairs.size(), [&](std::size_t k) { losses[k] = teacher_forced(m, pairs[k]).loss; });
    double loss = 0.0, words = 0.0;
    for (std::size_t k = 0; k < pairs.size(); ++k) {  // in the order of the pairs, as one loop would
        loss += losses[k];
        words += as_double(pairs[k].tgt.size() + 1);
    }
    return loss / words;
}

// ---------------------------------------------------------------- scoring

// One model's greedy translations of a set, measured against the references.
struct Scores {
    double teacher_forced = 0.0;  // share of target words (and <eos>) predicted right given the true previous words
    double free_tokens = 0.0;     // share of reference positions (and <eos>) the greedy output has right
    double exact = 0.0;           // share of sentences translated exactly
    std::vector<std::vector<std::size_t>> outputs;
};

// Position by position: the output followed by <eos>, against the reference followed by <eos>.
double right_positions(const std::vector<std::size_t>& out, const std::vector<std::size_t>& ref);

// Pair k decoded greedily for at most cap(k) words.
template <class Model, class Cap>
Scores scores_capped(const Model& m, const std::vector<Pair>& pairs, const Cap& cap) {
    Scores s;
    std::vector<Forward> passes(pairs.size());
    s.outputs.resize(pairs.size());
    for_each_independent(pairs.size(), [&](std::size_t k) {
        passes[k] = teacher_forced(m, pairs[k]);
        s.outputs[k] = greedy(m, pairs[k], cap(k));
    });
    double words = 0.0;
    for (std::size_t k = 0; k < pairs.size(); ++k) {  // summed in the order of the pairs
        const Pair& p = pairs[k];
        const std::vector<std::size_t> out = decoder_outputs(p);
        for (std::size_t i = 0; i < out.size(); ++i) s.teacher_forced += passes[k].predicted[i] == out[i] ? 1.0 : 0.0;
        s.free_tokens += right_positions(s.outputs[k], p.tgt);
        s.exact += s.outputs[k] == p.tgt ? 1.0 : 0.0;
        words += as_double(out.size());
    }
    s.teacher_forced /= words;
    s.free_tokens /= words;
    s.exact /= as_double(pairs.size());
    return s;
}

// Every pair decoded greedily for at most max_words words.
template <class Model>
Scores scores(const Model& m, const std::vector<Pair>& pairs, std::size_t max_words) {
    return scores_capped(m, pairs, [&](std::size_t) { return max_words; });
}

// The same scores with each pair's decoding stopped after its reference's length + 1 words: right_positions
// reads the output's positions 0 .. |reference| only, and an output of |reference| + 1 words is not exact,
// so free_tokens and exact are those of any larger cap; only the outputs are shorter, and a model that does
// not stop (most do not, on sentences longer than they saw) costs a few words more than its reference
// instead of max_words.
template <class Model>
Scores scores_to_reference(const Model& m, const std::vector<Pair>& pairs) {
    return scores_capped(m, pairs, [&](std::size_t k) { return pairs[k].tgt.size() + 1; });
}

}  // namespace attn::translation
