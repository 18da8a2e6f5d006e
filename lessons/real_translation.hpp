// Lesson 14's training run, shared by the lesson (attn run real-translation) and by the translator a
// student keeps (attn train, attn translate: src/cli/translator.cpp): the same verses, tokenizer, models
// and epochs in both, so that a run saved after any epoch and resumed ends with the bytes of a run never
// stopped. Nothing here prints or touches a file but the SWORD modules read_verses runs mod2imp on; a
// checkpoint is built and parsed in memory (core/npz.hpp writes it, whole or not at all).
// T_x / T_y = source / target pieces, V = pieces of the vocabulary.
#pragma once

#include "registry.hpp"
#include "translation.hpp"

#include "core/npz.hpp"
#include "core/rng.hpp"
#include "core/trace.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/optimizer.hpp"
#include "nn/seq2seq.hpp"
#include "text/bible.hpp"
#include "text/corpus.hpp"
#include "text/sentencepiece.hpp"

#include <array>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn::real_translation {

// The lesson's parameters (--set), which are also attn train's settings.
namespace param {
inline const Param pairs{"pairs", 128, 16, 30000,
                         "training verse pairs, taken evenly from the training books' pairs of at most max_words words"};
inline const Param validation{"validation", 24, 8, 600, "validation verse pairs (Ruth, Esther, Daniel), taken evenly"};
inline const Param test{"test", 24, 8, 879, "test verse pairs (John, every length), taken evenly across the book"};
inline const Param max_words{"max_words", 30, 10, 50,
                             "most words of a training verse on either side (Bahdanau et al.'s RNNsearch-30 and -50)"};
inline const Param vocab{"vocab", 400, 200, 16000,
                         "most pieces of the SentencePiece vocabulary, shared by both languages (fewer when the "
                         "training verses cannot fill it)"};
inline const Param epochs{"epochs", 2, 1, 60, "passes over the training verses"};
inline const Param width{"width", 24, 4, 256, "width u of the two GRU models"};
inline const Param d_model{"d_model", 24, 4, 256, "width of the Transformer (even: the sinusoidal positions)"};
inline const Param heads{"heads", 4, 1, 8, "attention heads h of the Transformer; must divide d_model"};
inline const Param layers{"layers", 1, 1, 6, "blocks of the Transformer's encoder, and of its decoder"};
inline const Param d_ff{"d_ff", 48, 1, 1024, "hidden width of the Transformer's feed-forward network"};
inline const Param warmup{"warmup", 40, 1, 100000, "warm-up steps of the Transformer's learning rate"};
}  // namespace param

// The lesson's record.
const Lesson& lesson();

// ---------------------------------------------------------------- the verses

// Both modules read, cleaned, aligned and split, the same for every configuration: read once per process.
struct Verses {
    text::AlignCounts counts;
    std::vector<text::VersePair> pairs;        // aligned, in the English order
    text::CorpusSplit split;                   // training books, validation books, John
    std::vector<std::size_t> near_duplicates;  // of the test set in the training set
    std::string alphabet;                      // the training books' characters, each once, in code point order
};
// Throws text::BibleError naming the package to install when a module or mod2imp is missing.
std::shared_ptr<const Verses> read_verses();

// The verses a configuration trains, validates and tests on.
struct Chosen {
    std::vector<text::VersePair> train, validation, test;
    std::size_t short_enough = 0;  // training books' pairs of at most max_words words on both sides
};
Chosen chosen_verses(const Verses& v, const Config& c);
std::size_t longer_side(const text::VersePair& p);  // words of its longer side

// ---------------------------------------------------------------- pieces and ids

// The models' ids: <sos> 0 and <eos> 1 (lessons/translation.hpp), <unk> 2, then SentencePiece's own ids
// (3 on); SentencePiece's <unk> <s> </s> are 0, 1, 2.
std::size_t model_id(int piece);
int piece_id(std::size_t id);
std::vector<std::size_t> model_ids(const text::Tokenizer& t, const std::string& text);
std::string decoded(const text::Tokenizer& t, const std::vector<std::size_t>& ids);
// The pieces as labels, a piece that starts a word with "_" in front where SentencePiece writes "\u2581" (the
// fonts of a browser's PDF print lack U+2581, and a label must be findable in it: tests/svg_check.py).
std::vector<std::string> piece_labels(const text::Tokenizer& t, const std::vector<std::size_t>& ids);

// The tokenizer's training text: this run's training verses, English then Spanish, and one more line, the
// training books' alphabet, a character a word, so that every character of the books is a piece.
std::vector<std::string> tokenizer_text(const Chosen& chosen, const Verses& v);
// SentencePiece trained on it at the configuration's vocabulary size (a most, not an exact count).
std::string trained_tokenizer(const Chosen& chosen, const Verses& v, const Config& c);

struct Tokenized {
    std::vector<translation::Pair> train, validation, test;
    std::vector<std::string> pieces;  // by model id
};
Tokenized tokenized(const text::Tokenizer& t, const Chosen& chosen);

// ---------------------------------------------------------------- translating and scoring

// The most pieces a greedy translation may have: one and a half times the source's, and five more (Spanish
// takes about a fifth more pieces than English here); a model that never says <eos> stops there.
std::size_t most_pieces(std::size_t source_pieces);

// Each pair's source translated greedily by m (its target is not read), at most most_pieces pieces.
template <class Model>
std::vector<std::vector<std::size_t>> greedy_all(const Model& m, const std::vector<translation::Pair>& pairs) {
    std::vector<std::vector<std::size_t>> out(pairs.size());
    translation::for_each_independent(pairs.size(), [&](std::size_t k) {
        out[k] = translation::greedy(m, pairs[k], most_pieces(pairs[k].src.size()));
    });
    return out;
}

// The Transformer's translation of `source` by beam search of `width` (lesson 13's, with the key-value cache,
// Wu et al.'s length penalty at alpha = 1), at most most_pieces pieces, without <eos>; and of each pair's source.
std::vector<std::size_t> beam_translation(const nn::EncoderDecoder& m, const std::vector<std::size_t>& source,
                                          std::size_t width);
std::vector<std::vector<std::size_t>> beam_all(const nn::EncoderDecoder& m, const std::vector<translation::Pair>& pairs,
                                               std::size_t width);

// Translations and their references as word ids of one numbering (every word, as text::words_of cuts them,
// numbered in the order met), for nn::bleu: references[k] is the Spanish of verses[k], candidates[m][k] the
// pieces outputs[m][k] decoded.
struct BleuWords {
    std::vector<std::vector<std::size_t>> references;
    std::vector<std::vector<std::vector<std::size_t>>> candidates;
};
BleuWords bleu_words(const text::Tokenizer& t, const std::vector<text::VersePair>& verses,
                     const std::vector<std::vector<std::vector<std::size_t>>>& outputs);

// ---------------------------------------------------------------- the models

struct Models {
    nn::Seq2Seq without, with;
    nn::EncoderDecoder transformer;
};
translation::TransformerSizes sizes_of(const Config& c);
// Lesson 9's two GRU models, then lesson 12's Transformer, from one generator in that order.
Models drawn_models(Rng& rng, const Config& c, std::size_t V);

// The Transformer's Adam at step `step` (1 first): Vaswani et al.'s, the rate warmed up over the
// configuration's warmup steps at its d_model (lesson 12's schedule at lesson 14's sizes).
nn::AdamSettings transformer_adam(std::size_t step, const Config& c);

// ---------------------------------------------------------------- a training run, epoch by epoch

inline constexpr std::size_t first_batches = 4;  // batches whose losses step [first-steps] records

struct Run {
    Config config;
    std::string tokenizer_model;  // SentencePiece's bytes
    Tokenized data;
    Models start;  // as drawn
    translation::Trainer<nn::Seq2Seq> without, with;
    translation::Trainer<nn::EncoderDecoder> transformer;
    Rng rng{0};                      // the shuffles still to come
    std::vector<std::size_t> order;  // the last epoch's order (each epoch shuffles the one before)
    std::size_t epoch = 0;           // epochs done
    std::size_t batches = 0;         // minibatches done
    Mat first;                       // first_batches x 3: loss per target piece of each of the first batches
    Mat curves;                      // (epochs + 1) x 6: train and validation loss per piece, rows 0 .. epoch
    // attn train's corpus BLEU x 100 of the validation verses after each epoch, translated greedily (without,
    // with, Transformer); NaN for an epoch it was not measured after (a checkpoint of an attn without it)
    std::vector<std::array<double, 3>> validation_bleu;
    // measured while this process trained (wall time): shown, never saved nor recorded
    std::array<double, 3> seconds{}, trained_pieces{};
    // what the checkpoint it was resumed from says it was trained with (translation::training_name); ""
    // for a run started here
    std::string saved_training;
};

// Makes the three trainers train `how` (translation::Training; the lessons' way until set): the lesson
// trains the lessons' way, attn train fast (stacked and in lanes) unless --portable. The checkpoint records the Transformer
// trainer's, which is the three's.
void set_training(Run& r, const translation::Training& how);

// The lanes a Training sums the GRUs' batches in: translation::gradient_lanes, or 0 for the lessons' one
// sum (the Transformer's are stacked or one sum: training_name says which).
std::size_t lanes_of(const translation::Training& how);

// The run before its first epoch: the tokenizer trained, the data encoded, the models drawn, row 0 of
// the curves measured.
Run start_run(const Verses& v, const Chosen& chosen, const Config& c);
// One more epoch; its progress on `progress` (Trace::progress).
void train_epoch(Run& r, const Trace& progress);
std::size_t total_epochs(const Run& r);
// The three models' corpus BLEU x 100 on the run's validation verses as they stand, each source translated
// greedily and scored against the verse's Spanish text (chosen.validation: the run's own choice).
std::array<double, 3> validation_bleu(const Run& r, const Chosen& chosen);

// The lesson's steps after the first training steps, for a run trained as far as it got: [training] (its
// curves), [length] (BLEU by source length), [maps] (attention on the hand-aligned verses) and [cost]. What
// attn train shows at its end (lessons/14_real_translation.cpp).
void record_results(Trace& trace, const Run& run, const Verses& v, const Chosen& chosen);

// ---------------------------------------------------------------- checkpoints

// A checkpoint that cannot be used: another format or version, a configuration or tokenizer other than
// the one the verses give, a tensor missing or of another shape. The message names `source` and what.
struct CheckpointError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The members of a checkpoint (an .npz archive, core/npz.hpp): "attn.json" (what the archive is: its
// format, attn's version, the lesson's configuration, the epochs done and every tensor's name, shape and
// role), "tokenizer.model" (SentencePiece's model, which its own library loads), each model's weights as
// "<model>.<tensor>.npy" ("without.E_src", "transformer.decoder.0.W_Q", ...), and what resuming needs:
// Adam's moments, the batch order, the generator's state, the curves so far.
std::vector<NpzMember> checkpoint_members(const Run& r);
// The run a checkpoint saved, resumed: the verses and the tokenizer derived again from its configuration
// and held to the saved tokenizer's bytes, then every saved tensor loaded. Throws CheckpointError.
Run resumed_run(const Verses& v, const std::vector<NpzMember>& members, const std::string& source);

// What translating needs of a checkpoint: its configuration, tokenizer and models, as trained so far.
struct Translator {
    Config config;
    std::size_t epochs_done = 0;
    std::string tokenizer_model;
    Models models;
};
// Throws CheckpointError as resumed_run does; needs no verses (the tokenizer is the saved one).
Translator translator_of(const std::vector<NpzMember>& members, const std::string& source);

}  // namespace attn::real_translation
