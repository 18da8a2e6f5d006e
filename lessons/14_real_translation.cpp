// Lesson 14: attention on a real language. The toy corpus of lessons 9 and 12 becomes English and
// Spanish Bible verses (the King James Version and the Reina-Valera 1909, read from Debian's SWORD
// modules by src/text/bible), split by whole books (src/text/corpus), cut into subword pieces by
// byte-pair encoding, derived step by step (src/text/bpe) and then learned by SentencePiece
// (src/text/sentencepiece); lesson 9's two GRU models and lesson 12's Transformer train on the same
// batches, and are measured as Bahdanau et al. (2015) measured theirs: BLEU by source length (their
// figure 2) and attention maps (their figure 3).
// At its defaults the run is short (a few hundred verses, a few epochs: a minute at most); the data,
// the tokenizer and the models as drawn are golden-checked bit for bit like every lesson, and so is the
// training, whose arithmetic is ours and fixed; what the models reached is reported, never claimed.
// T_x / T_y = source / target pieces, u = GRU width, d_model = Transformer width, V = pieces.
#include "registry.hpp"
#include "support.hpp"
#include "real_translation.hpp"
#include "translation.hpp"

#include "core/rng.hpp"
#include "nn/bleu.hpp"
#include "nn/bleu_bins.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/optimizer.hpp"
#include "nn/reductions.hpp"
#include "nn/self_attention.hpp"
#include "text/bible.hpp"
#include "text/bpe.hpp"
#include "text/corpus.hpp"
#include "text/sentencepiece.hpp"
#include "text/alignment.hpp"

#include "hand_alignments.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace attn {

namespace real_translation {  // this lesson's own names (the lessons compile as unity files: meson.build)
namespace {

using translation::Pair;


std::string limits(const Config& c) {
    if (auto why = even(c, param::d_model); !why.empty()) return why;
    if (auto why = divisible(c, param::d_model, param::heads, 1); !why.empty()) return why;
    return "";
}

// Seconds of this project's 2-core machine (one core), from its settings. Reading and cleaning both
// modules, splitting, the near-duplicate scan and SentencePiece take about 3.7 s whatever the settings
// (SentencePiece about 0.1 ms a training verse at 400 pieces). A training pass (forward and backward) of
// the three models over a pair of about 43 + 46 pieces at u = d_model = 24 and 400 pieces takes about
// 5 ms in all, most of it the output layers (V u multiply-adds a target piece); a greedy translation of a
// test verse about as much (the Transformer's beam searches of widths 4 and 1, with their key-value caches,
// about as much again: a third pass per test verse). The default run took 7.3 s of user time (2026-11-30,
// load 2 from a build beside it; estimated 8.5 s); 240 pairs and 40 test verses 17.1 s (estimated 12 s, the greedy
// translations then up to twice the source: the cap is now one and a half times).
constexpr double fixed_seconds = 4.0;
constexpr double seconds_per_pass = 0.006;

double estimated_seconds(const Config& c) {
    const double u = as_double(c.size(param::width)) / 24.0, d = as_double(c.size(param::d_model)) / 24.0;
    const double V = as_double(c.size(param::vocab)) / 400.0;
    const double blocks = as_double(c.size(param::layers));
    const double ff = (d + as_double(c.size(param::d_ff)) / 48.0) / 2.0;
    const double length = as_double(c.size(param::max_words)) / 30.0;
    // the GRUs grow with u^2 and V u, the Transformer with layers d_model (d_model + d_ff) and V d_model
    const double per_pass = seconds_per_pass * length * length * (0.5 * (u * u + V * u) + 0.5 * (blocks * d * ff + V * d));
    const double passes = as_double(c.size(param::epochs)) *
                              (as_double(c.size(param::pairs)) + as_double(c.size(param::validation))) +
                          3.0 * as_double(c.size(param::test)) + as_double(c.size(param::validation));
    return fixed_seconds + 1e-4 * as_double(c.size(param::pairs)) * V + per_pass * passes;
}

TimeEstimate time_estimate(const Config& c) {
    return {estimated_seconds(c), "training",
            fmt::format("on one core: {:.0f} s to read the modules, then epochs x (pairs + validation) passes of the "
                        "three models, {:.0f} ms each at the defaults, growing with width^2, vocab x width, layers "
                        "d_model (d_model + d_ff) and max_words^2",
                        fixed_seconds, 1000.0 * seconds_per_pass),
            {{&param::epochs, 1.0}, {&param::pairs, 1.0}, {&param::width, 2.0}, {&param::d_model, 2.0},
             {&param::vocab, 1.0}, {&param::layers, 1.0}, {&param::max_words, 2.0}, {&param::test, 1.0}}};
}

// ---------------------------------------------------------------- step [data]

const std::vector<std::string> length_bins = {"0-9", "10-19", "20-29", "30-39", "40-49", "50-59", "60+"};

Mat histograms(const std::vector<const std::vector<text::VersePair>*>& sets, bool english) {
    Mat out = nn::zeros(sets.size(), length_bins.size());
    for (std::size_t s = 0; s < sets.size(); ++s) {
        const std::vector<std::size_t> h = text::length_histogram(*sets[s], english, 10, length_bins.size());
        for (std::size_t b = 0; b < h.size(); ++b) out(s, b) = as_double(h[b]);
    }
    return out;
}

void record_data(Trace& trace, const Verses& v, const Chosen& chosen, const Config& c) {
    const text::AlignCounts& n = v.counts;
    const text::CorpusSplit& s = v.split;
    trace.step("data", "Real text: verses aligned by reference, split by whole books",
               "pairs = { (en_r, es_r) : reference r in both modules, both sides non-empty }",
               fmt::format(
                   "Debian's sword-text-kjv and sword-text-sparv hold the King James Version (English, 1769 text) "
                   "and the Reina-Valera 1909 (Spanish), both public domain and both in the KJV's versification, so "
                   "a verse reference names the same verse in both: it is the alignment, at the level of verses. "
                   "SWORD's exporter mod2imp prints each module's OSIS markup; the cleaning keeps the words a "
                   "reader sees (Strong's numbers, notes and headings go). {} English and {} Spanish verses; {} "
                   "references only in English, {} only in Spanish, {} empty on a side: {} pairs kept. The Bible "
                   "repeats itself (Kings and Chronicles, the gospels, Psalm 18 and 2 Samuel 22), so a random split "
                   "would test on verses whose twins were trained on: whole books are held out instead. Test: John "
                   "({} verses); validation: Ruth, Esther and Daniel ({}); training: the other {} books ({} verses), "
                   "of which {} have at most {} words on both sides (Bahdanau et al. trained on at most 30 and 50). "
                   "This run takes {} of them, {} validation and {} test verses, each set evenly spaced through its "
                   "books.",
                   n.english, n.spanish, n.only_english, n.only_spanish, n.empty, n.kept, s.test.size(),
                   s.validation.size(), 66 - 1 - text::book_split().validation.size(), s.train.size(),
                   chosen.short_enough, c.size(param::max_words), chosen.train.size(), chosen.validation.size(),
                   chosen.test.size()));
    trace.tensor("verses", "verses read and kept",
                 Vec{as_double(n.english), as_double(n.spanish), as_double(n.only_english), as_double(n.only_spanish),
                     as_double(n.empty), as_double(n.kept)},
                 {"English", "Spanish", "only English", "only Spanish", "empty on a side", "pairs kept"}, {},
                 View::bars);
    trace.tensor("split", "pairs per set",
                 Vec{as_double(s.train.size()), as_double(s.validation.size()), as_double(s.test.size()),
                     as_double(chosen.short_enough), as_double(chosen.train.size()), as_double(chosen.validation.size()),
                     as_double(chosen.test.size())},
                 {"training books", "validation books", "test book", "training, at most max_words",
                  "this run: training", "this run: validation", "this run: test"},
                 {}, View::bars);
    const std::vector<std::string> sets = {"training", "validation", "test"};
    trace.tensor("lengths_en", "verses per length in English words", histograms({&s.train, &s.validation, &s.test}, true),
                 sets, length_bins);
    trace.tensor("lengths_es", "verses per length in Spanish words",
                 histograms({&s.train, &s.validation, &s.test}, false), sets, length_bins);
    trace.check("the pairs kept are the English verses less the one-sided and the empty ones",
                std::abs(as_double(n.english) - as_double(n.only_english) - as_double(n.empty) - as_double(n.kept)),
                0.0);
    trace.check("every pair is in exactly one set",
                std::abs(as_double(s.train.size() + s.validation.size() + s.test.size()) - as_double(n.kept)), 0.0);
    trace.check("no test verse shares half its word 4-grams with a training verse (near-duplicates)",
                as_double(v.near_duplicates.size()), 0.0);
    std::size_t too_long = 0;
    for (const text::VersePair& p : chosen.train) too_long += longer_side(p) > c.size(param::max_words) ? 1 : 0;
    trace.check("no training verse of this run has more than max_words words on either side", as_double(too_long), 0.0);
}

// ---------------------------------------------------------------- step [bpe]

std::string merge_label(const text::MergeStep& m) { return m.pair.left + " + " + m.pair.right; }

void record_bpe(Trace& trace, const Verses& v) {
    std::vector<std::string> genesis;  // Genesis 1:1-5, English
    for (std::size_t k = 0; k < v.pairs.size() && genesis.size() < 5; ++k)
        if (v.pairs[k].ref.rfind("Genesis 1:", 0) == 0) genesis.push_back(v.pairs[k].en);
    constexpr std::size_t merges = 24;
    const text::BpeModel bpe = text::learn_bpe(genesis, {merges, 3});
    const std::string first = genesis.front();
    const std::vector<std::string> pieces = text::encode(bpe, first);
    trace.step("bpe", "Byte-pair encoding, step by step",
               "(a, b) = argmax count(a b) over adjacent symbols;  replace every a b by ab;  repeat",
               fmt::format(
                   "Sennrich, Haddow and Birch (2016, section 3.2 and Algorithm 1): a word the model never saw "
                   "is still a sequence of known pieces. Start from the characters of every word (a word starts "
                   "with \u2581, where the paper ends one with </w>), count the adjacent pairs of symbols over all "
                   "words, merge the most frequent into a new symbol, repeat. On Genesis 1:1-5 ({} words), the "
                   "first merges below, each with its count and the two runners-up; ties go to the shorter, then "
                   "the smaller joined symbol, as SentencePiece breaks them. After {} merges \"{}\" is {} pieces: "
                   "{}. SentencePiece's BPE trainer, given the same verses and told not to keep scripts and digits "
                   "apart (split_by_unicode_script, split_by_number), learns the same vocabulary, piece for piece; "
                   "where the two differ otherwise (overlapping pairs, its candidate list, its normalisation) is "
                   "in src/text/bpe.hpp.",
                   text::count_words(genesis).size(), bpe.merges.size(), first, pieces.size(),
                   fmt::join(pieces, " ")));
    Mat table = nn::zeros(bpe.merges.size(), 3);
    std::vector<std::string> labels;
    for (std::size_t k = 0; k < bpe.merges.size(); ++k) {
        const text::MergeStep& m = bpe.merges[k];
        table(k, 0) = as_double(m.pair.count);
        table(k, 1) = m.candidates.size() > 1 ? as_double(m.candidates[1].count) : 0.0;
        table(k, 2) = m.candidates.size() > 2 ? as_double(m.candidates[2].count) : 0.0;
        labels.push_back(fmt::format("{}. {}", k + 1, merge_label(m)));
    }
    trace.tensor("merges", "count of the merged pair, then of the next two candidates", table, labels,
                 {"merged", "2nd", "3rd"});
    trace.tensor("pieces", "the first verse after the merges (1 a piece)", Mat(nn::zeros(1, pieces.size()) + 1.0),
                 {first.substr(0, 24) + "..."}, pieces);
    text::SentencePieceOptions options;
    const std::vector<std::string> ours = text::sentencepiece_vocabulary(bpe);
    options.vocab_size = ours.size();
    options.split_by_unicode_script = false;
    options.split_by_number = false;
    options.max_piece_length = 64;
    const text::Tokenizer theirs(text::train_sentencepiece(genesis, options));
    std::size_t differ = static_cast<std::size_t>(std::abs(theirs.size() - static_cast<int>(ours.size())));
    for (std::size_t k = 0; k < ours.size() && static_cast<int>(k) < theirs.size(); ++k)
        differ += theirs.piece(static_cast<int>(k)) == ours[k] ? 0 : 1;
    trace.check("SentencePiece's BPE trainer learns the same vocabulary from the same verses (pieces that differ)",
                as_double(differ), 0.0);
    trace.check("decoding the pieces gives the verse back", text::decode(pieces) == text::normalize_spaces(first) ? 0.0 : 1.0,
                0.0);
}

// ---------------------------------------------------------------- step [tokenizer]

void record_tokenizer(Trace& trace, const text::Tokenizer& t, const Chosen& chosen, const Verses& v,
                      const Tokenized& out, const Config& c) {
    // pieces per word on the test verses of this run, each language
    std::array<double, 2> words{}, pieces{};
    for (std::size_t k = 0; k < chosen.test.size(); ++k) {
        words[0] += as_double(text::word_count(chosen.test[k].en));
        words[1] += as_double(text::word_count(chosen.test[k].es));
        pieces[0] += as_double(out.test[k].src.size());
        pieces[1] += as_double(out.test[k].tgt.size());
    }
    const text::VersePair& john = v.split.test.front();  // John 1:1
    const std::vector<std::size_t> en = model_ids(t, john.en), es = model_ids(t, john.es);
    trace.step("tokenizer", "SentencePiece: the vocabulary the models read and write",
               "verse -> pieces -> ids;  decode(encode(verse)) = verse",
               fmt::format(
                   "SentencePiece (Kudo and Richardson 2018) runs the same BPE on this run's {} training verse "
                   "pairs, both languages into one vocabulary of {} pieces (asked for at most {}): English and "
                   "Spanish share letters and many names. The models read and write ids: <sos> 0 and <eos> 1 as in "
                   "lessons 9 and 12, <unk> 2, then the pieces. On the test verses English takes {:.2f} pieces a "
                   "word and Spanish {:.2f}: a word the vocabulary lacks whole is spelt in smaller pieces, never "
                   "unknown, since every character of the training books is a piece. John 1:1 below: \"{}\" -> \"{}\" (in labels a piece that starts a word "
                   "has _ in front, where SentencePiece writes \u2581).",
                   chosen.train.size(), t.size(), c.size(param::vocab), pieces[0] / words[0], pieces[1] / words[1],
                   john.en, john.es));
    trace.tensor("vocabulary", "pieces, and the pieces a test word takes",
                 Vec{as_double(t.size()), pieces[0] / words[0], pieces[1] / words[1]},
                 {"pieces", "English pieces per word", "Spanish pieces per word"});
    const auto ids_row = [](const std::vector<std::size_t>& ids) {
        Mat row = nn::zeros(1, ids.size());
        for (std::size_t k = 0; k < ids.size(); ++k) row(0, k) = as_double(ids[k]);
        return row;
    };
    trace.tensor("john_1_1_en", "model ids of John 1:1's pieces, English", ids_row(en), {"id"}, piece_labels(t, en));
    trace.tensor("john_1_1_es", "model ids of John 1:1's pieces, Spanish", ids_row(es), {"id"}, piece_labels(t, es));
    std::size_t failed = 0, unknown = 0;
    for (const text::VersePair& p : v.split.test)
        for (const std::string* side : {&p.en, &p.es}) {
            failed += decoded(t, model_ids(t, *side)) == text::normalize_spaces(*side) ? 0 : 1;
            unknown += t.unknown_characters(*side).size();
        }
    trace.check(fmt::format("decode(encode(verse)) gives back every verse of the test book, both languages ({} "
                            "verses that do not)",
                            failed),
                as_double(failed), 0.0);
    trace.check("no character of the test book is unknown to the vocabulary", as_double(unknown), 0.0);
}

// ---------------------------------------------------------------- step [models]

void record_models(Trace& trace, const Models& m, const Tokenized& data, const Config& c) {
    const std::size_t V = data.pieces.size();
    const std::array<std::size_t, 3> weights = {translation::parameter_count(m.without),
                                                translation::parameter_count(m.with),
                                                translation::parameter_count(m.transformer)};
    trace.step("models", "Three models, sized for two cores",
               "p(y_i | y_<i, x) = softmax(W_o z_i + b_o)",
               fmt::format(
                   "Lesson 9's GRU encoder-decoder without attention (Bahdanau et al.'s RNNencdec: one context "
                   "vector), the same with additive attention (RNNsearch) and lesson 12's Transformer, drawn from "
                   "one generator in that order, all reading and writing the {} pieces. Bahdanau et al. used GRUs "
                   "of 1000 units, 620-wide embeddings and 30,000 words a language, trained for about five days on "
                   "a GPU; here u = {}, d_model = {} with {} heads, {} block(s) of each side and d_ff = {}, so that "
                   "an epoch of this run takes seconds on one core. Most of the weights are the embeddings and the "
                   "output layer (V x width each): {} , {} and {} weights in all.",
                   V, c.size(param::width), c.size(param::d_model), c.size(param::heads), c.size(param::layers),
                   c.size(param::d_ff), weights[0], weights[1], weights[2]));
    trace.tensor("weights", "parameters of each model",
                 Vec{as_double(weights[0]), as_double(weights[1]), as_double(weights[2])},
                 {"GRU without attention", "GRU with attention", "Transformer"}, {}, View::bars);
    translation::Corpus corpus;
    corpus.source.words = data.pieces;
    corpus.target.words = data.pieces;
    corpus.train = data.train;
    corpus.test = data.test;
    translation::export_corpus(trace, corpus);
    translation::export_weights(trace, "without", m.without);
    translation::export_weights(trace, "with", m.with);
    translation::export_weights(trace, "transformer", m.transformer);
}

// Step [first-steps].
void record_first_steps(Trace& trace, const Run& r, const std::vector<std::size_t>& first_order) {
    const Models& start = r.start;
    const Tokenized& data = r.data;
    // the first batch's loss again, from forward passes alone of the models as drawn
    std::array<double, 3> forward{}, words{};
    for (std::size_t k = 0; k < std::min(translation::batch, first_order.size()); ++k) {
        const Pair& p = data.train[first_order[k]];
        forward[0] += translation::teacher_forced(start.without, p).loss;
        forward[1] += translation::teacher_forced(start.with, p).loss;
        forward[2] += translation::teacher_forced(start.transformer, p).loss;
        for (double& w : words) w += as_double(p.tgt.size() + 1);
    }
    double differ = 0.0;
    for (std::size_t m = 0; m < 3; ++m)
        differ = std::max(differ, std::abs(forward[m] / words[m] - r.first(0, m)) / r.first(0, m));
    const double uniform = std::log(as_double(data.pieces.size()));
    trace.step("first-steps", "The first training steps, to the bit",
               "L_batch = -(1/N) sum over the batch's target pieces of log p(y_i | y_<i, x)",
               fmt::format(
                   "Each model's loss per target piece on each of the first {} minibatches of {} verse pairs, "
                   "before the step that batch's gradient makes: Adam at rate 0.01 for the GRUs, warm-up for the "
                   "Transformer, gradients clipped to norm {}, as in lesson 12. A uniform guess over the {} pieces "
                   "would score log V = {:.3f}; the models start near it. These numbers are the golden file's, bit "
                   "for bit: the batches, the order and every sum are fixed, whatever the machine.",
                   first_batches, translation::batch, translation::clip_threshold, data.pieces.size(), uniform));
    trace.tensor("first_steps", "loss per target piece, before the batch's step", r.first,
                 numbered("batch ", 1, first_batches), {"without", "with", "Transformer"})
        .foreign_shown(trained_here());
    trace.check("the first batch's loss of the training pass equals forward passes alone of the models as drawn "
                "(relative difference)",
                differ, 1e-12);
}

// Step [training].
void record_training(Trace& trace, const Run& r) {
    const std::size_t E = r.curves.shape(0) - 1;
    trace.step("training", "Loss curves on real text",
               "L = -(1/N) sum_i log p(y_i | y_<i, x), per target piece, training and validation",
               fmt::format(
                   "After {} epochs ({:.0f} steps) the validation loss per piece is {:.3f} without attention, "
                   "{:.3f} with and {:.3f} for the Transformer (row 0: as drawn). Row e's training loss is the "
                   "mean over epoch e's batches while the weights moved; its validation loss is measured at the "
                   "epoch's end, on verses of books never trained on. Which model ends lowest is what this run "
                   "reached on its {} verse pairs, reported rather than checked: at the defaults' few hundred "
                   "verses the models learn little more than which pieces are frequent, and attn train --full "
                   "trains them on all 20,785 short verses of the training books.",
                   E, r.transformer.steps, r.curves(E, 1), r.curves(E, 3), r.curves(E, 5), r.data.train.size()));
    trace.tensor("losses", "nats per target piece", r.curves, numbered("epoch ", 0, E + 1),
                 {"without, train", "without, validation", "with, train", "with, validation", "Transformer, train",
                  "Transformer, validation"})
        .foreign_shown(trained_here());
}

// ---------------------------------------------------------------- step [length]: Bahdanau's figure 2

// The test verses' translations: greedy by the three models, then the Transformer's by beam search of
// width beam_width (lesson 13), and of width 1, which must be the greedy ones.
constexpr std::size_t beam_width = 4;
struct Translations {
    std::vector<std::vector<std::vector<std::size_t>>> outputs;  // without, with, Transformer; Transformer beam
    std::vector<std::vector<std::size_t>> beam_of_one;           // the Transformer, beam search of width 1
};

std::size_t bin_of(std::size_t words) { return std::min(words / 10, length_bins.size() - 1); }

void record_length(Trace& trace, const text::Tokenizer& t, const Chosen& chosen, const Translations& tr) {
    const std::size_t B = length_bins.size();
    std::vector<std::size_t> bins;
    for (const text::VersePair& v : chosen.test) bins.push_back(bin_of(text::word_count(v.en)));
    const BleuWords words = bleu_words(t, chosen.test, tr.outputs);
    const nn::BleuByBins l = nn::bleu_by_bins(words.candidates, words.references, bins, B);
    const Mat& scores = l.scores;
    std::vector<std::string> rows;
    for (std::size_t b = 0; b < B; ++b) rows.push_back(length_bins[b] + " words");
    rows.push_back("all");
    trace.step("length", "Bahdanau et al.'s figure 2 on real text: BLEU by source length",
               "BLEU = BP exp((1/4) sum_n log p_n),  by bins of English words",
               fmt::format(
                   "Each model translates the {} test verses of John greedily (at most one and a half times the "
                   "source's pieces and five more), the pieces are decoded to words, and BLEU (Papineni et al. 2002; lesson 13) is "
                   "taken over the verses of each bin of source length, in words. Bahdanau et al.'s figure 2: "
                   "the model without attention falls off as sentences grow past 20 or 30 words, the model with "
                   "attention holds. A bin of few verses gives a noisy BLEU, and a bin whose verses share no 4-gram "
                   "with their references scores 0. The Transformer also translates by beam search of width {} "
                   "(lesson 13: the {} likeliest partial translations kept at each step, Wu et al.'s length penalty "
                   "at alpha = 1 choosing among the finished ones), which a model this small may or may not repay. "
                   "This run: {:.2f}, {:.2f} and {:.2f} over all test verses (without, with, Transformer), {:.2f} "
                   "by beam search. Verses per bin below.",
                   chosen.test.size(), beam_width, beam_width, scores(B, 0), scores(B, 1), scores(B, 2),
                   scores(B, 3)));
    trace.tensor("bleu", "BLEU x 100 per bin of source words, and over all", scores, rows,
                 {"without", "with", "Transformer", fmt::format("Transformer, beam {}", beam_width)})
        .foreign_shown(trained_here());
    trace.tensor("verses_per_bin", "test verses per bin", l.counts, std::vector<std::string>(rows.begin(), rows.end() - 1),
                 {}, View::bars);
    trace.check("the bins' matched and total n-grams add up to the whole set's (BLEU is pooled, not averaged)",
                l.pooling_gap, 0.0);
    trace.check("every test verse is in one bin", std::abs(nn::sum_of(l.counts) - as_double(chosen.test.size())), 0.0);
    // a beam of one keeps the likeliest word at every step, ties to the lower id, as greedy decoding does;
    // its decoder reads a key-value cache, greedy decoding recomputes every position (lesson 13). The same
    // words need the same bits on both paths, which attn's arithmetic gives (lesson 13 checks it); a
    // student's functions that round otherwise may turn a near tie, so there it is not held (infinite
    // tolerance): the words are downstream of training, and no exercise is checked at this step.
    double differ = 0.0;
    for (std::size_t k = 0; k < chosen.test.size(); ++k) differ += tr.beam_of_one[k] == tr.outputs[2][k] ? 0.0 : 1.0;
    trace.check("beam search of width 1 translates every test verse as greedy decoding does (verses that differ)",
                differ, 0.0, std::numeric_limits<double>::infinity());
}

// ---------------------------------------------------------------- step [maps]: Bahdanau's figure 3

// The hand-aligned verses of John (lessons/data/hand_alignments.txt, compiled in), parsed once.
const std::vector<text::HandAlignment>& hand_alignments() {
    static const std::vector<text::HandAlignment> gold =
        text::parse_hand_alignments(hand_alignments_text, text::hand_alignments_path);
    return gold;
}

text::WeightRows rows_of(const Mat& m) {
    text::WeightRows out(m.shape(0), std::vector<double>(m.shape(1)));
    for (std::size_t i = 0; i < m.shape(0); ++i)
        for (std::size_t j = 0; j < m.shape(1); ++j) out[i][j] = m(i, j);
    return out;
}

// SentencePiece's own strings of the pieces (with U+2581), as text::piece_words reads them.
std::vector<std::string> raw_pieces(const text::Tokenizer& t, const std::vector<std::size_t>& ids) {
    std::vector<std::string> out;
    for (std::size_t id : ids) out.push_back(t.piece(piece_id(id)));
    return out;
}

// One hand-aligned verse as the models read it, with each piece's word (<eos> has none).
struct AlignedVerse {
    const text::HandAlignment* gold;
    text::VersePair verse;  // its text, as the modules give it
    Pair pair;
    std::vector<std::size_t> en_words, es_words;  // per source piece; per target piece and <eos>
};

std::vector<AlignedVerse> aligned_verses(const text::Tokenizer& t, const Verses& v) {
    const std::vector<text::HandAlignment>& gold = hand_alignments();
    const std::vector<text::VersePair> pairs = text::hand_aligned_pairs(gold, v.split.test);
    std::vector<AlignedVerse> out;
    for (std::size_t k = 0; k < gold.size(); ++k) {
        AlignedVerse a{&gold[k], pairs[k], {model_ids(t, pairs[k].en), model_ids(t, pairs[k].es)}, {}, {}};
        a.en_words = text::piece_words(raw_pieces(t, a.pair.src), gold[k].en);
        a.es_words = text::piece_words(raw_pieces(t, a.pair.tgt), gold[k].es);
        a.es_words.push_back(text::no_word);  // <eos>
        out.push_back(std::move(a));
    }
    return out;
}

// A piece map that puts each Spanish piece's weight on the first piece of its word's first sure partner
// (or, with none, on the first source piece): what a perfect aligner would show.
Mat gold_map(const AlignedVerse& a) {
    Mat m = nn::zeros(a.es_words.size(), a.en_words.size());
    for (std::size_t i = 0; i < a.es_words.size(); ++i) {
        std::size_t to = 0;
        if (a.es_words[i] != text::no_word)
            for (const text::WordLink& l : a.gold->sure)
                if (l.es == a.es_words[i]) {
                    to = static_cast<std::size_t>(std::find(a.en_words.begin(), a.en_words.end(), l.en) -
                                                  a.en_words.begin());
                    break;
                }
        m(i, std::min(to, a.en_words.size() - 1)) = 1.0;
    }
    return m;
}

// The monotone guess: Spanish word t of n_es looks at English word round(t (n_en - 1) / (n_es - 1)).
text::WeightRows diagonal_words(const text::HandAlignment& g) {
    text::WeightRows w(g.es.size(), std::vector<double>(g.en.size(), 0.0));
    for (std::size_t t = 0; t < g.es.size(); ++t) {
        const double at = g.es.size() < 2 ? 0.0
                                          : as_double(t) * as_double(g.en.size() - 1) / as_double(g.es.size() - 1);
        w[t][static_cast<std::size_t>(std::lround(at))] = 1.0;
    }
    return w;
}

// Each model's attention on every hand-aligned verse, scored: rows the GRU with attention, each head of the
// Transformer's last block, the heads averaged, the diagonal guess, the best an argmax alignment can do;
// columns accuracy and AER. With what the checks of step [maps] measure on the way.
struct AlignmentTable {
    Mat table;
    std::vector<std::string> rows;
    double row_sums = 0.0;   // the largest |row sum - 1| of any map
    double gold_miss = 0.0;  // 1 - the accuracy of a map on the gold partners, the worst verse
    std::size_t links = 0;   // sure links in all
};

AlignmentTable alignment_table(const Models& m, const std::vector<AlignedVerse>& verses) {
    const std::size_t h = m.transformer.heads;
    std::vector<text::AlignmentScore> scores(h + 4);
    AlignmentTable out;
    for (const AlignedVerse& a : verses) {
        const auto scored = [&](const Mat& map) { return text::score_attention(rows_of(map), a.es_words, a.en_words, *a.gold); };
        const Mat bahdanau = translation::teacher_forced_weights(m.with, a.pair);
        const nn::EncoderDecoderPass pass = nn::encoder_decoder_forward(
            m.transformer, a.pair.src, translation::decoder_inputs(a.pair), translation::decoder_outputs(a.pair));
        scores[0] += scored(bahdanau);
        Mat mean = nn::zeros(bahdanau.shape(0), bahdanau.shape(1));
        for (std::size_t k = 0; k < h; ++k) {
            const Mat head = nn::slice_of(pass.cross_weights.back(), k);
            scores[1 + k] += scored(head);
            mean += head / as_double(h);
        }
        scores[h + 1] += scored(mean);
        scores[h + 2] += text::score_word_weights(diagonal_words(*a.gold), *a.gold);
        scores[h + 3] += text::best_argmax_score(*a.gold);
        out.gold_miss = std::max(out.gold_miss, 1.0 - scored(gold_map(a)).accuracy());
        out.row_sums = std::max(out.row_sums, row_sum_error(bahdanau));
        for (const auto& w : pass.cross_weights) out.row_sums = std::max(out.row_sums, row_sum_error(w));
        out.links += a.gold->sure.size();
    }
    out.table = nn::zeros(scores.size(), 2);
    for (std::size_t r = 0; r < scores.size(); ++r) {
        out.table(r, 0) = scores[r].accuracy();
        out.table(r, 1) = scores[r].aer();
    }
    out.rows = {"GRU with attention"};
    for (const std::string& head : numbered("Transformer head ", 1, h)) out.rows.push_back(head);
    out.rows.insert(out.rows.end(), {"Transformer, heads averaged", "diagonal guess", "best an argmax can do"});
    return out;
}

void record_maps(Trace& trace, const text::Tokenizer& t, const Models& m, const Verses& v) {
    const std::vector<AlignedVerse> verses = aligned_verses(t, v);
    const AlignmentTable a = alignment_table(m, verses);
    const std::size_t h = m.transformer.heads;
    double best_model = 0.0;
    for (std::size_t r = 0; r <= h + 1; ++r) best_model = std::max(best_model, a.table(r, 0));
    const double diagonal = a.table(h + 2, 0);
    const AlignedVerse& shown = verses.front();  // John 1:2
    const std::vector<std::string> src = piece_labels(t, shown.pair.src);
    std::vector<std::string> tgt = piece_labels(t, shown.pair.tgt);
    tgt.push_back("<eos>");
    const nn::EncoderDecoderPass pass = nn::encoder_decoder_forward(
        m.transformer, shown.pair.src, translation::decoder_inputs(shown.pair), translation::decoder_outputs(shown.pair));
    trace.step("maps", "Bahdanau et al.'s figure 3 on real text: where each Spanish piece looks",
               "alpha_ij = softmax_j(e_ij): row i, the target piece; column j, the source piece",
               fmt::format(
                   "{} verses of John aligned by hand, word by word ({} sure links, and possible ones: "
                   "lessons/data/hand_alignments.txt, after Och and Ney 2003), chosen for what a translation "
                   "moves: \"the true vine\" -> \"la vid verdadera\", \"Jesus wept\" -> \"Lloró Jesús\", \"said "
                   "unto them\" -> \"díjoles\". Each model reads each verse teacher-forced; a Spanish word's weights "
                   "on an English word are its pieces' weights summed over the English word's pieces and averaged "
                   "over its own, and the word it weighs most is its alignment. Accuracy: the share of aligned Spanish "
                   "words whose alignment is a partner; AER (Och and Ney's alignment error rate): 1 - (|A n S| + "
                   "|A n P|) / (|A| + |S|), 0 at best, which one link per word cannot always reach (last row). "
                   "Below, {}: \"{}\" -> \"{}\", the GRU with attention's map, then every head of the Transformer's "
                   "last decoder block. In this run the best model's accuracy, {:.3f}, is {} the diagonal guess's, "
                   "{:.3f}: reported, not checked (at the defaults' few steps the maps are still near uniform).",
                   verses.size(), a.links, shown.gold->ref, shown.verse.en, shown.verse.es, best_model,
                   best_model > diagonal ? "above" : "not above", diagonal));
    trace.tensor("alignment", "accuracy and AER over the hand-aligned verses", a.table, a.rows, {"accuracy", "AER"})
        .foreign_shown(trained_here());
    trace.tensor("bahdanau", "alpha, teacher-forced", translation::teacher_forced_weights(m.with, shown.pair), tgt,
                 src, View::heatmap)
        .axes("Spanish piece", "English piece")
        .foreign_shown(trained_here());
    for (std::size_t k = 0; k < h; ++k)
        trace.tensor(fmt::format("transformer_head{}", k + 1), "cross-attention of the last block",
                     nn::slice_of(pass.cross_weights.back(), k), tgt, src, View::heatmap)
            .axes("Spanish piece", "English piece")
            .foreign_shown(trained_here());
    trace.check("every row of every map sums to 1 over the source pieces", a.row_sums, 1e-12);
    trace.check("a map with each Spanish piece on its word's partner scores accuracy 1 (pieces, words and links "
                "agree on every hand-aligned verse)",
                a.gold_miss, 0.0);
}

// ---------------------------------------------------------------- step [cost]

void record_cost(Trace& trace, const Config& c, const Run& r) {
    const Tokenized& data = r.data;
    const Models m{r.without.model, r.with.model, r.transformer.model};
    double T_x = 0.0, T_y = 0.0;
    for (const Pair& p : data.train) {
        T_x += as_double(p.src.size());
        T_y += as_double(p.tgt.size() + 1);
    }
    T_x /= as_double(data.train.size());
    T_y /= as_double(data.train.size());
    const Mat cost = translation::pass_costs(
        c.size(param::width), sizes_of(c),
        {translation::parameter_count(m.without), translation::parameter_count(m.with),
         translation::parameter_count(m.transformer)},
        T_x, T_y, as_double(data.pieces.size()));
    trace.step("cost", "What real text costs",
               "GRU step: 3u(n + u);  attention: 2 T_q T_k d;  projection: T d^2;  output: V width",
               fmt::format(
                   "Lesson 12's count on this run's average training pair: {:.1f} English and {:.1f} Spanish pieces "
                   "(with <eos>), where lesson 12's toy sentences had about 11 words. The output layer's V x width "
                   "multiply-adds per target piece dominate at {} pieces: real text costs vocabulary as much as "
                   "length. How many pieces each model trains on per second of this machine is printed by attn "
                   "train at its end: a wall time, never recorded, so that two runs export the same bytes.",
                   T_x, T_y, data.pieces.size()));
    trace.tensor("cost", "per teacher-forced pair", cost, {"without attention", "with attention", "Transformer"},
                 {"sequential steps", "multiply-adds", "weights"});
}

// ---------------------------------------------------------------- the lesson

void lesson_real_translation(Trace& trace, const Config& config) {
    const std::shared_ptr<const Verses> verses = read_verses();
    const Chosen chosen = chosen_verses(*verses, config);
    record_data(trace, *verses, chosen, config);
    record_bpe(trace, *verses);
    Run run = start_run(*verses, chosen, config);
    const text::Tokenizer tokenizer(run.tokenizer_model);
    record_tokenizer(trace, tokenizer, chosen, *verses, run.data, config);
    record_models(trace, run.start, run.data, config);
    trace.need_next_step();  // a run asked for the steps so far ends before training
    Rng order_rng = run.rng;  // the first epoch's order, for the check of the first batch
    std::vector<std::size_t> first_order = run.order;
    translation::shuffle_epoch(order_rng, first_order);
    while (run.epoch < total_epochs(run)) train_epoch(run, trace);
    record_first_steps(trace, run, first_order);
    record_results(trace, run, *verses, chosen);
}

}  // namespace

void record_results(Trace& trace, const Run& run, const Verses& v, const Chosen& chosen) {
    record_training(trace, run);
    // the three models as trained (attn export only): what the later steps compute from
    translation::export_weights(trace, "trained.without", run.without.model, "trained weight");
    translation::export_weights(trace, "trained.with", run.with.model, "trained weight");
    translation::export_weights(trace, "trained.transformer", run.transformer.model, "trained weight");
    trace.need_next_step();
    const text::Tokenizer tokenizer(run.tokenizer_model);
    const Models trained{run.without.model, run.with.model, run.transformer.model};
    Translations tr;
    tr.outputs = {greedy_all(trained.without, run.data.test), greedy_all(trained.with, run.data.test),
                  greedy_all(trained.transformer, run.data.test), beam_all(trained.transformer, run.data.test, beam_width)};
    tr.beam_of_one = beam_all(trained.transformer, run.data.test, 1);
    record_length(trace, tokenizer, chosen, tr);
    record_maps(trace, tokenizer, trained, v);
    record_cost(trace, run.config, run);
}

}  // namespace real_translation

Lesson real_translation_lesson() {
    using namespace real_translation;
    return make_lesson(14, "real-translation", "Attention on a real language: English to Spanish, verse by verse",
                       "Bahdanau et al. 2015; Sennrich et al. 2016; Kudo & Richardson 2018; Vaswani et al. 2017; "
                       "Papineni et al. 2002; Och & Ney 2003",
                       {param::pairs, param::validation, param::test, param::max_words, param::vocab, param::epochs,
                        param::width, param::d_model, param::heads, param::layers, param::d_ff, param::warmup},
                       limits, time_estimate, lesson_real_translation,
                       {"data", "bpe", "tokenizer", "models", "first-steps", "training", "length", "maps", "cost"},
                       {{"pairs", 16}, {"validation", 8}, {"test", 8}, {"epochs", 1}, {"width", 8}, {"d_model", 8},
                        {"heads", 2}, {"d_ff", 8}, {"vocab", 200}});
}

}  // namespace attn
