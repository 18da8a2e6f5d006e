// The exercise commands of an exercise build (attn-student, attn-starter-<id>): `exercises`, the
// exercise `check` and `hint`; and the instructor's `attn instructor-check`.
#include "exercises/commands.hpp"

#include "attn_config.hpp"
#include "exercises/command_support.hpp"
#include "core/digest.hpp"
#include "core/golden.hpp"
#include "core/render.hpp"
#include "core/side_by_side.hpp"
#include "exercises/program.hpp"
#include "transformer_race.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <thread>
#include <ctime>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <set>
#include <stdexcept>
#include <system_error>

#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace attn {

static void unknown_exercise(const std::string& id) {
    std::vector<std::string> ids;
    for (const auto& x : all_exercises()) ids.push_back(x.id);
    const std::string best = closest_name(id, ids);
    if (!best.empty())
        fmt::print(stderr, "{}: unknown exercise '{}'; did you mean '{}'?\n", this_program().name, id, best);
    else
        fmt::print(stderr, "{}: unknown exercise '{}'; the exercises are: {}\n", this_program().name, id,
                   fmt::join(ids, ", "));
}

// The exercises named on the command line (every one when none is); false after reporting an unknown id.
bool resolve_exercises(const std::vector<std::string>& ids, std::vector<const Exercise*>& out) {
    if (ids.empty()) {
        for (const auto& x : all_exercises()) out.push_back(&x);
        return true;
    }
    for (const auto& id : ids) {
        const Exercise* x = find_exercise(id);
        if (!x) {
            unknown_exercise(id);
            return false;
        }
        if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
    }
    return true;
}

namespace {

// The hints shown so far, per exercise, in the build directory: rebuilding keeps them,
// a new build directory starts over.
std::filesystem::path hint_record() {
    const Program& p = this_program();
    return p.build_dir / (p.name + "-hints.json");
}

std::filesystem::path exercise_path(const Exercise& x) { return this_program().exercises_dir / exercise_file(x); }

// A file's contents as a number (64-bit FNV-1a): two versions of a file that differ differ here.
std::string content_hash(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return "";
    std::uint64_t hash = fnv1a64({});
    char buffer[65536];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
        hash = fnv1a64(std::string_view(buffer, static_cast<std::size_t>(in.gcount())), hash);
        if (in.eof()) break;
    }
    return digest_text(hash);
}

// The record of the last rebuild that attn-student started, in the build directory: the program it
// produced (its modification time) and the contents (hashes) of the exercise files it was built
// from. A file dated after the program (a clock that was ahead, an unpacked archive, `touch -d
// tomorrow`) stays newer than every program built from it; the record tells that its contents are
// those the program was built from, so one rebuild settles it instead of a rebuild forever.
std::filesystem::path rebuild_record() {
    const Program& p = this_program();
    return p.build_dir / (p.name + "-sources.json");
}

long long time_ticks(std::filesystem::file_time_type t) { return static_cast<long long>(t.time_since_epoch().count()); }

// The hashes recorded for the program dated `built`, or an empty object when the record is of
// another program (an older build, or none).
nlohmann::json recorded_hashes(std::filesystem::file_time_type built) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(rebuild_record(), ec)) return nlohmann::json::object();
    try {
        const nlohmann::json record = nlohmann::json::parse(read_file_bytes(rebuild_record(), "rebuild record"));
        if (record.at("program_time").get<long long>() == time_ticks(built) && record.at("files").is_object())
            return record.at("files");
    } catch (const std::exception&) {
        // an unreadable record is no record: the files' times decide
    }
    return nlohmann::json::object();
}

// The exercise file of the student's folder changed most recently after this program was built,
// or nothing: a program older than the code it is meant to check would report on the old code. A
// file dated in the future, whose time says nothing, has changed only when its contents differ
// from those the program was built from (the rebuild record's); any other file newer than the
// program has changed (saved again, even unchanged: rebuilding then costs little).
std::optional<std::filesystem::path> newer_exercise_file() {
    std::error_code ec;
    const auto built = std::filesystem::last_write_time("/proc/self/exe", ec);
    if (ec) return std::nullopt;
    const nlohmann::json hashes = recorded_hashes(built);
    const auto now = std::filesystem::file_time_type::clock::now();
    std::optional<std::filesystem::path> newest;
    auto newest_time = built;
    for (const auto& x : all_exercises()) {
        const auto file = exercise_path(x);
        const auto changed = std::filesystem::last_write_time(file, ec);
        if (ec || changed <= newest_time) continue;
        const auto known = hashes.find(file.string());
        if (changed > now && known != hashes.end() && known->is_string() && *known == content_hash(file)) continue;
        newest = file;
        newest_time = changed;
    }
    return newest;
}

// The contents of every exercise file now, by path.
nlohmann::json exercise_hashes() {
    nlohmann::json files = nlohmann::json::object();
    for (const auto& x : all_exercises()) files[exercise_path(x).string()] = content_hash(exercise_path(x));
    return files;
}

// This process's arguments, as /proc/self/cmdline holds them.
std::vector<std::string> own_arguments() {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> args;
    for (std::size_t at = 0; at < all.size();) {
        const std::size_t end = all.find('\0', at);
        args.push_back(all.substr(at, end - at));
        at = end == std::string::npos ? all.size() : end + 1;
    }
    return args;
}

// attn-student checks the student's current code, never a stale build of it: when an exercise
// file is newer than the program, it rebuilds the program (meson compile) and runs the new one
// with the same arguments. With ATTN_NO_REBUILD set, or no build directory to rebuild in, it
// refuses instead, naming the file. Returns when the program is fresh; otherwise exits.
void run_fresh_program() {
    const Program& p = this_program();
    if (p.name != "attn-student") return;
    const auto newer = newer_exercise_file();
    if (!newer) return;
    const std::string rebuild = fmt::format("meson compile -C {} {}", shell_quoted(p.build_dir.string()), p.name);
    const char* no_rebuild = std::getenv("ATTN_NO_REBUILD");
    if ((no_rebuild && *no_rebuild) || !std::filesystem::exists(p.build_dir / "build.ninja")) {
        fmt::print(stderr, "{}: {} changed after this program was built, so it would check the old code; rebuild it "
                           "first: {}\n",
                   p.name, printable_utf8(shown_path(*newer)), rebuild);
        std::exit(exit_usage);
    }
    fmt::print(stderr, "{}: {} changed since the last build: rebuilding ({})\n", p.name,
               printable_utf8(shown_path(*newer)), rebuild);
    std::fflush(stderr);
    // the contents the rebuild compiles, taken before it starts: a file saved during the build
    // differs from them, and is rebuilt next time
    const nlohmann::json hashes = exercise_hashes();
    // the compiler's messages go to stderr, where the student sees them, not into a JSON report
    const int status = std::system((rebuild + " 1>&2").c_str());
    if (status != 0) {
        fmt::print(stderr, "{}: the rebuild failed (the compiler's messages are above): fix {} and check again\n",
                   p.name, printable_utf8(shown_path(*newer)));
        std::exit(exit_mismatch);
    }
    std::error_code ec;
    const auto built = std::filesystem::last_write_time(p.build_dir / p.name, ec);
    if (!ec) {
        try {
            const nlohmann::json record = {{"program_time", time_ticks(built)}, {"files", hashes}};
            write_file_atomic(rebuild_record(), record.dump(2) + "\n");
        } catch (const std::exception& e) {
            // without the record, a file dated in the future is rebuilt at every check: slow, not wrong
            fmt::print(stderr, "{}: cannot record the rebuild: {}\n", p.name, e.what());
        }
    }
    std::vector<std::string> args = own_arguments();
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string fresh = (p.build_dir / p.name).string();
    ::execv(fresh.c_str(), argv.data());
    fmt::print(stderr, "{}: rebuilt, but cannot start {}: {}\n", p.name, fresh, std::strerror(errno));
    std::exit(exit_usage);
}


// The file to edit, and what to do when the folder lacks it (meson.build then built the starter).
std::string file_to_edit(const Exercise& x) {
    std::error_code ec;
    const std::string shown = shown_path(exercise_path(x));
    if (std::filesystem::exists(exercise_path(x), ec)) return shown;
    return shown + " (missing: copy it from lessons/exercises/, then meson setup --reconfigure)";
}

// The exercise checks decode lesson 13 with the reference's race, trained once per build
// (transformer_race.hpp): a student's last bits never change what lesson 13 is compared with. When an
// exercise of `wanted` (all when empty) needs it, a race file that is missing, stale or damaged
// stops the check before any lesson runs (RaceFileError, exit 3): no exercise is blamed for it.
void use_reference_race(const std::vector<const Exercise*>& wanted) {
    transformer::decode_with_kept_race(reference_race_file());
    const auto needed = exercises_needed(wanted);
    if (std::none_of(needed.begin(), needed.end(), [](const Exercise* x) { return x->lesson == "decoding"; })) return;
    (void)checked_reference_race("check again");
}

std::optional<std::string> output_of(const std::string& command);

// The exercise whose file an object of the exercise library was compiled from: the one whose file name
// ends the object's name after a '_' (meson names it after its path), the longest such name
// ("..._masked_softmax.cpp.o" is masked-softmax's, not softmax's); nullptr for none.
const Exercise* exercise_of_object(const std::string& object) {
    const Exercise* best = nullptr;
    for (const auto& x : all_exercises()) {
        const std::string ending = exercise_file(x) + ".o";
        const bool ends = object.size() > ending.size() &&
                          object.compare(object.size() - ending.size(), ending.size(), ending) == 0 &&
                          (object[object.size() - ending.size() - 1] == '_' || object[object.size() - ending.size() - 1] == '/');
        if (ends && (!best || exercise_file(x).size() > exercise_file(*best).size())) best = &x;
    }
    return best;
}

// The calls of attn functions that each exercise's file makes and its exercise may not (issue 40: a file
// calling nn::fast_attention does not write scaled attention). nm -u -A lists the undefined symbols of
// every object of the program's exercise library, each line named by its object. Nothing when the
// program has no such library or nm cannot run: attn grade --sources checks the files again.
std::map<const Exercise*, std::vector<std::string>> refused_calls() {
    std::map<const Exercise*, std::vector<std::string>> out;
    const std::filesystem::path library = this_program().exercise_library;
    std::error_code ec;
    if (library.empty() || !std::filesystem::exists(library, ec)) return out;
    const auto listed = output_of("nm -u -C -A " + shell_quoted(library.string()) + " 2>/dev/null");
    if (!listed) return out;
    std::map<const Exercise*, std::string> lines;
    std::istringstream in(*listed);
    for (std::string line; std::getline(in, line);) {
        // "<library>:<object>:                 U attn::nn::fast_attention(...)"
        const std::size_t u = line.find(" U ");
        const std::size_t colon = u == std::string::npos ? u : line.rfind(':', u);
        if (colon == std::string::npos) continue;
        const std::size_t start = line.rfind(':', colon - 1);
        const std::string object = line.substr(start == std::string::npos ? 0 : start + 1,
                                               colon - (start == std::string::npos ? 0 : start + 1));
        if (const Exercise* x = exercise_of_object(object)) lines[x] += line.substr(colon + 1) + "\n";
    }
    for (const auto& [x, text] : lines) {
        std::vector<std::string> calls = forbidden_calls(*x, text);
        if (!calls.empty()) out[x] = std::move(calls);
    }
    return out;
}

// An exercise whose file calls what it may not fails with no point, the calls named.
void refuse_calls(std::vector<ExerciseStatus>& statuses) {
    const auto refused = refused_calls();
    for (auto& s : statuses) {
        const auto found = refused.find(s.exercise);
        if (found == refused.end()) continue;
        s.state = ExerciseState::diverges;
        s.refused_calls = found->second;
        s.message = forbidden_calls_message(*s.exercise, found->second);
        s.unit_case.clear();
        s.step.clear();
        s.mismatches.clear();
        s.unit_cases_passed = 0;
    }
}

std::vector<ExerciseStatus> evaluate(const ExerciseOptions& o, const std::vector<const Exercise*>& wanted = {}) {
    use_reference_race(wanted);
    std::vector<ExerciseStatus> statuses =
        evaluate_exercises(o.golden_dir, shown_path(this_program().exercises_dir), o.tolerance, true, wanted);
    refuse_calls(statuses);
    return statuses;
}

std::vector<ExerciseStatus> chosen(const std::vector<ExerciseStatus>& all, const std::vector<const Exercise*>& wanted) {
    std::vector<ExerciseStatus> out;
    for (const auto& s : all)
        if (std::find(wanted.begin(), wanted.end(), s.exercise) != wanted.end()) out.push_back(s);
    return out;
}

std::size_t count_state(const std::vector<ExerciseStatus>& statuses, ExerciseState state) {
    return static_cast<std::size_t>(std::count_if(statuses.begin(), statuses.end(),
                                                  [&](const ExerciseStatus& s) { return s.state == state; }));
}

int exit_code(const std::vector<ExerciseStatus>& statuses) {
    if (count_state(statuses, ExerciseState::golden_problem) > 0) return exit_golden;
    return count_state(statuses, ExerciseState::passed) == statuses.size() ? exit_ok : exit_mismatch;
}

std::string indented(const std::string& text, std::size_t by) {
    std::string out;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        out += std::string(by, ' ') + text.substr(start, end - start) + "\n";
        start = end + 1;
    }
    return out;
}

// "meson compile -C build attn-student && build/attn-student check"
std::string rebuild_command() {
    const Program& p = this_program();
    return fmt::format("meson compile -C {} {} && {} check", shown_path(p.build_dir), p.name, program_command());
}

std::string mark(ExerciseState state) {
    switch (state) {
        case ExerciseState::passed: return "ok";
        case ExerciseState::not_started:
        case ExerciseState::not_finished: return "todo";
        case ExerciseState::blocked: return "block";
        case ExerciseState::diverges:
        case ExerciseState::error: return "FAIL";
        case ExerciseState::golden_problem: return "ERROR";
    }
    return "";
}

// The record of hints shown, or an empty one when there is none or it is unreadable.
nlohmann::json read_hint_record(const std::filesystem::path& file) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return nlohmann::json::object();
    try {
        nlohmann::json record = nlohmann::json::parse(read_file_bytes(file, "hint record"));
        if (record.is_object()) return record;
    } catch (const std::exception&) {
        // reported below, like a record of the wrong shape
    }
    fmt::print(stderr, "{}: {} is not a record of hints shown; starting the hints over\n", this_program().name,
               file.string());
    return nlohmann::json::object();
}

std::size_t hints_shown(const nlohmann::json& record, const std::string& id) {
    const auto found = record.find(id);
    return found != record.end() && found->is_number_unsigned() ? found->get<std::size_t>() : 0;
}

// What a student needs beside a failure: where, the numbers, expected and actual side by side
// for small tensors, and the hint reached: the last one `attn-student hint` showed (the first when
// none was asked for), so that the counter agrees with the hints already read.
std::string failure_details(const ExerciseStatus& s, const Tolerance& tol, const nlohmann::json& hints_read) {
    const Exercise& x = *s.exercise;
    std::string out = fmt::format("edit {}\n{}", file_to_edit(x), s.message);
    if (!out.empty() && out.back() != '\n') out += "\n";
    SideBySideOptions view;
    view.indent = "    ";
    std::size_t shown = 0;  // the first two tell the story; the report above lists every tensor
    for (const auto& m : s.mismatches) {
        const std::string table = render_side_by_side(m.actual, m.expected, tol, view);
        if (table.empty() || shown == 2) continue;
        out += fmt::format("  '{}' {}:\n{}", m.name, shape_string(shape_of(m.expected)), table);
        ++shown;
    }
    const std::size_t hint = std::clamp<std::size_t>(hints_shown(hints_read, x.id), 1, x.hints.size());
    out += fmt::format("hint {} of {}:\n{}", hint, x.hints.size(), indented(x.hints[hint - 1], 2));
    if (hint < x.hints.size()) out += fmt::format("more: {} hint {}\n", program_command(), x.id);
    return out;
}

void print_check_text(const std::vector<ExerciseStatus>& statuses, const Tolerance& tol) {
    const Program& p = this_program();
    fmt::print("{} check · exercise files in {}\n\n", p.name, shown_path(p.exercises_dir));
    std::size_t width = 0;
    for (const auto& s : statuses) width = std::max(width, s.exercise->id.size());
    const nlohmann::json hints_read = read_hint_record(hint_record());
    for (const auto& s : statuses) {
        fmt::print("{:<5} {}  {}\n", mark(s.state), pad(s.exercise->id, width), describe(s));
        switch (s.state) {
            case ExerciseState::diverges:
            case ExerciseState::error: fmt::print("{}", indented(failure_details(s, tol, hints_read), 6)); break;
            case ExerciseState::not_started:
            case ExerciseState::not_finished:
            case ExerciseState::golden_problem: fmt::print("{}", indented(s.message, 6)); break;
            case ExerciseState::passed:
            case ExerciseState::blocked: break;
        }
    }
    const std::size_t passed = count_state(statuses, ExerciseState::passed);
    fmt::print("\n{} of {} exercises passed.\n", passed, statuses.size());
    // under watch (which sets ATTN_UNDER_WATCH for its checks) a save rebuilds and checks by itself
    const char* watched = std::getenv("ATTN_UNDER_WATCH");
    if (passed < statuses.size() && !(watched && *watched))
        fmt::print("After editing, rebuild and check again:\n  {}\n", rebuild_command());
}

void print_check_json(const std::vector<ExerciseStatus>& statuses, const Tolerance& tol) {
    const Program& p = this_program();
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& s : statuses)
        list.push_back({{"id", s.exercise->id},
                        {"title", s.exercise->title},
                        {"lesson", s.exercise->lesson},
                        {"steps", s.exercise->steps},
                        {"file", shown_path(exercise_path(*s.exercise))},
                        {"status", state_name(s.state)},
                        {"description", describe(s)},
                        {"unit_case", s.unit_case},
                        {"step", s.step},
                        {"waiting_for", s.waiting_for},
                        {"blocked_by", s.root},
                        {"unmet", s.unmet},
                        {"unit_cases", s.unit_cases},
                        {"unit_cases_passed", s.unit_cases_passed},
                        {"points", s.points()},
                        {"max_points", s.max_points()},
                        {"message", s.message}});
    const nlohmann::ordered_json doc = {{"program", p.name},
                                        {"version", ATTN_VERSION},
                                        {"exercises_dir", shown_path(p.exercises_dir)},
                                        {"rtol", tol.rtol},
                                        {"atol", tol.atol},
                                        {"passed", count_state(statuses, ExerciseState::passed)},
                                        {"total", statuses.size()},
                                        {"exercises", list}};
    fmt::print("{}\n", doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

// ---------------------------------------------------------------- instructor check

// Counts and prints verdicts the way llm.c's test prints its tensors: OK or NOT OK, then what.
struct Verdicts {
    std::size_t held = 0, failed = 0;

    void operator()(bool holds, const std::string& what) {
        fmt::print("{:<7} {}\n", holds ? "OK" : "NOT OK", what);
        (holds ? held : failed) += 1;
    }
};

// What is wrong with the exercise table ("" when nothing): rows that a status could not be
// computed from, or that a student could not work from.
std::string table_problems() {
    std::vector<std::string> problems, earlier;
    for (const auto& x : all_exercises()) {
        if (!find_lesson(x.lesson)) problems.push_back(fmt::format("{}: no lesson '{}'", x.id, x.lesson));
        if (x.steps.empty()) problems.push_back(x.id + ": no steps");
        if (x.hints.size() < 2 || x.hints.size() > 3) problems.push_back(x.id + ": needs 2 or 3 hints");
        for (const auto& u : x.uses) {
            const Exercise* used = find_exercise(u);
            const bool is_earlier = std::find(earlier.begin(), earlier.end(), u) != earlier.end();
            if (!used || u == x.id)
                problems.push_back(fmt::format("{}: uses '{}', which is not another exercise", x.id, u));
            else if (!is_earlier && used->lesson != x.lesson)
                problems.push_back(fmt::format("{}: uses '{}', a later exercise of another lesson", x.id, u));
        }
        earlier.push_back(x.id);
    }
    return fmt::format("{}", fmt::join(problems, "; "));
}

// Whether the instructor asked about exercise `id` (every one when none was named).
bool asked_about(const InstructorOptions& o, const std::string& id) {
    return o.exercises.empty() || std::count(o.exercises.begin(), o.exercises.end(), id) > 0;
}

// What `attn check` checks: every lesson matches its golden file, and its identity checks hold; of
// the lessons of the exercises asked about.
void check_reference_lessons(Verdicts& verdict, const InstructorOptions& o) {
    const std::filesystem::path& golden_dir = o.golden_dir;
    for (const auto& l : all_lessons()) {
        const bool wanted = std::any_of(all_exercises().begin(), all_exercises().end(), [&](const Exercise& x) {
            return x.lesson == l.slug && asked_about(o, x.id);
        });
        if (!o.exercises.empty() && !wanted) continue;
        const std::string what = fmt::format("lesson {} {}: the reference matches its golden file", l.number, l.slug);
        try {
            const Trace actual = run_lesson(l, l.defaults);
            const LessonComparison cmp =
                compare_traces(actual, read_golden(golden_dir / golden_file_name(l.number, l.slug)), Tolerance{});
            verdict(cmp.ok && actual.all_checks_hold(), cmp.ok ? what : what + "\n" + indented(cmp.report, 8));
        } catch (const GoldenError& e) {
            verdict(false, what + ": " + e.what());
        } catch (const std::exception& e) {
            // a library function that throws fails this lesson alone; the later ones are still checked
            verdict(false, what + ": the reference stopped with an error: " + e.what());
        }
    }
}

// The standard output of a shell command, or nothing when it cannot be started.
std::optional<std::string> output_of(const std::string& command) {
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return std::nullopt;
    std::string out;
    char buffer[4096];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
    ::pclose(pipe);
    return out;
}

// What exercise `id` declares it may depend on: its uses and its unit cases' calls, followed through
// what those declare.
std::set<std::string> declared_by(const std::string& id) {
    std::set<std::string> out;
    std::vector<std::string> todo = {id};
    while (!todo.empty()) {
        const Exercise* y = find_exercise(todo.back());
        todo.pop_back();
        if (!y) continue;
        std::vector<std::string> named = y->uses;
        for (const auto& c : unit_case_calls(y->id)) named.push_back(c);
        for (const auto& n : named)
            if (out.insert(n).second) todo.push_back(n);
    }
    return out;
}

// What `<program> check <ids> --format json --golden <golden>` says of each exercise asked, by id;
// throws when the program did not answer for every one of them.
std::map<std::string, nlohmann::json> exercises_checked_by(const std::filesystem::path& program,
                                                            const std::vector<std::string>& ids,
                                                            const std::filesystem::path& golden_dir) {
    const auto output = output_of(shell_quoted(program.string()) + " check " + fmt::format("{}", fmt::join(ids, " ")) +
                                  " --format json --golden " + shell_quoted(golden_dir.string()));
    const nlohmann::json doc = nlohmann::json::parse(output.value_or(""));
    std::map<std::string, nlohmann::json> entries;
    for (const auto& e : doc.at("exercises")) entries[e.value("id", "")] = e;
    for (const auto& id : ids)
        if (!entries.count(id)) throw std::runtime_error("not the exercises asked for");
    return entries;
}

std::string did_not_answer(const std::filesystem::path& program, const std::vector<std::string>& ids) {
    return fmt::format("{} did not answer 'check {} --format json' (meson compile {} builds it)", program.string(),
                       fmt::join(ids, " "), program.filename().string());
}

// Each exercise's untouched starter, linked with the reference for everything else, must stop
// its lesson with exactly its not-done message: "not started", not "passed" nor "diverges". Then
// every exercise that declares it (Exercise::uses, its unit cases' calls) must pass or wait for
// it (asked in a second run, and only where the starter is what it should be). The others are not
// asked here: check_alone shows that they never run its function.
void check_starters(Verdicts& verdict, const InstructorOptions& o) {
    for (const auto& x : all_exercises()) {
        if (!asked_about(o, x.id)) continue;
        const auto program = o.starters_dir / ("attn-starter-" + x.id);
        nlohmann::json entry;
        try {
            entry = exercises_checked_by(program, {x.id}, o.golden_dir).at(x.id);
        } catch (const std::exception&) {
            verdict(false, x.id + ": " + did_not_answer(program, {x.id}));
            continue;
        }
        const std::string file = entry.value("file", ""), message = entry.value("message", "");
        const std::string status = entry.value("status", "");
        const bool holds = status == "not_started" && std::filesystem::path(file).filename() == exercise_file(x) &&
                           message == fmt::format("exercise {} is not done yet: write it in {}", x.id, file);
        verdict(holds, fmt::format("{}: the untouched starter says \"{}\"{}", x.id, message,
                                   holds ? "" : " (status " + status + ")"));
        // what declares it, asked only of a program whose starter is what it should be
        std::vector<std::string> ids;
        for (const auto& other : all_exercises())
            if (other.id != x.id && declared_by(other.id).count(x.id)) ids.push_back(other.id);
        if (!holds || ids.empty()) continue;
        std::map<std::string, nlohmann::json> entries;
        try {
            entries = exercises_checked_by(program, ids, o.golden_dir);
        } catch (const std::exception&) {
            verdict(false, x.id + ": " + did_not_answer(program, ids));
            continue;
        }
        std::vector<std::string> blamed;
        for (const auto& [id, e] : entries) {
            const std::string state = e.value("status", "");
            if (state != "passed" && !(state == "blocked" && e.value("waiting_for", "") == x.id))
                blamed.push_back(fmt::format("{} {}", id, e.value("description", state)));
        }
        verdict(blamed.empty(),
                fmt::format("{}: with its starter, {} pass{} or wait{} for it{}", x.id,
                            ids.size() == 1 ? "the exercise that declares it"
                                            : fmt::format("the {} exercises that declare it", ids.size()),
                            ids.size() == 1 ? "es" : "", ids.size() == 1 ? "s" : "",
                            blamed.empty() ? "" : ": " + fmt::format("{}", fmt::join(blamed, "; "))));
    }
}

// Every exercise passes while every exercise it does not declare is wrong, all at once: a wrong
// file elsewhere can then block it only where it says so (issue 32, section 8). attn-alone-<id>
// links its reference, the references of what it declares (followed through what those declare)
// and the starter of every other exercise. A starter is the wrong answer nothing can miss: any call
// to it throws, so a function the exercise's unit cases or lesson steps ran undeclared would stop
// them. The program's list (meson.build's exercise_declares) must be the table's.
void check_alone(Verdicts& verdict, const InstructorOptions& o) {
    const auto& linked = this_program().alone_references;
    for (const auto& x : all_exercises()) {
        if (!asked_about(o, x.id)) continue;
        std::set<std::string> declared = declared_by(x.id);
        declared.insert(x.id);
        const auto found = linked.find(x.id);
        if (found == linked.end() || found->second != declared) {
            verdict(false, fmt::format("{}: attn-alone-{} links the references of {}, but {} declares {} (make "
                                       "exercise_declares in meson.build follow src/exercises/table.cpp and the unit "
                                       "cases' calls)",
                                       x.id, x.id,
                                       found == linked.end() ? "nothing" : fmt::format("{}", fmt::join(found->second, ", ")),
                                       x.id, fmt::join(declared, ", ")));
            continue;
        }
        const auto program = o.starters_dir / ("attn-alone-" + x.id);
        nlohmann::json entry;
        try {
            entry = exercises_checked_by(program, {x.id}, o.golden_dir).at(x.id);
        } catch (const std::exception&) {
            verdict(false, x.id + ": " + did_not_answer(program, {x.id}));
            continue;
        }
        const std::size_t wrong = all_exercises().size() - declared.size();
        const std::string state = entry.value("status", "");
        verdict(state == "passed",
                fmt::format("{}: passes while the {} exercise{} it does not declare {} wrong at once (their "
                            "starters){}",
                            x.id, wrong, wrong == 1 ? "" : "s", wrong == 1 ? "is" : "are",
                            state == "passed" ? "" : ": " + entry.value("description", state)));
    }
}

// The order promise: working down the table, each exercise can pass before the next is written.
// attn-through-<id> has the references up to <id> and the starters of every later exercise: <id>
// must pass there, except where it declares a later exercise of its lesson among its uses (README,
// "Exercises"): then it may be blocked by those alone, and must pass in the row of the last of them,
// beside that row's own exercise. The last row is the reference, checked in this program. Each row checks only its exercises
// (and the lessons of what they use), so the rows together cost about one run of each lesson.
void check_order(Verdicts& verdict, const InstructorOptions& o) {
    const auto& table = all_exercises();
    std::map<std::string, std::vector<std::string>> deferred;  // later exercise -> earlier ones passing with it
    for (std::size_t k = 0; k < table.size(); ++k) {
        const Exercise& x = table[k];
        const auto program = o.starters_dir / ("attn-through-" + x.id);
        std::vector<std::string> asked = deferred[x.id];
        // a row asked about, or the row of the later exercise one asked about waits for
        if (!asked_about(o, x.id) && asked.empty()) continue;
        asked.push_back(x.id);
        std::map<std::string, nlohmann::json> entries;
        if (k + 1 == table.size()) {  // every reference: this program
            std::vector<const Exercise*> wanted;
            for (const auto& id : asked) wanted.push_back(find_exercise(id));
            for (const auto& st : evaluate_exercises(o.golden_dir, "", Tolerance{}, true, wanted))
                entries[st.exercise->id] = {{"status", state_name(st.state)}, {"description", describe(st)},
                                            {"unmet", st.unmet}};
        }
        try {
            if (k + 1 < table.size()) entries = exercises_checked_by(program, asked, o.golden_dir);
        } catch (const std::exception&) {
            verdict(false, x.id + ": " + did_not_answer(program, asked));
            continue;
        }
        const auto& mine = entries.at(x.id);
        const std::string state = mine.value("status", "");
        // blocked only by later exercises of its own lesson that it declares: it passes with the last of them
        const auto unmet = mine.value("unmet", std::vector<std::string>{});
        bool waits_as_declared = state == "blocked" && !unmet.empty();
        const Exercise* last = nullptr;
        for (const auto& u : unmet) {
            const Exercise* y = find_exercise(u);
            if (!y || y <= &x || y->lesson != x.lesson || std::count(x.uses.begin(), x.uses.end(), u) == 0)
                waits_as_declared = false;
            else if (!last || y > last)
                last = y;
        }
        std::vector<std::string> not_passed;
        for (const auto& id : deferred[x.id])
            if (entries.at(id).value("status", "") != "passed")
                not_passed.push_back(id + " " + entries.at(id).value("description", ""));
        if (waits_as_declared) deferred[last->id].push_back(x.id);
        const bool holds = (state == "passed" || waits_as_declared) && not_passed.empty();
        std::string what = fmt::format("{}: with the references of exercises 1 to {} and the starters after it, ", x.id,
                                       k + 1);
        if (state == "passed") what += "it passes";
        else if (waits_as_declared) what += fmt::format("it waits for {}, as it declares", fmt::join(unmet, ", "));
        else what += "it does not pass: " + mine.value("description", state);
        if (!deferred[x.id].empty())
            what += fmt::format("; {} {}", fmt::join(deferred[x.id], ", "),
                                not_passed.empty() ? (deferred[x.id].size() == 1 ? "passes with it" : "pass with it")
                                                   : fmt::format("do not pass with it: {}", fmt::join(not_passed, "; ")));
        verdict(holds, what);
    }
}

// watch asks its check for the states it found (ATTN_WATCH_RECORD names the file): id -> state and,
// for a blocked one, its root.
void write_watch_record(const std::vector<ExerciseStatus>& statuses) {
    const char* file = std::getenv("ATTN_WATCH_RECORD");
    if (!file || !*file) return;
    nlohmann::json record = nlohmann::json::object();
    for (const auto& s : statuses) record[s.exercise->id] = {{"status", state_name(s.state)}, {"blocked_by", s.root}};
    try {
        write_file_atomic(file, record.dump() + "\n");
    } catch (const std::exception&) {
        // watch then keeps its focus: nothing is lost but the move to the next exercise
    }
}

}  // namespace

int cmd_exercises(const ExerciseOptions& o) {
    if (!tolerance_ok(o.tolerance)) return exit_usage;
    run_fresh_program();
    const Program& p = this_program();
    const auto statuses = evaluate(o);
    std::size_t id_width = 8, state_width = 6;
    for (const auto& s : statuses) {
        id_width = std::max(id_width, display_width(s.exercise->id));
        state_width = std::max(state_width, display_width(describe(s)));
    }
    fmt::print("{} · exercise files in {} · {} of {} passed\n\n", p.name, shown_path(p.exercises_dir),
               count_state(statuses, ExerciseState::passed), statuses.size());
    fmt::print(" #  {}  {}  file to edit\n", pad("exercise", id_width), pad("status", state_width));
    for (std::size_t i = 0; i < statuses.size(); ++i) {
        const ExerciseStatus& s = statuses[i];
        fmt::print("{:>2}  {}  {}  {}\n", i + 1, pad(s.exercise->id, id_width), pad(describe(s), state_width),
                   file_to_edit(*s.exercise));
    }
    const auto next = std::find_if(statuses.begin(), statuses.end(), [](const ExerciseStatus& s) {
        return s.state != ExerciseState::passed && s.state != ExerciseState::blocked;
    });
    if (next == statuses.end() && count_state(statuses, ExerciseState::passed) == statuses.size())
        fmt::print("\nEvery exercise passes.\n");
    else if (next != statuses.end())
        fmt::print("\nNext: {0}. '{1} check {0}' shows where it stands, '{1} hint {0}' gives a hint.\n",
                   next->exercise->id, program_command());
    return count_state(statuses, ExerciseState::golden_problem) > 0 ? exit_golden : exit_ok;
}

int cmd_check_exercises(const ExerciseOptions& o) {
    if (!tolerance_ok(o.tolerance)) return exit_usage;
    std::vector<const Exercise*> wanted;
    if (!resolve_exercises(o.exercises, wanted)) return exit_usage;
    run_fresh_program();
    const auto statuses = chosen(evaluate(o, wanted), wanted);
    if (o.format == "json")
        print_check_json(statuses, o.tolerance);
    else
        print_check_text(statuses, o.tolerance);
    write_watch_record(statuses);
    return exit_code(statuses);
}

namespace {

// Every exercise file of the folder with its modification time (absent files too, as "none").
std::vector<std::pair<std::filesystem::path, std::filesystem::file_time_type>> exercise_file_times() {
    std::vector<std::pair<std::filesystem::path, std::filesystem::file_time_type>> out;
    for (const auto& x : all_exercises()) {
        std::error_code ec;
        const auto file = exercise_path(x);
        const auto t = std::filesystem::last_write_time(file, ec);
        out.emplace_back(file, ec ? std::filesystem::file_time_type::min() : t);
    }
    return out;
}

// Flushes standard output; throws the write failure main() reports (exit 3; silent for EPIPE, a
// reader that has gone) when it cannot be written: a watch whose output goes nowhere must end.
void flush_output() {
    errno = 0;
    if (std::fflush(stdout) != 0 || std::ferror(stdout))
        throw std::system_error(errno != 0 ? errno : EIO, std::generic_category(), "cannot write to file");
}

// Throws as flush_output does when standard output can no longer be written although nothing is
// being written: the reader of the pipe has gone (`watch | head -2`), the terminal hung up, or the
// descriptor is closed. A watch waiting for a change sees it within a quarter of a second.
void stop_when_output_gone() {
    pollfd out{STDOUT_FILENO, 0, 0};
    if (::poll(&out, 1, 0) != 1) return;
    if (out.revents & POLLNVAL) throw std::system_error(EBADF, std::generic_category(), "cannot write to file");
    if (out.revents & (POLLERR | POLLHUP)) throw std::system_error(EPIPE, std::generic_category(), "cannot write to file");
}

// Runs `argv` and waits for it; its exit code, or exit_usage when it could not start.
// The exercise watch turns to: the first in table order that has not passed, or the root of the
// chain that blocks it; "" when every one has passed.
std::string next_unfinished(const std::map<std::string, std::pair<std::string, std::string>>& known) {
    for (const auto& x : all_exercises()) {
        const auto it = known.find(x.id);
        if (it == known.end() || it->second.first == "passed") continue;
        if (it->second.first == "blocked" && !it->second.second.empty()) return it->second.second;
        return x.id;
    }
    return "";
}

// Whether `folder` is gone: removed or moved (no such path), or removed while still reachable (a
// directory whose link count is 0, as a bind mount of a removed folder shows it).
bool folder_gone(const std::filesystem::path& folder) {
    struct stat st{};
    if (::stat(folder.c_str(), &st) != 0) return errno == ENOENT || errno == ENOTDIR;
    return !S_ISDIR(st.st_mode) || st.st_nlink == 0;
}

int run_and_wait(const std::vector<std::string>& args) {
    const pid_t pid = ::fork();
    if (pid < 0) return exit_usage;
    if (pid == 0) {
        std::vector<char*> argv;
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : exit_usage;
}

// watch's end when the folder it watches is gone: nothing it waits for can happen.
int exercise_folder_gone(const Program& p) {
    fmt::print(stderr, "{} watch: the exercise folder {} is gone (deleted or moved): there is nothing left to "
                       "watch; put it back, or set up a build for its new place\n",
               p.name, printable_utf8(shown_path(p.exercises_dir)));
    return exit_golden;
}

}  // namespace

int cmd_watch(const ExerciseOptions& o, std::size_t runs) {
    const Program& p = this_program();
    if (p.name != "attn-student") {
        fmt::print(stderr, "{}: watch is a command of attn-student (the program built from your exercise files)\n",
                   p.name);
        return exit_usage;
    }
    std::vector<const Exercise*> wanted;
    if (!resolve_exercises(o.exercises, wanted)) return exit_usage;
    const std::vector<std::string> options = {"--golden", o.golden_dir.string(), "--rtol",
                                              fmt::format("{:.17g}", o.tolerance.rtol), "--atol",
                                              fmt::format("{:.17g}", o.tolerance.atol)};
    // Named exercises are checked every time. Otherwise the first check is of every exercise, and
    // from then on watch follows one: the first that has not passed (or the root of what blocks
    // it), and the next one as soon as it passes, like rustlings.
    const bool follow = o.exercises.empty();
    const auto record = p.build_dir / "attn-student-watch.json";
    if (follow) ::setenv("ATTN_WATCH_RECORD", record.c_str(), 1);
    ::setenv("ATTN_UNDER_WATCH", "1", 1);  // its checks leave out "rebuild and check again"
    std::map<std::string, std::pair<std::string, std::string>> known;  // id -> state, root when blocked
    std::string focus;
    const bool terminal = ::isatty(STDOUT_FILENO) == 1;
    fmt::print("Watching {}: save an exercise file and it is rebuilt and checked again. Ctrl-C stops.\n",
               printable_utf8(shown_path(p.exercises_dir)));
    int code = exit_ok;
    for (std::size_t done = 0;;) {
        if (folder_gone(p.exercises_dir)) return exercise_folder_gone(p);
        const auto before = exercise_file_times();
        std::vector<std::string> args = {(p.build_dir / p.name).string(), "check"};
        if (follow && !focus.empty()) args.push_back(focus);
        for (const auto& id : o.exercises) args.push_back(id);
        args.insert(args.end(), options.begin(), options.end());
        std::time_t now = std::time(nullptr);
        char clock[16] = "";
        std::strftime(clock, sizeof clock, "%H:%M:%S", std::localtime(&now));
        if (terminal) fmt::print("\x1b[H\x1b[2J");  // a clear screen for each check, on a terminal only
        fmt::print("\n── check{} at {} ──\n", focus.empty() ? "" : " of " + focus, clock);
        flush_output();
        // check rebuilds the program first when a file is newer than it (run_fresh_program)
        std::error_code ec;
        std::filesystem::remove(record, ec);
        code = run_and_wait(args);
        if (follow) {
            try {
                const nlohmann::json seen = nlohmann::json::parse(read_file_bytes(record, "watch record"));
                for (const auto& [id, e] : seen.items()) known[id] = {e.value("status", ""), e.value("blocked_by", "")};
            } catch (const std::exception&) {
                // no record (the build failed): the focus stays
            }
            std::filesystem::remove(record, ec);
        }
        if (runs > 0 && ++done >= runs) return code;
        if (follow) {
            const std::string next = next_unfinished(known);
            const bool passed = !focus.empty() && known.count(focus) && known.at(focus).first == "passed";
            if (passed && !next.empty()) {
                fmt::print("\n{} passes: on to {}.\n", focus, next);
                focus = next;
                continue;  // checked at once: it may pass already
            }
            if (next.empty() && !known.empty()) fmt::print("\nEvery exercise passes.\n");
            else if (focus != next) fmt::print("\nNext: {}. Watching it; it is checked whenever you save.\n", next);
            focus = next;
        }
        fmt::print("\n(waiting for a change to {}...)\n", printable_utf8(shown_path(p.exercises_dir)));
        flush_output();
        while (exercise_file_times() == before) {
            stop_when_output_gone();
            if (folder_gone(p.exercises_dir)) return exercise_folder_gone(p);
            std::this_thread::sleep_for(std::chrono::milliseconds(250));
        }
        // an editor may write a file in several steps: let it finish
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
}

int cmd_hint(const std::string& id) {
    const Exercise* x = find_exercise(id);
    if (!x) {
        unknown_exercise(id);
        return exit_usage;
    }
    const Program& p = this_program();
    const auto file = hint_record();
    nlohmann::json record = read_hint_record(file);
    const std::size_t total = x->hints.size(), before = hints_shown(record, id);
    const std::size_t shown = std::min(before + 1, total);
    fmt::print("{} · {} · hint {} of {}\n\n{}\n", x->id, x->title, shown, total, indented(x->hints[shown - 1], 2));
    if (shown < total)
        fmt::print("Next hint: {} hint {}\n", program_command(), id);
    else
        fmt::print("That is the last hint; asking again shows it again.\n");
    record[id] = shown;
    try {
        write_file_atomic(file, record.dump(2) + "\n");
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}: cannot remember the hints shown: {}\n", p.name, e.what());
    }
    return exit_ok;
}

namespace {

// The first of <file>.bak, <file>.bak.1, <file>.bak.2, ... that does not exist: an earlier backup
// is never overwritten.
std::filesystem::path free_backup_name(const std::filesystem::path& file) {
    std::error_code ec;
    for (int n = 0;; ++n) {
        std::filesystem::path candidate = file;
        candidate += n == 0 ? std::string(".bak") : ".bak." + std::to_string(n);
        if (!std::filesystem::exists(std::filesystem::symlink_status(candidate, ec))) return candidate;
    }
}

// Asks on the terminal; true when the answer is y or yes.
bool confirmed(const std::string& question) {
    fmt::print("{} [y/N] ", question);
    std::fflush(stdout);
    std::string answer;
    if (!std::getline(std::cin, answer)) return false;
    const auto first = answer.find_first_not_of(" \t");
    const std::string word = first == std::string::npos ? "" : answer.substr(first, answer.find_last_not_of(" \t") - first + 1);
    return word == "y" || word == "Y" || word == "yes" || word == "Yes";
}

}  // namespace

int cmd_reset(const ResetOptions& o) {
    const Program& p = this_program();
    const Exercise* x = find_exercise(o.exercise);
    if (!x) {
        unknown_exercise(o.exercise);
        return exit_usage;
    }
    const std::filesystem::path folder = o.folder.empty() ? p.exercises_dir : o.folder;
    const std::filesystem::path file = folder / exercise_file(*x);
    const std::filesystem::path starter = p.source_dir / "lessons" / "exercises" / exercise_file(*x);
    std::error_code ec;
    if (std::filesystem::equivalent(folder, starter.parent_path(), ec)) {
        fmt::print(stderr,
                   "{}: {} is the folder of the starters themselves (lessons/exercises), so there is no other copy to "
                   "put back; git restores it: git -C {} checkout -- lessons/exercises/{}\n",
                   p.name, printable_utf8(shown_path(folder)), shell_quoted(p.source_dir.string()), exercise_file(*x));
        return exit_usage;
    }
    std::string fresh;
    try {
        fresh = read_file_bytes(starter, "starter");
    } catch (const GoldenError& e) {
        fmt::print(stderr, "{}: cannot read the starter: {}\n", p.name, e.what());
        return exit_golden;
    }
    const bool exists = std::filesystem::exists(std::filesystem::symlink_status(file, ec));
    std::string old;
    if (exists) {
        try {
            old = read_file_bytes(file, "exercise file");
        } catch (const GoldenError& e) {
            fmt::print(stderr, "{}: {}; nothing was changed\n", p.name, e.what());
            return exit_golden;
        }
        if (old == fresh) {
            fmt::print("{} is already the starter of {}: nothing to do\n", printable_utf8(shown_path(file)), x->id);
            return exit_ok;
        }
    }
    const std::filesystem::path backup = free_backup_name(file);
    const std::string question =
        exists ? fmt::format("Put the starter of {} back in {}? Your file is kept as {}.", x->id,
                             printable_utf8(shown_path(file)), printable_utf8(shown_path(backup)))
               : fmt::format("Put the starter of {} in {} (there is no file there now)?", x->id,
                             printable_utf8(shown_path(file)));
    if (!o.yes) {
        if (!::isatty(STDIN_FILENO)) {
            fmt::print(stderr, "{}: reset replaces {}; standard input is not a terminal, so it cannot ask: add --yes to "
                               "confirm (your file is then kept as {})\n",
                       p.name, printable_utf8(shown_path(file)), printable_utf8(shown_path(backup)));
            return exit_usage;
        }
        if (!confirmed(question)) {
            fmt::print("Nothing was changed.\n");
            return exit_ok;
        }
    }
    try {
        // the backup first, whole and on disk, and only then the starter over the file
        if (exists) write_file_atomic(backup, old);
        write_file_atomic(file, fresh);
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}: {}; {} is unchanged\n", p.name, e.what(), printable_utf8(shown_path(file)));
        return exit_golden;
    }
    if (exists)
        fmt::print("{}: the starter is back; your file is kept as {}\n", printable_utf8(shown_path(file)),
                   printable_utf8(shown_path(backup)));
    else
        fmt::print("{}: the starter is in place\n", printable_utf8(shown_path(file)));
    return exit_ok;
}

int cmd_instructor_check(const InstructorOptions& o) {
    std::vector<const Exercise*> wanted;
    if (!resolve_exercises(o.exercises, wanted)) return exit_usage;
    fmt::print("instructor check · golden files in {} · starter programs in {}{}{}\n\n", o.golden_dir.string(),
               o.starters_dir.string(),
               o.exercises.empty() ? "" : fmt::format(" · exercises {} only", fmt::join(o.exercises, ", ")),
               o.skip_lessons ? " · the reference's lessons left to attn check" : "");
    Verdicts verdict;
    const std::string problems = table_problems();
    verdict(problems.empty(), problems.empty() ? fmt::format("the exercise table: {} exercises", all_exercises().size())
                                               : "the exercise table: " + problems);
    // 1. the reference passes: every lesson matches its golden file, and so does every exercise
    if (!o.skip_lessons) check_reference_lessons(verdict, o);
    use_reference_race(wanted);
    for (const auto& s : evaluate_exercises(o.golden_dir, "", Tolerance{}, true, wanted))
        if (asked_about(o, s.exercise->id))
            verdict(s.state == ExerciseState::passed,
                    fmt::format("{}: the reference {} (lesson {}, {})", s.exercise->id, describe(s),
                                s.exercise->lesson, fmt::join(s.exercise->steps, ", ")));
    // 2. no exercise ships solved or broken: every untouched starter reports itself not done
    check_starters(verdict, o);
    // 3. no undeclared dependency: each exercise passes while all it does not declare are wrong
    check_alone(verdict, o);
    // 4. the order: each exercise passes before the next is written
    check_order(verdict, o);
    fmt::print("\ninstructor check: {} of {} hold\n", verdict.held, verdict.held + verdict.failed);
    return verdict.failed == 0 ? exit_ok : exit_mismatch;
}

}  // namespace attn
