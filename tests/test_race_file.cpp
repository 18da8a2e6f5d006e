// Lesson 12's race kept in a file (lessons/transformer_race.hpp): read back bit for bit, and refused,
// never used, when it is stale (another code's digest, another configuration), cut short or damaged;
// `attn keep-race` trains it again over a stale file and leaves a file of this code alone, a line of
// the training code changed makes the file stale, and `attn run --kept-race` shows what training
// shows (issue 41).
#include "support.hpp"

#include "registry.hpp"
#include "transformer_race.hpp"

#include "nn/encoder_decoder.hpp"
#include "nn/optimizer.hpp"
#include "nn/seq2seq.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

// Everything of this file in a namespace of its own (the test program is built as unity files).
namespace test_race_file {

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

// Lesson 12's quickest configuration: one epoch of fifty sentences, trained in a second.
Config quick_race() { return find_lesson("transformer")->quick; }

bool same_bits(const std::vector<nn::Block>& a, const std::vector<nn::Block>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t k = 0; k < a.size(); ++k)
        if (a[k].size != b[k].size || std::memcmp(a[k].data, b[k].data, a[k].size * sizeof(double)) != 0) return false;
    return true;
}

// `bytes` with `from` (which must occur) replaced by `to`.
std::string replaced(std::string bytes, const std::string& from, const std::string& to) {
    const auto at = bytes.find(from);
    REQUIRE(at != std::string::npos);
    return bytes.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a kept race reads back bit for bit; a stale, cut or damaged one is refused", "[race_file]") {
    const Config config = quick_race();
    Trace trace("transformer", config);
    transformer::Race race = *transformer::trained_race(config, trace);
    const std::string bytes = transformer::kept_race_bytes(config, race);
    transformer::Race back = transformer::parse_kept_race(bytes, config, "race.bin");
    CHECK(same_bits(nn::blocks(back.trained.transformer), nn::blocks(race.trained.transformer)));
    CHECK(same_bits(nn::blocks(back.trained.with), nn::blocks(race.trained.with)));
    CHECK(same_bits(nn::blocks(back.trained.without), nn::blocks(race.trained.without)));
    CHECK(std::memcmp(back.curves.data(), race.curves.data(), race.curves.size() * sizeof(double)) == 0);
    CHECK(back.steps == race.steps);
    CHECK(transformer::kept_race_bytes(config, back) == bytes);  // the same bytes again

    using Catch::Contains;
    const auto refused = [&](const std::string& damaged, const Config& wanted) {
        return transformer::parse_kept_race(damaged, wanted, "race.bin");
    };
    // trained by other code: a line of the sources changed, so meson's digest did
    const std::string code = "code " + transformer::race_code_digest();
    CHECK_THROWS_WITH(refused(replaced(bytes, code, "code 0123456789abcdef0123456789abcdef"), config),
                      Contains("race.bin") && Contains("another build, code or configuration"));
    // for another configuration (another seed)
    Config other = config;
    other.seed += 1;
    CHECK_THROWS_WITH(refused(bytes, other), Contains("another build, code or configuration"));
    // cut short, or with more after it
    CHECK_THROWS_WITH(refused(bytes.substr(0, bytes.size() / 2), config), Contains("cut short"));
    CHECK_THROWS_WITH(refused(bytes + "x", config), Contains("cut short or has more"));
    // one bit of one weight flipped
    std::string flipped = bytes;
    flipped[bytes.size() / 2] = static_cast<char>(flipped[bytes.size() / 2] ^ 1);
    CHECK_THROWS_WITH(refused(flipped, config), Contains("digest does not match"));
    // missing
    CHECK_THROWS_AS(transformer::read_kept_race("/nonexistent/transformer-race.bin", config),
                    transformer::RaceFileError);
}

TEST_CASE("attn keep-race trains again over a stale file, copies another build's race of this code, and keeps a "
          "file of this code", "[race_file]") {
    const char* bin = std::getenv("ATTN_BIN");
    REQUIRE(bin != nullptr);
    const std::string attn = "'" + std::string(bin) + "' keep-race --out ";
    // the build's own race (meson's kept_race target): this code's, for the copies below
    const fs::path built = fs::path(bin).parent_path() / "transformer-race.bin";
    REQUIRE_NOTHROW(transformer::read_kept_race(built, transformer::kept_race_config()));
    const fs::path dir = fs::temp_directory_path() / ("attn_test_race_file_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const RemovedAtEnd cleanup{dir};
    const fs::path file = dir / "transformer-race.bin", stale = dir / "stale.bin";
    std::ofstream(stale) << "attn-race 1\ncode 0123456789abcdef0123456789abcdef\n";  // other code, cut short
    fs::copy_file(stale, file);
    // a stale file, and a stale one to copy from: trained here. Lesson 12 at its defaults trains for
    // half a minute, minutes under the sanitizers: the unsanitized build runs this part.
    if (const std::string sanitized = sanitizers(); !sanitized.empty()) {
        WARN("training skipped in this build (sanitized: " << sanitized << "): the unsanitized build trains");
    } else {
        const Result first = run_command(attn + "'" + file.string() + "' --from '" + stale.string() + "' 2>&1");
        INFO(first.output);
        CHECK(first.code == 0);
        CHECK_THAT(first.output, Catch::Contains("training it again") && Catch::Contains("not copied") &&
                                     Catch::Contains("keep-race: wrote"));
        // the same models as the build's, to the bit (the file's bytes differ: it keeps the wall time of
        // each epoch, which lesson 13 shows)
        transformer::Race here = transformer::read_kept_race(file, transformer::kept_race_config());
        transformer::Race there = transformer::read_kept_race(built, transformer::kept_race_config());
        CHECK(same_bits(nn::blocks(here.trained.transformer), nn::blocks(there.trained.transformer)));
        CHECK(same_bits(nn::blocks(here.trained.with), nn::blocks(there.trained.with)));
        CHECK(same_bits(nn::blocks(here.trained.without), nn::blocks(there.trained.without)));
        CHECK(std::memcmp(here.curves.data(), there.curves.data(), here.curves.size() * sizeof(double)) == 0);
        fs::copy_file(stale, file, fs::copy_options::overwrite_existing);
    }
    // a stale file and another build's race of this code: copied, not trained
    const Result copied = run_command(attn + "'" + file.string() + "' --from '" + built.string() + "' 2>&1");
    INFO(copied.output);
    CHECK(copied.code == 0);
    CHECK_THAT(copied.output, Catch::Contains("copied from") && !Catch::Contains("training it here"));
    CHECK(read_file(file) == read_file(built));
    // a file of this code is kept as it is
    const Result second = run_command(attn + "'" + file.string() + "' --from '" + stale.string() + "' 2>&1");
    CHECK(second.code == 0);
    CHECK_THAT(second.output, Catch::Contains("holds this code's race already"));
    // a missing file is made again, as meson's kept_race target does when the file is removed
    fs::remove(file);
    const Result again = run_command(attn + "'" + file.string() + "' --from '" + built.string() + "' 2>&1");
    CHECK(again.code == 0);
    CHECK(read_file(file) == read_file(built));
}

TEST_CASE("a line of the training code changed makes the kept race stale", "[race_file]") {
    // meson's race_code target (lessons/race_code.py) digests the sources of src/core, src/nn and lessons,
    // and lists them in its depfile, so that ninja digests them again when one changes; a file naming
    // another digest is stale: keep-race trains again over it and the checks refuse it (the cases above).
    const char* source = std::getenv("ATTN_SOURCE_DIR");
    REQUIRE(source != nullptr);
    const fs::path root = source;
    const fs::path dir = fs::temp_directory_path() / ("attn_test_race_code_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    const RemovedAtEnd cleanup{dir};
    const fs::path copy = dir / "source";
    for (const char* folder : {"src/core", "src/nn", "lessons"}) {
        fs::create_directories(copy / folder);
        fs::copy(root / folder, copy / folder, fs::copy_options::recursive);
    }
    const auto digest = [&](const fs::path& tree, const std::string& name) {
        const fs::path header = dir / (name + ".hpp"), depfile = dir / (name + ".d");
        const Result r = run_command("python3 '" + (root / "lessons/race_code.py").string() + "' '" + header.string() +
                                     "' '" + depfile.string() + "' '" + tree.string() + "' src/core src/nn lessons 2>&1");
        INFO(r.output);
        REQUIRE(r.code == 0);
        const std::string text = read_file(header);
        const auto at = text.find("#define ATTN_RACE_CODE \"");
        REQUIRE(at != std::string::npos);
        return std::make_pair(text.substr(at + 24, 32), read_file(depfile));
    };
    // the copy digests as this build's sources did (a build of the same sources keeps the same race) ...
    const auto [same, deps] = digest(copy, "same");
    CHECK(same == transformer::race_code_digest());
    CHECK_THAT(deps, Catch::Contains((copy / "lessons/12_transformer.cpp").string()) &&
                         Catch::Contains((copy / "src/nn/optimizer.cpp").string()));
    // ... and not once one line of the training code (lesson 12's first, a comment) is changed
    const fs::path lesson = copy / "lessons/12_transformer.cpp";
    std::string text = read_file(lesson);
    const auto line = text.find('\n');
    REQUIRE(line != std::string::npos);
    text.replace(0, line, "// a line changed");
    std::ofstream(lesson, std::ios::binary | std::ios::trunc) << text;
    const std::string changed = digest(copy, "changed").first;
    CHECK(changed != same);
    CHECK(changed.size() == 32);
}

TEST_CASE("attn run --kept-race shows what training shows, and refuses a stale race before any lesson runs",
          "[race_file]") {
    const char* bin = std::getenv("ATTN_BIN");
    REQUIRE(bin != nullptr);
    const std::string attn = "'" + std::string(bin) + "'";
    const fs::path dir = fs::temp_directory_path() / ("attn_test_race_run_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const RemovedAtEnd cleanup{dir};
    const fs::path stale = dir / "stale.bin";
    std::ofstream(stale) << "attn-race 1\ncode 0123456789abcdef0123456789abcdef\n";
    for (const std::string& command : std::vector<std::string>{"run 13 --kept-race", "book 12 --kept-race --out '" + (dir / "book").string() + "'"}) {
        const Result r = run_command("ATTN_RACE_FILE='" + stale.string() + "' " + attn + " " + command + " 2>&1");
        INFO(command << ": " << r.output);
        CHECK(r.code == 3);
        CHECK_THAT(r.output, Catch::Contains("--kept-race loads lesson 12's race, which the build writes: run "
                                             "'meson compile -C") &&
                                 Catch::Contains(stale.string()) && Catch::Contains("leave --kept-race out"));
        CHECK_THAT(r.output, !Catch::Contains("Step 1/"));
    }
    CHECK_FALSE(fs::exists(dir / "book"));
    // lesson 13 at its defaults decodes with the race it trains, or with the build's: the same text, bit
    // for bit in every number shown (18 s of training, minutes under the sanitizers: the unsanitized
    // build runs this part)
    if (const std::string sanitized = sanitizers(); !sanitized.empty()) {
        WARN("training skipped in this build (sanitized: " << sanitized << "): the unsanitized build trains");
        return;
    }
    const Result trained = run_command(attn + " run 13 --precision 17 2>/dev/null");
    const Result loaded = run_command(attn + " run 13 --precision 17 --kept-race 2>" + (dir / "said").string());
    CHECK(trained.code == 0);
    CHECK(loaded.code == 0);
    CHECK(loaded.output == trained.output);
    CHECK_THAT(read_file(dir / "said"), Catch::Contains("lessons 12 and 13 at their defaults load lesson 12's race "
                                                        "from ") && Catch::Contains("not trained here"));
}

TEST_CASE("a check of lesson 13's exercises refuses a missing or stale race before any lesson runs", "[race_file]") {
    // a starter program: the references but bleu's starter, so kv-cache-step is the reference's
    const char* bin = std::getenv("ATTN_BIN");
    REQUIRE(bin != nullptr);
    const std::string program = "'" + (fs::path(bin).parent_path() / "attn-starter-bleu").string() + "'";
    const fs::path dir = fs::temp_directory_path() / ("attn_test_race_check_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path stale = dir / "stale.bin";
    std::ofstream(stale) << "attn-race 1\ncode 0123456789abcdef0123456789abcdef\n";
    for (const fs::path& file : {dir / "missing.bin", stale}) {
        const Result r = run_command("ATTN_RACE_FILE='" + file.string() + "' " + program + " check kv-cache-step 2>&1");
        INFO(r.output);
        CHECK(r.code == 3);
        CHECK_THAT(r.output, Catch::Contains(file.string()) && Catch::Contains("run 'meson compile -C"));
        CHECK_THAT(r.output, !Catch::Contains("FAIL") && !Catch::Contains("kv-cache-step  "));
    }
    // an exercise that lesson 13 does not check does not need the race
    const Result other = run_command("ATTN_RACE_FILE='" + (dir / "missing.bin").string() + "' " + program +
                                     " check softmax 2>&1");
    CHECK(other.code == 0);
    fs::remove_all(dir);
}

}  // namespace test_race_file
