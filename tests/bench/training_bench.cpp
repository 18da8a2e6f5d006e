// attn's training step timed (issue 34): lesson 9's GRU encoder-decoder with additive attention and
// lesson 12's Transformer, each trained on the same batches of lesson 12's corpus with the lessons'
// own code (translation::train_batch: the gradient of the mean loss per target word, sentence by
// sentence, clipped to global norm 5, then one Adam step; lesson 9's Adam for the GRU, lesson 12's
// warmed-up Adam for the Transformer), at the lessons' default sizes and at 4x their width.
//
// Prints one JSON object: per model and width, the sizes, the vocabularies, the batches themselves
// (word ids, so that tests/bench/compare_peers.py trains the same models in PyTorch on the same
// batches) and the target tokens trained per second (words and <eos>, forward, backward and Adam),
// the median of the repetitions, by the wall clock and by the processor time of the whole process
// (every thread's; on a shared machine the wall clock counts other people's work too). A benchmark,
// not a test.
//
// Each model is timed three times (issue 43): the lessons' way (one sum, portable products, one thread: the
// arithmetic of every golden file), the fast way (translation::fast_training: the Transformer's batch
// stacked, the GRU's in eight lanes, on --threads threads, fused products where the processor has FMA:
// attn train's way; under "lanes") and the fast way with float32 products (attn train --float32; under
// "float32"). Beside each
// run, the resident memory its trainer and first step added at their peak (step_megabytes: the copy of
// the model, Adam's moments, the lanes' gradients, the pass itself), and the process's peak so far.
//
//   training_bench [--batches N] [--repetitions N] [--model gru|transformer|all] [--scale 1|4|8|all]
//                  [--threads N] [--ways lessons|fast|both]
//
// --scale 8 is lesson 12's Transformer at d_model 256 and the GRU at u = 128 (issue 43's targets).
// --threads: the fast way's threads (default: the processor's cores, at most translation::gradient_lanes).
// --ways: time only the lessons' way or only the fast one (to profile one of them; compare_peers.py takes
// both).
#include "core/allocator.hpp"
#include "registry.hpp"
#include "transformer_race.hpp"
#include "translation.hpp"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <malloc.h>
#include <sys/resource.h>

namespace {

using namespace attn;
using translation::Pair;

struct Options {
    std::size_t batches = 8, repetitions = 5;
    std::string model = "all", scale = "all", ways = "both";
    std::size_t threads = translation::default_threads();
};

std::size_t positive(const std::string& flag, const std::string& value) {
    std::size_t used = 0;
    unsigned long n = 0;
    try {
        n = std::stoul(value, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != value.size() || n == 0 || n > 1000)
        throw std::invalid_argument(flag + " takes a whole number from 1 to 1000, not '" + value + "'");
    return n;
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        if (i + 1 >= argc) throw std::invalid_argument("unknown argument or missing value: " + flag);
        const std::string value = argv[++i];
        if (flag == "--batches")
            o.batches = positive(flag, value);
        else if (flag == "--repetitions")
            o.repetitions = positive(flag, value);
        else if (flag == "--model" && (value == "gru" || value == "transformer" || value == "all"))
            o.model = value;
        else if (flag == "--scale" && (value == "1" || value == "4" || value == "8" || value == "all"))
            o.scale = value;
        else if (flag == "--threads")
            o.threads = positive(flag, value);
        else if (flag == "--ways" && (value == "lessons" || value == "fast" || value == "both"))
            o.ways = value;
        else
            throw std::invalid_argument("unknown argument '" + flag + " " + value +
                                        "' (--batches N, --repetitions N, --model gru|transformer|all, "
                                        "--scale 1|4|8|all, --threads N, --ways lessons|fast|both)");
    }
    return o;
}

void set(Config& c, const std::string& key, long long value) {
    for (auto& [k, v] : c.values)
        if (k == key) {
            v = value;
            return;
        }
    throw std::logic_error("lesson 12 has no parameter " + key);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Timing {
    double seconds, cpu_seconds, tokens;  // per pass: the medians of wall and processor time, target tokens
    double step_megabytes;                // added_peak_megabytes of the trainer and its first step
};

// The process's peak resident memory so far, in MB.
double peak_megabytes() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// A field of /proc/self/status in MB ("VmRSS", "VmHWM"), NaN where it cannot be read.
double status_megabytes(const std::string& field) {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
    return std::nan("");
}

// How much resident memory `work` adds at its peak, in MB: the peak since Linux's clear_refs reset it
// (writing 5), less the resident memory before, after malloc_trim has given back what earlier runs
// freed (so that reusing it is counted). NaN where the kernel does not allow it.
template <class F>
double added_peak_megabytes(F work) {
    malloc_trim(0);
    {
        std::ofstream reset("/proc/self/clear_refs");
        reset << "5";
        if (!reset.flush()) {
            work();
            return std::nan("");
        }
    }
    const double before = status_megabytes("VmRSS");
    work();
    return status_megabytes("VmHWM") - before;
}

// Trains `model` `how` over the batches `repetitions` times (the weights move on), timing each pass.
template <class Model, class Settings>
Timing timed_training(const Model& model, const std::vector<Pair>& pairs, const Options& o, Settings settings,
                      const translation::Training& how) {
    std::vector<std::size_t> order(pairs.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::vector<double> seconds, cpu;
    double tokens = 0.0, step_megabytes = 0.0;
    std::optional<translation::Trainer<Model>> trainer;
    // the trainer (its copy of the model, Adam's moments) and one batch's step, the lanes' gradients
    // included: the memory training needs beyond the data and the model it starts from
    step_megabytes = added_peak_megabytes([&] {
        trainer = translation::trainer(model, how);
        double words = 0.0;
        translation::train_batch(*trainer, pairs, order, 0, std::min(pairs.size(), translation::batch), words,
                                 settings(static_cast<std::size_t>(trainer->steps) + 1));
    });
    translation::Trainer<Model>& t = *trainer;
    for (std::size_t r = 0; r <= o.repetitions; ++r) {  // the first pass warms up, untimed
        double words = 0.0;
        const auto start = std::chrono::steady_clock::now();
        const double cpu_start = cpu_seconds();
        for (std::size_t first = 0; first < pairs.size(); first += translation::batch)
            translation::train_batch(t, pairs, order, first, std::min(pairs.size(), first + translation::batch), words,
                                     settings(static_cast<std::size_t>(t.steps) + 1));
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
        if (r > 0) seconds.push_back(took.count()), cpu.push_back(cpu_seconds() - cpu_start);
        tokens = words;
    }
    return {median(seconds), median(cpu), tokens, step_megabytes};
}

// A run's timing fields: the median pass's seconds and tokens, by the wall clock and by processor time.
void add_timing(nlohmann::json& run, const Timing& t) {
    run.update({{"seconds_per_pass", t.seconds},
                {"cpu_seconds_per_pass", t.cpu_seconds},
                {"tokens_per_pass", t.tokens},
                {"tokens_per_second", t.tokens / t.seconds},
                {"tokens_per_cpu_second", t.tokens / t.cpu_seconds},
                {"step_megabytes", t.step_megabytes},
                {"peak_megabytes", peak_megabytes()}});
}

// Times `model` both ways: the lessons' fields at the top of `run`, the lanes' under "lanes".
template <class Model, class Settings>
void time_both(nlohmann::json& run, const Model& model, const std::vector<Pair>& pairs, const Options& o,
               Settings settings) {
    if (o.ways != "fast") add_timing(run, timed_training(model, pairs, o, settings, translation::Training{}));
    if (o.ways == "lessons") return;
    const translation::Training lanes = translation::fast_training(o.threads);
    nlohmann::json fast{{"threads", o.threads}, {"training", translation::training_name(lanes)}};
    add_timing(fast, timed_training(model, pairs, o, settings, lanes));
    run["lanes"] = fast;
    // attn train --float32: the same, its products in float32
    translation::Training single = lanes;
    single.arithmetic = nn::Arithmetic::single;
    nlohmann::json f32{{"threads", o.threads}, {"training", translation::training_name(single)}};
    add_timing(f32, timed_training(model, pairs, o, settings, single));
    run["float32"] = f32;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    try {
        o = parse(argc, argv);
    } catch (const std::invalid_argument& e) {
        std::cerr << "training_bench: " << e.what() << "\n";
        return 2;
    }
    tune_allocator_for_tensors();
    const Lesson* lesson = find_lesson("transformer");
    nlohmann::json out{{"program", "training_bench"},
                       {"batch", translation::batch},
                       {"clip", translation::clip_threshold},
                       {"repetitions", o.repetitions},
                       {"runs", nlohmann::json::array()}};
    for (const long long scale : {1LL, 4LL, 8LL}) {
        if (o.scale != "all" && std::to_string(scale) != o.scale) continue;
        // lesson 12's defaults (its corpus, lesson 9's width), every width times `scale`
        Config c = lesson->defaults;
        set(c, "width", c.get("width") * scale);
        set(c, "d_model", c.get("d_model") * scale);
        set(c, "d_ff", c.get("d_ff") * scale);
        transformer::RaceStart r = transformer::race_start(c);
        const std::size_t n = std::min(r.corpus.train.size(), o.batches * translation::batch);
        const std::vector<Pair> pairs(r.corpus.train.begin(), r.corpus.train.begin() + static_cast<std::ptrdiff_t>(n));
        nlohmann::json batches = nlohmann::json::array();
        for (const Pair& p : pairs) batches.push_back({p.src, p.tgt});
        const nlohmann::json common{{"scale", scale},
                                    {"V_src", r.corpus.source.words.size()},
                                    {"V_tgt", r.corpus.target.words.size()},
                                    {"sos", translation::sos},
                                    {"eos", translation::eos},
                                    {"pairs", batches}};
        if (o.model != "transformer") {
            nlohmann::json run = common;
            run.update({{"model", "gru-attention"},
                        {"width", c.get("width")},
                        {"adam", {translation::adam.learning_rate, translation::adam.beta1, translation::adam.beta2,
                                  translation::adam.epsilon}},
                        {"parameters", translation::parameter_count(r.start.with)}});
            time_both(run, r.start.with, pairs, o, [](std::size_t) { return translation::adam; });
            out["runs"].push_back(run);
        }
        if (o.model != "gru") {
            nlohmann::json run = common;
            run.update({{"model", "transformer"},
                        {"d_model", c.get("d_model")},
                        {"d_ff", c.get("d_ff")},
                        {"heads", c.get("heads")},
                        {"layers", c.get("layers")},
                        {"warmup", c.get("warmup")},
                        {"parameters", translation::parameter_count(r.start.transformer)}});
            time_both(run, r.start.transformer, pairs, o,
                      [&](std::size_t step) { return transformer::transformer_adam(step, c); });
            out["runs"].push_back(run);
        }
    }
    std::cout << out.dump() << "\n";
    return 0;
}
