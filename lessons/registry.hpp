// The lessons in course order. A lesson is one function that computes with src/nn and
// records what it computed in a Trace; it never prints and never reads files.
#pragma once

#include "core/trace.hpp"

#include <string>
#include <vector>

namespace attn {

using LessonFn = void (*)(Trace&, const Config&);

struct Lesson {
    int number;           // course order, 1-based; golden/<NN>_<slug>.json
    std::string slug;     // "bottleneck"
    std::string title;    // "The fixed-context bottleneck"
    std::string sources;  // "Sutskever et al. 2014; Cho et al. 2014"
    Config defaults;      // the configuration `attn check` and the golden files use
    LessonFn fn;
};

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

}  // namespace attn
