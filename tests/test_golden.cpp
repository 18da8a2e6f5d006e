// Golden JSON v1: round trips bit-identically, and every corrupt file is refused with a
// message that names the file and what is wrong.
#include "core/golden.hpp"
#include "core/rng.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_golden {

using namespace attn;
namespace fs = std::filesystem;

namespace {

Trace sample_trace(std::uint64_t seed) {
    Rng rng(seed);
    Trace t("sample", Config{seed, {{"d", 3}, {"T_x", 4}}});
    t.step("scores", "Alignment scores", "e_ij = v^T tanh(W s_{i-1} + U h_j)", "Two lines\nof text with \"quotes\".");
    Mat e = rng.normal_mat(3, 4);
    e(0, 3) = -std::numeric_limits<double>::infinity();
    e(1, 1) = 0.1;                          // not exactly representable
    e(2, 2) = 5e-324;                       // the smallest subnormal
    e(2, 3) = std::numeric_limits<double>::max();
    t.tensor("e", "scores", e, {"लाइट", "बंद", "करो"}, {"turn", "off", "the", "lights"}, View::heatmap);
    t.tensor("scalar", "", Array(1.0 / 3.0));
    t.tensor("v", "", rng.normal_vec(5), {}, {}, View::bars);
    t.check("rows sum to 1", 2.220446049250313e-16, 1e-12);
    t.step("empty", "A step with no tensors", "", "");
    return t;
}

bool bit_identical(const Array& a, const Array& b) {
    if (a.shape() != b.shape()) return false;
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

std::string error_of(const std::string& text) {
    try {
        parse_golden_json(text, "golden/99_test.json");
    } catch (const GoldenError& e) {
        return e.what();
    }
    return "(no error)";
}

fs::path temp_dir() {
    const fs::path dir = fs::temp_directory_path() / ("attn_test_golden_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    return dir;
}

}  // namespace

TEST_CASE("write then read gives bit-identical doubles and intact UTF-8 labels", "[golden]") {
    const auto seed = GENERATE(1u, 7u, 99u);
    const Trace original = sample_trace(seed);
    const std::string text = to_golden_json(original);
    const Trace loaded = parse_golden_json(text, "memory");
    REQUIRE(loaded.steps().size() == 2);
    const auto& a = original.steps()[0];
    const auto& b = loaded.steps()[0];
    CHECK(b.explanation == a.explanation);
    REQUIRE(b.tensors.size() == a.tensors.size());
    for (std::size_t i = 0; i < a.tensors.size(); ++i) {
        INFO("tensor " << a.tensors[i].name);
        CHECK(bit_identical(a.tensors[i].value, b.tensors[i].value));
        CHECK(b.tensors[i].rows == a.tensors[i].rows);
        CHECK(b.tensors[i].cols == a.tensors[i].cols);
        CHECK(b.tensors[i].view == a.tensors[i].view);
    }
    CHECK(b.tensors[0].rows[0] == "\xe0\xa4\xb2\xe0\xa4\xbe\xe0\xa4\x87\xe0\xa4\x9f");  // लाइट, byte by byte
    CHECK(b.checks[0].max_abs_error == a.checks[0].max_abs_error);
    CHECK(loaded.config().seed == seed);
    CHECK(loaded.config().get("T_x") == 4);
    REQUIRE(loaded.config().values.size() == 2);
    CHECK(loaded.config().values[0].first == "d");  // file order, not alphabetical order
    CHECK(loaded.config().values[1].first == "T_x");
    CHECK(to_golden_json(loaded) == text);  // a second round trip is a fixed point
}

TEST_CASE("a golden tensor's word on how others' numbers are compared survives the file; a submission's is not read",
          "[golden]") {
    Trace t = sample_trace(5);
    t.tensor("numeric", "", Array{1.0, 2.0}).foreign_tolerance(0.0, 2.5e-8, "central differences at h = 1e-6");
    t.tensor("bits", "", Array{3.0}).foreign_shown("a count of differing bits");
    const std::string text = to_golden_json(t);
    const Trace loaded = parse_golden_json(text, "memory");
    const auto& tensors = loaded.steps()[1].tensors;
    REQUIRE(tensors.size() == 2);
    CHECK(tensors[0].foreign == t.steps()[1].tensors[0].foreign);
    CHECK(tensors[0].foreign.atol == 2.5e-8);
    CHECK(tensors[1].foreign.kind == ForeignComparison::Kind::shown);
    CHECK(tensors[1].foreign.why == "a count of differing bits");
    CHECK(to_golden_json(loaded) == text);
    // a student who declares every tensor shown declares nothing
    const Submission sub = parse_submission_json(text, "student.json");
    for (const auto& tensor : sub.trace.steps()[1].tensors) CHECK(tensor.foreign.kind == ForeignComparison::Kind::asked);
    // a malformed declaration is refused, naming the tensor
    const auto refused = [&](const std::string& from, const std::string& to) {
        std::string bad = text;
        const auto at = bad.find(from);
        REQUIRE(at != std::string::npos);
        bad.replace(at, from.size(), to);
        CHECK_THROWS_WITH(parse_golden_json(bad, "golden/99_test.json"),
                          Catch::Contains("tensor 'numeric'") || Catch::Contains("tensor 'bits'"));
    };
    refused("\"atol\": 2.5e-08", "\"atol\": -1");
    refused("\"shown\": true", "\"shown\": false");
    refused("\"shown\": true", "\"shown\": true, \"rtol\": 1");
    refused("\"atol\": 2.5e-08, \"why\": \"central differences at h = 1e-6\"", "\"atol\": 2.5e-08");
}

TEST_CASE("export-only and measured tensors keep their flags through a file; golden files get neither",
          "[golden]") {
    Trace t = sample_trace(3);
    t.export_only("corpus", "word ids, -1 after the end", Array{{3.0, 4.0, -1.0}, {5.0, 6.0, 7.0}});
    t.tensor("wall_ms", "", Array{1.5}).measured = true;
    const Trace loaded = parse_golden_json(to_golden_json(t), "memory");
    const auto& tensors = loaded.steps()[1].tensors;
    REQUIRE(tensors.size() == 2);
    CHECK(tensors[0].name == "corpus");
    CHECK(tensors[0].export_only);
    CHECK_FALSE(tensors[0].measured);
    CHECK_FALSE(tensors[0].in_golden());
    CHECK(bit_identical(tensors[0].value, Array{{3.0, 4.0, -1.0}, {5.0, 6.0, 7.0}}));
    CHECK(tensors[1].measured);
    CHECK_FALSE(tensors[1].export_only);
    for (const auto& other : loaded.steps()[0].tensors) CHECK((other.in_golden() && !other.export_only));
    // what bless writes: neither tensor, no flag, the rest as it was
    const std::string golden = to_golden_json(t.for_golden());
    CHECK(golden == to_golden_json(sample_trace(3)));
    CHECK_THAT(golden, !Catch::Contains("export_only") && !Catch::Contains("\"corpus\""));
    SECTION("a flag that is no boolean is refused by name") {
        std::string text = to_golden_json(t);
        const std::string flag = "\"export_only\": true";
        text.replace(text.find(flag), flag.size(), "\"export_only\": \"yes\"");
        CHECK_THAT(error_of(text), Catch::Contains("tensor 'corpus': \"export_only\" must be true or false"));
    }
}

TEST_CASE("the writer uses LF only, keeps UTF-8 unescaped and writes -inf as a string", "[golden]") {
    const std::string text = to_golden_json(sample_trace(1));
    CHECK(text.find('\r') == std::string::npos);
    CHECK(text.find("\"लाइट\"") != std::string::npos);
    CHECK(text.find("\"-inf\"") != std::string::npos);
    CHECK(text.find("\"format\": \"attn-golden\"") != std::string::npos);
    CHECK(text.find("\"version\": 1") != std::string::npos);
}

TEST_CASE("corrupt golden files are refused with the file and the problem named", "[golden]") {
    const std::string good = to_golden_json(sample_trace(1));
    SECTION("truncated: the line and column of the syntax error") {
        const std::string msg = error_of(good.substr(0, good.size() / 2));
        CHECK_THAT(msg, Catch::StartsWith("golden/99_test.json: not valid JSON at line "));
        CHECK_THAT(msg, Catch::Contains("column"));
    }
    SECTION("another format version") {
        std::string text = good;
        text.replace(text.find("\"version\": 1"), 12, "\"version\": 2");
        CHECK_THAT(error_of(text), Catch::Contains("golden format version 2 is not supported"));
    }
    SECTION("a shape that disagrees with the data") {
        std::string text = good;
        text.replace(text.find("\"shape\": [3, 4]"), 15, "\"shape\": [3, 5]");
        CHECK_THAT(error_of(text), Catch::Contains("tensor 'e'"));
        CHECK_THAT(error_of(text), Catch::Contains("should be a list of 5 entries"));
    }
    SECTION("a non-numeric entry") {
        std::string text = good;
        text.replace(text.find("\"-inf\""), 6, "\"oops\"");
        CHECK_THAT(error_of(text), Catch::Contains("expected a number"));
        CHECK_THAT(error_of(text), Catch::Contains("data[0, 3]"));
    }
    SECTION("not an attn golden file") {
        CHECK_THAT(error_of("{\"format\": \"other\"}"), Catch::Contains("\"format\" must be \"attn-golden\""));
        CHECK_THAT(error_of("[1, 2]"), Catch::Contains("top level must be a JSON object"));
    }
}

TEST_CASE("read_golden names a missing or empty file", "[golden]") {
    const fs::path dir = temp_dir();
    CHECK_THROWS_WITH(read_golden(dir / "missing.json"), Catch::Contains("missing.json: cannot open"));
    std::ofstream(dir / "empty.json").close();
    CHECK_THROWS_WITH(read_golden(dir / "empty.json"), Catch::Contains("empty.json: the file is empty"));
    CHECK_THROWS_WITH(read_golden(dir), Catch::Contains("is a directory"));
    fs::remove_all(dir);
}

TEST_CASE("write_file_atomic replaces the file and leaves no temporary behind", "[golden]") {
    const fs::path dir = temp_dir();
    const fs::path file = dir / "01_x.json";
    write_file_atomic(file, "old\n");
    write_file_atomic(file, "new\n");
    std::ifstream in(file);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(content == "new\n");
    CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}) == 1);
    CHECK_THROWS_WITH(write_file_atomic(dir / "no" / "such" / "dir.json", "x"), Catch::Contains("cannot write"));
    fs::remove_all(dir);
}

TEST_CASE("write_file_atomic writes through a symlink, keeps the mode and clears a killed writer's temporary",
          "[golden]") {
    const fs::path dir = temp_dir();
    const auto text_of = [](const fs::path& f) {
        std::ifstream in(f);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    SECTION("a symlink stays a link, and its target gets the content") {
        write_file_atomic(dir / "target.json", "old\n");
        fs::create_symlink("target.json", dir / "link.json");
        write_file_atomic(dir / "link.json", "new\n");
        CHECK(fs::is_symlink(dir / "link.json"));
        CHECK(text_of(dir / "target.json") == "new\n");
    }
    SECTION("a read-only file stays read-only") {
        write_file_atomic(dir / "ro.json", "old\n");
        fs::permissions(dir / "ro.json", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
        write_file_atomic(dir / "ro.json", "new\n");
        CHECK(text_of(dir / "ro.json") == "new\n");
        CHECK((fs::status(dir / "ro.json").permissions() & fs::perms::owner_write) == fs::perms::none);
    }
    SECTION("the temporary file of a writer that was killed goes; a live writer's stays") {
        // 4194305 is above Linux's largest pid (pid_max is at most 2^22): no process has it
        std::ofstream(dir / ".g.json.tmp.4194305.AbC123") << "half";
        const std::string live = ".g.json.tmp." + std::to_string(::getppid()) + ".XyZ789";
        std::ofstream(dir / live) << "in progress";
        write_file_atomic(dir / "g.json", "whole\n");
        CHECK(!fs::exists(dir / ".g.json.tmp.4194305.AbC123"));
        CHECK(fs::exists(dir / live));
        CHECK(text_of(dir / "g.json") == "whole\n");
    }
    fs::remove_all(dir);
}

TEST_CASE("golden file names are zero-padded", "[golden]") {
    CHECK(golden_file_name(1, "bottleneck") == "01_bottleneck.json");
    CHECK(golden_file_name(12, "x") == "12_x.json");
}

// Found by fuzzing (tests/fuzz/fuzz_golden.cpp; the inputs are kept in tests/fuzz/regressions/golden):
// each was an exception other than GoldenError, a crash or an allocation the file did not justify.
TEST_CASE("fuzzing regressions: hostile golden files are refused with a GoldenError", "[golden][fuzz]") {
    SECTION("a number beyond the range of a double (nlohmann's out_of_range escaped)") {
        const std::string msg = error_of(R"({"format": "attn-golden", "version": 1e400})");
        CHECK_THAT(msg, Catch::StartsWith("golden/99_test.json: not valid JSON: number overflow"));
        CHECK_THAT(msg, Catch::Contains("1e400"));
        const std::string text = R"({"steps": [{"id": "a", "tensors": [{"name": "x", "data": -1e400}]}]})";
        CHECK_THROWS_AS(parse_submission_json(text, "mine.json"), GoldenError);
    }
    SECTION("deep nesting (copying or printing the value overflowed the stack)") {
        const std::string deep = std::string(100000, '[') + std::string(100000, ']');
        CHECK_THAT(error_of(deep), Catch::Contains("nested deeper than 64 levels"));
        // a deep value before another member: the parser itself copied it
        const std::string tensor = R"({"steps": [{"id": "a", "tensors": [{"name": "x", )";
        CHECK_THAT(error_of(tensor + R"("shape": )" + deep + R"(, "data": 1}]}]})"),
                   Catch::Contains("nested deeper than 64 levels"));
        CHECK_THROWS_WITH(parse_submission_json(tensor + R"("data": )" + deep + "}]}]}", "mine.json"),
                          Catch::Contains("nested deeper than 64 levels"));
    }
    SECTION("a shape whose sizes multiply beyond 2^31 next to a 0 (xtensor's strides overflowed)") {
        const std::string text =
            R"({"steps": [{"id": "a", "tensors": [{"name": "x", "shape": [0, 2147483648, 2147483648], "data": []}]}]})";
        CHECK_THROWS_WITH(parse_submission_json(text, "mine.json"), Catch::Contains("is too large"));
    }
    SECTION("a shape of 2^31 elements with no data behind it (16 GB were reserved up front)") {
        const std::string text =
            R"({"steps": [{"id": "a", "tensors": [{"name": "x", "shape": [2147483648], "data": [1]}]}]})";
        CHECK_THROWS_WITH(parse_submission_json(text, "mine.json"),
                          Catch::Contains("should be a list of 2147483648 entries"));
    }
    SECTION("a configuration value above the largest long long (it wrapped to a negative number)") {
        std::string text = to_golden_json(sample_trace(1));
        text.replace(text.find("\"d\": 3"), 6, "\"d\": 18446744073709551615");
        CHECK_THAT(error_of(text), Catch::Contains("config \"d\" is 18446744073709551615, above the largest setting"));
    }
}

}  // namespace test_golden
