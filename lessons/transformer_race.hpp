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
#include <memory>

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

// Adam as Vaswani et al. 2017, section 5.3: beta1 0.9, beta2 0.98, eps 1e-9, the rate warmed up
// (nn::warmup_learning_rate at lesson 12's d_model and warm-up).
nn::AdamSettings transformer_adam(std::size_t step, const Config& config);

}  // namespace attn::transformer
