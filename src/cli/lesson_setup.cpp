#include "lesson_setup.hpp"

#include "attn_config.hpp"
#include "core/golden.hpp"
#include "core/inputs.hpp"
#include "core/names.hpp"
#include "core/render.hpp"
#include "exercises/command_support.hpp"
#include "exercises/program.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attn {

std::optional<Trace> prepare_trace(const Lesson& lesson, const LessonSetup& setup) {
    try {
        std::vector<Setting> settings;
        for (const auto& text : setup.settings) settings.push_back(parse_setting(text));
        const std::uint64_t seed = setup.seed_given ? parse_seed(setup.seed) : lesson.defaults.seed;
        Trace trace(lesson.slug, configure(lesson, seed, settings));
        if (!setup.input.empty()) trace.supply_inputs(read_inputs(setup.input));
        return trace;
    } catch (const SettingError& e) {
        fmt::print(stderr, "attn: {}\nRun '{} run {} --help' to see the lesson's parameters.\n", e.what(),
                   program_command(), lesson.slug);
    } catch (const GoldenError& e) {
        fmt::print(stderr, "attn: {}\n", e.what());
    }
    return std::nullopt;
}

namespace {

// The message of an --input naming tensors the lesson has not got, with the tensors it takes.
void report_unknown_inputs(const std::string& lesson, const std::vector<std::string>& unknown,
                           const std::vector<std::string>& names, const LessonSetup& setup) {
    const std::string inputs = names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
    fmt::print(stderr,
               "attn: --input {}: lesson {} has no tensor named {}; the tensors it takes as inputs are: {}\n",
               setup.input.string(), lesson, fmt::join(unknown, ", "), inputs);
}

bool recorded_tensor(const Trace& trace, const std::string& name) {
    for (const auto& s : trace.steps())
        for (const auto& t : s.tensors)
            if (t.name == name) return true;
    return false;
}

}  // namespace

namespace {

// Whether `step` is none of the lesson's declared steps, after saying so (with a "did you mean").
bool unknown_step(const Lesson& lesson, const std::string& step) {
    if (std::find(lesson.steps.begin(), lesson.steps.end(), step) != lesson.steps.end()) return false;
    const std::string best = closest_name(step, lesson.steps);
    fmt::print(stderr, "attn: lesson '{}' has no step '{}'; {}its steps are: {}\n", lesson.slug, printable_utf8(step),
               best.empty() ? "" : fmt::format("did you mean '{}'? ", best), fmt::join(lesson.steps, ", "));
    return true;
}

// The supplied keys that name no tensor of the quick run (neither an input nor a recorded tensor).
std::vector<std::string> unknown_keys(const std::vector<std::string>& keys, const Trace& quick) {
    std::vector<std::string> unknown;
    for (const auto& key : keys) {
        bool taken = false;
        for (const auto& name : quick.input_names())
            taken = taken || key == name ||
                    (key.size() > name.size() && key[key.size() - name.size() - 1] == '.' &&
                     key.compare(key.size() - name.size(), name.size(), name) == 0) ||
                    (name.size() > key.size() && name[name.size() - key.size() - 1] == '.' &&
                     name.compare(name.size() - key.size(), key.size(), key) == 0);
        const std::string bare = key.substr(key.find('.') == std::string::npos ? 0 : key.find('.') + 1);
        if (!taken && !recorded_tensor(quick, bare)) unknown.push_back(key);
    }
    return unknown;
}

}  // namespace

bool refused_before_work(const Lesson& lesson, Trace& prepared, const std::string& step, const LessonSetup& setup) {
    if (!step.empty() && unknown_step(lesson, step)) return true;
    const std::vector<std::string> keys = prepared.supplied_keys();
    if (keys.empty()) {
        // the lesson runs up to that step and no further
        const auto at = std::find(lesson.steps.begin(), lesson.steps.end(), step);
        if (!step.empty()) prepared.stop_after(static_cast<std::size_t>(at - lesson.steps.begin()) + 1);
        return false;
    }
    // with --input the lesson runs whole: every tensor supplied, of any step, must be taken. Its
    // quick run tells the tensors it takes, and the step that takes each.
    const LessonRun quick = run_lesson(lesson, Trace(lesson.slug, lesson.quick), this_program().exercise_build);
    if (quick.stopped()) return false;
    prepared.take_inputs_in(quick.trace.input_steps());
    const std::vector<std::string> unknown = unknown_keys(keys, quick.trace);
    if (unknown.empty()) return false;
    report_unknown_inputs(lesson.slug, unknown, quick.trace.input_names(), setup);
    return true;
}

bool inputs_were_used(const LessonRun& run, const LessonSetup& setup) {
    const auto unused = run.trace.unused_inputs();
    if (unused.empty()) return true;
    std::vector<std::string> computed, unknown;
    for (const auto& key : unused) {
        // a bare name that two inputs share ("W_z" of the encoder and of the decoder)
        std::vector<std::string> meant;
        for (const auto& name : run.trace.input_names())
            if (name.size() > key.size() && name.compare(name.size() - key.size(), key.size(), key) == 0 &&
                name[name.size() - key.size() - 1] == '.')
                meant.push_back(name);
        if (!meant.empty()) {
            fmt::print(stderr, "attn: --input {}: '{}' is ambiguous in lesson {}: name it {}\n", setup.input.string(),
                       key, run.trace.lesson(), fmt::join(meant, " or "));
            return false;
        }
        const std::string name = key.substr(key.find('.') == std::string::npos ? 0 : key.find('.') + 1);
        bool recorded = false;
        for (const auto& s : run.trace.steps())
            for (const auto& t : s.tensors) recorded = recorded || t.name == name;
        (recorded ? computed : unknown).push_back(key);
    }
    if (!computed.empty())
        fmt::print(stderr, "attn: note: --input {}: ignored {} (computed by the lesson, not inputs)\n",
                   setup.input.string(), fmt::join(computed, ", "));
    if (unknown.empty()) return true;
    report_unknown_inputs(run.trace.lesson(), unknown, run.trace.input_names(), setup);
    return false;
}

std::string reproducibility_line(const Lesson& lesson, const Config& config, const LessonSetup& setup) {
    std::string line = fmt::format("attn {} · lesson {} {} · {}", ATTN_VERSION, lesson.number, lesson.slug,
                                   config_text(config));
    if (!setup.input.empty()) line += " · --input " + setup.input.string();
    return line + fmt::format(" · golden format {}", golden_format_version);
}

std::string parameter_help(const Lesson& lesson) {
    std::size_t width = 4;
    for (const auto& p : lesson.params) width = std::max(width, display_width(p.key));
    std::string out = fmt::format("Lesson {} {}: parameters (--set key=value; default seed {}):\n", lesson.number,
                                  lesson.slug, lesson.defaults.seed);
    std::size_t range_width = 0;
    for (const auto& p : lesson.params) range_width = std::max(range_width, fmt::format("{}..{}", p.min, p.max).size());
    for (const auto& p : lesson.params)
        out += fmt::format("  {}  default {:<5}  {:<{}}  {}\n", pad(p.key, width), p.value,
                           fmt::format("{}..{}", p.min, p.max), range_width, p.description);
    return out;
}

}  // namespace attn
