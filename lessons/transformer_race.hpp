// Lesson 12's race, kept for the lessons after it: lesson 13 (decoding) decodes with the models
// lesson 12 trains. The corpus and the three models (lesson 9's two GRUs and the Transformer) as
// drawn, then as trained on the same batches in the same order, at a configuration of lesson 12.
// Training is deterministic, so the trained models are a function of that configuration: the first
// lesson that asks trains them, and the process keeps the last result (`attn run all` and
// `attn check all` train once for lessons 12 and 13).
#pragma once

#include "support.hpp"
#include "translation.hpp"

#include "core/rng.hpp"
#include "core/trace.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/optimizer.hpp"
#include "nn/reductions.hpp"
#include "nn/seq2seq.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn::transformer {

struct RaceModels {
    nn::Seq2Seq without, with;      // lesson 9's GRU encoder-decoders, without and with attention
    nn::EncoderDecoder transformer;  // sinusoidal positions
};

// What the race starts from: the corpus, the models as drawn, and the generator as the race begins
// (its draws are the shuffles of the epochs: a copy replays them).
struct RaceStart {
    translation::Corpus corpus;
    RaceModels start;
    Rng rng;
};

struct Race {
    Mat curves;   // (epochs + 1) x 6: train and test loss per word, without, with, Transformer
    Mat seconds;  // epochs x 3: wall time of each model's training batches per epoch (shown, never recorded)
    RaceModels trained;
    double steps = 0.0;
    std::array<double, 3> clipped{};  // steps whose gradient was clipped, per model
};

// `config` is a configuration of lesson 12 (lesson_by_slug("transformer")'s parameters).
RaceStart race_start(const Config& config);

// Lesson 12's configuration for a later lesson (13, 15): its defaults with that lesson's seed and its
// settings epochs, sentences and test, which it declares as lesson 12 does.
Config race_config(const Config& c);

// The Transformer `start` trained alone on the race's batches in the race's order (rng: a copy of the
// generator as the race began, RaceStart::rng, whose draws are the epochs' shuffles), the lessons' way:
// its test loss per epoch (row 0 before training) and the model. `progress` hears how far it is (epoch,
// sentences): it may be called from the thread the training runs on.
struct Retrained {
    Vec test_loss;
    nn::EncoderDecoder model;
};
using TrainingProgress = std::function<void(std::size_t epoch, std::size_t epochs, std::size_t done, std::size_t pairs)>;
Retrained retrain_transformer(Rng rng, const translation::Corpus& c, const nn::EncoderDecoder& start,
                              const Config& config, const TrainingProgress& progress);

// The loop retrain_transformer runs, for any pairs (lesson 15 trains on lesson 14's verses too): `epochs`
// passes over `train` in batches of translation::batch, each epoch's order shuffled by `rng` from the one
// before, one Adam step a batch with schedule(step) (step 1 first); the loss per word on `test` before
// training and after each epoch.
using AdamSchedule = std::function<nn::AdamSettings(std::size_t step)>;
Retrained trained_transformer(Rng rng, const std::vector<translation::Pair>& train,
                              const std::vector<translation::Pair>& test, const nn::EncoderDecoder& start,
                              std::size_t epochs, const AdamSchedule& schedule, const TrainingProgress& progress);

// Progress on `trace` for a training of `what`: "training <what>, epoch 2 of 8: 160 of 800 sentences".
TrainingProgress progress_on(const Trace& trace, std::string what);

// Learned positions drawn N(0, 1/2) (the mean square of the sinusoids they replace), src_rows and
// tgt_rows of them: rows for every position greedy decoding may reach, most never trained.
nn::EncoderDecoder with_learned_positions(nn::EncoderDecoder m, Rng& rng, std::size_t src_rows, std::size_t tgt_rows);

// Lesson 12's long test set (step [longer]) and its Transformer with learned positions as drawn, from a
// second generator seeded by the seed, so that the race's draws stay what they were: long_test pairs of
// max_len + 1 to long_len source words, every length as often, and tables for long_len source positions
// and 2 long_len + 5 decoder inputs.
struct LongStart {
    std::vector<translation::Pair> pairs;
    nn::EncoderDecoder learned;
};
LongStart long_start(const Config& config, RaceStart& r);

// Source lengths in bins: about four of equal width over the training lengths (min_len to max_len),
// then about four over the longer ones (max_len + 1 to long_len), as lesson 12's step [longer] shows them.
struct LengthBins {
    std::vector<std::pair<std::size_t, std::size_t>> bins;  // first and last length of each
    std::size_t first_long = 0;                             // the first bin of lengths beyond training
    std::vector<std::string> labels;                        // "T_x 3-7", ..., "T_x 36-40"
    std::size_t count() const { return bins.size(); }
    std::size_t of(std::size_t length) const;  // the bin that holds `length` (the last for longer ones)
};
LengthBins race_length_bins(const Config& config);

// Greedy translations by source length: for each bin, the share of sentences translated exactly and of
// target words (and <eos>) right (translation::right_positions), of each of M models over the test set and
// the long set together; bins x M, and the pairs in each bin.
struct ByLength {
    Mat exact, words;
    Vec pairs;
};
template <std::size_t M>
ByLength accuracy_by_length(const LengthBins& bins, const std::vector<translation::Pair>& test,
                            const std::array<translation::Scores, M>& on_test,
                            const std::vector<translation::Pair>& longer,
                            const std::array<translation::Scores, M>& on_longer) {
    ByLength out{nn::zeros(bins.count(), M), nn::zeros(bins.count(), M), nn::zeros(bins.count())};
    Vec targets = nn::zeros(bins.count());
    const auto add = [&](const std::vector<translation::Pair>& pairs, const std::array<translation::Scores, M>& s) {
        for (std::size_t k = 0; k < pairs.size(); ++k) {
            const std::size_t b = bins.of(pairs[k].src.size());
            out.pairs(b) += 1.0;
            targets(b) += as_double(pairs[k].tgt.size() + 1);
            for (std::size_t m = 0; m < M; ++m) {
                out.exact(b, m) += s[m].outputs[k] == pairs[k].tgt ? 1.0 : 0.0;
                out.words(b, m) += translation::right_positions(s[m].outputs[k], pairs[k].tgt);
            }
        }
    };
    add(test, on_test);
    add(longer, on_longer);
    for (std::size_t b = 0; b < bins.count(); ++b)
        for (std::size_t m = 0; m < M; ++m)
            out.exact(b, m) /= std::max(1.0, out.pairs(b)), out.words(b, m) /= std::max(1.0, targets(b));
    return out;
}

// The longest source and decoder input of a set, and its shortest source.
std::pair<std::size_t, std::size_t> longest(const std::vector<translation::Pair>& pairs);
std::size_t shortest_source(const std::vector<translation::Pair>& pairs);

// How many source lengths the long set shares with the training set: 0 when every long source is longer
// than every training source.
std::size_t lengths_shared(const std::vector<translation::Pair>& train, const std::vector<translation::Pair>& longer);

// The largest change, trained against drawn, of the learned position rows past the longest source and
// decoder input of `train`: rows no gradient reaches, so 0.
double untrained_rows_moved(const nn::EncoderDecoder& trained, const nn::EncoderDecoder& drawn,
                            const std::vector<translation::Pair>& train);

// Lesson 8's step and tolerance (its step [finite-differences] says why): |analytic - numeric| /
// max(1, |numeric|) <= 100 eps max(1, |L|) / h, a hundred times the rounding the two losses leave in
// their difference; a wrong term is off by the size of the gradient itself.
inline constexpr double gradient_check_step = 1e-6;

// One entry of every trained tensor of `m` (the one with the largest gradient: most embedding rows
// belong to words not in the sentence, whose gradient is exactly 0) against central differences on the
// teacher-forced loss of `p`: rows analytic, numeric, error, in nn::named_tensors' order.
struct GradientCheck {
    Mat table;
    std::vector<std::string> names;
    double loss = 0.0, tolerance = 0.0, worst = 0.0;
};
GradientCheck transformer_gradient_check(nn::EncoderDecoder m, const translation::Pair& p);

// The race trained from race_start(config), or the process's kept result for that configuration.
// Training shows its progress on `trace`.
std::shared_ptr<const Race> trained_race(const Config& config, Trace& trace);

// ---- the race kept in a file
//
// Training turns a difference in the last bit into another trajectory (lesson 12, step [chaos]), so a
// student's softmax that is right but rounds otherwise would train other models, and lesson 13's
// exercises would be compared on models the golden file never saw. The programs that check
// exercises therefore decode with the reference's race, trained once per build by `attn keep-race`
// and loaded. The file names the code that trained it (a digest meson takes of the sources of the
// engine and the lessons, race_code.hpp) and the configuration, and ends with a digest of its own
// bytes: a file that is stale, damaged or for another configuration is refused, never used.

struct RaceFileError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The name of the file under the build directory: "transformer-race.bin".
inline constexpr const char* kept_race_name = "transformer-race.bin";

// The digest of the sources that trained this program's race (meson's race_code.hpp).
std::string race_code_digest();

// The file's bytes for `race`, trained from race_start(config).
std::string kept_race_bytes(const Config& config, const Race& race);

// The race in `bytes` (from kept_race_bytes), read into the shapes of race_start(config); throws
// RaceFileError naming `source` and what is wrong: another format, code or configuration, a length
// or digest that does not match.
Race parse_kept_race(std::string_view bytes, const Config& config, const std::string& source);

// Reads `file` as parse_kept_race does (RaceFileError when it is missing or unreadable too).
Race read_kept_race(const std::filesystem::path& file, const Config& config);

// From now on this process's trained_race(config) loads `file` for the configuration the file was
// written for (lesson 12's defaults) instead of training; other configurations still train. Set by
// the exercise checks, never by `attn run`: the lessons a user runs train in front of them.
void decode_with_kept_race(std::filesystem::path file);

// The file decode_with_kept_race named, or an empty path.
std::filesystem::path kept_race_file();

// Lesson 12's default configuration: the one `attn keep-race` trains and the exercise checks load.
Config kept_race_config();

// Adam as Vaswani et al. 2017, section 5.3: beta1 0.9, beta2 0.98, eps 1e-9, the rate warmed up
// (nn::warmup_learning_rate at lesson 12's d_model and warm-up).
nn::AdamSettings transformer_adam(std::size_t step, const Config& config);

}  // namespace attn::transformer
