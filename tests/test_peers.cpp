// A peer's numbers (attn compare): every lesson exported by a program whose 29 exercised functions are
// right answers written another way (tests/fixtures/from_equations) is accepted by attn compare,
// whatever that program's training made of their last bits (issue 40). What such a program trains
// itself is shown, not compared; everything else is compared, at 1e-9 or at a tolerance the quantity
// earns (central differences), as each golden tensor declares.
#include "support.hpp"

#include "core/golden.hpp"
#include "registry.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_peers {

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

TEST_CASE("a peer's right numbers pass attn compare in every lesson, its own training's shown", "[peers]") {
    const char* peer = std::getenv("ATTN_FROM_EQUATIONS_BIN");
    const char* attn = std::getenv("ATTN_BIN");
    REQUIRE(peer != nullptr);
    REQUIRE(attn != nullptr);
    const fs::path dir = fs::temp_directory_path() / ("attn_test_peers_" + std::to_string(::getpid()));
    const RemovedAtEnd cleanup{dir};
    // every lesson exported by one program, as `run all` runs them: lesson 13 decodes with the race the peer's
    // lesson 12 trained a moment before, where an export of each lesson trained the race twice (11 s of CPU)
    const Result exported = run_command("'" + std::string(peer) + "' export all --out '" + dir.string() + "' 2>&1");
    INFO(exported.output);
    REQUIRE(exported.code == 0);
    for (const Lesson& l : all_lessons()) {
        const std::string n = std::to_string(l.number);
        const fs::path file = dir / golden_file_name(l.number, l.slug);
        INFO("lesson " << n);
        REQUIRE(fs::is_regular_file(file));
        const Result compared = run_command("'" + std::string(attn) + "' compare '" + file.string() + "' --lesson " +
                                            n + " 2>&1");
        INFO(compared.output);
        CHECK(compared.code == 0);
        // lessons 9, 12, 13, 14 and 15 train: what the training made is shown, never the lesson's whole record
        if (l.number == 9 || l.number == 12 || l.number == 13 || l.number == 14 || l.number == 15)
            CHECK_THAT(compared.output, Catch::Contains("shown, not compared"));
    }
}

}  // namespace test_peers
