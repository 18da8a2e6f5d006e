// The lessons in course order. A lesson is one function that computes with src/nn and
// records what it computed in a Trace; it never prints and never reads files.
#pragma once

#include "core/settings.hpp"
#include "core/trace.hpp"

#include <string>
#include <vector>

namespace attn {

using LessonFn = void (*)(Trace&, const Config&);

// A lesson's own rule over its whole configuration (d_model divisible by heads, the memory its
// tensors need): "" when the configuration is fine, else what is wrong and what would do.
using LessonLimits = std::string (*)(const Config&);

struct Lesson {
    int number;                // course order, 1-based; golden/<NN>_<slug>.json
    std::string slug;          // "bottleneck"
    std::string title;         // "The fixed-context bottleneck"
    std::string sources;       // "Sutskever et al. 2014; Cho et al. 2014"
    std::vector<Param> params; // what --set may change, with defaults and ranges
    LessonLimits limits;       // rules across parameters, checked before any work
    LessonFn fn;
    Config defaults;           // seed 7 and the params' defaults: what `attn check` and the golden files use
    Config quick;              // the cheapest configuration with the same steps, for `attn list`
};

// The most memory a lesson's tensors may take, in doubles (1 GiB).
inline constexpr double memory_cap_doubles = 134217728.0;

// The configuration a user asked for: `seed` and `settings` applied to the lesson's defaults,
// then its limits. Throws SettingError naming what is wrong, before any work.
Config configure(const Lesson& lesson, std::uint64_t seed, const std::vector<Setting>& settings);

// Every lesson, in course order.
const std::vector<Lesson>& all_lessons();

// The lesson named by number ("1", "01") or slug ("bottleneck"), or nullptr.
const Lesson* find_lesson(const std::string& number_or_slug);

// Runs a lesson with a configuration and returns what it recorded.
Trace run_lesson(const Lesson& lesson, const Config& config);

// The lesson functions, one per file in lessons/.
void lesson_bottleneck(Trace& trace, const Config& config);
void lesson_additive(Trace& trace, const Config& config);
void lesson_scores(Trace& trace, const Config& config);
void lesson_self_attention(Trace& trace, const Config& config);
void lesson_gru_to_attention(Trace& trace, const Config& config);
void lesson_multi_head(Trace& trace, const Config& config);
void lesson_scaling(Trace& trace, const Config& config);

}  // namespace attn
