#include "commands.hpp"
#include "cli/grade.hpp"

#include "attn_config.hpp"
#include "exercises/command_support.hpp"
#include "core/golden.hpp"
#include "core/html.hpp"
#include "core/names.hpp"
#include "core/npy.hpp"
#include "core/svg.hpp"
#include "exercises/program.hpp"
#include "exercises/table.hpp"
#include "registry.hpp"
#include "cli/book_exercises.hpp"
#include "transformer_race.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <string>

#include <sys/ioctl.h>
#include <unistd.h>

namespace attn {

namespace {

std::string lesson_names() {
    std::vector<std::string> names;
    for (const auto& l : all_lessons()) names.push_back(fmt::format("{} {}", l.number, l.slug));
    return fmt::format("{}", fmt::join(names, ", "));
}

void unknown_lesson(const std::string& name) {
    std::vector<std::string> slugs;
    for (const auto& l : all_lessons()) slugs.push_back(l.slug);
    const std::string best = closest_name(name, slugs);
    if (!best.empty())
        fmt::print(stderr, "attn: unknown lesson '{}'; did you mean '{}'?\n", printable_utf8(name), best);
    else
        fmt::print(stderr, "attn: unknown lesson '{}'; the lessons are: {}\n", printable_utf8(name), lesson_names());
    fmt::print(stderr, "Run '{} list' to see every lesson.\n", program_command());
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

// resolve(), and false after saying why when --set or --input is given for other than one lesson.
std::vector<const Lesson*> resolve_for_setup(const std::vector<std::string>& names, const LessonSetup& setup,
                                             bool& ok) {
    std::vector<const Lesson*> lessons = resolve(names, ok);
    if (ok && (!setup.settings.empty() || !setup.input.empty()) && lessons.size() != 1) {
        fmt::print(stderr, "attn: --set and --input need exactly one lesson, not {}: each lesson has its own "
                           "parameters and tensors\n", lessons.size());
        ok = false;
        return {};
    }
    return lessons;
}

// The lesson's title, sources and reproducibility line, each wrapped to `width` columns.
std::string lesson_header(const Lesson& l, const Config& c, const LessonSetup& setup, std::size_t width) {
    std::string header = wrap_hanging(fmt::format("Lesson {} · {} · {}", l.number, l.slug, l.title), width, "", "  ") +
                         wrap_hanging("after " + l.sources, width, "  ", "    ") +
                         wrap_hanging(reproducibility_line(l, c, setup), width, "  ", "    ");
    if (c != l.defaults || !setup.input.empty())
        header += wrap_hanging(fmt::format("(your own numbers: attn check and the golden file use {})",
                                           config_text(l.defaults)),
                               width, "  ", "    ");
    return header;
}

// Shows the progress of a long measurement or training as one updating line on stderr, only when
// stderr is a terminal and only for `attn run`: captured output and exports stay free of it.
void report_progress(Trace& trace, bool show) {
    if (!show || !::isatty(STDERR_FILENO)) return;
    trace.on_progress([](const std::string& what) {
        fmt::print(stderr, "\r  {}\x1b[K", what);
        std::fflush(stderr);
    });
}

void end_progress(bool shown) {
    if (shown && ::isatty(STDERR_FILENO)) fmt::print(stderr, "\r\x1b[K");
}

// Runs a lesson for `run` or `export` as the user set it up; nullopt after reporting why not
// (exit code in `code`). `show_progress`: for `run`, whose user waits at a terminal.
// `step`: run's --step ("" for every step), refused before any work when the lesson has no such step.
std::optional<LessonRun> run_as_set_up(const Lesson& l, const LessonSetup& setup, int& code, bool show_progress,
                                       const std::string& step = "") {
    std::optional<Trace> prepared = prepare_trace(l, setup);
    if (!prepared || refused_before_work(l, *prepared, step, setup)) {
        code = exit_usage;
        return std::nullopt;
    }
    report_progress(*prepared, show_progress);
    try {
        LessonRun run = run_lesson(l, std::move(*prepared), this_program().exercise_build);
        end_progress(show_progress);
        run.trace.on_progress({});
        if (!inputs_were_used(run, setup)) {
            code = exit_usage;
            return std::nullopt;
        }
        return run;
    } catch (const InputError& e) {
        end_progress(show_progress);
        fmt::print(stderr, "attn: {}\n", e.what());
        code = exit_usage;
        return std::nullopt;
    }
}

// --pause: waits for Enter; false when the user typed q (or Q, or quit) or closed the input.
bool wait_for_enter(const char* prompt) {
    fmt::print("  [{}] ", prompt);
    std::fflush(stdout);
    std::string answer;
    if (!std::getline(std::cin, answer)) return false;
    const auto first = answer.find_first_not_of(" \t");
    const std::string word = first == std::string::npos ? "" : answer.substr(first, answer.find_last_not_of(" \t") - first + 1);
    return !(word == "q" || word == "Q" || word == "quit");
}

// The terminal's height in lines, or 0 when stdout is not a terminal or does not say.
std::size_t terminal_rows() {
    winsize size{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0) return 0;
    return size.ws_row;
}

// --pause: a step taller than the terminal is shown a screenful at a time, each screenful after the first
// starting with the step's head again (its rule and equation), so what the numbers are of stays on
// screen. False when the user quit.
bool show_paged(const StepText& step) {
    const std::size_t rows = terminal_rows();
    const std::string text = step.body.empty() ? step.head : step.head + "\n" + step.body;
    const std::size_t head_lines = static_cast<std::size_t>(std::count(step.head.begin(), step.head.end(), '\n'));
    if (rows < 3) {
        fmt::print("{}\n", text);
        return true;
    }
    // the head is repeated only when it leaves at least half the screen for the rest
    const bool repeat_head = 2 * (head_lines + 1) <= rows;
    std::size_t start = 0, shown = 0;
    while (start < text.size()) {
        const std::size_t end = text.find('\n', start);
        const std::size_t next = end == std::string::npos ? text.size() : end + 1;
        fmt::print("{}", std::string_view(text).substr(start, next - start));
        start = next;
        // one line is left for the prompt
        if (++shown == rows - 1 && start < text.size()) {
            if (!wait_for_enter("Enter: more · q Enter: quit")) return false;
            shown = 0;
            if (repeat_head) {
                fmt::print("{}", step.head);
                shown = head_lines;
            }
        }
    }
    fmt::print("\n");
    return true;
}

std::filesystem::path golden_path(const GoldenOptions& o, const Lesson& l) {
    return o.golden_dir / golden_file_name(l.number, l.slug);
}

// The file's bytes, or "" when it cannot be read (bless then rewrites it).
std::string read_text(const std::filesystem::path& file) {
    try {
        return read_file_bytes(file, "golden file");
    } catch (const GoldenError&) {
        return {};
    }
}

struct CheckRecordCount {
    std::size_t all = 0, failed = 0;
};

CheckRecordCount count_failed(const Trace& trace) {
    CheckRecordCount n;
    for (const auto& s : trace.steps())
        for (const auto& c : s.checks) n.all += 1, n.failed += c.holds ? 0 : 1;
    return n;
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

// The folder of `book --out` or `run --book`, made (or refused) before the lessons run, which may take a
// while; false after saying why (exit 3).
bool book_folder_ready(const std::filesystem::path& out, const char* option) {
    std::error_code ec;
    if (std::filesystem::exists(out, ec) && !std::filesystem::is_directory(out, ec)) {
        fmt::print(stderr, "attn: {} {}: exists and is not a directory\n", option, printable_utf8(out.string()));
        return false;
    }
    std::filesystem::create_directories(out, ec);
    if (ec || ::access(out.c_str(), W_OK | X_OK) != 0) {
        fmt::print(stderr, "attn: {} {}: cannot write there: {}\n", option, printable_utf8(out.string()),
                   ec ? ec.message() : std::strerror(errno));
        return false;
    }
    return true;
}

// The page of one lesson's run, as set up (its trace is pointed to when the book is written).
BookLesson book_page(const Lesson& l, const LessonRun& r, const LessonSetup& setup) {
    BookLesson page;
    page.number = l.number;
    page.slug = l.slug;
    page.title = l.title;
    page.sources = l.sources;
    page.reproducibility = reproducibility_line(l, r.trace.config(), setup);
    if (r.trace.config() != l.defaults || !setup.input.empty())
        page.note = fmt::format("Your own numbers: attn check and the golden file use {}.", config_text(l.defaults));
    page.stopped = r.stopped() ? stop_message(r) : "";
    page.extras = book_step_extras(l);
    return page;
}

// Writes the pages of these runs (one page each, in order) and the index into `out`, and says where;
// exit_ok, or exit_golden after saying why not.
int write_book_of(const std::filesystem::path& out, std::vector<BookLesson> pages, const std::vector<LessonRun>& runs) {
    for (std::size_t i = 0; i < pages.size(); ++i) pages[i].trace = &runs[i].trace;
    const Program& program = this_program();
    BookInfo info;
    info.made_by = fmt::format("{} {} (golden format {})", program.name, ATTN_VERSION, golden_format_version);
    add_exercises_page(info, pages);
    if (program.exercise_build)
        info.remark = fmt::format("These pages come from {}: the lessons ran with your exercise files from {}.",
                                  program.name, shown_path(program.exercises_dir));
    try {
        const auto files = write_book(out, pages, info);
        fmt::print("Wrote {} pages to {}: open {} in a browser.\n", files.size(), printable_utf8(out.string()),
                   printable_utf8(files.front().string()));
    } catch (const std::runtime_error& e) {
        fmt::print(stderr, "attn: {}\n", e.what());
        return exit_golden;
    }
    return exit_ok;
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
    std::vector<std::string> stops;
    for (const auto& l : all_lessons()) {
        // attn's own lessons record the steps they declare (tests/test_lessons.cpp holds them to it): no
        // lesson runs. A program built with a student's functions runs each at its smallest sizes (the
        // same steps, no measuring for seconds), to mark the lessons a starter stops early.
        if (!this_program().exercise_build) {
            line(std::to_string(l.number), l.slug, std::to_string(l.steps.size()), l.title, l.sources);
            continue;
        }
        const LessonRun run = run_lesson(l, Trace(l.slug, l.quick), true);
        line(std::to_string(l.number), l.slug, run.stopped() ? "?" : std::to_string(run.trace.steps().size()),
             l.title, l.sources);
        if (run.stopped()) stops.push_back(stop_message(run));
    }
    if (stops.empty()) return exit_ok;
    fmt::print("\n? = the lesson stops early:\n  {}\n", fmt::join(stops, "\n  "));
    return exit_mismatch;
}

int cmd_run(const RunOptions& o) {
    bool ok = true;
    const auto lessons = resolve(o.lessons, ok);
    if (!ok) return exit_usage;
    if (!o.step.empty() && lessons.size() != 1) {
        fmt::print(stderr, "attn: --step needs exactly one lesson, not {}\n", lessons.size());
        return exit_usage;
    }
    if ((!o.setup.settings.empty() || !o.setup.input.empty()) && lessons.size() != 1) {
        fmt::print(stderr, "attn: --set and --input need exactly one lesson, not {}: each lesson has its own "
                           "parameters and tensors\n", lessons.size());
        return exit_usage;
    }
    const bool book = !o.book_dir.empty();
    if (book && !o.step.empty()) {
        fmt::print(stderr, "attn: --book writes whole lessons, and --step ends the lesson after its step: leave one "
                           "out\n");
        return exit_usage;
    }
    std::error_code ec;
    if (!o.svg_dir.empty() && std::filesystem::exists(o.svg_dir, ec) && !std::filesystem::is_directory(o.svg_dir, ec)) {
        fmt::print(stderr, "attn: --svg {}: exists and is not a directory\n", o.svg_dir.string());
        return exit_usage;
    }
    if (book && !book_folder_ready(o.book_dir, "--book")) return exit_golden;
    std::vector<LessonRun> runs;  // --book: every run kept, for the pages written after the last lesson
    std::vector<BookLesson> pages;
    const bool pause = o.pause && ::isatty(STDIN_FILENO);
    bool all_hold = true;
    for (std::size_t li = 0; li < lessons.size(); ++li) {
        const Lesson& l = *lessons[li];
        int code = exit_ok;
        std::optional<LessonRun> maybe_run = run_as_set_up(l, o.setup, code, true, o.step);
        if (!maybe_run) return code;
        if (book) {
            pages.push_back(book_page(l, *maybe_run, o.setup));
            runs.push_back(std::move(*maybe_run));
        }
        const LessonRun& run = book ? runs.back() : *maybe_run;
        if (run.stopped()) {
            fmt::print("{}\n{}\n\n", lesson_header(l, run.trace.config(), o.setup, o.render.line_width), stop_message(run));
            all_hold = false;
            continue;
        }
        const Trace& trace = run.trace;
        const auto& steps = trace.steps();
        if (!o.step.empty() && !trace.find_step(o.step)) {
            std::vector<std::string> ids;
            for (const auto& s : steps) ids.push_back(s.id);
            fmt::print(stderr, "attn: lesson '{}' has no step '{}'; its steps are: {}\n", l.slug, printable_utf8(o.step),
                       fmt::join(ids, ", "));
            return exit_usage;
        }
        fmt::print("{}\n", lesson_header(l, trace.config(), o.setup, o.render.line_width));
        // every check counts, also those of the steps before the one --step shows (the lesson ran up
        // to that step): the exit code speaks for the steps run
        std::size_t checks = 0, failed = 0;
        for (const auto& s : steps)
            for (const auto& c : s.checks) checks += 1, failed += c.holds ? 0 : 1;
        for (std::size_t i = 0; i < steps.size(); ++i) {
            if (!o.step.empty() && steps[i].id != o.step) continue;
            const StepText shown = render_step_parts(steps[i], i + 1, steps.size(), o.render);
            const bool last = i + 1 == steps.size() && li + 1 == lessons.size();
            if (!pause || !o.step.empty()) {
                fmt::print("{}\n", shown.body.empty() ? shown.head : shown.head + "\n" + shown.body);
                continue;
            }
            if (!show_paged(shown) || (!last && !wait_for_enter("Enter: next step · q Enter: quit"))) {
                fmt::print("{}: stopped at step {} of {}{}\n", l.slug, i + 1, steps.size(),
                           book ? " (no book written)" : "");
                return all_hold && failed == 0 ? exit_ok : exit_mismatch;
            }
        }
        if (failed == 0)
            fmt::print("{}: all {} identity checks hold\n\n", l.slug, checks);
        else
            fmt::print("{}: {} of {} identity checks FAILED\n\n", l.slug, failed, checks);
        if (!o.svg_dir.empty()) {
            try {
                const auto files = write_svgs(trace, l.number, o.svg_dir);
                fmt::print("{}: wrote {} SVG picture{} to {}\n\n", l.slug, files.size(), files.size() == 1 ? "" : "s",
                           o.svg_dir.string());
            } catch (const std::runtime_error& e) {
                fmt::print(stderr, "attn: {}\n", e.what());
                return exit_golden;
            }
        }
        all_hold = all_hold && failed == 0;
    }
    if (book) {
        // an empty line after the last lesson's own, as between lessons
        if (const int written = write_book_of(o.book_dir, std::move(pages), runs); written != exit_ok) return written;
        fmt::print("\n");
    }
    // after the whole course, where to go next
    if (lessons.size() == all_lessons().size() && lessons.size() > 1 && o.step.empty())
        fmt::print("All {} lessons ran. Next:\n  one lesson at a time, step by step: {} run 1 --pause\n  your own sizes: {} "
                   "run 4 --help\n{}",
                   lessons.size(), program_command(), program_command(),
                   wrap_hanging("the exercises: write the functions yourself and check them with attn-student (README, "
                                "'Exercises (C++)').",
                                o.render.line_width, "  ", "    "));
    return all_hold ? exit_ok : exit_mismatch;
}

int cmd_book(const BookOptions& o) {
    bool ok = true;
    const auto lessons = resolve_for_setup(o.lessons, o.setup, ok);
    if (!ok) return exit_usage;
    if (!book_folder_ready(o.out, "--out")) return exit_golden;

    std::vector<LessonRun> runs;  // kept whole: the pages point into their traces
    runs.reserve(lessons.size());
    std::vector<BookLesson> pages;
    bool all_hold = true;
    for (const Lesson* l : lessons) {
        int code = exit_ok;
        std::optional<LessonRun> run = run_as_set_up(*l, o.setup, code, true);
        if (!run) return code;
        runs.push_back(std::move(*run));
        const LessonRun& r = runs.back();
        pages.push_back(book_page(*l, r, o.setup));
        all_hold = all_hold && !r.stopped() && r.trace.all_checks_hold();
    }
    if (const int written = write_book_of(o.out, pages, runs); written != exit_ok) return written;
    for (std::size_t i = 0; i < pages.size(); ++i) {
        const CheckRecordCount n = count_failed(runs[i].trace);
        if (runs[i].stopped()) fmt::print("{}\n", pages[i].stopped);
        else if (n.failed > 0) fmt::print("{}: {} of {} identity checks FAILED\n", pages[i].slug, n.failed, n.all);
    }
    return all_hold ? exit_ok : exit_mismatch;
}

int cmd_run_help(const std::string& usage, const std::vector<std::string>& names) {
    bool ok = true;
    const auto lessons = resolve(names, ok);
    if (!ok) return exit_usage;
    fmt::print("{}\n", usage);
    for (const Lesson* l : lessons) fmt::print("{}\n", parameter_help(*l));
    fmt::print("Memory cap: a lesson refuses sizes whose tensors would need more than {:.0f} GiB.\n",
               memory_cap_doubles * 8.0 / (1 << 30));
    return exit_ok;
}

int cmd_check(const GoldenOptions& o) {
    if (!tolerance_ok(o.tolerance)) return exit_usage;
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
        // a function that throws stops this lesson alone: its error is reported, and the next lessons still run
        const LessonRun run = run_lesson(*l, Trace(l->slug, l->defaults), true);
        if (run.stopped()) {
            fmt::print("{}\n", stop_message(run));
            if (code == exit_ok) code = exit_mismatch;
            continue;
        }
        const Trace& actual = run.trace;
        const LessonComparison cmp = compare_traces(actual, golden, o.tolerance);
        const bool checks_hold = report_failed_checks(actual);
        if (cmp.ok && checks_hold) {
            fmt::print("ok  {:<16} {} steps, {} tensors match {} (rtol {:g}, atol {:g})\n", l->slug,
                       cmp.steps_compared, cmp.tensors_compared, file.string(), o.tolerance.rtol, o.tolerance.atol);
            continue;
        }
        if (!cmp.ok) fmt::print("{}", cmp.report);
        if (code == exit_ok) code = exit_mismatch;
    }
    return code;
}

int cmd_bless(const GoldenOptions& o) {
    if (this_program().exercise_build) {
        fmt::print(stderr, "{}: bless refuses to run here: golden files come only from the reference program, attn\n",
                   this_program().name);
        return exit_usage;
    }
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
        fmt::print(stderr, "attn: golden directory {} {}\n", o.golden_dir.string(),
                   std::filesystem::exists(o.golden_dir, ec) ? "is not a directory" : "does not exist");
        return exit_golden;
    }
    int code = exit_ok;
    for (const Lesson* l : lessons) {
        const auto file = golden_path(o, *l);
        const Trace actual = run_lesson(*l, l->defaults).for_golden();
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

namespace attn {

namespace {

// The one lesson a command names, or nullptr after reporting why not.
const Lesson* single_lesson(const std::string& name) {
    const Lesson* l = find_lesson(name);
    if (!l) unknown_lesson(name);
    return l;
}

// Creates `dir` (and its parents) unless it exists; false after reporting a problem.
bool ensure_directory(const std::filesystem::path& dir) {
    std::error_code ec;
    if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)) {
        fmt::print(stderr, "attn: {} exists and is not a directory\n", dir.string());
        return false;
    }
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        fmt::print(stderr, "attn: cannot create {}: {}\n", dir.string(), ec.message());
        return false;
    }
    return true;
}

}  // namespace

namespace {

// One lesson's export into `out`, run as set up: its JSON file, or its .npy files (export-only data in
// out/data/); exit_ok, or the exit code after saying why not (exit_mismatch: the lesson stopped early).
int export_lesson(const Lesson& l, const ExportOptions& o, const std::filesystem::path& out) {
    int code = exit_ok;
    const std::optional<LessonRun> maybe_run = run_as_set_up(l, o.setup, code, false);
    if (!maybe_run) return code;
    const LessonRun& run = *maybe_run;
    if (!ensure_directory(out)) return exit_golden;
    if (run.stopped()) {
        fmt::print(stderr, "{}\n", stop_message(run));
        return exit_mismatch;
    }
    const Trace& trace = run.trace;
    fmt::print("{}\n", reproducibility_line(l, trace.config(), o.setup));
    std::size_t written = 0, data = 0;
    try {
        if (o.format == "json") {
            write_file_atomic(out / golden_file_name(l.number, l.slug), to_golden_json(trace));
            written = 1;
        } else {
            // export-only data goes to DIR/data/, where `attn compare DIR` and `attn grade` do not
            // look: it is never compared with a golden file
            for (const auto& s : trace.steps())
                for (const auto& t : s.tensors) {
                    if (t.export_only && data++ == 0 && !ensure_directory(out / export_data_dir)) return exit_golden;
                    write_file_atomic(out / (t.export_only ? export_data_dir : "") / (s.id + "." + t.name + ".npy"),
                                      to_npy(t.value));
                    ++written;
                }
        }
    } catch (const std::exception& e) {
        fmt::print(stderr, "attn: {}\n", e.what());
        return exit_golden;
    }
    fmt::print("wrote {} {} file{} to {}{}\n", written, o.format, written == 1 ? "" : "s", out.string(),
               data == 0 || o.format == "json" ? ""
                                               : fmt::format(" ({} of them export-only data, in {})", data,
                                                             (out / export_data_dir).string()));
    return exit_ok;
}

}  // namespace

int cmd_export(const ExportOptions& o) {
    bool ok = true;
    const auto lessons = resolve_for_setup(o.lessons, o.setup, ok);
    if (!ok) return exit_usage;
    // Several lessons run in one program, as `run` runs them: lesson 13 decodes with the race lesson 12
    // trained a moment before (transformer_race.hpp), where two exports trained it twice. Their JSON files
    // have names of their own; their .npy files go to a folder per lesson, DIR/<NN>_<slug>/, as `grade` reads.
    bool all_written = true;
    for (const Lesson* l : lessons) {
        const std::filesystem::path out =
            o.format == "npy" && lessons.size() > 1
                ? o.out / std::filesystem::path(golden_file_name(l->number, l->slug)).stem()
                : o.out;
        const int code = export_lesson(*l, o, out);
        if (code != exit_ok && code != exit_mismatch) return code;
        all_written = all_written && code == exit_ok;
    }
    return all_written ? exit_ok : exit_mismatch;
}

namespace {

struct Verdict {
    int code;              // exit code: ok, mismatch, usage or golden
    std::string step;      // first diverging step, when there is one
    std::string message;   // the report or the error
    bool missing = false;  // the submission holds none of the steps asked for
    // every tensor it holds of those steps is one numbers from elsewhere are not compared with (what
    // lesson 12's training decides, noise): they cannot be graded, and are not the student's fault
    bool ungradable = false;
};

// Which steps of a lesson to compare: all (empty), or these. With `required`, a step the
// submission lacks is a usage error (compare --step); without, it is skipped (grade).
struct StepChoice {
    std::vector<std::string> steps;
    bool required = false;
};

// Compares one submission with a lesson's golden file (all of compare's logic, no printing).
Verdict judge(const std::filesystem::path& submission, const Lesson& l, const StepChoice& choice,
              const std::filesystem::path& golden_dir, const Tolerance& tol) {
    Trace golden;
    try {
        golden = read_golden(golden_dir / golden_file_name(l.number, l.slug));
    } catch (const GoldenError& e) {
        return {exit_golden, "", fmt::format("golden file problem: {}", e.what())};
    }
    Submission sub;
    try {
        sub = read_submission(submission);
    } catch (const GoldenError& e) {
        return {exit_golden, "", e.what()};
    } catch (const std::exception& e) {
        return {exit_golden, "", fmt::format("{}: {}", submission.string(), e.what())};
    }
    if (sub.has_lesson && sub.trace.lesson() != l.slug)
        return {exit_usage, "", fmt::format("{} holds lesson '{}', not '{}'", submission.string(), sub.trace.lesson(),
                                            l.slug)};
    if (sub.has_config && sub.trace.config() != golden.config())
        return {exit_mismatch, "", fmt::format("{} was computed with {}, the golden file with {}", submission.string(),
                                               config_text(sub.trace.config()), config_text(golden.config()))};
    if (!choice.steps.empty()) {
        Trace chosen("", Config{});
        for (const auto& id : choice.steps) {
            if (!golden.find_step(id))
                return {exit_usage, "", fmt::format("lesson '{}' has no step '{}'", l.slug, printable_utf8(id))};
            const Step* step = sub.trace.find_step(id);
            if (step) chosen.steps().push_back(*step);
            else if (choice.required)
                return {exit_usage, "", fmt::format("{} has no tensors for step '{}'", submission.string(), id)};
        }
        if (chosen.steps().empty())
            return {exit_mismatch, "", fmt::format("{} holds none of the steps {}", submission.string(),
                                                   fmt::join(choice.steps, ", ")), true};
        sub.trace = chosen;
    }
    const LessonComparison cmp = compare_traces(sub.trace, golden, tol, Whose::peer);
    if (!cmp.ok) return {exit_mismatch, cmp.diverging_step, cmp.report};
    if (cmp.tensors_compared == 0 && cmp.tensors_shown > 0)
        return {exit_mismatch, "",
                fmt::format("{}: its {} tensors of these steps are not compared with numbers from elsewhere (lesson "
                            "12's training decides them, which numbers trained elsewhere cannot reproduce, or they "
                            "are noise; the golden file says why): not graded from numbers. attn grade --sources "
                            "grades the exercise on attn's trained models",
                            submission.string(), cmp.tensors_shown),
                false, true};
    if (cmp.tensors_compared == 0)
        return {exit_mismatch, "", fmt::format("{} holds no tensor of lesson '{}'", submission.string(), l.slug)};
    return {exit_ok, "",
            fmt::format("ok  {:<16} {} tensors in {} steps match (rtol {:g}, atol {:g}, or the tensor's own where it "
                        "declares one){}",
                        l.slug, cmp.tensors_compared, cmp.steps_compared, tol.rtol, tol.atol,
                        cmp.tensors_shown == 0 ? ""
                                               : fmt::format("; {} shown, not compared (the golden file says why)",
                                                             cmp.tensors_shown))};
}

}  // namespace

int cmd_compare(const CompareOptions& o) {
    if (!tolerance_ok(o.tolerance)) return exit_usage;
    const Lesson* l = single_lesson(o.lesson);
    if (!l) return exit_usage;
    const StepChoice choice{o.step.empty() ? std::vector<std::string>{} : std::vector<std::string>{o.step}, true};
    const Verdict v = judge(o.submission, *l, choice, o.golden_dir, o.tolerance);
    if (v.code == exit_ok || v.code == exit_mismatch)
        fmt::print("{}{}", v.message, v.message.empty() || v.message.back() == '\n' ? "" : "\n");
    else
        fmt::print(stderr, "attn: {}\n", v.message);
    return v.code;
}

}  // namespace attn

namespace attn {

namespace {

// The flat files `attn export <lesson> --format npy` writes (<step>.<tensor>.npy) directly in the
// student's folder: true when there are some and every one belongs to a step of lesson `l` (two
// lessons share step ids such as "decoder", so one file alone does not tell the lesson).
bool holds_flat_npy_of(const std::filesystem::path& dir, const Lesson& l, const std::filesystem::path& golden_dir) {
    Trace golden;
    try {
        golden = read_golden(golden_dir / golden_file_name(l.number, l.slug));
    } catch (const GoldenError&) {
        return false;
    }
    std::error_code ec;
    bool some = false;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        const auto dot = name.find('.');
        if (dot == std::string::npos || entry.path().extension() != ".npy") continue;
        if (!golden.find_step(name.substr(0, dot))) return false;
        some = true;
    }
    return some;
}

// One exercise of one student: the steps of its lesson that check it, from the student's
// <NN>_<slug>.json or <NN>_<slug>/ folder of .npy files.
GradeRow grade_one(const std::filesystem::path& dir, const Lesson& l, const Exercise& x, const GradeOptions& o) {
    GradeRow row{student_name(dir), l.slug, x.id, "", "", ""};
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
        row.result = "error";
        row.message = dir.string() + " is not a directory";
        return row;
    }
    const std::string base = golden_file_name(l.number, l.slug);
    const auto json_file = dir / base;
    const auto npy_dir = dir / base.substr(0, base.size() - 5);  // "01_bottleneck"
    std::filesystem::path found;
    if (std::filesystem::exists(json_file, ec)) found = json_file;
    else if (std::filesystem::exists(npy_dir, ec)) found = npy_dir;
    else if (holds_flat_npy_of(dir, l, o.golden_dir)) found = dir;
    if (found.empty()) {
        row.result = "missing";
        return row;
    }
    const Verdict v = judge(found, l, StepChoice{x.steps, false}, o.golden_dir, o.tolerance);
    row.result = v.missing          ? "missing"
                 : v.ungradable     ? "error"
                 : v.code == exit_ok ? "pass"
                 : v.code == exit_mismatch ? "fail"
                                           : "error";
    row.points = row.result == "pass" ? 1 : 0;  // from numbers: one point an exercise, of one
    row.step = v.step;
    row.message = capped(v.message, max_message_bytes);
    while (!row.message.empty() && row.message.back() == '\n') row.message.pop_back();
    return row;
}

}  // namespace

namespace {

// Whether `dir` holds a file ending in `ending`.
bool holds_file_ending(const std::filesystem::path& dir, const std::string& ending) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.size() > ending.size() && name.compare(name.size() - ending.size(), ending.size(), ending) == 0 &&
            e.is_regular_file(ec))
            return true;
    }
    return false;
}

bool holds_exercise_file(const std::filesystem::path& dir) {
    std::error_code ec;
    return std::any_of(all_exercises().begin(), all_exercises().end(), [&](const Exercise& x) {
        return std::filesystem::exists(std::filesystem::symlink_status(dir / exercise_file(x), ec));
    });
}

// One warning for a folder of sources that holds no exercise file: its exercise files one folder
// down (hand in that folder), or none at all (an empty folder, or other files only).
void warn_about_no_exercise_file(const std::filesystem::path& dir) {
    std::error_code ec;
    bool empty = true;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        empty = false;
        if (e.is_directory(ec) && !e.is_symlink(ec) && holds_exercise_file(e.path())) {
            fmt::print(stderr, "attn: warning: {} holds no exercise file, but {} does: hand in that folder "
                               "(graded as it is, every exercise is missing)\n",
                       printable_utf8(dir.string()), printable_utf8(e.path().string()));
            return;
        }
    }
    fmt::print(stderr, "attn: warning: {} {}: nothing handed in, every exercise is missing\n",
               printable_utf8(dir.string()), empty ? "is empty" : "holds no exercise file");
}

// Drops what is not a student's folder (a stray file beside them, said so) and warns about folders
// that look handed in wrong: no exercise file (none at all, or one folder down), or .cpp files
// graded from numbers. False (after saying so) when nothing is left to grade.
bool submissions_to_grade(GradeOptions& o) {
    std::vector<std::filesystem::path> kept;
    for (const auto& dir : o.submissions) {
        std::error_code ec;
        const auto status = std::filesystem::symlink_status(dir, ec);
        if (std::filesystem::is_regular_file(status)) {
            fmt::print(stderr, "attn: warning: skipped {}: a file, not a student's folder\n", printable_utf8(dir.string()));
            continue;
        }
        kept.push_back(dir);
        if (!std::filesystem::is_directory(status)) continue;  // its rows say what is wrong
        if (o.sources && !holds_exercise_file(dir)) warn_about_no_exercise_file(dir);
        if (!o.sources && holds_file_ending(dir, ".cpp"))
            fmt::print(stderr, "attn: warning: {} holds .cpp files, which grading from numbers does not read: add "
                               "--sources to build and check them\n",
                       printable_utf8(dir.string()));
    }
    if (kept.empty()) {
        fmt::print(stderr, "attn: nothing to grade: no student's folder among the {} given\n", o.submissions.size());
        return false;
    }
    o.submissions = kept;
    return true;
}

}  // namespace

int cmd_grade(const GradeOptions& o) {
    if (!tolerance_ok(o.tolerance)) return exit_usage;
    std::vector<const Exercise*> exercises;
    if (!resolve_exercises(o.exercises, exercises)) return exit_usage;
    // A broken golden file would fail every student: stop before grading anyone.
    for (const auto& l : all_lessons()) {
        try {
            read_golden(o.golden_dir / golden_file_name(l.number, l.slug));
        } catch (const GoldenError& e) {
            fmt::print(stderr, "attn: golden file problem: {}\n", e.what());
            return exit_golden;
        }
    }
    GradeOptions options = o;
    if (!o.points_file.empty() && !read_points_file(o.points_file, options.points)) return exit_usage;
    if (!submissions_to_grade(options)) return exit_usage;
    if (o.sources) return grade_from_sources(options, exercises);
    std::vector<GradeRow> rows;
    print_grade_header();
    for (const auto& dir : options.submissions) {
        const std::size_t first = rows.size();
        for (const Exercise* x : exercises) {
            rows.push_back(grade_one(dir, *find_lesson(x->lesson), *x, options));
            rows.back().worth = worth_in(options, x->id);
        }
        print_grade_line(rows, first, exercises.size());
    }
    return write_grade_reports(rows, exercises, options);
}

int cmd_keep_race(const std::filesystem::path& file, const std::filesystem::path& from) {
    using namespace transformer;
    const Config config = kept_race_config();
    try {
        (void)read_kept_race(file, config);
        std::filesystem::last_write_time(file, std::filesystem::file_time_type::clock::now());
        fmt::print("keep-race: {} holds this code's race already\n", file.string());
        return exit_ok;
    } catch (const RaceFileError& e) {
        std::error_code ec;
        if (std::filesystem::exists(file, ec)) fmt::print("keep-race: {}; training it again\n", e.what());
    }
    // another build's race of the same code (its digest names the sources that train it, and the bits
    // of a training do not depend on the compiler: check_exact holds both of CI's builds to them)
    if (!from.empty()) {
        try {
            const std::string bytes = read_file_bytes(from, "race file");  // read once: checked is written
            (void)parse_kept_race(bytes, config, from.string());
            write_file_atomic(file, bytes);
            fmt::print("keep-race: wrote {}, copied from {} (this code's race)\n", file.string(), from.string());
            return exit_ok;
        } catch (const std::exception& e) {  // RaceFileError, GoldenError: each names the file
            fmt::print("keep-race: not copied: {}; training it here\n", e.what());
        }
    }
    Trace trace("transformer", config);
    const std::shared_ptr<const Race> race = trained_race(config, trace);
    try {
        write_file_atomic(file, kept_race_bytes(config, *race));
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}: cannot write the race: {}\n", this_program().name, e.what());
        return exit_golden;
    }
    fmt::print("keep-race: wrote {} (lesson 12's race at {})\n", file.string(), config_text(config));
    return exit_ok;
}

}  // namespace attn
