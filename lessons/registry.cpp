#include "registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cctype>

namespace attn {

namespace {

constexpr std::uint64_t default_seed = 7;

// "" when `doubles` fits under the memory cap, else a message naming the estimate.
std::string memory_limit(double doubles, const std::string& what) {
    if (doubles <= memory_cap_doubles) return "";
    return fmt::format("{} would need about {:.1f} GiB ({:.3g} doubles), above the cap of {:.0f} GiB: choose "
                       "smaller sizes",
                       what, doubles * 8.0 / (1 << 30), doubles, memory_cap_doubles * 8.0 / (1 << 30));
}

double v(const Config& c, const char* key) { return static_cast<double>(c.get(key)); }

std::string divisible(const Config& c, const char* width, const char* heads, long long fewest_heads) {
    const long long w = c.get(width), h = c.get(heads);
    if (w % h == 0) return "";
    std::vector<long long> divisors;
    for (long long k = fewest_heads; k <= w && divisors.size() < 12; ++k)
        if (w % k == 0) divisors.push_back(k);
    return fmt::format("{}={} is not divisible by {}={}: each head gets {} / {} features. With {}={}, {} may be {}",
                       width, w, heads, h, width, heads, width, w, heads, fmt::join(divisors, ", "));
}

// "" when `width` is even, else why it must be: the sinusoidal positions pair a sine and a cosine.
std::string even(const Config& c, const char* width) {
    const long long w = c.get(width);
    if (w % 2 == 0) return "";
    return fmt::format("{}={} is odd: the sinusoidal positions pair a sine and a cosine per frequency (Vaswani et al. "
                       "2017, section 3.5), so {} must be even; {} or {} would do",
                       width, w, width, w - 1, w + 1);
}

std::string bottleneck_limits(const Config& c) {
    // the demo encodes `trials` sentences of up to 64 tokens with d-wide states: trials d^2 sets the
    // time (2^21 is about 5 s here), trials d the memory
    const double work = v(c, "trials") * v(c, "d") * v(c, "d"), most_work = 2097152.0;
    if (work > most_work)
        return fmt::format("trials={} with d={} would run for minutes (trials x d^2 = {:.0f}, above {:.0f}): "
                           "choose fewer trials, at most {:.0f} with d={}",
                           c.get("trials"), c.get("d"), work, most_work,
                           std::floor(most_work / (v(c, "d") * v(c, "d"))), c.get("d"));
    return memory_limit(v(c, "trials") * 64.0 * v(c, "d") * 4.0 + 40.0 * v(c, "d") * v(c, "d"), "lesson 1");
}

std::string additive_limits(const Config& c) {
    const double widest = std::max({v(c, "d"), v(c, "n"), 2.0 * v(c, "u")});
    return memory_limit(20.0 * widest * widest, "lesson 2");
}

std::string scores_limits(const Config& c) {
    return memory_limit(v(c, "pairs") * 2.0 * 512.0 + v(c, "queries") * v(c, "keys") * 8.0 + 100.0 * v(c, "d") * v(c, "d"),
                        "lesson 3");
}

std::string self_attention_limits(const Config& c) {
    if (auto why = even(c, "d"); !why.empty()) return why;
    const double widest = std::max({v(c, "d"), 2.0 * v(c, "u"), v(c, "d_a"), v(c, "d_k"), v(c, "r")});
    return memory_limit(40.0 * widest * widest, "lesson 4");
}

std::string gru_to_attention_limits(const Config& c) {
    if (auto why = even(c, "d"); !why.empty()) return why;
    if (auto why = divisible(c, "d", "heads", 2); !why.empty()) return why;
    return memory_limit(40.0 * v(c, "d") * std::max(v(c, "d"), v(c, "d_ff")), "lesson 5");
}

std::string multi_head_limits(const Config& c) {
    if (auto why = divisible(c, "d_model", "heads", 1); !why.empty()) return why;
    return memory_limit(12.0 * v(c, "d_model") * v(c, "d_model"), "lesson 6");
}

bool power_of_two(long long n) { return n > 0 && (n & (n - 1)) == 0; }

// The powers of two on either side of n (n itself is not one), for a message.
std::string nearest_powers_of_two(long long n) {
    long long below = 1;
    while (below * 2 < n) below *= 2;
    return n < 1 ? "1" : fmt::format("{} or {}", below, below * 2);
}

std::string scaling_limits(const Config& c) {
    for (const char* key : {"T_min", "T_max"}) {
        const long long T = c.get(key);
        if (!power_of_two(T))
            return fmt::format("{}={} is not a power of two: the lengths double from T_min to T_max, so both must be "
                               "powers of two; {} would do",
                               key, T, nearest_powers_of_two(T));
    }
    if (c.get("T_min") > c.get("T_max"))
        return fmt::format("T_min={} is larger than T_max={}: the lengths run from T_min up to T_max", c.get("T_min"),
                           c.get("T_max"));
    // the T_max x T_max scores and weights of the attention run, the T_min x T_max pair of the check
    // that reruns a block of queries, and the T_max x d inputs, states and gates
    const double T = v(c, "T_max");
    return memory_limit(2.0 * T * T + 2.0 * v(c, "T_min") * T + 6.0 * T * v(c, "d"),
                        fmt::format("the {0} x {0} attention scores and weights at T_max={0}", c.get("T_max")));
}

Lesson make(int number, std::string slug, std::string title, std::string sources, std::vector<Param> params,
            LessonLimits limits, LessonFn fn, std::vector<Setting> quick = {}) {
    Lesson l{number, std::move(slug), std::move(title), std::move(sources), std::move(params), limits, fn, {}, {}};
    l.defaults = default_config(l.params, default_seed);
    l.quick = apply_settings(l.params, default_seed, quick);
    return l;
}

}  // namespace

const std::vector<Lesson>& all_lessons() {
    static const std::vector<Lesson> lessons = {
        make(1, "bottleneck", "The fixed-context bottleneck of seq2seq", "Sutskever et al. 2014; Cho et al. 2014",
             {{"d", 6, 1, 256, "width of the word embeddings and of the encoder and decoder states"},
              {"trials", 8, 1, 1000, "random sentences per length in the measured bottleneck demo"}},
             bottleneck_limits, lesson_bottleneck),
        make(2, "additive", "Additive attention: a context for every word", "Bahdanau et al. 2015",
             {{"d", 6, 1, 256, "width of the word embeddings"},
              {"n", 6, 4, 256, "width of the decoder state s_i; at least 4, so that W_a can send the 3 states "
                               "s_{i-1} to their planned queries exactly"},
              {"u", 3, 3, 128, "width of each encoder direction (annotations h_j are 2u wide); at least 3, so that "
                               "U_a can send the 4 annotations to their planned keys exactly"}},
             additive_limits, lesson_additive),
        make(3, "scores", "Score functions, scaling, local attention", "Luong et al. 2015; Vaswani et al. 2017",
             {{"d", 6, 1, 256, "width of the queries and keys"},
              {"D", 2, 1, 8, "half-width of the local-attention window (2D + 1 positions)"},
              {"pairs", 2000, 100, 20000, "random (q, k) pairs per width in the variance measurement"},
              {"queries", 400, 100, 2000, "random queries per width in the saturation measurement"},
              {"keys", 10, 8, 16, "keys each query is scored against in the saturation measurement (the checks' "
                                  "thresholds are set for 8 to 16)"}},
             scores_limits, lesson_scores),
        make(4, "self-attention", "Self-attention: Q, K, V, masks and positions", "Lin et al. 2017; Vaswani et al. 2017",
             {{"d", 6, 2, 256, "width of the token embeddings (d_model); even, for the sinusoidal positions"},
              {"u", 3, 1, 128, "width of each direction of Lin's bidirectional GRU (states are 2u wide)"},
              {"d_a", 4, 1, 256, "width of the tanh layer of Lin's attention"},
              {"r", 3, 1, 7, "attention hops of Lin's structured embedding; at most one per token (7)"},
              {"d_k", 4, 1, 256, "width of the queries, keys and values"}},
             self_attention_limits, lesson_self_attention),
        make(5, "gru-to-attention", "From a GRU to a self-attention layer",
             "Cho et al. 2014; Bahdanau et al. 2015; Vaswani et al. 2017",
             {{"d", 4, 2, 256, "width of the inputs, the states and the layer outputs; even, for the sinusoidal "
                              "positions"},
              {"heads", 2, 2, 64, "attention heads; at least 2, to split, and must divide d"},
              {"d_ff", 8, 1, 1024, "hidden width of the feed-forward network"}},
             gru_to_attention_limits, lesson_gru_to_attention),
        make(6, "multi-head", "Multi-head attention", "Vaswani et al. 2017",
             {{"d_model", 6, 1, 2048, "width of the model: of every token vector and of W^Q, W^K, W^V, W^O"},
              {"heads", 2, 1, 256, "attention heads h; must divide d_model (each head is d_model / h wide)"}},
             multi_head_limits, lesson_multi_head),
        make(7, "scaling", "Why attention replaced recurrence: steps, time and memory",
             "Vaswani et al. 2017, section 4; Cho et al. 2014",
             {{"d", 64, 1, 1024, "width of the tokens and of the GRU state"},
              {"T_min", 64, 1, 16384, "shortest sequence measured; a power of two"},
              {"T_max", 4096, 1, 16384, "longest sequence measured; a power of two, at least T_min (T doubles up to it)"},
              {"repeats", 3, 1, 100, "timed runs of each layer at each length; the fastest is kept"}},
             scaling_limits, lesson_scaling, {{"d", 1}, {"T_min", 1}, {"T_max", 2}, {"repeats", 1}}),
    };
    return lessons;
}

const Lesson* find_lesson(const std::string& name) {
    const bool numeric = !name.empty() && name.size() <= 3 &&
                         std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c); });
    for (const auto& lesson : all_lessons()) {
        if (numeric ? std::stoi(name) == lesson.number : name == lesson.slug) return &lesson;
    }
    return nullptr;
}

Config configure(const Lesson& lesson, std::uint64_t seed, const std::vector<Setting>& settings) {
    Config c = apply_settings(lesson.params, seed, settings);
    if (const std::string why = lesson.limits(c); !why.empty())
        throw SettingError(fmt::format("lesson {} {}: {}", lesson.number, lesson.slug, why));
    return c;
}

Trace run_lesson(const Lesson& lesson, const Config& config) {
    Trace trace(lesson.slug, config);
    lesson.fn(trace, config);
    return trace;
}

}  // namespace attn
