// attn run / export with --seed, --set and --input, as a user types them: exit codes, the
// reproducibility line, and the user's own tensors in place of the drawn ones.
// ATTN_BIN names the binary (set by tests/meson.build); every program runs in a fresh
// temporary directory, removed at the end.
#include "attn_config.hpp"
#include "core/golden.hpp"
#include "core/npy.hpp"
#include "core/render.hpp"
#include "registry.hpp"

#include "support.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <xtensor/xbuilder.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_run_options {

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

// A fresh temporary directory, the working directory of the programs a test runs.
struct TempDir {
    fs::path dir;
    TempDir() {
        static int count = 0;
        dir = fs::temp_directory_path() / fmt::format("attn_run_options_{}_{}", ::getpid(), ++count);
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    ~TempDir() { fs::remove_all(dir); }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    // Runs `attn <args>` inside the directory, stderr included in the output.
    Result attn(const std::string& args) const {
        const char* bin = std::getenv("ATTN_BIN");
        REQUIRE(bin != nullptr);
        return run_command("cd '" + dir.string() + "' && '" + std::string(bin) + "' " + args + " 2>&1");
    }
};

void write_npy(const fs::path& file, const Array& value) {
    std::ofstream out(file, std::ios::binary);
    out << to_npy(value);
}

// The one file in `dir` whose name ends with `suffix` (".X.npy").
fs::path file_ending(const fs::path& dir, const std::string& suffix) {
    fs::path found;
    for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
            found = entry.path();
    }
    INFO("a file ending " << suffix << " in " << dir);
    REQUIRE(!found.empty());
    return found;
}

// Whether two tensors hold the same numbers, NaN where the other has NaN (lesson 10's edges).
bool same_values(const Array& a, const Array& b) {
    if (!(shape_of(a) == shape_of(b))) return false;
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
        if (!(*i == *j || (std::isnan(*i) && std::isnan(*j)))) return false;
    return true;
}

// The ids of the steps holding a tensor whose values differ between two runs of one lesson;
// the steps and their tensors must be the same.
std::set<std::string> differing_steps(const Trace& a, const Trace& b) {
    std::set<std::string> out;
    REQUIRE(a.steps().size() == b.steps().size());
    for (std::size_t s = 0; s < a.steps().size(); ++s) {
        const Step &x = a.steps()[s], &y = b.steps()[s];
        REQUIRE(x.tensors.size() == y.tensors.size());
        for (std::size_t t = 0; t < x.tensors.size(); ++t)
            if (!same_values(x.tensors[t].value, y.tensors[t].value)) out.insert(x.id);
    }
    return out;
}

std::string golden_name(int number) {
    const Lesson& l = *find_lesson(std::to_string(number));
    return golden_file_name(l.number, l.slug);
}

}  // namespace

TEST_CASE("--pause: Enter goes on, q then Enter quits, and a tall step comes a screenful at a time", "[cli]") {
    // --pause acts only on a terminal: script(1) runs attn on a pseudo-terminal of 32 rows
    if (run_command("command -v script >/dev/null 2>&1").code != 0) {
        WARN("skipped: script(1) (util-linux) is not installed");
        return;
    }
    // a chroot or container without /dev/pts has no pseudo-terminals to give
    if (const Result probe = run_command("script -qec true /dev/null 2>&1"); probe.code != 0) {
        WARN("skipped: script(1) cannot create a pseudo-terminal here: " << probe.output);
        return;
    }
    const TempDir t;
    const char* bin = std::getenv("ATTN_BIN");
    REQUIRE(bin != nullptr);
    const auto paused = [&](const std::string& keys) {
        return run_command("cd '" + t.dir.string() + "' && printf '" + keys + "' | script -qec \"stty rows 32; '" +
                           bin + "' run 1 --pause --color never\" /dev/null 2>&1");
    };
    // Enter after step 1 (27 lines); step 2 (nine weights, a summary line each: 42 lines) is taller
    // than 32 rows: q at its first "more"
    const Result quit = paused("\\nq\\n");
    INFO(quit.output);
    CHECK(quit.code == 0);
    CHECK_THAT(quit.output, Catch::Contains("[Enter: next step · q Enter: quit]"));
    CHECK_THAT(quit.output, Catch::Contains("[Enter: more · q Enter: quit]"));
    CHECK_THAT(quit.output, Catch::Contains("bottleneck: stopped at step 2 of 8"));
    CHECK_THAT(quit.output, !Catch::Contains("Step 3/8"));
    // closing the input quits too, at once
    const Result closed = paused("");
    CHECK_THAT(closed.output, Catch::Contains("bottleneck: stopped at step 1 of 8"));
}

TEST_CASE("--pause on a 60 x 24 terminal: lines fit, and every screenful starts with the step's rule and equation",
          "[cli]") {
    if (run_command("script -qec true /dev/null >/dev/null 2>&1").code != 0) {
        WARN("skipped: script(1) cannot run or create a pseudo-terminal here");
        return;
    }
    const TempDir t;
    const char* bin = std::getenv("ATTN_BIN");
    REQUIRE(bin != nullptr);
    // Enter at every prompt until step 3's first "more", then q
    const Result r = run_command("cd '" + t.dir.string() + "' && printf '\\n\\n\\n\\n\\nq\\n' | script -qec \"stty rows 24 "
                                 "cols 60; '" + std::string(bin) + "' run 1 --pause --color never\" /dev/null 2>&1");
    INFO(r.output);
    CHECK(r.code == 0);
    // step 1 (the embeddings) is taller than 23 lines: its second screenful starts with its rule and equation again
    const std::string more = "[Enter: more · q Enter: quit] ";
    const std::size_t first_more = r.output.find(more);
    REQUIRE(first_more != std::string::npos);
    CHECK(r.output.compare(first_more + more.size(), std::string("── Step 1/8 · ").size(), "── Step 1/8 · ") == 0);
    const std::size_t equation = r.output.find("  x_j = E_src[w_j],  y_i = E_tgt[w'_i]");
    REQUIRE(equation != std::string::npos);
    CHECK(r.output.find("  x_j = E_src[w_j],  y_i = E_tgt[w'_i]", equation + 1) > first_more);
    // a screenful is at most 24 lines: between two prompts, at most 23 lines of the lesson
    std::size_t from = first_more;
    while (true) {
        const std::size_t next = r.output.find("  [Enter:", from + 1);
        if (next == std::string::npos) break;
        const auto lines = std::count(r.output.begin() + static_cast<long>(from), r.output.begin() + static_cast<long>(next), '\n');
        CHECK(lines <= 23);
        from = next;
    }
    // the lesson drew at the terminal's 60 columns: no line of it is wider (the prompts are the terminal's input line)
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
        if (line.find("[Enter:") != std::string::npos) continue;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        INFO(line);
        CHECK(display_width(line) <= 60);
    }
}

TEST_CASE("run --set --seed prints the reproducibility line and exits 0", "[cli][settings]") {
    const TempDir tmp;
    const Result r = tmp.attn("run multi-head --set d_model=16 --set heads=4 --seed 3 --color never --width 400");
    INFO(r.output);
    CHECK(r.code == 0);
    CHECK_THAT(r.output, Catch::Contains(fmt::format("attn {} · lesson 6 multi-head · seed 3, d_model=16, heads=4 · "
                                                     "golden format {}",
                                                     ATTN_VERSION, golden_format_version)));
    CHECK_THAT(r.output, Catch::Contains("all") && Catch::Contains("identity checks hold"));
}

TEST_CASE("run refuses d_model=16 with heads=3, naming both", "[cli][settings]") {
    const TempDir tmp;
    const Result r = tmp.attn("run multi-head --set d_model=16 --set heads=3");
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Catch::Contains("d_model=16") && Catch::Contains("heads=3"));
}

TEST_CASE("--input with a wrong shape exits 2 naming the tensor and both shapes", "[cli][inputs]") {
    const TempDir tmp;
    REQUIRE(tmp.attn("export 6 --format npy --out drawn").code == 0);
    fs::create_directories(tmp.dir / "mine");
    const fs::path x = file_ending(tmp.dir / "drawn", ".X.npy");
    fs::copy_file(x, tmp.dir / "mine" / "X.npy");
    const Shape given = shape_of(read_npy(x));  // T x 6
    const Result r = tmp.attn("run 6 --set d_model=16 --set heads=4 --input mine");
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Catch::Contains("'X'"));
    CHECK_THAT(r.output, Catch::Contains(shape_string(given)));
    CHECK_THAT(r.output, Catch::Contains(shape_string({given[0], 16})));
}

TEST_CASE("--input from an export of the same configuration reproduces it exactly", "[cli][inputs]") {
    const TempDir tmp;
    for (int number = 1; number <= 6; ++number) {
        INFO("lesson " << number);
        const std::string file = golden_name(number);
        REQUIRE(tmp.attn(fmt::format("export {} --format json --out drawn{}", number, number)).code == 0);
        const Result again =
            tmp.attn(fmt::format("export {0} --format json --out again{0} --input drawn{0}/{1}", number, file));
        INFO(again.output);
        REQUIRE(again.code == 0);
        CHECK(read_file(tmp.dir / ("drawn" + std::to_string(number)) / file) ==
              read_file(tmp.dir / ("again" + std::to_string(number)) / file));
    }
    // the same through a directory of .npy files
    REQUIRE(tmp.attn("export 6 --format npy --out npy6").code == 0);
    REQUIRE(tmp.attn("export 6 --format json --out again_npy --input npy6").code == 0);
    CHECK(read_file(tmp.dir / "drawn6" / golden_name(6)) == read_file(tmp.dir / "again_npy" / golden_name(6)));
}

// `--seed 8` and the lesson's quick settings (`--set`, its cheapest configuration with the same
// steps): a configuration other than the defaults, which every lesson must also take back.
std::string other_settings(const Lesson& l) { return " --seed 8" + set_args(l.quick, l.defaults); }

// Exports lesson `l` with `settings` as JSON and as .npy files, exports it again from each with
// --input and the same settings, and checks that both give back the first export's numbers (its
// measured tensors, lesson 7's timings, aside).
void takes_back_its_export(const TempDir& tmp, const Lesson& l, const std::string& settings, const std::string& tag) {
    INFO("lesson " << l.number << settings);
    const std::string file = golden_file_name(l.number, l.slug), base = tag + std::to_string(l.number);
    REQUIRE(tmp.attn(fmt::format("export {} --out {}_json{}", l.number, base, settings)).code == 0);
    REQUIRE(tmp.attn(fmt::format("export {} --format npy --out {}_npy{}", l.number, base, settings)).code == 0);
    const Trace exported = read_golden(tmp.dir / (base + "_json") / file).for_golden();
    for (const std::string& given : {base + "_json/" + file, base + "_npy"}) {
        const Result again = tmp.attn(fmt::format("export {} --out {}_again --input {}{}", l.number, base, given, settings));
        INFO("--input " << given << "\n" << again.output);
        REQUIRE(again.code == 0);
        CHECK(differing_steps(read_golden(tmp.dir / (base + "_again") / file).for_golden(), exported).empty());
        fs::remove_all(tmp.dir / (base + "_again"));
    }
}

// Issue 40: lesson 11 refused its own export (its X of the step "inputs" and its input X of
// "layer-norm" collided). Every lesson, from JSON and from .npy files: the lessons that do not train
// at their defaults and at other settings; lessons 9, 12, 13, 14 and 15, which train for 10 to 20 s at their
// defaults (six runs each), at other settings only, whose quick settings train for a second or two.
TEST_CASE("every lesson takes back its own export, JSON and npy, at its defaults and at other settings",
          "[cli][inputs]") {
    // Under the sanitizers lessons 7, 9, 12, 13, 14 and 15 are left to the unsanitized build: lesson 7 measures
    // for 25 s a run there and the others train (their six runs each took minutes even at their quick
    // settings), for reading code the other lessons run too. The others are taken back there at their
    // other settings only: the reading code is the same at the defaults, whose larger sizes only lengthen
    // the lessons' loops (check_exact runs every one of them at its defaults in that build; the defaults'
    // four runs per lesson were about half of this test's 119 s there: CI, 2026-11-30).
    const std::string sanitized = sanitizers();
    const bool quick = !sanitized.empty();
    if (quick)
        WARN("lessons 7, 9, 12, 13, 14 and 15 skipped, and the others taken back at their other settings only, in this "
             "build (sanitized: "
             << sanitized << ")");
    const TempDir tmp;
    for (const auto& l : all_lessons()) {
        if (quick && (trains(l.slug) || l.slug == "scaling")) continue;
        if (!trains(l.slug) && !quick) takes_back_its_export(tmp, l, "", "defaults");
        takes_back_its_export(tmp, l, other_settings(l), "other");
    }
}

TEST_CASE("--step stops the lesson after its step, except with --input, whose tensors may belong to later steps",
          "[cli][inputs]") {
    const TempDir tmp;
    REQUIRE(tmp.attn("export 1 --format json --out drawn").code == 0);
    // the whole export given, one early step shown: every tensor is still taken (exit 0, not
    // "no tensor named" for the later steps' ones)
    const Result shown = tmp.attn("run 1 --step encoder --input drawn/" + golden_name(1));
    INFO(shown.output);
    CHECK(shown.code == 0);
    CHECK_THAT(shown.output, !Catch::Contains("has no tensor named"));
    CHECK_THAT(shown.output, Catch::Contains("[encoder]"));
}

TEST_CASE("every tensor a lesson draws is an input: another seed's tensors give that seed's numbers",
          "[cli][inputs]") {
    // Only lesson 3's measurements draw afresh: their samples are statistics, not inputs.
    const std::map<int, std::set<std::string>> measured = {{3, {"variance", "saturation"}}};
    const TempDir tmp;
    for (int number = 1; number <= 6; ++number) {
        INFO("lesson " << number);
        const std::string file = golden_name(number);
        REQUIRE(tmp.attn(fmt::format("export {0} --seed 8 --format json --out seed8_{0}", number)).code == 0);
        const Result r =
            tmp.attn(fmt::format("export {0} --format json --out mine{0} --input seed8_{0}/{1}", number, file));
        INFO(r.output);
        REQUIRE(r.code == 0);
        const Trace theirs = read_golden(tmp.dir / ("seed8_" + std::to_string(number)) / file);
        const Trace mine = read_golden(tmp.dir / ("mine" + std::to_string(number)) / file);
        CHECK(mine.config().seed == 7);
        const auto it = measured.find(number);
        CHECK(differing_steps(mine, theirs) == (it == measured.end() ? std::set<std::string>{} : it->second));
    }
}

TEST_CASE("--input naming no tensor of the lesson exits 2 and lists its inputs", "[cli][inputs]") {
    const TempDir tmp;
    fs::create_directories(tmp.dir / "mine");
    write_npy(tmp.dir / "mine" / "nonsense.npy", Array(xt::zeros<double>({2, 2})));
    const Result r = tmp.attn("run 6 --input mine");
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Catch::Contains("nonsense"));
    CHECK_THAT(r.output, Catch::Contains("X, W_Q, W_K, W_V, W_O"));
}

TEST_CASE("--set and --input need exactly one lesson", "[cli][settings]") {
    const TempDir tmp;
    for (const char* args : {"run all --set d=3", "run 1 2 --set d=3", "run all --input nowhere"}) {
        INFO(args);
        const Result r = tmp.attn(args);
        INFO(r.output);
        CHECK(r.code == 2);
        CHECK_THAT(r.output, Catch::Contains("exactly one lesson"));
    }
}

TEST_CASE("run <lesson> --help lists the lesson's parameters with their ranges", "[cli][settings]") {
    const TempDir tmp;
    const Result r = tmp.attn("run 6 --help");
    INFO(r.output);
    CHECK(r.code == 0);
    for (const auto& p : find_lesson("multi-head")->params) {
        CHECK_THAT(r.output, Catch::Contains(p.key));
        CHECK_THAT(r.output, Catch::Contains(fmt::format("{}..{}", p.min, p.max)));
    }
    CHECK_THAT(r.output, Catch::Contains("d_model") && Catch::Contains("heads"));
}

TEST_CASE("check has no --set: it always checks the golden configuration", "[cli][settings]") {
    const TempDir tmp;
    const Result r = tmp.attn("check --set d=1");
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Catch::Contains("--set"));
}

TEST_CASE("export --set writes a JSON file whose config holds the settings", "[cli][settings]") {
    const TempDir tmp;
    const Result r = tmp.attn("export 6 --set d_model=16 --set heads=4 --format json --out out");
    INFO(r.output);
    REQUIRE(r.code == 0);
    const Trace exported = read_golden(tmp.dir / "out" / golden_name(6));
    Config expected;
    expected.seed = 7;
    expected.values = {{"d_model", 16}, {"heads", 4}};
    CHECK(exported.config() == expected);
}

TEST_CASE("--seed '' is refused as a seed, not taken for the default", "[cli][settings]") {
    const TempDir tmp;
    for (const char* args : {"run 1 --seed ''", "export 1 --seed '' --out out"}) {
        INFO(args);
        const Result r = tmp.attn(args);
        INFO(r.output);
        CHECK(r.code == 2);
        CHECK_THAT(r.output, Catch::Contains("--seed '': the seed must be a whole number"));
    }
    CHECK(!fs::exists(tmp.dir / "out"));
}

TEST_CASE("--set with a key that is not UTF-8 shows its bytes escaped, never raw", "[cli][settings]") {
    const TempDir tmp;
    for (const char* args : {"run 1 --set $'\\xff\\xfe=3'", "run 1 --set $'d\\xc3=3'", "run 1 --set $'\\xe2\\x28'"}) {
        INFO(args);
        const Result r = run_command("cd '" + tmp.dir.string() + "' && bash -c \"'" + std::string(std::getenv("ATTN_BIN")) +
                                     "' " + args + "\" 2>&1");
        CHECK(r.code == 2);
        CHECK_THAT(r.output, Catch::Contains("--set '"));
        CHECK_THAT(r.output, Catch::Contains("\\x"));
        CHECK(printable_utf8(r.output) == r.output);  // nothing but well-formed UTF-8 reaches the terminal
    }
}

TEST_CASE("an --input folder that cannot be read exits 2 naming it, not an internal error", "[cli][inputs]") {
    const TempDir tmp;
    std::string why;
    const std::string attn = unprivileged_command(std::getenv("ATTN_BIN"), tmp.dir / "bin", why);
    if (attn.empty()) {
        WARN("skipped: " << why);
        return;
    }
    fs::permissions(tmp.dir, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
    const fs::path locked = tmp.dir / "locked";
    fs::create_directories(locked);
    write_npy(locked / "W_Q.npy", Array(xt::zeros<double>({2, 2})));
    for (const auto perms : {fs::perms::none, fs::perms::owner_all | fs::perms::others_exec}) {
        fs::permissions(locked, perms);  // no read or search at all; search but no listing
        const Result r = run_command("cd '" + tmp.dir.string() + "' && " + attn + " run 6 --input locked 2>&1");
        INFO(r.output);
        CHECK(r.code == 2);
        CHECK_THAT(r.output, Catch::Contains("--input locked: cannot read the folder: Permission denied"));
        CHECK_THAT(r.output, !Catch::Contains("internal error"));
    }
    fs::permissions(locked, fs::perms::owner_all);
}

TEST_CASE("export through a link to a device or a FIFO leaves the node as it is", "[cli][export]") {
    const TempDir tmp;
    fs::create_directories(tmp.dir / "out");
    std::vector<std::pair<std::string, std::string>> nodes;  // name, what the message calls it
    if (::mkfifo((tmp.dir / "fifo").c_str(), 0644) == 0) nodes.emplace_back("fifo", "a FIFO");
    // a device node of its own (the null device's numbers), never /dev/null itself: without the
    // fix, the export would replace the node with a regular file
    if (run_command("mknod '" + (tmp.dir / "device").string() + "' c 1 3 2>&1").code == 0)
        nodes.emplace_back("device", "a device");
    else
        WARN("no device node could be made here (mknod needs CAP_MKNOD): only the FIFO is tried");
    REQUIRE(!nodes.empty());
    for (const auto& [name, kind] : nodes) {
        INFO(name);
        const fs::path link = tmp.dir / "out" / golden_name(1);
        fs::remove(link);
        fs::create_symlink(tmp.dir / name, link);
        const Result r = tmp.attn("export 1 --out out");
        INFO(r.output);
        CHECK(r.code == 3);
        CHECK_THAT(r.output, Catch::Contains("is " + kind + ", and attn replaces only regular files"));
        const auto status = fs::status(tmp.dir / name);
        CHECK((name == "fifo" ? fs::is_fifo(status) : fs::is_character_file(status)));
        CHECK(fs::is_symlink(link));
        // named directly, not through a link: the same
        fs::remove(link);
        fs::rename(tmp.dir / name, link);
        const Result direct = tmp.attn("export 1 --out out");
        INFO(direct.output);
        CHECK(direct.code == 3);
        CHECK((name == "fifo" ? fs::is_fifo(fs::status(link)) : fs::is_character_file(fs::status(link))));
        fs::remove(link);
    }
}

TEST_CASE("lesson 9 refuses an unknown --step or an --input tensor it does not take before it trains",
          "[cli][inputs]") {
    const TempDir tmp;
    fs::create_directories(tmp.dir / "mine");
    write_npy(tmp.dir / "mine" / "nonsense.npy", Array(xt::zeros<double>({2, 2})));
    // epochs=60: trained in full, the lesson would take about five times its default 10 s
    for (const char* args : {"run 9 --set epochs=60 --step nope", "run 9 --set epochs=60 --input mine",
                             "export 9 --set epochs=60 --input mine --out out"}) {
        INFO(args);
        const auto start = std::chrono::steady_clock::now();
        const Result r = tmp.attn(args);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        INFO(r.output);
        CHECK(r.code == 2);
        CHECK_THAT(r.output, Catch::Contains(std::string(args).find("step") != std::string::npos
                                                 ? "lesson 'learning-to-align' has no step 'nope'; its steps are: "
                                                 : "has no tensor named nonsense; the tensors it takes as inputs are: "));
        CHECK(seconds < 10.0);  // the quick run that learns the steps and inputs, not 50 s of training
    }
    CHECK(!fs::exists(tmp.dir / "out"));
}

}  // namespace test_run_options

namespace test_run_options_next {

TEST_CASE("one lesson does not end by saying where to go next", "[run_options]") {
    // `attn run all` does, after the whole course: tests/svg_check.py runs it once (README's first
    // command, with --svg) and checks its last words there, so that every lesson does not train again
    // here for them (issue 41)
    const char* bin = std::getenv("ATTN_BIN");
    REQUIRE(bin != nullptr);
    const auto one = attn::test::run_command("'" + std::string(bin) + "' run 1 --color never 2>&1");
    CHECK(one.code == 0);
    CHECK(one.output.find("lessons ran. Next:") == std::string::npos);
    const auto two = attn::test::run_command("'" + std::string(bin) + "' run 1 2 --color never 2>&1");
    CHECK(two.code == 0);
    CHECK(two.output.find("lessons ran. Next:") == std::string::npos);
}

}  // namespace test_run_options_next
