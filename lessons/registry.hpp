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

// How one parameter grows a lesson's work: as (value / default)^power.
struct Growth {
    const Param* param;
    double power;
};

// A lesson's estimate of its own time on this project's 2-core machine, from its settings alone:
// every lesson measures its costliest settings and fits seconds per unit of work on the safe side
// (the measurements are in a comment beside each estimate).
struct TimeEstimate {
    double seconds;
    std::string what;            // what takes the time: "the timing step", "training", "lesson 6"
    std::string model;           // the cost model in words: "d_model^2 multiply-adds, ..."
    std::vector<Growth> growth;  // the parameters the work grows with, to name the one to lower
};
using LessonTime = TimeEstimate (*)(const Config&);

struct Lesson {
    int number;                // course order, 1-based; golden/<NN>_<slug>.json
    std::string slug;          // "bottleneck"
    std::string title;         // "The fixed-context bottleneck"
    std::string sources;       // "Sutskever et al. 2014; Cho et al. 2014"
    std::vector<Param> params; // what --set may change, with defaults and ranges
    LessonLimits limits;       // rules across parameters, checked before any work
    LessonTime time;           // the estimate of its time, refused above time_cap_seconds before any work
    LessonFn fn;
    Config defaults;           // seed 7 and the params' defaults: what `attn check` and the golden files use
    Config quick;              // the cheapest configuration with the same steps, for `attn list`
    // The ids of its steps, in the order it records them, whatever its configuration: what `run
    // --step` is checked against before any work (tests/test_lessons.cpp holds them to its runs).
    std::vector<std::string> steps;
};

// The most memory a lesson's tensors may take, in doubles (1 GiB).
inline constexpr double memory_cap_doubles = 134217728.0;

// The longest a lesson may be estimated to run, in seconds: about a minute on this machine.
inline constexpr double time_cap_seconds = 60.0;

// The configuration a user asked for: `seed` and `settings` applied to the lesson's defaults,
// then its limits, then its time estimate against the cap (time_limit). Throws SettingError naming
// what is wrong, before any work.
Config configure(const Lesson& lesson, std::uint64_t seed, const std::vector<Setting>& settings);

// Every lesson, in course order.
const std::vector<Lesson>& all_lessons();

// The lesson named by number ("1", "01") or slug ("bottleneck"), or nullptr.
const Lesson* find_lesson(const std::string& number_or_slug);

// A lesson's record, with the defaults of its parameters and its cheapest configuration (the
// `quick` settings) filled in. Each lesson file builds its own from the parameters it declares
// next to the code that reads them.
Lesson make_lesson(int number, std::string slug, std::string title, std::string sources, std::vector<Param> params,
                   LessonLimits limits, LessonTime time, LessonFn fn, std::vector<std::string> steps,
                   std::vector<Setting> quick = {});

// The lessons, one per file in lessons/, in course order.
Lesson bottleneck_lesson();
Lesson additive_lesson();
Lesson scores_lesson();
Lesson self_attention_lesson();
Lesson gru_to_attention_lesson();
Lesson multi_head_lesson();
Lesson scaling_lesson();
Lesson backprop_lesson();
Lesson learning_to_align_lesson();
Lesson online_softmax_lesson();
Lesson transformer_block_lesson();
Lesson transformer_lesson();
Lesson decoding_lesson();
Lesson real_translation_lesson();
Lesson positions_lesson();

// Rules the lessons' limits share; each returns "" when the configuration is fine.
// `doubles` under the memory cap, else a message naming the estimate of `what`.
std::string memory_limit(double doubles, const std::string& what);
// `width` divisible by `heads`, else which head counts would do (from `fewest_heads` up).
std::string divisible(const Config& c, const Param& width, const Param& heads, long long fewest_heads);
// `width` even, as the sinusoidal positions need (a sine and a cosine per frequency).
std::string even(const Config& c, const Param& width);
// `param` a power of two, else the two on either side; `why` says what doubles up to it.
std::string power_of_two(const Config& c, const Param& param, const std::string& why);
// The estimate within time_cap_seconds, else "would run for minutes: <what> would take about N s on
// this machine (<model>), above the cap of 60 s: lower <key> (now <value>)", naming of the estimate's
// growth the parameter whose setting has grown the work most against its default.
std::string time_limit(const Config& c, const TimeEstimate& estimate);
// The parameter time_limit names: of `growth`, the one whose (value / default)^power is largest.
const Param& grown_most(const Config& c, const std::vector<Growth>& growth);

}  // namespace attn
