// The student edition (src/tools/student-edition.sh, meson compile student-edition): made from
// this build into a temporary folder, it holds no source of the exercises' references, builds,
// gives the golden numbers with its prebuilt references, and its attn-student fails the first
// exercise as not started. Builds a second copy of attn: a few minutes on two cores.
#include "support.hpp"

#include "exercises/table.hpp"

#include <cstdlib>
#include <filesystem>
#include <string>

namespace test_edition {

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

TEST_CASE("the student edition builds without the references' sources, and attn-student works there", "[edition]") {
    const char* sanitized = std::getenv("ATTN_SANITIZED");
    if (sanitized && *sanitized) {
        WARN("skipped: the edition is made from an unsanitized build (this one is " << sanitized << ")");
        return;
    }
    const char* bin = std::getenv("ATTN_BIN");
    const char* source = std::getenv("ATTN_SOURCE_DIR");
    REQUIRE(bin != nullptr);
    REQUIRE(source != nullptr);
    const fs::path build = fs::path(bin).parent_path();
    const fs::path tmp = fs::temp_directory_path() / ("attn_edition_" + std::to_string(::getpid()));
    const fs::path edition = tmp / "edition";
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    struct Cleanup {
        fs::path dir;
        ~Cleanup() { fs::remove_all(dir); }
    } cleanup{tmp};

    const Result made = run_command("bash '" + std::string(source) + "/src/tools/student-edition.sh' '" + source +
                                    "' '" + build.string() + "' '" + edition.string() + "' 2>&1");
    INFO(made.output);
    REQUIRE(made.code == 0);
    // no reference of an exercise as source, nor the unit cases' oracles; their objects instead
    std::size_t prebuilt = 0;
    for (const auto& entry : fs::directory_iterator(edition / "prebuilt")) prebuilt += entry.path().extension() == ".o";
    CHECK(prebuilt == all_exercises().size() + 1);
    CHECK_FALSE(fs::exists(edition / "src/nn/softmax.cpp"));
    CHECK_FALSE(fs::exists(edition / "src/nn/rnn_gru_step.cpp"));
    CHECK_FALSE(fs::exists(edition / "src/exercises/cases.cpp"));
    CHECK(fs::exists(edition / "lessons/exercises/gru_step.cpp"));  // the starters stay
    const Result grep = run_command("grep -rl 'softmax_span(logits.data(), out.data()' '" + edition.string() + "/src' 2>&1");
    CHECK(grep.output.empty());

    const Result setup = run_command("meson setup '" + (edition / "build").string() + "' '" + edition.string() +
                                     "' 2>&1");
    INFO(setup.output);
    REQUIRE(setup.code == 0);
    CHECK_THAT(setup.output, Catch::Contains("student edition              : True"));
    const Result compiled = run_command("ninja -C '" + (edition / "build").string() + "' attn attn-student 2>&1");
    INFO(compiled.output.substr(compiled.output.size() > 3000 ? compiled.output.size() - 3000 : 0));
    REQUIRE(compiled.code == 0);
    // the prebuilt references give the golden numbers to the bit
    const Result exact = run_command("'" + (edition / "build/attn").string() + "' check 1 --rtol 0 --atol 0 2>&1");
    INFO(exact.output);
    CHECK(exact.code == 0);
    // and the first exercise fails, as not started, until the student writes it
    const Result first = run_command("'" + (edition / "build/attn-student").string() + "' check " +
                                     all_exercises().front().id + " 2>&1");
    INFO(first.output);
    CHECK(first.code == 1);
    CHECK_THAT(first.output, Catch::Contains("exercise " + all_exercises().front().id + " is not done yet"));
}

}  // namespace test_edition
