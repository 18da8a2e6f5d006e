#include "commands.hpp"

#include "attn_config.hpp"
#include "core/golden.hpp"
#include "registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace attn {

namespace {

// Levenshtein distance, for "did you mean".
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string lesson_names() {
    std::vector<std::string> names;
    for (const auto& l : all_lessons()) names.push_back(fmt::format("{} {}", l.number, l.slug));
    return fmt::format("{}", fmt::join(names, ", "));
}

void unknown_lesson(const std::string& name) {
    const Lesson* best = nullptr;
    std::size_t best_distance = 3;  // suggest only close names
    for (const auto& l : all_lessons()) {
        const std::size_t dist = l.slug.rfind(name, 0) == 0 && !name.empty() ? 0 : edit_distance(name, l.slug);
        if (dist < best_distance) best = &l, best_distance = dist;
    }
    if (best)
        fmt::print(stderr, "attn: unknown lesson '{}'; did you mean '{}'?\n", name, best->slug);
    else
        fmt::print(stderr, "attn: unknown lesson '{}'; the lessons are: {}\n", name, lesson_names());
    fmt::print(stderr, "Run 'attn list' to see every lesson.\n");
}

// The lessons named on the command line (every lesson when `names` is empty or "all"),
// or an empty list after reporting an unknown name.
std::vector<const Lesson*> resolve(const std::vector<std::string>& names, bool& ok) {
    std::vector<const Lesson*> out;
    ok = true;
    if (names.empty() || (names.size() == 1 && names[0] == "all")) {
        for (const auto& l : all_lessons()) out.push_back(&l);
        return out;
    }
    for (const auto& name : names) {
        const Lesson* l = find_lesson(name);
        if (!l) {
            unknown_lesson(name);
            ok = false;
            return {};
        }
        if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
    }
    return out;
}

std::string config_summary(const Config& c) {
    std::string out = fmt::format("seed {}", c.seed);
    for (const auto& [k, v] : c.values) out += fmt::format(", {}={}", k, v);
    return out;
}

std::string lesson_header(const Lesson& l, const Config& c) {
    return fmt::format("Lesson {} · {} · {}\n  after {}\n  {} · attn {} · golden format {}\n", l.number, l.slug,
                       l.title, l.sources, config_summary(c), ATTN_VERSION, golden_format_version);
}

void wait_for_enter() {
    fmt::print("  [Enter: next step] ");
    std::fflush(stdout);
    std::string ignored;
    std::getline(std::cin, ignored);
}

std::filesystem::path golden_path(const GoldenOptions& o, const Lesson& l) {
    return o.golden_dir / golden_file_name(l.number, l.slug);
}

// The file's bytes, or "" when it cannot be read (bless then rewrites it).
std::string read_text(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return in ? s.str() : std::string();
}

std::size_t tensor_count(const Trace& t) {
    std::size_t n = 0;
    for (const auto& s : t.steps()) n += s.tensors.size();
    return n;
}

// Identity checks of a freshly run lesson that fail, reported; true when all hold.
bool report_failed_checks(const Trace& trace) {
    bool ok = true;
    for (const auto& s : trace.steps())
        for (const auto& c : s.checks)
            if (!c.holds) {
                fmt::print("{}: identity check failed in step '{}': {} (max |error| {:.3g} > tolerance {:.3g})\n",
                           trace.lesson(), s.id, c.claim, c.max_abs_error, c.tolerance);
                ok = false;
            }
    return ok;
}

}  // namespace

int cmd_list() {
    std::size_t slug_width = 6, title_width = 5;
    for (const auto& l : all_lessons()) {
        slug_width = std::max(slug_width, display_width(l.slug));
        title_width = std::max(title_width, display_width(l.title));
    }
    const auto line = [&](const std::string& number, const std::string& slug, const std::string& steps,
                          const std::string& title, const std::string& sources) {
        fmt::print("{}  {}  {}  {}  {}\n", pad(number, 2, true), pad(slug, slug_width), pad(steps, 5, true),
                   pad(title, title_width), sources);
    };
    line("#", "lesson", "steps", "title", "sources");
    for (const auto& l : all_lessons()) {
        const Trace t = run_lesson(l, l.defaults);
        line(std::to_string(l.number), l.slug, std::to_string(t.steps().size()), l.title, l.sources);
    }
    return exit_ok;
}

int cmd_run(const RunOptions& o) {
    bool ok = true;
    const auto lessons = resolve(o.lessons, ok);
    if (!ok) return exit_usage;
    if (!o.step.empty() && lessons.size() != 1) {
        fmt::print(stderr, "attn: --step needs exactly one lesson, not {}\n", lessons.size());
        return exit_usage;
    }
    const bool pause = o.pause && ::isatty(STDIN_FILENO);
    bool all_hold = true;
    for (std::size_t li = 0; li < lessons.size(); ++li) {
        const Lesson& l = *lessons[li];
        const Trace trace = run_lesson(l, l.defaults);
        const auto& steps = trace.steps();
        if (!o.step.empty() && !trace.find_step(o.step)) {
            std::vector<std::string> ids;
            for (const auto& s : steps) ids.push_back(s.id);
            fmt::print(stderr, "attn: lesson '{}' has no step '{}'; its steps are: {}\n", l.slug, o.step,
                       fmt::join(ids, ", "));
            return exit_usage;
        }
        fmt::print("{}\n", lesson_header(l, trace.config()));
        // every check counts, also those of steps --step hides: the exit code speaks for the lesson
        std::size_t checks = 0, failed = 0;
        for (const auto& s : steps)
            for (const auto& c : s.checks) checks += 1, failed += c.holds ? 0 : 1;
        for (std::size_t i = 0; i < steps.size(); ++i) {
            if (!o.step.empty() && steps[i].id != o.step) continue;
            fmt::print("{}\n", render_step(steps[i], i + 1, steps.size(), o.render));
            const bool last = i + 1 == steps.size() && li + 1 == lessons.size();
            if (pause && o.step.empty() && !last) wait_for_enter();
        }
        if (failed == 0)
            fmt::print("{}: all {} identity checks hold\n\n", l.slug, checks);
        else
            fmt::print("{}: {} of {} identity checks FAILED\n\n", l.slug, failed, checks);
        all_hold = all_hold && failed == 0;
    }
    return all_hold ? exit_ok : exit_mismatch;
}

int cmd_check(const GoldenOptions& o) {
    try {
        validate_tolerance(o.tolerance);
    } catch (const std::invalid_argument& e) {
        fmt::print(stderr, "attn: {}\n", e.what());
        return exit_usage;
    }
    bool ok = true;
    const auto lessons = resolve(o.lessons, ok);
    if (!ok) return exit_usage;
    int code = exit_ok;
    for (const Lesson* l : lessons) {
        const auto file = golden_path(o, *l);
        Trace golden;
        try {
            golden = read_golden(file);
        } catch (const GoldenError& e) {
            fmt::print(stderr, "attn: golden file problem: {}\n", e.what());
            code = exit_golden;
            continue;
        }
        const Trace actual = run_lesson(*l, l->defaults);
        const LessonComparison cmp = compare_traces(actual, golden, o.tolerance);
        const bool checks_hold = report_failed_checks(actual);
        if (cmp.ok && checks_hold) {
            fmt::print("ok  {:<12} {} steps, {} tensors match {} (rtol {:g}, atol {:g})\n", l->slug,
                       cmp.steps_compared, cmp.tensors_compared, file.string(), o.tolerance.rtol, o.tolerance.atol);
            continue;
        }
        if (!cmp.ok) fmt::print("{}", cmp.report);
        if (code == exit_ok) code = exit_mismatch;
    }
    return code;
}

int cmd_bless(const GoldenOptions& o) {
    const char* ci = std::getenv("CI");
    if (ci && *ci && !o.force) {
        fmt::print(stderr,
                   "attn: bless refuses to run because CI is set (CI={}): golden files change only by a deliberate "
                   "bless on a developer's machine. Add --force to override.\n",
                   ci);
        return exit_usage;
    }
    if (o.lessons.empty()) {
        fmt::print(stderr, "attn: bless needs the lessons to bless (or 'all'); the lessons are: {}\n", lesson_names());
        return exit_usage;
    }
    bool ok = true;
    const auto lessons = resolve(o.lessons, ok);
    if (!ok) return exit_usage;
    std::error_code ec;
    if (!std::filesystem::is_directory(o.golden_dir, ec)) {
        fmt::print(stderr, "attn: golden directory {} does not exist\n", o.golden_dir.string());
        return exit_golden;
    }
    int code = exit_ok;
    for (const Lesson* l : lessons) {
        const auto file = golden_path(o, *l);
        const Trace actual = run_lesson(*l, l->defaults);
        if (!report_failed_checks(actual)) {
            fmt::print(stderr, "attn: not blessing {}: fix the failing identity checks first\n", l->slug);
            code = exit_mismatch;
            continue;
        }
        const std::string text = to_golden_json(actual);
        std::vector<std::string> changes;
        if (std::filesystem::exists(file, ec)) {
            if (read_text(file) == text) {
                fmt::print("{}: no change ({})\n", l->slug, file.string());
                continue;
            }
            try {
                changes = describe_changes(read_golden(file), actual);
                if (changes.empty())
                    changes.push_back("no tensor, text or configuration changed; only the layout or the measured "
                                      "errors of the identity checks");
            } catch (const GoldenError& e) {
                changes.push_back(fmt::format("replaces an unreadable file: {}", e.what()));
            }
        } else {
            changes.push_back(fmt::format("new file with {} steps and {} tensors", actual.steps().size(),
                                          tensor_count(actual)));
        }
        try {
            write_file_atomic(file, text);
        } catch (const std::exception& e) {
            fmt::print(stderr, "attn: {}; the old golden file is unchanged\n", e.what());
            code = exit_golden;
            continue;
        }
        fmt::print("{}: wrote {}\n", l->slug, file.string());
        for (const auto& c : changes) fmt::print("  {}\n", c);
    }
    return code;
}

}  // namespace attn
