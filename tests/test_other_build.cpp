// The lessons that train, from two builds of the same sources by two compilers (CI: GCC, and Clang with
// the sanitizers): their exports at the quick settings are the same bytes. Registered only when meson's
// option compare_build names the other build (tests/meson.build). The sanitized build's check_exact holds
// every other lesson to the golden bits; lessons 9, 12, 13, 14 and 15 at their defaults train for a quarter of an
// hour there (issue 41), and GCC's check_exact holds those. Training would carry any last-bit difference
// a compiler made (a contraction into an FMA, another order of a sum) into every number after it: one
// epoch on 50 sentences shows it as well as eight on 800.
#include "support.hpp"

#include "core/golden.hpp"
#include "registry.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

// Everything of this file in a namespace of its own (the test program is built as unity files).
namespace test_other_build {

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

TEST_CASE("the lessons that train export the same bytes from the other compiler's build", "[other_build]") {
    const char* here = std::getenv("ATTN_BIN");
    const char* other = std::getenv("ATTN_OTHER_BIN");
    REQUIRE(here != nullptr);
    REQUIRE(other != nullptr);
    REQUIRE(fs::exists(other));
    const fs::path dir = fs::temp_directory_path() / ("attn_test_other_build_" + std::to_string(::getpid()));
    const RemovedAtEnd cleanup{dir};
    std::size_t compared = 0;
    for (const Lesson& l : all_lessons()) {
        if (!trains(l.slug)) continue;
        const std::string quick = set_args(l.quick, l.defaults);
        const std::string file = golden_file_name(l.number, l.slug);
        std::string bytes[2];
        for (int k = 0; k < 2; ++k) {
            const fs::path out = dir / (l.slug + (k == 0 ? "_here" : "_other"));
            const Result r = run_command("'" + std::string(k == 0 ? here : other) + "' export " + l.slug + quick +
                                         " --out '" + out.string() + "' 2>&1");
            INFO("lesson " << l.slug << quick << (k == 0 ? " here: " : " in the other build: ") << r.output);
            REQUIRE(r.code == 0);
            bytes[k] = read_file(out / file);
            REQUIRE_FALSE(bytes[k].empty());
        }
        INFO("lesson " << l.slug << quick);
        CHECK(bytes[0] == bytes[1]);
        ++compared;
    }
    CHECK(compared == 5);  // lessons 9, 12, 13, 14 and 15
}

}  // namespace test_other_build
