#include "lesson_setup.hpp"

#include "attn_config.hpp"
#include "core/golden.hpp"
#include "core/inputs.hpp"
#include "core/render.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attn {

std::optional<Trace> prepare_trace(const Lesson& lesson, const LessonSetup& setup) {
    try {
        std::vector<Setting> settings;
        for (const auto& text : setup.settings) settings.push_back(parse_setting(text));
        const std::uint64_t seed = setup.seed.empty() ? lesson.defaults.seed : parse_seed(setup.seed);
        Trace trace(lesson.slug, configure(lesson, seed, settings));
        if (!setup.input.empty()) trace.supply_inputs(read_inputs(setup.input));
        return trace;
    } catch (const SettingError& e) {
        fmt::print(stderr, "attn: {}\nRun 'attn run {} --help' to see the lesson's parameters.\n", e.what(),
                   lesson.slug);
    } catch (const GoldenError& e) {
        fmt::print(stderr, "attn: {}\n", e.what());
    }
    return std::nullopt;
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
    const auto& names = run.trace.input_names();
    const std::string inputs = names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
    if (!computed.empty())
        fmt::print(stderr, "attn: note: --input {}: ignored {} (computed by the lesson, not inputs)\n",
                   setup.input.string(), fmt::join(computed, ", "));
    if (unknown.empty()) return true;
    fmt::print(stderr,
               "attn: --input {}: lesson {} has no tensor named {}; the tensors it takes as inputs are: {}\n",
               setup.input.string(), run.trace.lesson(), fmt::join(unknown, ", "), inputs);
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
