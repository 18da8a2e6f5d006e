// `attn grade --sources`: a class of generated students, built and checked from their .cpp files
// in a sandbox each. Where no sandbox can be created (bwrap missing, or no user namespaces), grade
// must refuse with exit 3, and then the test program exits 77, which meson reports as skipped.
#include "support.hpp"

#include "exercises/cases.hpp"
#include "exercises/table.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace test_grade_sources {

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

Result run_attn(const std::string& args) {
    const char* bin = std::getenv("ATTN_BIN");
    REQUIRE(bin != nullptr);
    return run_command("'" + std::string(bin) + "' " + args + " 2>&1");
}

std::string source_dir() {
    const char* dir = std::getenv("ATTN_SOURCE_DIR");
    REQUIRE(dir != nullptr);
    return dir;
}

struct Class {
    fs::path dir = fs::temp_directory_path() / ("attn_grade_sources_" + std::to_string(::getpid()));
    Class() {
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    ~Class() { fs::remove_all(dir); }
    std::string q(const std::string& name) const { return "'" + (dir / name).string() + "'"; }
    // a student's file: a copy of the reference, or the text given. The references of softmax and
    // multi-head vectorise a softmax of their own, which no student's file can include: a correct
    // student's version stands for them (tests/fixtures/correct/, student_softmax_row.inc).
    void reference(const std::string& student, const std::string& file, const std::string& reference_file) const;
    void write(const std::string& student, const std::string& file, const std::string& text) const {
        fs::create_directories(dir / student);
        std::ofstream(dir / student / file) << text;
    }
};

std::string softmax_with(const std::string& extra, const std::string& includes = "");

void Class::reference(const std::string& student, const std::string& file, const std::string& reference_file) const {
    fs::create_directories(dir / student);
    if (reference_file == "softmax.cpp")
        write(student, file, softmax_with(""));
    else if (reference_file == "multi_head_attention.cpp")
        fs::copy_file(source_dir() + "/tests/fixtures/correct/multi_head.cpp", dir / student / file);
    else
        fs::copy_file(source_dir() + "/src/nn/" + reference_file, dir / student / file);
}

// A student's softmax.cpp (the row of tests/fixtures/student_softmax_row.inc) with `extra` run
// first in softmax(): each student's twist on it.
std::string softmax_with(const std::string& extra, const std::string& includes) {
    std::ifstream row_file(source_dir() + "/tests/fixtures/student_softmax_row.inc");
    const std::string row((std::istreambuf_iterator<char>(row_file)), std::istreambuf_iterator<char>());
    return "#include \"nn/softmax.hpp\"\n#include \"core/portable_math.hpp\"\n#include <algorithm>\n"
           "#include <cmath>\n#include <limits>\n" + includes + row +
           "namespace attn::nn {\n"
           "Vec softmax(const Vec& logits) {\n" +
           extra +
           "    Vec out = xt::empty<double>({logits.size()});\n"
           "    student_softmax_row(logits.data(), out.data(), logits.size());\n"
           "    return out;\n}\n"
           "Mat softmax_rows(const Mat& logits) {\n"
           "    const std::size_t rows = logits.shape(0), cols = logits.shape(1);\n"
           "    Mat out = xt::empty<double>({rows, cols});\n"
           "    for (std::size_t r = 0; r < rows; ++r) student_softmax_row(logits.data() + r * cols, out.data() + r * cols, cols);\n"
           "    return out;\n}\n}  // namespace attn::nn\n";
}

std::string line_of(const std::string& csv, const std::string& student) {
    std::istringstream lines(csv);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind(student + ",", 0) == 0) return line;
    return "";
}

// Whether grade --sources can create its sandbox here (else the tests below are skipped, said so).
bool sandbox_here(const Class& c) {
    if (run_attn("grade --sources /nonexistent --out " + c.q("probe")).output.find("none can be created") ==
        std::string::npos)
        return true;
    WARN("skipped: no sandbox can be created here");
    return false;
}

}  // namespace

TEST_CASE("grade --sources builds and checks every student in a sandbox of their own", "[grade_sources]") {
    Class c;
    const Result probe = run_command("bwrap --unshare-all --ro-bind /usr /usr --symlink usr/lib64 /lib64 "
                                     "--symlink usr/lib /lib /usr/bin/true 2>&1");
    if (probe.code != 0) {
        WARN("skipped: no sandbox can be created here (bwrap: " << probe.output << ")");
        c.write("alice", "softmax.cpp", softmax_with(""));
        const Result r = run_attn("grade --sources " + c.q("alice") + " --out " + c.q("report"));
        CHECK(r.code == 3);
        CHECK_THAT(r.output, Catch::Contains("sandbox"));
        // skipped, not passed: meson test shows SKIP for exit 77 (when attn refused as it should)
        if (r.code == 3 && r.output.find("sandbox") != std::string::npos) {
            fs::remove_all(c.dir);
            std::fflush(nullptr);
            std::_Exit(77);
        }
        return;
    }
    // the graded exercises: softmax (lesson 1) and scaled-attention (lesson 4), whose function calls softmax
    // alice: both right.
    c.reference("alice", "softmax.cpp", "softmax.cpp");
    c.reference("alice", "scaled_attention.cpp", "self_attention_scaled.cpp");
    // bob: scaled attention divided by sqrt(d_v) (fails its unit case), softmax right.
    c.reference("bob", "softmax.cpp", "softmax.cpp");
    fs::copy_file(source_dir() + "/tests/fixtures/attention_mistakes/scaled_attention.cpp",
                  c.dir / "bob" / "scaled_attention.cpp");
    // carol: a softmax that does not compile; her scaled attention is graded with the reference softmax.
    c.write("carol", "softmax.cpp", softmax_with("    return logits  // no semicolon\n"));
    c.reference("carol", "scaled_attention.cpp", "self_attention_scaled.cpp");
    // dave: a softmax that never returns; only scaled-attention handed in besides.
    c.write("dave", "softmax.cpp", softmax_with("    for (volatile unsigned long spin = 0;; spin = spin + 1) {}\n"));
    c.reference("dave", "scaled_attention.cpp", "self_attention_scaled.cpp");
    // erin: a softmax that writes through a null pointer; no scaled_attention.cpp.
    c.write("erin", "softmax.cpp", softmax_with("    *static_cast<volatile int*>(nullptr) = 1;\n"));
    // frank: a softmax that asks for 64 GiB.
    c.write("frank", "softmax.cpp",
            softmax_with("    std::vector<double> huge(std::size_t{1} << 33, 1.0);\n"
                         "    if (huge[12345] != 1.0) return logits;\n",
                         "#include <vector>\n"));
    // eve: a right softmax that first tries to read alice's file and to write beside the submissions;
    // either would make it throw, so it passes only when both are impossible.
    const fs::path alices = c.dir / "alice" / "softmax.cpp", mark = c.dir / "eve-was-here";
    c.write("eve", "softmax.cpp",
            softmax_with("    {\n        std::ifstream other(\"" + alices.string() + "\");\n"
                         "        std::ofstream out(\"" + mark.string() + "\");\n"
                         "        if (other.good() || out.good()) throw std::runtime_error(\"escaped the sandbox\");\n"
                         "    }\n",
                         "#include <fstream>\n#include <stdexcept>\n"));
    const Result r = run_attn("grade --sources " + c.q("alice") + " " + c.q("bob") + " " + c.q("carol") + " " +
                              c.q("dave") + " " + c.q("erin") + " " + c.q("frank") + " " + c.q("eve") +
                              " --exercise softmax --exercise scaled-attention --cpu-limit 15 --memory-limit 2048 "
                              "--out " + c.q("report"));
    INFO(r.output);
    CHECK(r.code == 1);  // not everything passes
    const std::string wide = read_file(c.dir / "report.csv");
    const std::string details = read_file(c.dir / "report.long.csv");
    INFO(details);
    CHECK_THAT(wide, Catch::StartsWith("student,softmax,scaled-attention,passed,points,max_points,softmax points,"
                                       "scaled-attention points\n"));
    // points: one per unit case passed (in order, up to the first that fails) and one for the lesson
    const auto softmax_cases = unit_case_names("softmax"), scaled_cases = unit_case_names("scaled-attention");
    const std::size_t s_max = softmax_cases.size() + 1, a_max = scaled_cases.size() + 1;
    const std::string max = std::to_string(s_max + a_max);
    const auto bob_case = std::find(scaled_cases.begin(), scaled_cases.end(), "d_v != d_k");
    REQUIRE(bob_case != scaled_cases.end());
    const std::size_t bob_points = s_max + static_cast<std::size_t>(bob_case - scaled_cases.begin());
    const auto each = [](std::size_t softmax, std::size_t scaled) { return fmt::format(",{},{}", softmax, scaled); };
    CHECK(line_of(wide, "alice") == "alice,pass,pass,2," + max + "," + max + each(s_max, a_max));
    CHECK(line_of(wide, "bob") == "bob,pass,fail,1," + std::to_string(bob_points) + "," + max + each(s_max, bob_points - s_max));
    CHECK(line_of(wide, "carol") == "carol,error,pass,1," + std::to_string(a_max) + "," + max + each(0, a_max));
    // dave's loop spends his CPU time: the check of softmax is stopped, and scaled-attention (graded
    // with the reference softmax) is left unchecked
    CHECK(line_of(wide, "dave") == "dave,error,error,0,0," + max + each(0, 0));
    CHECK(line_of(wide, "erin") == "erin,error,missing,0,0," + max + each(0, 0));
    // frank's softmax(vector) runs out of memory at the first case that calls it (the earlier ones call softmax_rows)
    const auto frank_case = std::find(softmax_cases.begin(), softmax_cases.end(), "one column, and ties");
    REQUIRE(frank_case != softmax_cases.end());
    const auto frank_points = static_cast<std::size_t>(frank_case - softmax_cases.begin());
    CHECK(line_of(wide, "frank") ==
          "frank,error,missing,0," + std::to_string(frank_points) + "," + max + each(frank_points, 0));
    CHECK(line_of(wide, "eve") == "eve,pass,missing,1," + std::to_string(s_max) + "," + max + each(s_max, 0));
    CHECK_FALSE(fs::exists(mark));
    std::size_t lines = 0;
    for (char ch : wide) lines += ch == '\n' ? 1 : 0;
    CHECK(lines == 8);  // the header and seven students
    // the messages say what happened
    const std::string s_of = "," + std::to_string(s_max) + ",", a_of = "," + std::to_string(a_max) + ",";
    CHECK_THAT(details, Catch::Contains("bob,self-attention,scaled-attention,fail," +
                                        std::to_string(bob_points - s_max) + a_of + "d_v != d_k,"));
    CHECK_THAT(details, Catch::Contains("carol,bottleneck,softmax,error,0" + s_of + ",does not compile: softmax.cpp:"));
    CHECK_THAT(details, Catch::Contains("expected ';'"));
    CHECK_THAT(details, Catch::Contains("dave,bottleneck,softmax,error,0" + s_of + ",the check stopped"));
    CHECK_THAT(details, Catch::Contains("erin,bottleneck,softmax,error,0" + s_of + ",the check crashed: signal 11 (SIGSEGV"));
    CHECK_THAT(details, Catch::Contains("erin,self-attention,scaled-attention,missing,0" + a_of + ",no scaled_attention.cpp"));
    CHECK_THAT(details, Catch::Matches("[\\s\\S]*frank,bottleneck,softmax,error,[^\\n]*ran out of memory[\\s\\S]*"));
    const auto json = nlohmann::json::parse(read_file(c.dir / "report.json"));
    REQUIRE(json.at("students").size() == 7);
    CHECK(json.at("students").at(0).at("points") == s_max + a_max);
    CHECK(json.at("students").at(3).at("points") == 0);
    // nothing of the builds is left behind
    CHECK(fs::is_empty(c.dir / "alice") == false);
    CHECK(!fs::exists(c.dir / "alice" / "attn-graded"));
}

// Issue 40, 5a: softmax_rows written and softmax left as the starter's: the row, observed in the
// sandbox through the starter's weak object, names the function still to write.
TEST_CASE("grade --sources: a not-finished exercise names the function still to write", "[grade_sources]") {
    Class c;
    std::ifstream row_file(source_dir() + "/tests/fixtures/student_softmax_row.inc");
    const std::string row((std::istreambuf_iterator<char>(row_file)), std::istreambuf_iterator<char>());
    c.write("gina", "softmax.cpp",
            "#include \"nn/softmax.hpp\"\n#include \"core/portable_math.hpp\"\n#include \"exercises/not_done.hpp\"\n"
            "#include <algorithm>\n#include <cmath>\n#include <limits>\n" + row +
            "namespace attn::nn {\n"
            "Vec softmax(const Vec&) { throw ExerciseNotDone(\"softmax\"); }\n"
            "Mat softmax_rows(const Mat& logits) {\n"
            "    const std::size_t rows = logits.shape(0), cols = logits.shape(1);\n"
            "    Mat out = xt::empty<double>({rows, cols});\n"
            "    for (std::size_t r = 0; r < rows; ++r) student_softmax_row(logits.data() + r * cols, out.data() + r * cols, cols);\n"
            "    return out;\n}\n}  // namespace attn::nn\n");
    const Result r = run_attn("grade --sources " + c.q("gina") + " --exercise softmax --out " + c.q("report"));
    if (r.output.find("none can be created") != std::string::npos) {
        WARN("skipped: no sandbox can be created here");
        return;
    }
    INFO(r.output);
    CHECK(r.code == 1);
    const std::string report = read_file(c.dir / "report.long.csv");
    INFO(report);
    CHECK_THAT(report, Catch::Contains(",fail,") && Catch::Contains("not finished: nn::softmax is not written yet"));
}

// Issue 40, 5c: a folder with nothing in it is said once, on standard error, and its feedback is one
// line: not every exercise's message and hint.
TEST_CASE("grade --sources: an empty folder gets one warning and a one-line feedback file", "[grade_sources]") {
    Class c;
    fs::create_directories(c.dir / "erin");
    c.write("frank", "notes.txt", "I did not get to it\n");
    const Result r = run_attn("grade --sources " + c.q("erin") + " " + c.q("frank") + " --out " + c.q("report"));
    if (r.output.find("none can be created") != std::string::npos) {
        WARN("skipped: no sandbox can be created here");
        return;
    }
    CHECK(r.code == 1);
    const auto count = [&](const std::string& text) {
        std::size_t n = 0;
        for (auto at = r.output.find(text); at != std::string::npos; at = r.output.find(text, at + 1)) ++n;
        return n;
    };
    CHECK(count("warning") == 2);
    CHECK(count("erin is empty: nothing handed in, every exercise is missing") == 1);
    CHECK(count("frank holds no exercise file: nothing handed in, every exercise is missing") == 1);
    for (const char* student : {"erin", "frank"}) {
        const std::string feedback = read_file(c.dir / "report.feedback" / (std::string(student) + ".md"));
        CHECK(feedback == fmt::format("{}: nothing was handed in for any of the {} exercises graded, 0 of {} points.\n",
                                      student, all_exercises().size(), [] {
                                          std::size_t points = 0;
                                          for (const auto& x : all_exercises()) points += unit_case_names(x.id).size() + 1;
                                          return points;
                                      }()));
    }
}

TEST_CASE("grade --sources refuses what it cannot do, clearly", "[grade_sources]") {
    Class c;
    c.write("alice", "softmax.cpp", softmax_with(""));
    const Result bad_cpu = run_attn("grade --sources " + c.q("alice") + " --cpu-limit 0 --out " + c.q("report"));
    CHECK(bad_cpu.code == 2);
    CHECK_THAT(bad_cpu.output, Catch::Contains("--cpu-limit must be between"));
    const Result bad_exercise = run_attn("grade --sources " + c.q("alice") + " --exercise sofmax --out " + c.q("report"));
    CHECK(bad_exercise.code == 2);
    CHECK_THAT(bad_exercise.output, Catch::Contains("did you mean 'softmax'"));
    CHECK_FALSE(fs::exists(c.dir / "report.csv"));
}

}  // namespace test_grade_sources

namespace test_grade_sources {

// Issue 32's class: each exercise is graded with the student's file for it and the references of
// all the others, so a wrong causal mask costs exactly the causal-mask's points, and a causal mask
// that does not compile earns no more than the wrong one (it once earned more: the reference stood
// in for it, and for nothing else).
TEST_CASE("grade --sources: one wrong file costs only its own exercise", "[grade_sources]") {
    Class c;
    if (!sandbox_here(c)) return;
    const std::vector<std::pair<std::string, std::string>> files = {
        {"softmax.cpp", "softmax.cpp"},
        {"scaled_attention.cpp", "self_attention_scaled.cpp"},
        {"causal_mask.cpp", "self_attention_masks.cpp"},
        {"masked_softmax.cpp", "self_attention_masked_softmax.cpp"},
        {"multi_head.cpp", "multi_head_attention.cpp"}};
    for (const std::string student : {"alice", "bob", "carol"})
        for (const auto& [file, reference] : files) c.reference(student, file, reference);
    const std::string mask = read_file(c.dir / "alice" / "causal_mask.cpp");
    const std::string off_by_one = "j = i; j < T", right = "j = i + 1; j < T";
    REQUIRE(mask.find(right) != std::string::npos);
    std::string wrong = mask;
    wrong.replace(wrong.find(right), right.size(), off_by_one);
    fs::remove(c.dir / "bob" / "causal_mask.cpp");
    c.write("bob", "causal_mask.cpp", wrong);
    fs::remove(c.dir / "carol" / "causal_mask.cpp");
    c.write("carol", "causal_mask.cpp", "#error this file is not finished\n" + wrong);
    std::string args;
    for (const std::string x : {"softmax", "scaled-attention", "causal-mask", "masked-softmax", "multi-head"})
        args += " --exercise " + x;
    const Result r = run_attn("grade --sources " + c.q("alice") + " " + c.q("bob") + " " + c.q("carol") + args +
                              " --out " + c.q("report"));
    INFO(r.output);
    CHECK(r.code == 1);
    const auto json = nlohmann::json::parse(read_file(c.dir / "report.json"));
    const auto points = [&](const std::string& student, const std::string& exercise) {
        for (const auto& row : json.at("results"))
            if (row.at("student") == student && (exercise.empty() || row.at("exercise") == exercise))
                return row.at("points").get<int>();
        return -1;
    };
    const auto total = [&](const std::string& student) {
        for (const auto& s : json.at("students"))
            if (s.at("student") == student) return s.at("points").get<int>();
        return -1;
    };
    const int mask_points = static_cast<int>(unit_case_names("causal-mask").size()) + 1;
    INFO(read_file(c.dir / "report.long.csv"));
    CHECK(points("alice", "causal-mask") == mask_points);
    CHECK(points("bob", "causal-mask") == 0);
    CHECK(total("bob") == total("alice") - mask_points);
    CHECK(total("carol") <= total("bob"));
    CHECK(total("alice") == json.at("students").at(0).at("max_points").get<int>());
}

// The mistakes of tests/fixtures/unit_case_mistakes/, one student each, that no unit case could see
// before issue 32 (and issue 34's of one backward tile): each fails its own exercise at the case added for
// it, and the reference passes.
TEST_CASE("grade --sources: each mistake once unseen fails the unit case made for it", "[grade_sources]") {
    Class c;
    if (!sandbox_here(c)) return;
    struct Mistake {
        std::string student, exercise, unit_case, says;
    };
    const std::vector<Mistake> mistakes = {
        {"negative_zero", "softmax-backward", "masked entries get +0, not -0", ""},
        {"inf_weight_one", "online-softmax", "+inf entries", ""},
        {"no_inf_no_nan", "online-softmax", "+inf entries", ""},
        {"no_nan", "online-softmax", "a NaN entry", ""},
        {"no_identity", "lin-penalty", "rows whose squares do not sum to r / 2", ""},
        {"k_q_transposed", "dot-scores", "the three scores, T_q != T_k",
         "the shape is wrong: nn::dot_scores(Q, K) returned [3, 2], expected [2, 3]"},
        {"unfilled_weights", "multi-head", "the weights kept, under a causal mask",
         "nn::multi_head_attention(..., HeadWeights::keep) returned weights of shape [0, 0, 0], expected [2, 3, 3]"},
        // issue 34: each typical mistake of one backward tile fails the case made for it, the cases before passing
        {"d_minus_dp", "flash-backward-tile", "the whole matrix as one tile, D = 0", ""},
        {"no_d", "flash-backward-tile", "the whole matrix as one tile", ""},
        {"tile_softmax", "flash-backward-tile", "a tile of some of the keys, added to what is there", ""},
        {"tile_mask", "flash-backward-tile", "a causal tile across the diagonal, away from the start", ""},
    };
    const fs::path fixtures = fs::path(source_dir()) / "tests/fixtures/unit_case_mistakes";
    std::string args;
    for (const auto& m : mistakes) args += " '" + (fixtures / m.student).string() + "'";
    c.reference("reference", "softmax_backward.cpp", "backward_softmax.cpp");
    c.reference("reference", "online_softmax.cpp", "online_softmax_rows.cpp");
    c.reference("reference", "lin_penalty.cpp", "structured_penalty.cpp");
    c.reference("reference", "dot_scores.cpp", "scores.cpp");
    c.reference("reference", "multi_head.cpp", "multi_head_attention.cpp");
    c.reference("reference", "flash_backward_tile.cpp", "tiled_attention_backward_tile.cpp");
    args += " " + c.q("reference");
    for (const std::string x :
         {"softmax-backward", "online-softmax", "lin-penalty", "dot-scores", "multi-head", "flash-backward-tile"})
        args += " --exercise " + x;
    const Result r = run_attn("grade --sources" + args + " --out " + c.q("report"));
    INFO(r.output);
    CHECK(r.code == 1);
    const auto json = nlohmann::json::parse(read_file(c.dir / "report.json"));
    const auto row = [&](const std::string& student, const std::string& exercise) {
        for (const auto& x : json.at("results"))
            if (x.at("student") == student && x.at("exercise") == exercise) return x;
        return nlohmann::json();
    };
    for (const auto& m : mistakes) {
        INFO(m.student << ": " << row(m.student, m.exercise).dump(2));
        CHECK(row(m.student, m.exercise).value("result", "") == "fail");
        CHECK(row(m.student, m.exercise).value("first_diverging_step", "") == m.unit_case);
        CHECK_THAT(row(m.student, m.exercise).value("message", ""), Catch::Contains(m.says));
        INFO("the reference: " << row("reference", m.exercise).dump(2));
        CHECK(row("reference", m.exercise).value("result", "") == "pass");
    }
}

}  // namespace test_grade_sources

namespace test_grade_sources {

// Issue 40, section 3: the engine's answers are not the student's. A scaled_attention.cpp that returns
// nn::fast_attention's output (which once earned 2 of scaled-attention's 4 points) gets 0, with the call
// named; so does a flash_backward_tile.cpp that calls nn::fast_attention_backward. Alice's reference
// copies, which call only what their exercises may, pass the same check.
TEST_CASE("grade --sources: a file that calls the engine's answer gets 0 points, the call named", "[grade_sources]") {
    Class c;
    if (!sandbox_here(c)) return;
    c.reference("alice", "scaled_attention.cpp", "self_attention_scaled.cpp");
    c.reference("alice", "flash_backward_tile.cpp", "tiled_attention_backward_tile.cpp");
    c.write("mallory", "scaled_attention.cpp",
            "#include \"nn/self_attention.hpp\"\n#include \"nn/fast_attention.hpp\"\n#include \"nn/scores.hpp\"\n"
            "#include \"nn/softmax.hpp\"\n"
            "namespace attn::nn {\n"
            "AttentionResult scaled_dot_product_attention(const Mat& Q, const Mat& K, const Mat& V) {\n"
            "    AttentionResult r;\n"
            "    r.scores = scaled_dot_scores(Q, K);\n"
            "    r.weights = softmax_rows(r.scores);\n"
            "    r.output = fast_attention(Q, K, V, false, Arithmetic::portable);\n"
            "    return r;\n}\n"
            "AttentionResult scaled_dot_product_attention(const Mat& Q, const Mat& K, const Mat& V, const Mat&) {\n"
            "    return scaled_dot_product_attention(Q, K, V);\n}\n"
            "}  // namespace attn::nn\n");
    c.write("mallory", "flash_backward_tile.cpp",
            "#include \"nn/tiled_attention.hpp\"\n#include \"nn/fast_attention.hpp\"\n"
            "namespace attn::nn {\n"
            "void flash_backward_tile(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO, const Vec&, const Vec&,\n"
            "                         const TileSpan&, bool causal, Mat& dQ, Mat& dK, Mat& dV) {\n"
            "    const FastAttentionForward f = fast_attention_forward(Q, K, V, causal, Arithmetic::portable);\n"
            "    const FastAttentionGrads g = fast_attention_backward(Q, K, V, f.output, f.L, dO, causal, "
            "Arithmetic::portable);\n"
            "    dQ += g.dQ, dK += g.dK, dV += g.dV;\n}\n"
            "}  // namespace attn::nn\n");
    const Result r = run_attn("grade --sources " + c.q("alice") + " " + c.q("mallory") +
                              " --exercise scaled-attention --exercise flash-backward-tile --cpu-limit 120 --out " +
                              c.q("report"));
    INFO(r.output);
    const std::string details = read_file(c.dir / "report.long.csv");
    INFO(details);
    CHECK(r.code == 1);
    const int scaled_max = static_cast<int>(unit_case_names("scaled-attention").size()) + 1;
    const int tile_max = static_cast<int>(unit_case_names("flash-backward-tile").size()) + 1;
    CHECK_THAT(details, Catch::Contains("alice,self-attention,scaled-attention,pass," + std::to_string(scaled_max)));
    CHECK_THAT(details, Catch::Contains("alice,online-softmax,flash-backward-tile,pass," + std::to_string(tile_max)));
    CHECK_THAT(details, Catch::Contains("mallory,self-attention,scaled-attention,fail,0," + std::to_string(scaled_max) +
                                        ",,\"scaled_attention.cpp calls nn::fast_attention, which exercise scaled-attention "
                                        "may not use"));
    // both calls named, in the order nm lists them
    CHECK_THAT(details, Catch::Contains("mallory,online-softmax,flash-backward-tile,fail,0," + std::to_string(tile_max) +
                                        ",,\"flash_backward_tile.cpp calls nn::fast_attention_"));
    CHECK_THAT(details, Catch::Contains("nn::fast_attention_backward") && Catch::Contains("nn::fast_attention_forward") &&
                            Catch::Contains(", which exercise flash-backward-tile may not use"));
}


TEST_CASE("grade --sources: 29 right answers written from the equations get full points", "[grade_sources]") {
    Class c;
    if (!sandbox_here(c)) return;
    fs::create_directories(c.dir / "ada");
    for (const auto& entry : fs::directory_iterator(source_dir() + "/tests/fixtures/from_equations"))
        if (entry.path().extension() == ".cpp") fs::copy_file(entry.path(), c.dir / "ada" / entry.path().filename());
    const Result r = run_attn("grade --sources " + c.q("ada") + " --cpu-limit 600 --out " + c.q("report"));
    INFO(r.output);
    const std::string details = read_file(c.dir / "report.long.csv");
    INFO(details);
    CHECK(r.code == 0);
    const auto report = nlohmann::json::parse(read_file(c.dir / "report.json"));
    const auto& ada = report.at("students").at(0);
    CHECK(ada.at("points") == ada.at("max_points"));
    CHECK(ada.at("passed") == all_exercises().size());
}

}  // namespace test_grade_sources

namespace test_grade_sources {

// Issue 40: a file that includes a header that does not exist ends GCC's JSON diagnostics with
// "compilation terminated.", which once made the whole JSON the message.
TEST_CASE("grade --sources: a missing header is reported as file:line:col: message", "[grade_sources]") {
    Class c;
    if (!sandbox_here(c)) return;
    c.write("dora", "softmax.cpp", "#include \"no_such_header.hpp\"\n" + softmax_with(""));
    const Result r = run_attn("grade --sources " + c.q("dora") + " --exercise softmax --out " + c.q("report"));
    INFO(r.output);
    CHECK(r.code == 1);
    const std::string details = read_file(c.dir / "report.long.csv");
    INFO(details);
    CHECK_THAT(details, Catch::Contains(",does not compile: softmax.cpp:1:10: fatal error: no_such_header.hpp: No "
                                        "such file or directory\n"));
    CHECK_THAT(details, !Catch::Contains("\"kind\""));
}

// Issue 40: the precompiled header, attn's own step, once had the students' wall clock (3 x
// --cpu-limit + 30 s), and a loaded machine failed the whole class with "an endless wait?". A
// machine that stalls the compiler is made here by stopping it (SIGSTOP) for longer than the
// students' wall clock at --cpu-limit 5 (45 s): the teacher's step waits, and the class is graded.
// ATTN_GRADE_PCH=compile: the header is precompiled in the teacher's sandbox, as by an attn whose build
// left no precompiled copy of it (a build by GCC leaves one, which the kit copies: the case after this).
TEST_CASE("grade --sources: the teacher's precompiled header is not bound by the students' limits",
          "[grade_sources]") {
    Class c;
    if (!sandbox_here(c)) return;
    c.reference("alice", "softmax.cpp", "softmax.cpp");
    fs::create_directories(c.dir / "tmp");
    const std::string compiler = "'" + (c.dir / "tmp").string() + "/attn-grade\\..*xtensor_pch\\.hpp\\.gch'";
    const Result r = run_command(
        "export TMPDIR=" + c.q("tmp") + " ATTN_GRADE_PCH=compile; '" + std::string(std::getenv("ATTN_BIN")) +
        "' grade --sources " +
        c.q("alice") + " --exercise softmax --cpu-limit 5 --out " + c.q("report") + " 2>&1 & pid=$!; " +
        "until pids=$(pgrep -f " + compiler + "); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done; " +
        "[ -n \"$pids\" ] && kill -STOP $pids && echo stalled && sleep 50 && kill -CONT $(pgrep -f " + compiler + "); " +
        "wait $pid");
    INFO(r.output);
    CHECK_THAT(r.output, Catch::Contains("stalled"));  // the compiler was found and stopped
    CHECK(r.code == 0);  // alice passes; 3 when the precompiled header was stopped at the students' wall clock
    CHECK_THAT(r.output, !Catch::Contains("cannot precompile"));
    CHECK(line_of(read_file(c.dir / "report.csv"), "alice").rfind("alice,pass,", 0) == 0);
}

// The build's precompiled header (meson.build's grade_pch, GCC's builds) is the one the students' files
// compile with, copied into the kit: not precompiled again at every grading (3.5 s of CPU each).
TEST_CASE("grade --sources copies the build's precompiled header into the kit", "[grade_sources]") {
    Class c;
    if (!sandbox_here(c)) return;
    const fs::path built = fs::path(std::getenv("ATTN_BIN")).parent_path() / "grade-kit-xtensor_pch.hpp.gch";
    if (!fs::exists(built)) {
        WARN("skipped: this build has no precompiled header for the kit (a build by Clang precompiles it at grading)");
        return;
    }
    c.reference("alice", "softmax.cpp", "softmax.cpp");
    for (const bool compile : {false, true}) {
        const fs::path work = c.dir / (compile ? "compiled" : "copied");
        const Result r = run_command(std::string(compile ? "ATTN_GRADE_PCH=compile " : "") + "'" +
                                     std::getenv("ATTN_BIN") + "' grade --sources " + c.q("alice") +
                                     " --exercise softmax --keep-builds '" + work.string() + "' --out '" +
                                     (work.string() + "-report") + "' 2>&1");
        INFO(r.output);
        CHECK(r.code == 0);
        CHECK(line_of(read_file(work.string() + "-report.csv"), "alice").rfind("alice,pass,", 0) == 0);
        const fs::path kept = work / "kit" / "pch" / "xtensor_pch.hpp.gch";
        REQUIRE(fs::exists(kept));
        // the build's own bytes when copied (precompiled here, only its use is checked: alice passes)
        if (!compile) {
            const bool same = read_file(kept) == read_file(built);  // 86 MB each: not printed
            CHECK(same);
        }
    }
}

// Issue 40: with --slurm, Ctrl-C or SIGTERM while the kit was prepared (before any sbatch, so no
// cluster is needed) once ended in "terminate called after throwing an instance of 'Interrupted'"
// (exit 134), the half-prepared kit left behind. ATTN_GRADE_PCH=compile: the kit's longest step, the
// header precompiled at grading, is there to be interrupted (the build's copy takes a moment).
TEST_CASE("grade --sources --slurm interrupted while it prepares the kit ends as the local grader does",
          "[grade_sources]") {
    Class c;
    if (!sandbox_here(c)) return;
    c.reference("alice", "softmax.cpp", "softmax.cpp");
    const fs::path work = c.dir / "report.slurm" / "work";
    const Result r = run_command(
        "ATTN_GRADE_PCH=compile '" + std::string(std::getenv("ATTN_BIN")) + "' grade --sources " + c.q("alice") +
        " --exercise softmax --slurm --out " + c.q("report") + " 2>&1 & pid=$!; " +
        "until [ -f '" + (work / "kit" / "pch" / "xtensor_pch.hpp").string() + "' ]; do " +
        "kill -0 $pid 2>/dev/null || break; sleep 0.1; done; sleep 1; kill -TERM $pid; wait $pid");
    INFO(r.output);
    CHECK(r.code == 143);
    CHECK_THAT(r.output, Catch::Contains("interrupted while preparing the builds"));
    CHECK_THAT(r.output, !Catch::Contains("terminate called"));
    CHECK_FALSE(fs::exists(work));
    CHECK_FALSE(fs::exists(c.dir / "report.csv"));
    // no process of the kit left (the pattern's "[.]" keeps pgrep's own shell from matching it)
    std::string pattern = work.string();
    pattern.replace(pattern.find("report.slurm"), 12, "report[.]slurm");
    CHECK(run_command("pgrep -f '" + pattern + "'").code != 0);
}

}  // namespace test_grade_sources
