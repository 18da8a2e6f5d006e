// `attn grade --sources`: for every exercise graded, the student's file for it is compiled and
// linked with the references of every other exercise into attn-observe (src/exercises/
// observe_main.cpp), so that an exercise's grade depends on its file alone, and run; each
// compile, link and run in a sandbox of its own (cli/sandbox.hpp). Students are graded in
// parallel (--jobs), each in a folder of their own. The student's program only hands over
// numbers (exercises/observations.hpp), through a pipe; attn judges them here, against the
// expected values it computes and the golden files the sandbox never sees.
//
// Nothing of a student's is trusted: their files are read without following links (a link, a
// folder, a device, a pipe or an oversized file is refused, never copied). The sandbox sees only
// what each step needs of the kit (copied into the work folder, mounted read-only): the compiler
// the headers and the precompiled header, the linker the libraries and objects (the references'
// among them), the check neither; and the student's copied sources (read-only) and their build
// folder (writable while building, read-only while checking). attn creates its own files only in
// folders no sandbox can write, and reads nothing back from the sandbox but its pipes. The CPU
// budget is per student for building and checking together.
#include "cli/grade.hpp"

#include "exercises/command_support.hpp"
#include "exercises/program.hpp"
#include "cli/sandbox.hpp"
#include "core/golden.hpp"
#include "core/names.hpp"
#include "exercises/cases.hpp"
#include "exercises/observations.hpp"
#include "exercises/status.hpp"
#include "transformer_race.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace attn {

namespace {

namespace fs = std::filesystem;

// A student's exercise file larger than this is not a solution.
constexpr std::size_t max_source_bytes = std::size_t{1} << 20;

// Ctrl-C or SIGTERM arrived: the batch stops, the work folder goes.
struct Interrupted {};

// The compiler by its real path: past /etc/alternatives, which the sandbox does not have.
std::optional<fs::path> compiler_path(const std::string& name) {
    const auto found = find_on_path(name);
    if (!found) return std::nullopt;
    std::error_code ec;
    const auto real = fs::canonical(*found, ec);
    return ec ? std::nullopt : std::optional<fs::path>(real);
}

// ---- reading a submission: copy, never follow

struct HandedIn {
    std::map<std::string, std::string> files;    // exercise id -> the file's text
    std::map<std::string, std::string> refused;  // exercise id -> why its file was not taken
    std::string error;                           // the folder itself could not be read
};

// The file `name` of the open folder `dir`: its text, nothing when absent, or why it is refused.
std::optional<std::string> read_handed_file(int dir, const std::string& name, std::string& refused) {
    struct stat st{};
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno != ENOENT) refused = fmt::format("{} cannot be read: {}", name, std::strerror(errno));
        return std::nullopt;
    }
    if (S_ISLNK(st.st_mode)) refused = name + " is a symbolic link: hand in the file itself";
    else if (!S_ISREG(st.st_mode)) refused = name + " is not a regular file (a folder, a device or a pipe)";
    else if (static_cast<std::size_t>(st.st_size) > max_source_bytes) refused = name + " is larger than 1 MiB";
    if (!refused.empty()) return std::nullopt;
    const int fd = ::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat opened{};
    if (fd < 0 || ::fstat(fd, &opened) != 0 || opened.st_ino != st.st_ino || opened.st_dev != st.st_dev ||
        !S_ISREG(opened.st_mode)) {
        if (fd >= 0) ::close(fd);
        refused = name + " changed while it was read";
        return std::nullopt;
    }
    std::string text;
    char buffer[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buffer, static_cast<std::size_t>(n));
        if (text.size() > max_source_bytes) break;
    }
    ::close(fd);
    if (text.size() > max_source_bytes) {
        refused = name + " is larger than 1 MiB";
        return std::nullopt;
    }
    return text;
}

HandedIn read_submission(const fs::path& folder) {
    HandedIn out;
    const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0) {
        struct stat st{};
        const bool link = ::lstat(folder.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
        out.error = link ? "the folder is a symbolic link: hand in the folder itself"
                         : fmt::format("the folder cannot be read: {}", std::strerror(errno));
        return out;
    }
    for (const auto& x : all_exercises()) {
        std::string refused;
        if (auto text = read_handed_file(dir, exercise_file(x), refused)) out.files[x.id] = std::move(*text);
        if (!refused.empty()) out.refused[x.id] = printable_utf8(refused);
    }
    ::close(dir);
    return out;
}

// ---- files of attn's own in the work folder

// Creates `file` anew (never through a link, never over a file) with `text`.
void create_file(const fs::path& file, const std::string& text, mode_t mode) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) throw std::runtime_error(fmt::format("cannot create {}: {}", file.string(), std::strerror(errno)));
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int e = errno;
            ::close(fd);
            throw std::runtime_error(fmt::format("cannot write {}: {}", file.string(), std::strerror(e)));
        }
        done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) throw std::runtime_error(fmt::format("cannot write {}: {}", file.string(), std::strerror(errno)));
}

void make_folder(const fs::path& dir, mode_t mode) {
    if (::mkdir(dir.c_str(), mode) != 0)
        throw std::runtime_error(fmt::format("cannot create the folder {}: {}", dir.string(), std::strerror(errno)));
    ::chmod(dir.c_str(), mode);  // past the umask
}

// Who may use a path of the work folder: attn's own (the sandbox user's group may read it, when the
// sandbox runs as another user), or the sandbox's to write.
void share(const fs::path& path, bool writable_by_sandbox) {
    const auto user = sandbox_host_user();
    if (!user) return;
    const int result = writable_by_sandbox ? ::lchown(path.c_str(), user->uid, user->gid)
                                           : ::lchown(path.c_str(), ::geteuid(), user->gid);
    if (result != 0)
        throw std::runtime_error(fmt::format("cannot give {} to the sandbox user: {}", path.string(), std::strerror(errno)));
}

// Every file and folder under `dir` (itself too) attn's own again, readable by the sandbox user's group.
void share_tree(const fs::path& dir) {
    share(dir, false);
    ::chmod(dir.c_str(), 0750);
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        if (e.is_symlink()) continue;
        share(e.path(), false);
        ::chmod(e.path().c_str(), e.is_directory() ? 0750 : 0640);
    }
}

// Removes `dir` whatever the sandbox left in it (folders without permissions included), never
// following a link.
void remove_tree(const fs::path& dir) {
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(dir, ec))) {
        fs::remove(dir, ec);
        return;
    }
    ::chmod(dir.c_str(), 0700);
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (fs::is_directory(fs::symlink_status(e.path(), ec))) remove_tree(e.path());
        else fs::remove(e.path(), ec);
    }
    fs::remove(dir, ec);
}

// Runs a trusted tool of the toolchain (ar, objcopy) on trusted files, in `cwd`; its stdout, or
// an exception saying why it failed.
std::string run_tool(const std::vector<std::string>& argv, const fs::path& cwd) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("cannot start a process: ") + std::strerror(errno));
    if (pid == 0) {
        ::dup2(out[1], 1);
        if (::chdir(cwd.c_str()) != 0) ::_exit(126);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        ::execvp(args[0], args.data());
        ::_exit(127);
    }
    ::close(out[1]);
    std::string text;
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(out[0], buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(out[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw std::runtime_error(fmt::format("{} failed (exit {})", argv[0], WIFEXITED(status) ? WEXITSTATUS(status) : -1));
    return text;
}

// ---- what the compiler said

// GCC's JSON diagnostics: the JSON array its standard error starts with, whatever follows it (a
// fatal error, a missing header, is followed by "compilation terminated."). Throws when there is none.
nlohmann::json gcc_diagnostics(const std::string& text) {
    std::istringstream in(text);
    nlohmann::json diagnostics;
    in >> diagnostics;  // reads one JSON value and leaves the rest
    if (!diagnostics.is_array()) throw std::runtime_error("not GCC's diagnostics");
    return diagnostics;
}

// The compiler's first error ("softmax.cpp:12:5: error: ..."), from GCC's JSON diagnostics or, for
// another compiler, the first line of the form file:line:col: error: (so that neither a note nor a
// `#pragma message "error: ..."` is taken for it), the folder `strip` taken out of paths.
std::string first_error(const std::string& text, const fs::path& strip) {
    std::string chosen;
    try {
        const auto diagnostics = gcc_diagnostics(text);
        for (const auto& d : diagnostics) {
            if (d.value("kind", "") != "error" && d.value("kind", "") != "fatal error") continue;
            std::string where;
            if (d.contains("locations") && !d["locations"].empty() && d["locations"][0].contains("caret")) {
                const auto& caret = d["locations"][0]["caret"];
                where = fmt::format("{}:{}:{}: ", caret.value("file", ""), caret.value("line", 0), caret.value("column", 0));
            }
            chosen = where + d.value("kind", "error") + ": " + d.value("message", "");
            break;
        }
    } catch (const std::exception&) {
        static const std::regex error_line(R"(^[^\s:][^:]*:\d+:\d+: (fatal )?error: .*)");
        std::size_t at = 0;
        while (at < text.size() && chosen.empty()) {
            const std::size_t end = std::min(text.find('\n', at), text.size());
            const std::string line = text.substr(at, end - at);
            if (std::regex_match(line, error_line)) chosen = line;
            at = end + 1;
        }
        if (chosen.empty()) {
            const std::size_t start = text.find_first_not_of("\n ");
            if (start != std::string::npos) chosen = text.substr(start, text.find('\n', start) - start);
        }
    }
    const std::string prefix = strip.string() + "/";
    for (std::size_t p = chosen.find(prefix); p != std::string::npos; p = chosen.find(prefix)) chosen.erase(p, prefix.size());
    return printable_utf8(capped(chosen, 400));
}

// The wall clock of one sandboxed command: for code that waits instead of computing. Three times
// the CPU budget and half a minute, so that on a loaded machine a command that computes still
// ends at its CPU limit (it needs a third of a core) and is told so.
double wall_limit(const GradeOptions& o) { return 3 * o.cpu_limit + 30; }

// What ended a sandboxed command that did not exit normally, or "" when it exited.
std::string abnormal_end(const SandboxResult& r, const GradeOptions& o, const SandboxLimits& limits) {
    if (!r.ran) return "the sandbox could not run it: " + r.error;
    switch (r.exceeded) {
        case SandboxLimit::none: break;
        case SandboxLimit::cpu:
            return fmt::format("stopped when the student's CPU time ran out ({:g} s for building and checking "
                               "together; an endless loop?)",
                               o.cpu_limit);
        case SandboxLimit::wall:
            return fmt::format("stopped: it did not finish within {:g} s of wall time (an endless wait?)",
                               wall_limit(o));
        case SandboxLimit::memory:
            return fmt::format("stopped at the memory limit ({} MiB for the sandbox)", o.memory_limit_mib);
        case SandboxLimit::processes:
            return fmt::format("stopped at the limit of {} processes (a fork bomb?)", limits.processes);
        case SandboxLimit::output:
            return fmt::format("stopped: it wrote more output than the limit of {} MiB", limits.output_bytes >> 20);
        case SandboxLimit::disk:
            return fmt::format("stopped: its files took more than the disk limit of {} MiB", limits.disk_bytes >> 20);
        case SandboxLimit::file_size:
            return fmt::format("stopped: it wrote a file larger than the limit of {} MiB", limits.file_bytes >> 20);
    }
    if (r.signal != 0) return "crashed: " + signal_description(r.signal);
    return "";
}

// A command in a sandbox with the limits of the options: `cpu` seconds of CPU (what is left of the
// student's budget), the wall clock of wall_limit(), the memory limit.
SandboxCommand sandbox_command(const GradeOptions& o, std::vector<fs::path> read_only, const fs::path& writable,
                               double cpu) {
    SandboxCommand c;
    c.read_only = std::move(read_only);
    c.writable = writable;
    c.limits.cpu_seconds = cpu;
    c.limits.wall_seconds = wall_limit(o);
    c.limits.memory_bytes = o.memory_limit_mib << 20;
    return c;
}

// The teacher's own steps in a sandbox (the precompiled header): no student's budget, only a bound
// on a hang, so that a loaded machine never fails a whole class. An hour of CPU and of wall clock:
// the precompiled header takes about 15 s of CPU and under a minute at a load of 10.
constexpr double teacher_step_seconds = 3600;

// A command of the teacher's in a sandbox: teacher_step_seconds of CPU and wall clock, and the
// memory limit of the options, at least 4 GiB.
SandboxCommand teacher_command(const GradeOptions& o, std::vector<fs::path> read_only, const fs::path& writable) {
    SandboxCommand c;
    c.read_only = std::move(read_only);
    c.writable = writable;
    c.limits.cpu_seconds = teacher_step_seconds;
    c.limits.wall_seconds = teacher_step_seconds;
    c.limits.memory_bytes = std::max<std::size_t>(o.memory_limit_mib, 4096) << 20;
    return c;
}

// What ended the teacher's own sandboxed command, or "" when it exited: its own limits, never the
// students'.
std::string teacher_step_end(const SandboxResult& r, const SandboxLimits& limits) {
    if (!r.ran) return "the sandbox could not run it: " + r.error;
    if (r.exceeded == SandboxLimit::cpu || r.exceeded == SandboxLimit::wall)
        return fmt::format("it did not finish within {:g} s (the bound on the teacher's own steps: is the machine "
                           "stalled?)",
                           limits.wall_seconds);
    if (r.exceeded != SandboxLimit::none) return "it reached " + limit_name(r.exceeded);
    if (r.signal != 0) return "crashed: " + signal_description(r.signal);
    return "";
}

// A student's folder in the work folder: "3-alice" (their place in the batch, and their name with
// what is not a letter, a digit, '-' or '_' as '_', at most 40 bytes of it).
std::string folder_name(std::size_t index, const std::string& student) {
    std::string name;
    for (const char c : student.substr(0, 40))
        name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
    return fmt::format("{}-{}", index + 1, name);
}

// ---- the kit: what every student's build uses, read-only

struct Kit {
    fs::path dir, include, pch, lib, obj;
    fs::path race;  // a folder of its own holding the reference's trained race, which the checks read
    std::vector<fs::path> libraries;
};

// One student's grading: their folder of the work folder, their CPU budget, their rows.
class StudentGrading {
public:
    StudentGrading(const GradeOptions& o, const std::vector<const Exercise*>& exercises, const Kit& kit,
                   const fs::path& compiler, fs::path dir)
        : o_(o), kit_(kit), compiler_(compiler), dir_(std::move(dir)) {
        for (const Exercise* x : exercises) exercises_.push_back(x);
    }

    // The student's rows, in the order of the exercises graded.
    std::vector<GradeRow> grade(const fs::path& submission) {
        const std::string name = student_name(submission);
        rows_.clear();
        for (const Exercise* x : exercises_)
            rows_.push_back({name, x->lesson, x->id, "", "", "", 0, static_cast<int>(unit_case_names(x->id).size()) + 1,
                             worth_in(o_, x->id)});
        const HandedIn handed = read_submission(submission);
        if (!handed.error.empty()) return fail_all("error", handed.error);
        for (auto& r : rows_) {
            if (const auto why = handed.refused.find(r.exercise); why != handed.refused.end()) settle(r, "error", why->second);
            else if (!handed.files.count(r.exercise))
                settle(r, "missing", "no " + exercise_file(*find_exercise(r.exercise)) + " (it earns nothing)");
        }
        if (all_settled()) return rows_;
        make_folder(dir_, 0700);
        share(dir_, false);
        ::chmod(dir_.c_str(), 0750);
        make_folder(dir_ / "src", 0750);
        share(dir_ / "src", false);
        for (const auto& [id, text] : handed.files) {
            const fs::path file = dir_ / "src" / exercise_file(*find_exercise(id));
            create_file(file, text, 0640);
            share(file, false);
        }
        make_folder(dir_ / "build", 0700);
        share(dir_ / "build", true);
        compile_all(handed);
        for (auto& r : rows_)
            if (r.result.empty() && link(r)) check(r);
        return rows_;
    }

private:
    // ---- the student

    void settle(GradeRow& r, const std::string& result, const std::string& message) {
        if (!r.result.empty()) return;
        r.result = result;
        r.message = capped(message, max_message_bytes);
    }
    bool all_settled() const {
        return std::all_of(rows_.begin(), rows_.end(), [](const GradeRow& r) { return !r.result.empty(); });
    }
    std::vector<GradeRow> fail_all(const std::string& result, const std::string& message) {
        for (auto& r : rows_) settle(r, result, message);
        return rows_;
    }
    GradeRow* row_of(const std::string& id) {
        const auto found = std::find_if(rows_.begin(), rows_.end(), [&](const GradeRow& r) { return r.exercise == id; });
        return found == rows_.end() ? nullptr : &*found;
    }

    double remaining() const { return o_.cpu_limit - used_; }

    SandboxCommand command(std::vector<fs::path> read_only, const fs::path& writable, double cpu) const {
        return sandbox_command(o_, std::move(read_only), writable, cpu);
    }

    SandboxResult run(const SandboxCommand& c) {
        const SandboxResult r = run_sandboxed(c);
        used_ += r.cpu_seconds;
        if (r.interrupted) throw Interrupted{};
        return r;
    }

    std::string budget_spent(const char* while_doing) const {
        return fmt::format("stopped: the CPU limit of {:g} s was spent while {}", o_.cpu_limit, while_doing);
    }

    // Compiles the files of the exercises graded (the others are not used: each exercise is graded
    // with the references of all the others). A failure settles the rows it concerns.
    void compile_all(const HandedIn& handed) {
        for (const Exercise* x : exercises_)
            if (handed.files.count(x->id) && row_of(x->id)->result.empty()) {
                if (compile(*x, grade_kit())) check_calls(*x);
                if (fatal_) return;
            }
    }

    // Links attn-observe-<exercise> for the row's exercise: the student's object and the weakened
    // starter (for the functions the file lacks), and the reference of every other exercise, so
    // that the exercise's grade depends on its file alone. False when it does not link (the row
    // says why).
    bool link(GradeRow& row) {
        const GradeKit& kit = grade_kit();
        const fs::path build = dir_ / "build";
        if (remaining() <= 0) {
            settle(row, "error", budget_spent("linking"));
            return false;
        }
        std::vector<std::string> objects;
        for (const auto& x : all_exercises())
            if (x.id == row.exercise)
                objects.insert(objects.end(), {(build / (x.id + ".o")).string(),
                                               (kit_.obj / ("starter-" + x.id + ".o")).string()});
            else
                objects.push_back((kit_.obj / ("reference-" + x.id + ".o")).string());
        SandboxCommand c = command({kit_.lib, kit_.obj}, build, remaining());
        c.argv = {compiler_.string(), "-o", (build / ("attn-observe-" + row.exercise)).string()};
        c.argv.insert(c.argv.end(), objects.begin(), objects.end());
        c.argv.push_back("-Wl,--start-group");
        for (const auto& lib : kit_.libraries) c.argv.push_back(lib.string());
        c.argv.push_back("-Wl,--end-group");
        c.argv.insert(c.argv.end(), kit.link.begin(), kit.link.end());
        const SandboxResult r = run(c);
        const std::string abnormal = abnormal_end(r, o_, c.limits);
        if (abnormal.empty() && r.exit_code == 0) return true;
        settle(row, "error", "cannot link the program: " +
                                 (!abnormal.empty() ? "the linker " + abnormal : first_error(r.err, build)));
        return false;
    }

    // Compiles exercise x's file; false when it does not (its row says why).
    bool compile(const Exercise& x, const GradeKit& kit) {
        if (remaining() <= 0) {
            fatal_ = true;
            fail_all("error", budget_spent("compiling"));
            return false;
        }
        const fs::path src = dir_ / "src", build = dir_ / "build";
        SandboxCommand c = command({kit_.include, kit_.pch, src}, build, remaining());
        c.workdir = src;
        c.argv = {compiler_.string()};
        c.argv.insert(c.argv.end(), kit.compile.begin(), kit.compile.end());
        if (compiler_.filename().string().find("clang") == std::string::npos)
            c.argv.push_back("-fdiagnostics-format=json");
        c.argv.insert(c.argv.end(), {"-I", kit_.include.string(), "-Winvalid-pch", "-include",
                                     (kit_.pch / "xtensor_pch.hpp").string(), "-c", (src / exercise_file(x)).string(),
                                     "-o", (build / (x.id + ".o")).string()});
        const SandboxResult r = run(c);
        const std::string abnormal = abnormal_end(r, o_, c.limits);
        if (abnormal.empty() && r.exit_code == 0) return true;
        if (GradeRow* row = row_of(x.id))
            settle(*row, "error", "does not compile: " + (!abnormal.empty() ? "the compiler " + abnormal : first_error(r.err, src)));
        if (r.exceeded == SandboxLimit::cpu || r.exceeded == SandboxLimit::wall) {
            fatal_ = true;  // the budget is gone: nothing more can be built or checked
            fail_all("error", budget_spent("compiling"));
        }
        return false;
    }

    // The functions of attn that exercise x's object calls, listed by nm in the sandbox (attn reads back
    // only its pipe): a call that x may not make (Exercise::may_call; nn::fast_attention from
    // scaled_attention.cpp) settles its row, fail with 0 points, before anything is linked (issue 40).
    void check_calls(const Exercise& x) {
        GradeRow* row = row_of(x.id);
        if (row == nullptr || !row->result.empty()) return;
        if (nm_.empty())
            return settle(*row, "error", "cannot list the functions " + exercise_file(x) +
                                             " calls: nm (GNU binutils) is not on PATH");
        if (remaining() <= 0) return settle(*row, "error", budget_spent("listing the calls"));
        const fs::path build = dir_ / "build";
        SandboxCommand c = command({build}, fs::path(), remaining());
        c.workdir = "/tmp";
        c.argv = {nm_.string(), "-u", "-C", (build / (x.id + ".o")).string()};
        const SandboxResult r = run(c);
        const std::string abnormal = abnormal_end(r, o_, c.limits);
        if (!abnormal.empty() || r.exit_code != 0)
            return settle(*row, "error", "cannot list the functions " + exercise_file(x) + " calls: nm " +
                                             (!abnormal.empty() ? abnormal : fmt::format("exited {}", r.exit_code)));
        const std::vector<std::string> calls = forbidden_calls(x, r.out);
        if (!calls.empty()) settle(*row, "fail", forbidden_calls_message(x, calls));
    }

    // attn-observe for one exercise, in the sandbox (its build folder read-only now); its report
    // judged here.
    void check(GradeRow& row) {
        if (remaining() <= 0) return settle(row, "error", fmt::format("not checked: the CPU limit of {:g} s was spent", o_.cpu_limit));
        const Exercise* x = find_exercise(row.exercise);
        const auto needed = exercises_needed({x});
        const fs::path build = dir_ / "build";
        // no kit: the references' objects are in it; only the race lesson 13 decodes with
        SandboxCommand c = command({build, kit_.race}, fs::path(), remaining());
        c.workdir = "/tmp";
        c.report_pipe = true;
        c.argv = {(build / ("attn-observe-" + x->id)).string(),
                  "--race=" + (kit_.race / transformer::kept_race_name).string(), x->id};
        for (const auto& [lesson, steps] : steps_to_run(o_.golden_dir, needed))
            c.argv.push_back(fmt::format("{}={}", lesson, steps));
        const SandboxResult r = run(c);
        const std::string abnormal = abnormal_end(r, o_, c.limits);
        if (!abnormal.empty()) return settle(row, "error", "the check " + abnormal);
        ExerciseObservations seen;
        try {
            if (r.exit_code != 0) throw ObservationError(fmt::format("the check exited {}", r.exit_code));
            seen = parse_observations(r.report);
        } catch (const ObservationError& e) {
            return settle(row, "error", printable_utf8(e.what()));
        }
        const auto states = judge_exercises(seen, o_.golden_dir, "", o_.tolerance, {x});
        const auto mine = std::find_if(states.begin(), states.end(), [&](const ExerciseStatus& s) { return s.exercise == x; });
        if (mine == states.end()) return settle(row, "error", "the exercise was not judged");
        record(row, *mine);
    }

    static void record(GradeRow& row, const ExerciseStatus& s) {
        row.points = static_cast<int>(s.points());
        row.max_points = static_cast<int>(s.max_points());
        row.step = printable_utf8(s.unit_case.empty() ? s.step : s.unit_case);
        row.result = s.state == ExerciseState::passed                                                       ? "pass"
                     : s.state == ExerciseState::error || s.state == ExerciseState::golden_problem          ? "error"
                                                                                                           : "fail";
        if (row.result == "pass") return;
        std::string text = describe(s);
        if (s.state == ExerciseState::not_started)
            text += ": its starter stands for a function of it that the file handed in does not define";
        else if (!s.message.empty()) text += ": " + s.message;
        while (!text.empty() && text.back() == '\n') text.pop_back();
        row.message = capped(printable_utf8(text), max_message_bytes);
    }

    const GradeOptions& o_;
    std::vector<const Exercise*> exercises_;
    const Kit& kit_;
    const fs::path& compiler_;
    const fs::path nm_ = compiler_path("nm").value_or(fs::path());  // lists the calls of a student's object
    fs::path dir_;
    std::vector<GradeRow> rows_;
    double used_ = 0;
    bool fatal_ = false;
};

class SourceGrader {
public:
    SourceGrader(const GradeOptions& o, std::vector<const Exercise*> exercises, fs::path work, fs::path compiler)
        : o_(o), exercises_(std::move(exercises)), work_(std::move(work)), compiler_(std::move(compiler)) {}

    // The reference's trained race (transformer_race.hpp), checked, into the kit: lesson 13's checks
    // decode with it, so a student's last bits never change what they are compared with. A race
    // file that is missing, stale or damaged stops the grading (RaceFileError, exit 3).
    void copy_race() {
        const fs::path from = checked_reference_race("grade again");
        make_folder(kit_.race, 0700);
        fs::copy_file(from, kit_.race / transformer::kept_race_name);
    }

    // Copies the headers, libraries and objects into the kit and precompiles the header; false
    // after printing why it failed.
    bool prepare_kit() {
        const GradeKit& kit = grade_kit();
        name_kit();
        for (const auto& d : {kit_.dir, kit_.include, kit_.pch, kit_.lib, kit_.obj}) make_folder(d, 0700);
        copy_headers(this_program().source_dir / "src", kit_.include);
        kit_.libraries.clear();
        for (const auto& lib : kit.libraries) kit_.libraries.push_back(regular_archive(lib));
        const auto& table = all_exercises();
        for (std::size_t i = 0; i < table.size(); ++i) {
            if (interruption_requested()) throw Interrupted{};
            fs::copy_file(kit.reference.at(i), kit_.obj / ("reference-" + table[i].id + ".o"));
            run_tool({"objcopy", "--weaken", kit.starter.at(i), (kit_.obj / ("starter-" + table[i].id + ".o")).string()},
                     kit_.obj);
        }
        fs::copy_file(kit.pch.at(0), kit_.pch / "xtensor_pch.hpp");
        copy_race();
        if (copy_built_pch(kit)) {
            share_tree(kit_.dir);
            create_file(kit_.dir / "ready", "", 0640);
            share(kit_.dir / "ready", false);
            return true;
        }
        share_tree(kit_.dir);
        share(kit_.pch, true);
        ::chmod(kit_.pch.c_str(), 0700);
        SandboxCommand c = teacher_command(o_, {kit_.include}, kit_.pch);
        c.argv = {compiler_.string()};
        c.argv.insert(c.argv.end(), kit.compile.begin(), kit.compile.end());
        c.argv.insert(c.argv.end(), {"-x", "c++-header", (kit_.pch / "xtensor_pch.hpp").string(), "-o",
                                     (kit_.pch / "xtensor_pch.hpp.gch").string()});
        c.limits.file_bytes = std::size_t{1} << 30;  // the precompiled header is near 100 MB
        c.limits.disk_bytes = std::size_t{2} << 30;
        const SandboxResult r = run_sandboxed(c);
        if (r.interrupted) throw Interrupted{};
        share_tree(kit_.dir);  // attn's again: no sandbox writes the kit from here on
        if (!r.ran || r.exit_code != 0 || r.exceeded != SandboxLimit::none) {
            const std::string abnormal = teacher_step_end(r, c.limits);
            fmt::print(stderr, "attn: cannot precompile the headers for the students' code: {}\n",
                       !abnormal.empty() ? abnormal : first_error(r.err, kit_.pch));
            return false;
        }
        create_file(kit_.dir / "ready", "", 0640);  // what a grading task of a cluster looks for
        share(kit_.dir / "ready", false);
        return true;
    }

    // The precompiled header the build made with the kit's own compiler and flags (meson.build's
    // grade_pch: GCC's builds), copied into the kit; false, nothing copied, when there is none (an attn
    // whose build folder is gone, a build by Clang, whose precompiled headers name the path of the header
    // they were made from) or ATTN_GRADE_PCH=compile asks for the header to be precompiled here, in
    // the teacher's sandbox, as it is then. Precompiling it took 3.5 s of CPU per grading, which the
    // tests repeat about thirty times. A header the compiler no longer accepts (g++ upgraded since the
    // build) is read as text, with -Winvalid-pch's warning: slower, the same objects.
    bool copy_built_pch(const GradeKit& kit) const {
        const char* asked = std::getenv("ATTN_GRADE_PCH");
        if (kit.pch.size() < 2 || (asked != nullptr && std::string_view(asked) == "compile")) return false;
        std::error_code ec;
        fs::copy_file(kit.pch[1], kit_.pch / "xtensor_pch.hpp.gch", ec);
        if (!ec) return true;
        fs::remove(kit_.pch / "xtensor_pch.hpp.gch", ec);  // a copy cut short: precompiled here instead
        return false;
    }

    // The kit another attn prepared in this work folder (a Slurm task's); false when it is not ready.
    bool load_kit() {
        name_kit();
        std::error_code ec;
        if (!fs::is_regular_file(kit_.dir / "ready", ec)) return false;
        kit_.libraries.clear();
        for (const auto& lib : grade_kit().libraries) kit_.libraries.push_back(kit_.lib / fs::path(lib).filename());
        return true;
    }

    // The rows of one student, in the order of the exercises graded. Students may be graded on
    // several threads at once: each has a folder, a budget and rows of its own.
    std::vector<GradeRow> grade(const fs::path& submission, std::size_t index) const {
        StudentGrading student(o_, exercises_, kit_, compiler_, work_ / folder_name(index, student_name(submission)));
        return student.grade(submission);
    }

private:
    // ---- the kit

    void name_kit() {
        kit_.dir = work_ / "kit";
        kit_.include = kit_.dir / "include";
        kit_.pch = kit_.dir / "pch";
        kit_.lib = kit_.dir / "lib";
        kit_.obj = kit_.dir / "obj";
        kit_.race = kit_.dir / "race";
    }

    // Every header of the source tree's src/ (no source file: the references are not to be read),
    // except src/nn/reference/, the code only references include (a vectorised softmax): a student's
    // file that includes it does not compile, as in the student edition, which leaves it out.
    static void copy_headers(const fs::path& from, const fs::path& to) {
        for (auto e = fs::recursive_directory_iterator(from); e != fs::recursive_directory_iterator(); ++e) {
            const fs::path rel = fs::relative(e->path(), from);
            if (e->is_directory() && rel == fs::path("nn") / "reference") {
                e.disable_recursion_pending();
                continue;
            }
            if (e->is_directory()) fs::create_directories(to / rel);
            else if (e->is_regular_file() && (e->path().extension() == ".hpp" || e->path().extension() == ".h"))
                fs::copy_file(e->path(), to / rel);
        }
    }

    // A copy of a (thin) static library of the build as a regular archive in the kit, so that the
    // sandbox needs no build folder of ours.
    fs::path regular_archive(const fs::path& library) {
        std::error_code ec;
        if (!fs::is_regular_file(library, ec))
            throw std::runtime_error(fmt::format("the library {} is missing: run meson compile -C {}", library.string(),
                                                 this_program().build_dir.string()));
        const std::string listing = run_tool({"ar", "t", library.string()}, library.parent_path());
        std::vector<std::string> argv = {"ar", "qcs", (kit_.lib / library.filename()).string()};
        std::size_t at = 0;
        while (at < listing.size()) {
            const std::size_t end = std::min(listing.find('\n', at), listing.size());
            if (end > at) argv.push_back(listing.substr(at, end - at));
            at = end + 1;
        }
        run_tool(argv, library.parent_path());
        return kit_.lib / library.filename();
    }

    const GradeOptions& o_;
    std::vector<const Exercise*> exercises_;
    fs::path work_, compiler_;
    Kit kit_;
};

// The checks before anything is built: limits in range, a build with its kit, a compiler, a sandbox.
int refuse_to_start(const GradeOptions& o) {
    if (!(o.cpu_limit > 0) || o.cpu_limit > 86400) {
        fmt::print(stderr, "attn: --cpu-limit must be between 0 and 86400 seconds, not {:g}\n", o.cpu_limit);
        return exit_usage;
    }
    if (o.memory_limit_mib < 256 || o.memory_limit_mib > (std::size_t{1} << 20)) {
        fmt::print(stderr, "attn: --memory-limit must be between 256 and 1048576 MiB, not {}\n", o.memory_limit_mib);
        return exit_usage;
    }
    const GradeKit& kit = grade_kit();
    if (kit.compiler.empty() || kit.pch.empty() || kit.reference.size() != all_exercises().size() ||
        kit.starter.size() != all_exercises().size()) {
        fmt::print(stderr, "attn: {} cannot grade from sources; use the attn of a build directory\n", this_program().name);
        return exit_usage;
    }
    for (const auto& group : {kit.libraries, kit.reference, kit.starter})
        for (const auto& item : group) {
            std::error_code ec;
            if (!fs::is_regular_file(item, ec)) {
                fmt::print(stderr, "attn: grading from sources needs the files of the build directory, and {} is "
                                   "missing: run meson compile -C {}\n",
                           printable_utf8(item), printable_utf8(this_program().build_dir.string()));
                return exit_golden;
            }
        }
    for (const char* tool : {"ar", "objcopy"})
        if (!find_on_path(tool)) {
            fmt::print(stderr, "attn: grading from sources needs {} (Debian: apt-get install binutils)\n", tool);
            return exit_golden;
        }
    if (const auto why = sandbox_unavailable()) {
        fmt::print(stderr,
                   "attn: grading from sources runs the students' code in a sandbox, and none can be created here: "
                   "{}. Grading from numbers (attn grade without --sources) still works.\n",
                   *why);
        return exit_golden;
    }
    return exit_ok;
}

// The first folder above `work` that the sandbox user (another user than ours) may not enter, if any.
std::optional<fs::path> closed_to_sandbox(const fs::path& work) {
    const auto user = sandbox_host_user();
    if (!user) return std::nullopt;
    for (fs::path p = work.parent_path(); !p.empty(); p = p.parent_path()) {
        struct stat st{};
        if (::stat(p.c_str(), &st) != 0) return p;
        const bool enters = (st.st_mode & S_IXOTH) || (st.st_uid == user->uid && (st.st_mode & S_IXUSR)) ||
                            (st.st_gid == user->gid && (st.st_mode & S_IXGRP));
        if (!enters) return p;
        if (p == p.root_path()) break;
    }
    return std::nullopt;
}

// The work folder: given (and kept), or temporary (and removed); traversable by the sandbox user.
std::optional<fs::path> work_folder(const GradeOptions& o) {
    fs::path work = o.work_dir;
    if (!work.empty()) {
        std::error_code ec;
        fs::create_directories(work, ec);
        if (ec || !fs::is_directory(fs::symlink_status(work, ec)) || !fs::is_empty(work, ec)) {
            fmt::print(stderr, "attn: --keep-builds needs a new or empty folder, and {} is not one\n",
                       printable_utf8(work.string()));
            return std::nullopt;
        }
        work = fs::absolute(work);
    } else {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/attn-grade.XXXXXX";
        if (!::mkdtemp(pattern.data())) {
            fmt::print(stderr, "attn: cannot create a folder for the builds: {}\n", std::strerror(errno));
            return std::nullopt;
        }
        work = pattern;
    }
    try {
        share(work, false);
    } catch (const std::exception& e) {
        fmt::print(stderr, "attn: {}\n", e.what());
        return std::nullopt;
    }
    ::chmod(work.c_str(), sandbox_host_user() ? 0710 : 0700);
    if (const auto closed = closed_to_sandbox(work)) {
        fmt::print(stderr,
                   "attn: the sandbox runs as the user nobody, who cannot enter {} (mode {:o}): build elsewhere "
                   "(TMPDIR, or --keep-builds in a folder others may enter), or run attn as an unprivileged user\n",
                   printable_utf8(closed->string()),
                   static_cast<unsigned>(fs::status(*closed).permissions() & fs::perms::mask));
        std::error_code ec;
        if (o.work_dir.empty()) fs::remove(work, ec);
        return std::nullopt;
    }
    return work;
}

// One student's rows, or their `error` rows when our side failed (a full disk): the batch goes on.
std::vector<GradeRow> rows_of_student(const SourceGrader& grader, const GradeOptions& o,
                                      const std::vector<const Exercise*>& exercises, std::size_t i) {
    try {
        return grader.grade(o.submissions[i], i);
    } catch (const std::exception& e) {
        std::vector<GradeRow> rows;
        for (const Exercise* x : exercises)
            rows.push_back({student_name(o.submissions[i]), x->lesson, x->id, "error", "",
                            capped("could not be graded: " + printable_utf8(e.what()), max_message_bytes), 0,
                            static_cast<int>(unit_case_names(x->id).size()) + 1, worth_in(o, x->id)});
        return rows;
    }
}

// Every student's rows, in the order given, graded by up to --jobs threads; each student's line
// is printed as soon as the students before them are done. Throws Interrupted after every thread
// has stopped.
std::vector<GradeRow> grade_all(const SourceGrader& grader, const GradeOptions& o,
                                const std::vector<const Exercise*>& exercises) {
    const std::size_t n = o.submissions.size();
    std::vector<std::vector<GradeRow>> done(n);
    std::vector<char> ready(n, 0);
    std::atomic<std::size_t> next{0};
    std::atomic<bool> stop{false};
    std::mutex lock;
    std::condition_variable changed;
    const auto work = [&] {
        for (std::size_t i = next++; i < n && !stop; i = next++) {
            std::vector<GradeRow> rows;
            try {
                rows = rows_of_student(grader, o, exercises, i);
            } catch (const Interrupted&) {
                stop = true;
            }
            const std::lock_guard<std::mutex> hold(lock);
            done[i] = std::move(rows);
            ready[i] = 1;
            changed.notify_all();
        }
        const std::lock_guard<std::mutex> hold(lock);
        changed.notify_all();
    };
    const std::size_t jobs = std::max<std::size_t>(1, std::min<std::size_t>(o.jobs, n));
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < jobs; ++t) threads.emplace_back(work);
    std::vector<GradeRow> rows;
    {
        std::unique_lock<std::mutex> hold(lock);
        for (std::size_t i = 0; i < n && !stop; ++i) {
            changed.wait(hold, [&] { return ready[i] || stop; });
            if (!ready[i] || stop) break;
            rows.insert(rows.end(), done[i].begin(), done[i].end());
            print_grade_line(rows, rows.size() - done[i].size(), exercises.size());
        }
    }
    for (auto& t : threads) t.join();
    if (stop || interruption_requested()) throw Interrupted{};
    return rows;
}

// ---- a course on a cluster: one Slurm array task per student, then the reports

// OUT.slurm: the kit and the students' builds (work/), one result per student (results/I.json,
// written by task I) and the tasks' logs (logs/I.log), on the cluster's shared file system.
fs::path batch_folder(const GradeOptions& o) { return fs::absolute(o.out.string() + ".slurm"); }
fs::path result_file(const fs::path& batch, std::size_t i) { return batch / "results" / fmt::format("{}.json", i); }

std::string rows_text(const std::vector<GradeRow>& rows) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows)
        out.push_back({{"student", r.student}, {"lesson", r.lesson}, {"exercise", r.exercise}, {"result", r.result},
                       {"step", r.step}, {"message", r.message}, {"points", r.points}, {"max_points", r.max_points},
                       {"worth", r.worth}});
    return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// A task's rows, when they are what the task was to write: a row per exercise graded, in order.
std::optional<std::vector<GradeRow>> rows_of_text(const std::string& text, const std::vector<const Exercise*>& exercises) {
    try {
        const auto doc = nlohmann::json::parse(text);
        if (!doc.is_array() || doc.size() != exercises.size()) return std::nullopt;
        std::vector<GradeRow> rows;
        for (std::size_t i = 0; i < doc.size(); ++i) {
            const auto& r = doc[i];
            if (r.at("exercise").get<std::string>() != exercises[i]->id) return std::nullopt;
            rows.push_back({r.at("student"), r.at("lesson"), r.at("exercise"), r.at("result"), r.at("step"),
                            r.at("message"), r.at("points"), r.at("max_points"), r.at("worth")});
        }
        return rows;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

// What each task runs: this attn with the same arguments, --slurm replaced by --slurm-task.
std::string task_command(const GradeOptions& o) {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    std::string command = shell_quoted(ec ? o.command_line.at(0) : self.string());
    for (std::size_t i = 1; i < o.command_line.size(); ++i)
        if (o.command_line[i] != "--slurm") command += " " + shell_quoted(o.command_line[i]);
    return command + " --slurm-task \"$SLURM_ARRAY_TASK_ID\"";
}

// Task I of a batch: grades student I with the kit the batch prepared, into results/I.json.
int grade_task(const GradeOptions& o, const std::vector<const Exercise*>& exercises, const fs::path& compiler) {
    const fs::path batch = batch_folder(o);
    if (o.slurm_task < 0 || static_cast<std::size_t>(o.slurm_task) >= o.submissions.size()) {
        fmt::print(stderr, "attn: --slurm-task {} is not a student of the {} given\n", o.slurm_task, o.submissions.size());
        return exit_usage;
    }
    const auto i = static_cast<std::size_t>(o.slurm_task);
    SourceGrader grader(o, exercises, batch / "work", compiler);
    if (!grader.load_kit()) {
        fmt::print(stderr, "attn: no kit is ready in {}: attn grade --slurm prepares it before it submits the tasks\n",
                   printable_utf8((batch / "work").string()));
        return exit_golden;
    }
    catch_interruptions();  // scancel sends SIGTERM: every sandbox ends
    try {
        const std::vector<GradeRow> rows = rows_of_student(grader, o, exercises, i);
        write_file_atomic(result_file(batch, i), rows_text(rows));
    } catch (const Interrupted&) {
        return 128 + (interruption_signal() ? interruption_signal() : SIGTERM);
    } catch (const std::exception& e) {
        fmt::print(stderr, "attn: cannot write the result of student {}: {}\n", i, printable_utf8(e.what()));
        return exit_golden;
    }
    if (o.work_dir.empty()) remove_tree(batch / "work" / folder_name(i, student_name(o.submissions[i])));
    return exit_ok;
}

// Submits the students without a result as one array job and waits for it (polling squeue, so
// that Ctrl-C cancels it). Returns exit_ok, or why not after saying so.
int run_array_job(const GradeOptions& o, const fs::path& batch, const std::vector<std::size_t>& missing) {
    std::string indices;
    for (const std::size_t i : missing) indices += (indices.empty() ? "" : ",") + std::to_string(i);
    std::string job;
    try {
        job = run_tool({"sbatch", "--parsable", "--job-name=attn-grade", "--array=" + indices,
                        "--output=" + (batch / "logs" / "%a.log").string(), "--wrap", task_command(o)},
                       fs::current_path());
        job = job.substr(0, job.find_first_of(";\n"));
        fmt::print("attn: submitted {} grading tasks as Slurm job {}\n", missing.size(), job);
        std::fflush(stdout);
        for (;;) {
            std::string waiting;
            try {
                waiting = run_tool({"squeue", "--noheader", "--jobs", job}, fs::current_path());
            } catch (const std::exception&) {  // a job squeue no longer knows has ended
            }
            if (waiting.find_first_not_of(" \n") == std::string::npos) return exit_ok;
            for (int tick = 0; tick < 20 && !interruption_requested(); ++tick) ::usleep(100000);
            if (interruption_requested()) {
                run_tool({"scancel", job}, fs::current_path());
                fmt::print(stderr, "attn: interrupted: Slurm job {} cancelled; run again to grade what is missing\n", job);
                return 128 + interruption_signal();
            }
        }
    } catch (const std::exception& e) {
        if (interruption_requested()) {  // Ctrl-C reached sbatch or squeue too
            try {
                if (!job.empty()) run_tool({"scancel", job}, fs::current_path());
            } catch (const std::exception&) {  // the job may not have been submitted
            }
            fmt::print(stderr, "attn: interrupted: {}; run again to grade what is missing\n",
                       job.empty() ? "no job submitted" : "Slurm job " + job + " cancelled");
            return 128 + interruption_signal();
        }
        fmt::print(stderr, "attn: cannot run the grading tasks on Slurm: {} (is this a Slurm login node?)\n",
                   printable_utf8(e.what()));
        return exit_golden;
    }
}

// Prepares the grader's kit in `work`: exit_ok, or exit_golden after saying why not. Throws
// Interrupted on Ctrl-C or SIGTERM, also when the interruption is what made a step fail (Ctrl-C
// reaches ar and objcopy too).
int kit_prepared(SourceGrader& grader, const fs::path& work) {
    try {
        return grader.prepare_kit() ? exit_ok : exit_golden;
    } catch (const std::exception& e) {
        if (interruption_requested()) throw Interrupted{};
        fmt::print(stderr, "attn: cannot prepare the builds in {}: {}\n", printable_utf8(work.string()),
                   printable_utf8(e.what()));
        return exit_golden;
    }
}

// The kit of a --slurm batch, prepared unless a run before prepared it: exit_ok, or why not after
// saying so; interrupted, the half-prepared kit is removed and nothing submitted (exit 130 or 143).
int slurm_kit(SourceGrader& grader, const GradeOptions& o, const fs::path& work) {
    if (grader.load_kit()) return exit_ok;
    remove_tree(work);
    GradeOptions here = o;
    here.work_dir = work;
    if (!work_folder(here)) return exit_golden;
    try {
        return kit_prepared(grader, work);
    } catch (const Interrupted&) {
        remove_tree(work);
        fmt::print(stderr, "attn: interrupted while preparing the builds: every sandbox ended, {} removed, no job "
                           "submitted\n",
                   printable_utf8(work.string()));
        return 128 + (interruption_signal() ? interruption_signal() : SIGINT);
    }
}

// --slurm: prepares the kit once, submits a task per student without a result, waits, then writes
// the reports from the results, as a local run would.
int grade_on_slurm(const GradeOptions& o, const std::vector<const Exercise*>& exercises, const fs::path& compiler) {
    const fs::path batch = batch_folder(o), work = batch / "work";
    std::error_code ec;
    for (const auto& d : {batch / "results", batch / "logs"}) fs::create_directories(d, ec);
    SourceGrader grader(o, exercises, work, compiler);
    if (const int code = slurm_kit(grader, o, work); code != exit_ok) return code;
    std::vector<std::size_t> missing;
    for (std::size_t i = 0; i < o.submissions.size(); ++i)
        if (!fs::is_regular_file(result_file(batch, i), ec)) missing.push_back(i);
    if (!missing.empty())
        if (const int code = run_array_job(o, batch, missing); code != exit_ok) return code;
    std::vector<GradeRow> rows;
    print_grade_header();
    bool complete = true;
    for (std::size_t i = 0; i < o.submissions.size(); ++i) {
        std::optional<std::vector<GradeRow>> mine;
        try {
            mine = rows_of_text(read_file_bytes(result_file(batch, i), "result", 16 << 20), exercises);
        } catch (const std::exception&) {
        }
        if (!mine) {
            complete = false;
            mine.emplace();
            for (const Exercise* x : exercises)
                mine->push_back({student_name(o.submissions[i]), x->lesson, x->id, "error", "",
                                 fmt::format("its grading task ended without a result (its log: {}); run again to "
                                             "grade it",
                                             printable_utf8((batch / "logs" / fmt::format("{}.log", i)).string())),
                                 0, static_cast<int>(unit_case_names(x->id).size()) + 1, worth_in(o, x->id)});
        }
        rows.insert(rows.end(), mine->begin(), mine->end());
        print_grade_line(rows, rows.size() - mine->size(), exercises.size());
    }
    if (complete && o.work_dir.empty()) remove_tree(work);  // every student graded: the kit is no longer needed
    return write_grade_reports(rows, exercises, o);
}

}  // namespace

int grade_from_sources(const GradeOptions& o, const std::vector<const Exercise*>& exercises) {
    if (const int refused = refuse_to_start(o); refused != exit_ok) return refused;
    const auto compiler = compiler_path(grade_kit().compiler.front());
    if (!compiler) {
        fmt::print(stderr, "attn: grading from sources needs the compiler {}, which is not on PATH\n",
                   printable_utf8(grade_kit().compiler.front()));
        return exit_golden;
    }
    GradeOptions options = o;
    options.golden_dir = fs::absolute(o.golden_dir);
    if (options.jobs == 0) options.jobs = std::max(1u, std::thread::hardware_concurrency());
    if (o.slurm_task >= 0) return grade_task(options, exercises, *compiler);
    catch_interruptions();
    if (o.slurm) return grade_on_slurm(options, exercises, *compiler);
    const auto work = work_folder(o);
    if (!work) return exit_golden;
    const bool keep = !o.work_dir.empty();
    struct Cleanup {
        fs::path dir;
        bool keep;
        ~Cleanup() {
            if (!keep) remove_tree(dir);
        }
    } cleanup{*work, keep};

    SourceGrader grader(options, exercises, *work, *compiler);
    std::vector<GradeRow> rows;
    try {
        if (const int code = kit_prepared(grader, *work); code != exit_ok) return code;
        print_grade_header();
        rows = grade_all(grader, options, exercises);
    } catch (const Interrupted&) {
        fmt::print(stderr, "attn: interrupted: grading stopped, every sandbox ended{}\n",
                   keep ? fmt::format("; the builds so far are in {}", printable_utf8(work->string()))
                        : ", the work folder removed");
        return 128 + (interruption_signal() ? interruption_signal() : SIGINT);
    }
    if (keep) fmt::print("the builds are in {}\n", printable_utf8(work->string()));
    return write_grade_reports(rows, exercises, options);
}

}  // namespace attn
