// `attn grade --sources`: every student's folder of exercise files (.cpp) is copied into a work
// folder of its own, compiled there against this build's headers and libraries (GradeKit,
// meson.build) into a program like attn-student, and that program's `check <id> --format json`
// is run for each exercise graded. Every compile and every run happens in a sandbox
// (cli/sandbox.hpp) that sees the student's own work folder (writable), the headers, libraries,
// precompiled header and golden files (read-only) and /usr, and nothing else: not the other
// students' folders, not the network. A student has a CPU budget for all of it (--cpu-limit)
// and every process an address-space limit (--memory-limit); whatever goes wrong (a compile
// error, a crash, a loop, a blow-up) becomes `error` rows and the batch goes on.
#include "cli/grade.hpp"

#include "cli/program.hpp"
#include "cli/sandbox.hpp"
#include "core/golden.hpp"
#include "core/names.hpp"
#include "exercises/cases.hpp"
#include "registry.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include <sys/stat.h>
#include <unistd.h>

namespace attn {

namespace {

// A student's exercise file larger than this is not a solution.
constexpr std::size_t max_source_bytes = std::size_t{1} << 20;

// The compiler by its real path: past /etc/alternatives, which the sandbox does not have.
std::optional<std::filesystem::path> compiler_path(const std::string& name) {
    const auto found = find_on_path(name);
    if (!found) return std::nullopt;
    std::error_code ec;
    const auto real = std::filesystem::canonical(*found, ec);
    return ec ? std::nullopt : std::optional<std::filesystem::path>(real);
}

// A folder the sandbox writes to belongs to its host user (nobody when attn runs as root), and so
// the work folder above it lets it pass.
void give_to_sandbox(const std::filesystem::path& dir) {
    const auto user = sandbox_host_user();
    if (!user) return;
    std::error_code ec;
    struct stat st {};
    if (::stat(dir.parent_path().c_str(), &st) == 0) ::chmod(dir.parent_path().c_str(), (st.st_mode & 07777) | S_IXOTH);
    ::chown(dir.c_str(), user->uid, user->gid);
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec); !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
        ::lchown(it->path().c_str(), user->uid, user->gid);
}

// The first line of a compiler's messages that says "error" (else the first line), with the
// work folder's path taken out so that it reads "softmax.cpp:12:5: error: ...".
std::string first_compiler_message(const std::string& text, const std::filesystem::path& strip) {
    std::vector<std::string> lines;
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t end = std::min(text.find('\n', at), text.size());
        lines.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    std::string chosen;
    for (const auto& line : lines)
        if (line.find("error") != std::string::npos) {
            chosen = line;
            break;
        }
    if (chosen.empty())
        for (const auto& line : lines)
            if (!line.empty()) {
                chosen = line;
                break;
            }
    const std::string prefix = strip.string() + "/";
    for (std::size_t p = chosen.find(prefix); p != std::string::npos; p = chosen.find(prefix))
        chosen.erase(p, prefix.size());
    return printable_utf8(capped(chosen, 400));
}

// What went wrong with a sandboxed command that did not exit normally, or "" when it did.
std::string abnormal_end(const SandboxResult& r, double cpu_limit, double student_limit) {
    if (!r.ran) return "the sandbox could not run it: " + r.error;
    if (r.exceeded == SandboxLimit::wall)
        return fmt::format("stopped: it did not finish within {:g} s of wall time (an endless wait?)", 2 * cpu_limit + 10);
    if (r.signal == SIGXCPU || (r.signal == SIGKILL && r.cpu_seconds >= cpu_limit - 0.5))
        return fmt::format("stopped when the student's CPU time ran out ({:g} s for building and checking; an "
                           "endless loop?)",
                           student_limit);
    if (r.signal != 0) return "crashed: " + signal_description(r.signal);
    return "";
}

struct StudentBuild {
    std::map<std::string, std::string> compile_errors;  // exercise id -> first compiler message
    std::string fatal;  // the program could not be built at all (link error, budget spent)
};

class SourceGrader {
public:
    SourceGrader(const GradeOptions& o, std::vector<const Exercise*> exercises, std::filesystem::path work,
                 std::filesystem::path compiler)
        : o_(o), exercises_(std::move(exercises)), work_(std::move(work)), compiler_(std::move(compiler)) {}

    // The precompiled header every student's compile uses; false after printing why it failed.
    bool prepare_kit() {
        const GradeKit& kit = grade_kit();
        kit_ = work_ / "kit";
        std::filesystem::create_directories(kit_);
        std::filesystem::copy_file(kit.pch.at(0), kit_ / "xtensor_pch.hpp",
                                   std::filesystem::copy_options::overwrite_existing);
        SandboxCommand c = base_command(kit_, 600);
        c.limits.file_bytes = std::size_t{1} << 30;  // the precompiled header is near 100 MB
        c.argv = {compiler_.string()};
        c.argv.insert(c.argv.end(), kit.compile.begin(), kit.compile.end());
        c.argv.insert(c.argv.end(), {"-x", "c++-header", (kit_ / "xtensor_pch.hpp").string(), "-o",
                                     (kit_ / "xtensor_pch.hpp.gch").string()});
        give_to_sandbox(kit_);
        const SandboxResult r = run_sandboxed(c);
        if (!r.ran || r.exit_code != 0) {
            fmt::print(stderr, "attn: cannot precompile the headers for the students' code: {}\n",
                       r.ran ? first_compiler_message(r.err, kit_) : r.error);
            return false;
        }
        return true;
    }

    // The rows of one student, in the order of the exercises graded.
    std::vector<GradeRow> grade(const std::filesystem::path& submission, std::size_t index) {
        const std::string name = student_name(submission);
        std::vector<GradeRow> rows;
        for (const Exercise* x : exercises_)
            rows.push_back({name, x->lesson, x->id, "", "", "", 0, static_cast<int>(unit_case_names(x->id).size()) + 1});
        const auto fail_all = [&](const std::string& result, const std::string& message) {
            for (auto& r : rows)
                if (r.result.empty()) {
                    r.result = result;
                    r.message = capped(message, 500);
                }
            return rows;
        };
        std::error_code ec;
        if (!std::filesystem::is_directory(submission, ec))
            return fail_all("error", printable_utf8(submission.string()) + " is not a directory");
        used_ = 0;
        dir_ = work_ / fmt::format("student-{}", index + 1);
        std::filesystem::remove_all(dir_, ec);
        std::filesystem::create_directories(dir_ / "src");
        std::filesystem::create_directories(dir_ / "obj");
        // the student's exercise files, copied: the sandbox never sees the submitted folder
        std::map<std::string, std::string> copied;  // exercise id -> file name
        for (const auto& x : all_exercises()) {
            const std::string file = exercise_file(x);
            if (!std::filesystem::exists(submission / file, ec)) continue;
            std::string text;
            try {
                text = read_file_bytes(submission / file, "exercise file", max_source_bytes);
            } catch (const std::exception& e) {
                if (is_graded(x.id)) {
                    GradeRow& r = row_of(rows, x.id);
                    r.result = "error";
                    r.message = capped(e.what(), 500);
                }
                continue;
            }
            write_file_atomic(dir_ / "src" / file, text);
            copied[x.id] = file;
        }
        for (auto& r : rows)
            if (r.result.empty() && !copied.count(r.exercise)) {
                r.result = "missing";
                r.message = "no " + exercise_file(*find_exercise(r.exercise));
            }
        if (std::all_of(rows.begin(), rows.end(), [](const GradeRow& r) { return !r.result.empty(); })) return rows;

        const StudentBuild build = build_program(copied);
        if (!build.fatal.empty()) return fail_all("error", build.fatal);
        for (auto& r : rows) {
            if (!r.result.empty()) continue;
            const auto broken = build.compile_errors.find(r.exercise);
            if (broken != build.compile_errors.end()) {
                r.result = "error";
                r.message = capped("does not compile: " + broken->second, 500);
                continue;
            }
            check(r);
        }
        return rows;
    }

private:
    bool is_graded(const std::string& id) const {
        return std::any_of(exercises_.begin(), exercises_.end(), [&](const Exercise* x) { return x->id == id; });
    }

    static GradeRow& row_of(std::vector<GradeRow>& rows, const std::string& id) {
        return *std::find_if(rows.begin(), rows.end(), [&](const GradeRow& r) { return r.exercise == id; });
    }

    double remaining() const { return o_.cpu_limit - used_; }

    SandboxCommand base_command(const std::filesystem::path& writable, double cpu) const {
        SandboxCommand c;
        c.writable = writable;
        c.limits.cpu_seconds = cpu;
        c.limits.wall_seconds = 2 * cpu + 10;
        c.limits.memory_bytes = o_.memory_limit_mib << 20;
        c.read_only.push_back(this_program().source_dir / "src");
        if (!kit_.empty() && writable != kit_) c.read_only.push_back(kit_);
        return c;
    }

    SandboxResult run(SandboxCommand& c, const std::string& log_name) {
        (void)log_name;
        give_to_sandbox(dir_);
        const SandboxResult r = run_sandboxed(c);
        used_ += r.cpu_seconds;
        return r;
    }

    StudentBuild build_program(const std::map<std::string, std::string>& copied) {
        StudentBuild build;
        const GradeKit& kit = grade_kit();
        std::vector<std::string> objects;
        // the record of the program: its name, and the folder of the student's files
        const auto quoted = [](const std::filesystem::path& p) { return "R\"attn_path(" + p.string() + ")attn_path\""; };
        write_file_atomic(dir_ / "program_graded.cpp",
                          fmt::format("#include \"cli/program_record.hpp\"\nnamespace attn {{\n"
                                      "namespace {{\nconst char* const none[] = {{nullptr}};\n}}\n"
                                      "extern const ProgramRecord program_record{{\"attn-graded\", true, {}, {}, {}, "
                                      "none, none, none, none}};\n}}  // namespace attn\n",
                                      quoted(dir_ / "src"), quoted(this_program().source_dir), quoted(dir_)));
        std::vector<std::pair<std::string, std::string>> units(copied.begin(), copied.end());
        units.emplace_back("", "../program_graded.cpp");
        for (const auto& [id, file] : units) {
            if (remaining() <= 0) {
                build.fatal = fmt::format("stopped: the CPU limit of {:g} s was spent while compiling", o_.cpu_limit);
                return build;
            }
            const std::string object = (dir_ / "obj" / (std::filesystem::path(file).stem().string() + ".o")).string();
            SandboxCommand c = base_command(dir_, remaining());
            c.argv = {compiler_.string()};
            c.argv.insert(c.argv.end(), kit.compile.begin(), kit.compile.end());
            if (!id.empty())
                c.argv.insert(c.argv.end(), {"-Winvalid-pch", "-include", (kit_ / "xtensor_pch.hpp").string()});
            c.argv.insert(c.argv.end(), {"-c", (dir_ / "src" / file).lexically_normal().string(), "-o", object});
            const SandboxResult r = run(c, id.empty() ? "program" : id);
            const std::string abnormal = abnormal_end(r, c.limits.cpu_seconds, o_.cpu_limit);
            if (!abnormal.empty() || r.exit_code != 0) {
                const std::string why = !abnormal.empty()
                                            ? "the compiler " + abnormal
                                            : first_compiler_message(r.err, dir_ / "src");
                if (id.empty()) {
                    build.fatal = "cannot build the program: " + why;
                    return build;
                }
                build.compile_errors[id] = why;  // the reference stands in for it, so the others are graded
                continue;
            }
            objects.push_back(object);
        }
        if (remaining() <= 0) {
            build.fatal = fmt::format("stopped: the CPU limit of {:g} s was spent while compiling", o_.cpu_limit);
            return build;
        }
        SandboxCommand c = base_command(dir_, remaining());
        for (const auto& item : kit.link)
            if (!item.empty() && item[0] == '/') c.read_only.push_back(item);
        // meson's static libraries are thin archives: their members stay in <library>.p/, or in
        // prebuilt/ of the source tree for the student edition's references
        std::error_code ec;
        if (std::filesystem::is_directory(this_program().source_dir / "prebuilt", ec))
            c.read_only.push_back(this_program().source_dir / "prebuilt");
        for (const auto& entry : std::filesystem::directory_iterator(this_program().build_dir, ec)) {
            const std::string n = entry.path().filename().string();
            if (n.size() > 4 && n.compare(n.size() - 4, 4, ".a.p") == 0 && entry.is_directory(ec))
                c.read_only.push_back(entry.path());
        }
        c.argv = {compiler_.string(), "-o", (dir_ / "attn-graded").string()};
        c.argv.insert(c.argv.end(), objects.begin(), objects.end());
        c.argv.insert(c.argv.end(), kit.link.begin(), kit.link.end());
        const SandboxResult r = run(c, "link");
        const std::string abnormal = abnormal_end(r, c.limits.cpu_seconds, o_.cpu_limit);
        if (!abnormal.empty() || r.exit_code != 0)
            build.fatal = "cannot link the program: " +
                          (!abnormal.empty() ? "the linker " + abnormal
                                             : first_compiler_message(r.err, dir_ / "obj"));
        return build;
    }

    // `attn-graded check <id> --format json`, in the sandbox, into the row.
    void check(GradeRow& row) {
        if (remaining() <= 0) {
            row.result = "error";
            row.message = fmt::format("not checked: the CPU limit of {:g} s was spent", o_.cpu_limit);
            return;
        }
        SandboxCommand c = base_command(dir_, remaining());
        c.read_only.push_back(o_.golden_dir);
        c.argv = {(dir_ / "attn-graded").string(), "check", row.exercise, "--format", "json", "--golden",
                  o_.golden_dir.string(), "--rtol", fmt::format("{:.17g}", o_.tolerance.rtol), "--atol",
                  fmt::format("{:.17g}", o_.tolerance.atol)};
        const SandboxResult r = run(c, "check-" + row.exercise);
        const std::string abnormal = abnormal_end(r, c.limits.cpu_seconds, o_.cpu_limit);
        if (!abnormal.empty()) {
            row.result = "error";
            row.message = "the check " + abnormal;
            return;
        }
        nlohmann::json entry;
        try {
            entry = nlohmann::json::parse(r.out).at("exercises").at(0);
        } catch (const std::exception&) {
            const std::string err = r.err;
            row.result = "error";
            row.message = capped(fmt::format("the check exited {} without a report{}", r.exit_code,
                                             err.empty() ? "" : ": " + first_compiler_message(err, dir_)),
                                 500);
            return;
        }
        const std::string status = entry.value("status", "");
        const std::string description = entry.value("description", "");
        std::string message = entry.value("message", "");
        row.step = entry.value("unit_case", "").empty() ? entry.value("step", "") : entry.value("unit_case", "");
        row.points = entry.value("points", 0);
        row.max_points = entry.value("max_points", row.max_points);
        row.result = status == "passed"                                           ? "pass"
                     : status == "not_started"                                    ? "missing"
                     : status == "error" || status == "golden_problem"            ? "error"
                                                                                  : "fail";
        if (row.result != "pass") {
            std::string text = description;
            if (!message.empty()) text += (text.empty() ? "" : ": ") + message;
            while (!text.empty() && text.back() == '\n') text.pop_back();
            row.message = capped(printable_utf8(text), 500);
        }
    }

    const GradeOptions& o_;
    std::vector<const Exercise*> exercises_;
    std::filesystem::path work_, compiler_, kit_, dir_;
    double used_ = 0;
};

}  // namespace

int grade_from_sources(const GradeOptions& o, const std::vector<const Exercise*>& exercises) {
    if (!(o.cpu_limit > 0) || o.cpu_limit > 86400) {
        fmt::print(stderr, "attn: --cpu-limit must be between 0 and 86400 seconds, not {:g}\n", o.cpu_limit);
        return exit_usage;
    }
    if (o.memory_limit_mib < 256 || o.memory_limit_mib > (std::size_t{1} << 20)) {
        fmt::print(stderr, "attn: --memory-limit must be between 256 and 1048576 MiB, not {}\n", o.memory_limit_mib);
        return exit_usage;
    }
    const GradeKit& kit = grade_kit();
    if (kit.compiler.empty() || kit.pch.empty()) {
        fmt::print(stderr, "attn: {} cannot grade from sources; use the attn of a build directory\n",
                   this_program().name);
        return exit_usage;
    }
    for (const auto& item : kit.link) {
        std::error_code ec;
        if (!item.empty() && item[0] == '/' && !std::filesystem::is_regular_file(item, ec)) {
            fmt::print(stderr, "attn: grading from sources needs the libraries of the build directory, and {} is "
                               "missing: run meson compile -C {}\n",
                       printable_utf8(item), printable_utf8(this_program().build_dir.string()));
            return exit_golden;
        }
    }
    const auto compiler = compiler_path(kit.compiler.front());
    if (!compiler) {
        fmt::print(stderr, "attn: grading from sources needs the compiler {}, which is not on PATH\n",
                   printable_utf8(kit.compiler.front()));
        return exit_golden;
    }
    if (const auto why = sandbox_unavailable()) {
        fmt::print(stderr,
                   "attn: grading from sources runs the students' code in a sandbox, and none can be created here: "
                   "{}. Grading from numbers (attn grade without --sources) still works.\n",
                   *why);
        return exit_golden;
    }
    // the work folder: given (and kept), or temporary (and removed)
    std::filesystem::path work = o.work_dir;
    const bool keep = !work.empty();
    std::error_code ec;
    if (keep) {
        std::filesystem::create_directories(work, ec);
        if (ec || !std::filesystem::is_directory(work, ec)) {
            fmt::print(stderr, "attn: cannot create the folder {} for the builds\n", printable_utf8(work.string()));
            return exit_golden;
        }
        work = std::filesystem::absolute(work);
    } else {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/attn-grade.XXXXXX";
        if (!::mkdtemp(pattern.data())) {
            fmt::print(stderr, "attn: cannot create a folder for the builds: {}\n", std::strerror(errno));
            return exit_golden;
        }
        work = pattern;
    }
    struct Cleanup {
        std::filesystem::path dir;
        bool keep;
        ~Cleanup() {
            std::error_code e;
            if (!keep) std::filesystem::remove_all(dir, e);
        }
    } cleanup{work, keep};

    GradeOptions options = o;
    options.golden_dir = std::filesystem::absolute(o.golden_dir);
    SourceGrader grader(options, exercises, work, *compiler);
    try {
        if (!grader.prepare_kit()) return exit_golden;
    } catch (const std::exception& e) {
        fmt::print(stderr, "attn: cannot prepare the builds in {}: {}\n", printable_utf8(work.string()), e.what());
        return exit_golden;
    }
    std::vector<GradeRow> rows;
    print_grade_header();
    for (std::size_t i = 0; i < o.submissions.size(); ++i) {
        std::vector<GradeRow> student;
        try {
            student = grader.grade(o.submissions[i], i);
        } catch (const std::exception& e) {  // our side failed (disk full): this student is an error, the batch goes on
            student.clear();
            for (const Exercise* x : exercises)
                student.push_back({student_name(o.submissions[i]), x->lesson, x->id, "error", "",
                                   capped(std::string("could not be graded: ") + e.what(), 500), 0,
                                   static_cast<int>(unit_case_names(x->id).size()) + 1});
        }
        const std::size_t first = rows.size();
        rows.insert(rows.end(), student.begin(), student.end());
        print_grade_line(rows, first, exercises.size());
    }
    if (keep) fmt::print("the builds are in {}\n", printable_utf8(work.string()));
    return write_grade_reports(rows, exercises, o.out);
}

}  // namespace attn
