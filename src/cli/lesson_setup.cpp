#include "lesson_setup.hpp"

#include "attn_config.hpp"
#include "core/golden.hpp"
#include "core/inputs.hpp"
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

bool refused_before_work(const Lesson& lesson, Trace& prepared, const std::string& step, const LessonSetup& setup) {
    const std::vector<std::string> keys = prepared.supplied_keys();
    if (step.empty() && keys.empty()) return false;
    const LessonRun quick = run_lesson(lesson, Trace(lesson.slug, lesson.quick), this_program().exercise_build);
    if (quick.stopped()) return false;
    if (!step.empty() && !quick.trace.find_step(step)) {
        std::vector<std::string> ids;
        for (const auto& s : quick.trace.steps()) ids.push_back(s.id);
        fmt::print(stderr, "attn: lesson '{}' has no step '{}'; its steps are: {}\n", lesson.slug,
                   printable_utf8(step), fmt::join(ids, ", "));
        return true;
    }
    // with --input the lesson runs whole: every tensor supplied, of any step, must be taken
    const auto& steps = quick.trace.steps();
    for (std::size_t i = 0; i < steps.size() && keys.empty(); ++i)
        if (steps[i].id == step) prepared.stop_after(i + 1);
    std::vector<std::string> unknown;
    for (const auto& key : keys) {
        bool taken = false;
        for (const auto& name : quick.trace.input_names())
            taken = taken || key == name ||
                    (key.size() > name.size() && key[key.size() - name.size() - 1] == '.' &&
                     key.compare(key.size() - name.size(), name.size(), name) == 0) ||
                    (name.size() > key.size() && name[name.size() - key.size() - 1] == '.' &&
                     name.compare(name.size() - key.size(), key.size(), key) == 0);
        const std::string bare = key.substr(key.find('.') == std::string::npos ? 0 : key.find('.') + 1);
        if (!taken && !recorded_tensor(quick.trace, bare)) unknown.push_back(key);
    }
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
