#include "registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cctype>

namespace attn {

namespace {

constexpr std::uint64_t default_seed = 7;

}  // namespace

std::string memory_limit(double doubles, const std::string& what) {
    if (doubles <= memory_cap_doubles) return "";
    return fmt::format("{} would need about {:.1f} GiB ({:.3g} doubles), above the cap of {:.0f} GiB: choose "
                       "smaller sizes",
                       what, doubles * 8.0 / (1 << 30), doubles, memory_cap_doubles * 8.0 / (1 << 30));
}

std::string divisible(const Config& c, const Param& width, const Param& heads, long long fewest_heads) {
    const long long w = c.get(width.key), h = c.get(heads.key);
    if (w % h == 0) return "";
    std::vector<long long> divisors;
    for (long long k = fewest_heads; k <= w && divisors.size() < 12; ++k)
        if (w % k == 0) divisors.push_back(k);
    return fmt::format("{}={} is not divisible by {}={}: each head gets {} / {} features. With {}={}, {} may be {}",
                       width.key, w, heads.key, h, width.key, heads.key, width.key, w, heads.key,
                       fmt::join(divisors, ", "));
}

std::string even(const Config& c, const Param& width) {
    const long long w = c.get(width.key);
    if (w % 2 == 0) return "";
    return fmt::format("{}={} is odd: the sinusoidal positions pair a sine and a cosine per frequency (Vaswani et al. "
                       "2017, section 3.5), so {} must be even; {} or {} would do",
                       width.key, w, width.key, w - 1, w + 1);
}

std::string power_of_two(const Config& c, const Param& param, const std::string& why) {
    const long long n = c.get(param.key);
    if (n > 0 && (n & (n - 1)) == 0) return "";
    long long below = 1;
    while (below * 2 < n) below *= 2;
    const std::string would_do = n < 1 ? "1" : fmt::format("{} or {}", below, below * 2);
    return fmt::format("{}={} is not a power of two: {}; {} would do", param.key, n, why, would_do);
}

const Param& grown_most(const Config& c, const std::vector<Growth>& growth) {
    const auto grown = [&](const Growth& g) {
        return std::pow(static_cast<double>(c.size(*g.param)) / static_cast<double>(g.param->value), g.power);
    };
    return *std::max_element(growth.begin(), growth.end(), [&](const Growth& a, const Growth& b) {
                return grown(a) < grown(b);
            })->param;
}

std::string time_limit(const Config& c, const TimeEstimate& estimate) {
    if (estimate.seconds <= time_cap_seconds) return "";
    const Param& lower = grown_most(c, estimate.growth);
    // at least a second above the cap, so that an estimate just over it never reads as the cap itself
    return fmt::format("would run for minutes: {} would take about {:.0f} s on this machine ({}), above the cap of "
                       "{:.0f} s: lower {} (now {})",
                       estimate.what, std::max(std::round(estimate.seconds), time_cap_seconds + 1.0), estimate.model,
                       time_cap_seconds, lower.key, c.size(lower));
}

Lesson make_lesson(int number, std::string slug, std::string title, std::string sources, std::vector<Param> params,
                   LessonLimits limits, LessonTime time, LessonFn fn, std::vector<std::string> steps,
                   std::vector<Setting> quick) {
    Lesson l{number, std::move(slug), std::move(title), std::move(sources), std::move(params), limits, time, fn, {},
             {}, std::move(steps)};
    l.defaults = default_config(l.params, default_seed);
    l.quick = apply_settings(l.params, default_seed, quick);
    return l;
}

const std::vector<Lesson>& all_lessons() {
    static const std::vector<Lesson> lessons = {bottleneck_lesson(),     additive_lesson(),   scores_lesson(),
                                                self_attention_lesson(), gru_to_attention_lesson(),
                                                multi_head_lesson(),     scaling_lesson(),    backprop_lesson(),
                                                learning_to_align_lesson(), online_softmax_lesson(),
                                                transformer_block_lesson(), transformer_lesson(),
                                                decoding_lesson(),
                                                real_translation_lesson(),
                                                positions_lesson()};
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
    std::string why = lesson.limits(c);
    if (why.empty()) why = time_limit(c, lesson.time(c));
    if (!why.empty()) throw SettingError(fmt::format("lesson {} {}: {}", lesson.number, lesson.slug, why));
    return c;
}

}  // namespace attn
