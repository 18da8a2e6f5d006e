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
#include "nn/seq2seq.hpp"

#include <array>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

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
