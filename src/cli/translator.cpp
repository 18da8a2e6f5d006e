#include "translator.hpp"

#include "exercises/command_support.hpp"
#include "exercises/program.hpp"
#include "real_translation.hpp"

#include "core/golden.hpp"
#include "core/npz.hpp"
#include "core/render.hpp"
#include "core/settings.hpp"
#include "nn/beam_search.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/reductions.hpp"
#include "nn/seq2seq.hpp"
#include "text/bpe.hpp"
#include "text/corpus.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>

namespace attn {

namespace rt = real_translation;

namespace {

namespace fs = std::filesystem;

const char* const checkpoint_name = "checkpoint.npz";

// The longest English sentence attn translate takes, in pieces: the models have no position they cannot
// compute (sinusoidal positions, recurrent state), but memory and time grow with it, and what they were
// trained on is at most a few dozen words.
constexpr std::size_t most_source_pieces = 400;

// The machine's load averages over 1, 5 and 15 minutes ("?" where /proc/loadavg cannot be read).
std::string load_average() {
    std::ifstream in("/proc/loadavg");
    std::string one, five, fifteen;
    if (!(in >> one >> five >> fifteen)) return "?";
    return one + " " + five + " " + fifteen;
}

std::string minutes(double seconds) {
    if (seconds < 90.0) return fmt::format("{:.0f} s", seconds);
    if (seconds < 5400.0) return fmt::format("{:.0f} min", seconds / 60.0);
    return fmt::format("{:.1f} h", seconds / 3600.0);
}

// The configuration asked for; nullopt after saying why not.
std::optional<Config> asked_config(const TrainOptions& o) {
    const Lesson& l = rt::lesson();
    try {
        std::vector<Setting> settings;
        if (o.full)
            for (const std::string& s : full_settings()) settings.push_back(parse_setting(s));
        for (const std::string& s : o.settings) settings.push_back(parse_setting(s));
        const std::uint64_t seed = o.seed.empty() ? l.defaults.seed : parse_seed(o.seed);
        Config c = apply_settings(l.params, seed, settings);
        if (const std::string why = l.limits(c); !why.empty()) throw SettingError(why);
        return c;
    } catch (const SettingError& e) {
        fmt::print(stderr, "{} train: {}\n", this_program().name, e.what());
        return std::nullopt;
    }
}

std::string curves_line(const Mat& curves, std::size_t row) {
    return fmt::format("training {:.3f} {:.3f} {:.3f}, validation {:.3f} {:.3f} {:.3f} (without, with, Transformer)",
                       curves(row, 0), curves(row, 2), curves(row, 4), curves(row, 1), curves(row, 3), curves(row, 5));
}

// "12.34 15.02 20.11" (without, with, Transformer); "not measured" for a NaN (an older checkpoint's epoch)
std::string bleu_line(const std::array<double, 3>& b) {
    const auto one = [](double x) { return std::isnan(x) ? std::string("not measured") : fmt::format("{:.2f}", x); };
    return fmt::format("{} {} {}", one(b[0]), one(b[1]), one(b[2]));
}

void print_steps(const Trace& trace) {
    RenderOptions options;
    options.color = use_color(ColorMode::auto_, ::isatty(STDOUT_FILENO));
    options.line_width = drawing_width(terminal_columns(STDOUT_FILENO));  // as wide as the terminal, as attn run
    const std::vector<Step>& steps = trace.steps();
    for (std::size_t i = 0; i < steps.size(); ++i) fmt::print("{}\n", render_step(steps[i], i + 1, steps.size(), options));
}

// --portable: the lessons' way on one thread; otherwise fast (the Transformer's batch stacked, the GRUs'
// in lanes) on --threads threads (the processor's cores, at most the lanes), its products in float32 with
// --float32.
translation::Training training_asked(const TrainOptions& o) {
    if (o.portable) return {};
    translation::Training how = translation::fast_training(o.threads > 0 ? o.threads : translation::default_threads());
    if (o.float32) how.arithmetic = nn::Arithmetic::single;
    return how;
}

// Whether the run `saved` was trained as `how` asks, so that it can go on: the same sums (stacked and in
// lanes, or the lessons' one sum), or it would not end with the bytes of a run never stopped. Products that
// differ only because this processor has no FMA (or has it where the other had not) go on, saying so.
bool same_training(const rt::Run& saved, const translation::Training& how) {
    const std::string asked = translation::training_name(how);
    if (saved.saved_training == asked) return true;
    const std::string& name = this_program().name;
    if (saved.saved_training.rfind(translation::summation_name(how) + ", ", 0) != 0) {
        const auto saved_as = [&](const translation::Training& way) {
            return saved.saved_training.rfind(translation::summation_name(way) + ", ", 0) == 0;
        };
        const bool saved_one_sum = saved_as({}), saved_fast = saved_as(translation::fast_training(1));
        if (saved_one_sum || saved_fast)
            fmt::print(stderr,
                       "{} train: the checkpoint was trained {}, not {} as asked: resume it {} (or train into another "
                       "--out), so that it ends with the bytes of a run never stopped\n",
                       name, saved.saved_training, asked, saved_one_sum ? "with --portable" : "without --portable");
        else
            fmt::print(stderr,
                       "{} train: the checkpoint was trained {}, which this attn train no longer does (it trains {} or "
                       "{}): it cannot go on to the bytes of a run never stopped; train into another --out\n",
                       name, saved.saved_training, translation::summation_name(translation::fast_training(1)),
                       translation::summation_name({}) + ")");
        return false;
    }
    const bool saved_single = saved.saved_training.find("float32 products") != std::string::npos;
    if (saved_single != (how.arithmetic == nn::Arithmetic::single)) {
        fmt::print(stderr,
                   "{} train: the checkpoint was trained {}, not {} as asked: resume it {} (or train into another "
                   "--out), so that it ends with the bytes of a run never stopped\n",
                   name, saved.saved_training, asked, saved_single ? "with --float32" : "without --float32");
        return false;
    }
    fmt::print(stderr,
               "{} train: note: the checkpoint was trained with {}, this processor gives {}: the run goes on, but its "
               "numbers will not be the bytes of a run never stopped\n",
               name, saved.saved_training, asked);
    return true;
}

// The run DIR/checkpoint.npz saved, when there is one and it is of the configuration asked for; nullopt
// with `refused` exit_ok when there is none; nullopt with an exit code after saying why it cannot be resumed.
std::optional<rt::Run> saved_run(const fs::path& file, const rt::Verses& verses, const Config& asked,
                                 const translation::Training& how, int& refused) {
    const std::string& name = this_program().name;
    if (!fs::exists(file)) return std::nullopt;
    std::optional<rt::Run> resumed;
    try {
        resumed = rt::resumed_run(verses, read_npz(file), file.string());
    } catch (const std::runtime_error& e) {  // GoldenError (not an archive), rt::CheckpointError (not ours)
        fmt::print(stderr, "{} train: {}\nMove it away (or choose another --out) to train from the start.\n", name,
                   e.what());
        refused = exit_golden;
        return std::nullopt;
    }
    if (resumed->config != asked) {
        fmt::print(stderr,
                   "{} train: {} holds a checkpoint of another configuration ({}), not of the one asked for "
                   "({}): give the same settings to resume it, or another --out\n",
                   name, printable_utf8(file.string()), config_text(resumed->config), config_text(asked));
        refused = exit_usage;
        return std::nullopt;
    }
    if (!same_training(*resumed, how)) {
        refused = exit_usage;
        return std::nullopt;
    }
    fmt::print("{} train: resuming {} after epoch {} of {}\n", name, printable_utf8(file.string()), resumed->epoch,
               rt::total_epochs(*resumed));
    return resumed;
}

}  // namespace

const std::vector<std::string>& full_settings() {
    // Every training verse of at most 30 words (20,785 of the training books), the validation and test books
    // whole, and wider models and more pieces than the lesson's default: about 10 minutes on this project's
    // 2-core machine the fast way, 36 the lessons' way on one core (docs/translator.md gives the figures
    // measured).
    static const std::vector<std::string> settings = {"pairs=30000", "validation=200", "test=879",  "vocab=1000",
                                                      "epochs=3",    "width=32",       "d_model=32", "heads=4",
                                                      "layers=1",    "d_ff=64",        "warmup=400"};
    return settings;
}

int cmd_train(const TrainOptions& o) {
    const std::string& name = this_program().name;
    const std::optional<Config> asked = asked_config(o);
    if (!asked) return exit_usage;
    const Lesson& l = rt::lesson();
    const TimeEstimate estimate = l.time(*asked);
    if (estimate.seconds > time_cap_seconds && !o.long_run) {
        fmt::print(stderr,
                   "{} train: this configuration would train for about {} on this machine ({}): add --long to "
                   "train it anyway. A checkpoint is saved after every epoch: stopped (Ctrl-C), the same command "
                   "resumes it.\n",
                   name, minutes(estimate.seconds), estimate.model);
        return exit_usage;
    }
    std::error_code ec;
    fs::create_directories(o.out, ec);
    if (ec || !fs::is_directory(o.out)) {
        fmt::print(stderr, "{} train: cannot make the folder {}: {}\n", name, printable_utf8(o.out.string()),
                   ec ? ec.message() : "a file of that name is there");
        return exit_usage;
    }
    const fs::path file = o.out / checkpoint_name;
    const std::shared_ptr<const rt::Verses> verses = rt::read_verses();
    const rt::Chosen chosen = rt::chosen_verses(*verses, *asked);
    int refused = exit_ok;
    const translation::Training how = training_asked(o);
    std::optional<rt::Run> resumed = saved_run(file, *verses, *asked, how, refused);
    if (refused != exit_ok) return refused;
    rt::Run run = resumed ? std::move(*resumed) : rt::start_run(*verses, chosen, *asked);
    rt::set_training(run, how);
    if (!resumed)
        fmt::print("{} train: lesson 14's three models, {}: {} training verse pairs, {} pieces; about {} on this "
                   "machine on one core. A checkpoint after every epoch: {}\n",
                   name, config_text(*asked), run.data.train.size(), run.data.pieces.size(), minutes(estimate.seconds),
                   printable_utf8(file.string()));
    fmt::print("{} train: training {}{}\n", name, translation::training_text(how),
               how.fast ? " (the same numbers on any count; --portable: lesson 14's)" : "");

    // progress on a terminal only: the epoch, the verses, the losses so far and the time left
    Trace progress("real-translation", *asked);
    const bool terminal = ::isatty(STDERR_FILENO) != 0;
    using Clock = std::chrono::steady_clock;
    const Clock::time_point began = Clock::now();
    const std::size_t batches_per_epoch = (run.data.train.size() + translation::batch - 1) / translation::batch;
    const std::size_t batches_at_start = run.batches, all_batches = batches_per_epoch * rt::total_epochs(run);
    if (terminal)
        progress.on_progress([&](const std::string& what) {
            const double elapsed = std::chrono::duration<double>(Clock::now() - began).count();
            const std::size_t done = run.batches - batches_at_start;
            const std::string left =
                done == 0 ? "" : ", about " + minutes(elapsed / static_cast<double>(done) *
                                                      static_cast<double>(all_batches - run.batches)) + " left";
            fmt::print(stderr, "\r  {}{}\x1b[K", what, left);
            std::fflush(stderr);
        });
    std::size_t trained_now = 0;
    while (run.epoch < rt::total_epochs(run) && (o.epochs_now == 0 || trained_now < o.epochs_now)) {
        rt::train_epoch(run, progress);
        run.validation_bleu.push_back(rt::validation_bleu(run, chosen));
        ++trained_now;
        try {
            write_npz(file, rt::checkpoint_members(run));
        } catch (const std::exception& e) {
            if (terminal) fmt::print(stderr, "\r\x1b[K");
            fmt::print(stderr, "{} train: the checkpoint after epoch {} could not be written: {}\n", name, run.epoch,
                       e.what());
            return exit_golden;
        }
        if (terminal) fmt::print(stderr, "\r\x1b[K");
        fmt::print("epoch {} of {}: loss per piece {}; validation BLEU {}; saved {}\n", run.epoch,
                   rt::total_epochs(run), curves_line(run.curves, run.epoch), bleu_line(run.validation_bleu.back()),
                   printable_utf8(file.string()));
        std::fflush(stdout);
    }
    if (run.epoch < rt::total_epochs(run)) {
        fmt::print("{} train: stopped after epoch {} of {} (--epochs-now {}); the same command resumes it\n", name,
                   run.epoch, rt::total_epochs(run), o.epochs_now);
        return exit_ok;
    }
    // what the lesson shows after training: curves, BLEU by length, the alignment scores, the cost
    Trace results("real-translation", *asked);
    results.on_progress({});
    rt::record_results(results, run, *verses, chosen);
    print_steps(results);
    fmt::print("{} train: validation BLEU x 100 after each epoch ({} verses, greedy; without, with, Transformer):\n",
               name, run.data.validation.size());
    for (std::size_t e = 0; e < run.validation_bleu.size(); ++e)
        fmt::print("  epoch {}: {}\n", e + 1, bleu_line(run.validation_bleu[e]));
    if (run.seconds[0] > 0.0)
        fmt::print("{} train: this process trained {:.0f}, {:.0f} and {:.0f} target pieces a second (without, with, "
                   "Transformer; {}, wall time; load {})\n",
                   name, run.trained_pieces[0] / run.seconds[0], run.trained_pieces[1] / run.seconds[1],
                   run.trained_pieces[2] / run.seconds[2], translation::training_text(how), load_average());
    fmt::print("{} train: done; translate with: {} translate --model {} \"In the beginning was the Word.\"\n", name,
               name, printable_utf8(o.out.string()));
    return results.all_checks_hold() ? exit_ok : exit_mismatch;
}

// ---------------------------------------------------------------- translate

namespace {

struct Loaded {
    rt::Translator translator;
    text::Tokenizer tokenizer;
};

// What one sentence gives: the pieces, the translation's pieces, the attention map (target x source).
struct Translation {
    std::vector<std::size_t> source, output;
    Mat weights;
};

Translation translate_one(const Loaded& m, const TranslateOptions& o, const std::string& sentence) {
    Translation t;
    t.source = rt::model_ids(m.tokenizer, sentence);
    const std::size_t most = rt::most_pieces(t.source.size());
    const rt::Models& models = m.translator.models;
    if (o.which == "transformer") {
        if (o.beam > 0) {
            t.output = rt::beam_translation(models.transformer, t.source, o.beam);
        } else {
            t.output = nn::encoder_decoder_greedy(models.transformer, t.source, translation::sos, translation::eos, most);
        }
        const translation::Pair p{t.source, t.output};
        const nn::EncoderDecoderPass pass = nn::encoder_decoder_forward(
            models.transformer, p.src, translation::decoder_inputs(p), translation::decoder_outputs(p));
        const auto& last = pass.cross_weights.back();
        t.weights = nn::zeros(last.shape(1), last.shape(2));
        for (std::size_t k = 0; k < last.shape(0); ++k)
            t.weights += nn::slice_of(last, k) / static_cast<double>(last.shape(0));
    } else {
        const nn::Seq2Seq& s = o.which == "with" ? models.with : models.without;
        const translation::Pair p{t.source, {}};
        t.output = translation::greedy(s, p, most);
        if (o.which == "with") t.weights = translation::teacher_forced_weights(s, {t.source, t.output});
    }
    return t;
}

// Why a sentence cannot be translated, or "".
std::string refusal(const Loaded& m, const std::string& sentence) {
    const std::string text = text::normalize_spaces(sentence);
    if (text.empty()) return "it is empty (nothing but spaces)";
    try {
        const std::vector<std::string> unknown = m.tokenizer.unknown_characters(text);
        if (!unknown.empty())
            return fmt::format("the characters {} are not in the model's vocabulary (it knows the characters of the "
                               "English and Spanish Bible text it was trained on)",
                               fmt::join(unknown, " "));
        const std::size_t pieces = m.tokenizer.encode(text).size();
        if (pieces > most_source_pieces)
            return fmt::format("it is {} pieces long, above the {} this command takes (the models were trained on "
                               "verses of at most {} words)",
                               pieces, most_source_pieces, m.translator.config.size(rt::param::max_words));
    } catch (const text::TokenizerError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

int cmd_translate(const TranslateOptions& o) {
    const std::string& name = this_program().name;
    if (o.from_stdin == !o.sentences.empty()) {
        fmt::print(stderr, "{} translate: give the English sentences as arguments, or --stdin for one a line (not "
                           "both)\n",
                   name);
        return exit_usage;
    }
    if (o.beam > 0 && o.which != "transformer") {
        fmt::print(stderr, "{} translate: --beam searches with the Transformer only (lesson 13); the GRU models "
                           "translate greedily\n",
                   name);
        return exit_usage;
    }
    const fs::path file = fs::is_directory(o.model) ? o.model / checkpoint_name : o.model;
    std::optional<Loaded> m;
    try {
        rt::Translator t = rt::translator_of(read_npz(file), file.string());
        text::Tokenizer tokenizer(t.tokenizer_model);
        m.emplace(Loaded{std::move(t), std::move(tokenizer)});
    } catch (const GoldenError& e) {
        fmt::print(stderr, "{} translate: {}\n(attn train --out DIR writes DIR/{})\n", name, e.what(), checkpoint_name);
        return exit_golden;
    } catch (const rt::CheckpointError& e) {
        fmt::print(stderr, "{} translate: {}\n", name, e.what());
        return exit_golden;
    }
    const auto one = [&](const std::string& sentence, const std::string& where, bool detailed) {
        if (const std::string why = refusal(*m, sentence); !why.empty()) {
            fmt::print(stderr, "{} translate: {}: {}\n", name, where, why);
            return false;
        }
        const Translation t = translate_one(*m, o, text::normalize_spaces(sentence));
        fmt::print("{}\n", rt::decoded(m->tokenizer, t.output));
        if (detailed) {
            const std::vector<std::string> src = rt::piece_labels(m->tokenizer, t.source);
            std::vector<std::string> tgt = rt::piece_labels(m->tokenizer, t.output);
            fmt::print("  pieces: {}\n  output: {}\n", fmt::join(src, " "), fmt::join(tgt, " "));
            if (t.weights.size() > 0) {
                tgt.push_back("<eos>");
                TensorRecord r{"attention", o.which == "transformer" ? "cross-attention of the last block, heads averaged"
                                                                      : "alpha of the GRU with attention",
                               t.weights, tgt, src, View::heatmap};
                r.row_axis = "Spanish piece";
                r.col_axis = "English piece";
                RenderOptions options;
                options.color = use_color(ColorMode::auto_, ::isatty(STDOUT_FILENO));
                fmt::print("{}\n", render_tensor(r, options));
            }
        }
        return true;
    };
    bool all = true;
    if (o.from_stdin) {
        std::string line;
        for (std::size_t n = 1; std::getline(std::cin, line); ++n) all = one(line, fmt::format("line {}", n), false) && all;
    } else {
        for (std::size_t k = 0; k < o.sentences.size(); ++k)
            all = one(o.sentences[k], fmt::format("sentence {}", k + 1), true) && all;
    }
    const std::string by = o.which == "transformer"
                               ? (o.beam > 0 ? fmt::format("the Transformer, beam search of width {}", o.beam)
                                             : std::string("the Transformer, greedy"))
                               : (o.which == "with" ? "the GRU with attention, greedy" : "the GRU without attention, greedy");
    fmt::print(stderr, "{} translate: by {}, from {} (trained {} of {} epochs)\n", name, by,
               printable_utf8(file.string()), m->translator.epochs_done, m->translator.config.size(rt::param::epochs));
    return all ? exit_ok : exit_usage;
}

}  // namespace attn
