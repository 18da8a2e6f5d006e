// The translator a student keeps (issue 42): `attn train` trains lesson 14's three models into a folder,
// saving a checkpoint (an .npz archive numpy and PyTorch read) after every epoch and resuming from it;
// `attn translate` translates with a checkpoint. lessons/real_translation.hpp holds the run itself.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace attn {

struct TrainOptions {
    std::filesystem::path out;          // the folder: out/checkpoint.npz
    std::string seed;                   // --seed ("" for the lesson's, 7)
    std::vector<std::string> settings;  // --set key=value, after --full's
    bool full = false;                  // --full: every short training verse, more epochs (full_settings)
    bool long_run = false;              // --long: train even when the estimate is above a minute
    std::size_t epochs_now = 0;         // --epochs-now K: stop after K more epochs (0: train to the end)
    std::size_t threads = 0;            // --threads N: the lanes' threads (0: the processor's cores, at most 8)
    bool portable = false;              // --portable: the lessons' arithmetic (one sum, portable products, one thread)
    bool float32 = false;               // --float32: the fast way's products in float32 (nn::Arithmetic::single)
};

struct TranslateOptions {
    std::filesystem::path model;         // a folder of attn train, or its checkpoint.npz
    std::vector<std::string> sentences;  // English, one translation each
    bool from_stdin = false;             // --stdin: a translation per line of standard input
    std::size_t beam = 0;                // --beam K (the Transformer only); 0: greedy
    std::string which = "transformer";   // transformer, with or without
};

// The settings --full stands for, in order (a --set after them wins).
const std::vector<std::string>& full_settings();

int cmd_train(const TrainOptions& options);
int cmd_translate(const TranslateOptions& options);

}  // namespace attn
