// Lesson 7 (scaling) with a small configuration: the step counts and memory figures it records,
// its measured tensors (shown, never in a golden file), its limits, and that `attn list` counts
// the same steps whatever the configuration.
#include "core/compare.hpp"
#include "core/golden.hpp"
#include "core/render.hpp"
#include "run.hpp"

#include "support.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_scaling {

using namespace attn;
using attn::test::recorded;

namespace {

const Lesson& scaling() {
    const Lesson* l = find_lesson("scaling");
    REQUIRE(l != nullptr);
    return *l;
}

// T = 16, 32, 64 with d = 8, and 128 for the tiled attention alone, one timed run each: a few milliseconds.
Config small_config() {
    return configure(scaling(), 7, {{"d", 8}, {"T_min", 16}, {"T_max", 64}, {"T_tiled", 128}, {"repeats", 1}});
}

std::vector<std::string> step_ids(const Trace& t) {
    std::vector<std::string> ids;
    for (const auto& s : t.steps()) ids.push_back(s.id);
    return ids;
}

std::string setting_error(const std::vector<Setting>& settings) {
    try {
        configure(scaling(), 7, settings);
    } catch (const SettingError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("lesson 7 is registered as 'scaling' with its parameters", "[scaling]") {
    const Lesson& l = scaling();
    CHECK(l.number == 7);
    CHECK(find_lesson("7") == &l);
    CHECK(l.defaults.get("d") == 64);
    CHECK(l.defaults.get("T_min") == 64);
    CHECK(l.defaults.get("T_max") == 4096);
    CHECK(l.defaults.get("T_tiled") == 8192);
    CHECK(l.defaults.get("repeats") == 3);
    CHECK(l.limits(l.defaults).empty());
    CHECK(l.limits(l.quick).empty());
}

TEST_CASE("lesson 7 counts T steps for the GRU, 3 for attention, and T^2 x 8 bytes of weights", "[scaling]") {
    const Trace t = run_lesson(scaling(), small_config());
    CHECK(step_ids(t) == std::vector<std::string>{"layers", "steps", "work", "timing", "memory"});
    CHECK(t.all_checks_hold());

    const TensorRecord& table = recorded(t, "steps", "scaling");
    CHECK_FALSE(table.measured);
    REQUIRE(table.shape() == Shape{3, 4});
    CHECK(table.rows == std::vector<std::string>{"T=16", "T=32", "T=64"});
    CHECK(table.cols == std::vector<std::string>{"GRU steps", "attention steps", "T×T weights MiB", "GRU states MiB"});
    const double mib = 1024.0 * 1024.0, d = 8;
    for (std::size_t i = 0; i < 3; ++i) {
        const double T = 16.0 * std::pow(2.0, static_cast<double>(i));
        INFO("T = " << T);
        CHECK(table.value(i, 0) == T);    // one GRU step per token
        CHECK(table.value(i, 1) == 3.0);  // Q K^T, softmax, A V, at every T
        CHECK_THAT(table.value(i, 2), Catch::WithinRel(T * T * 8 / mib, 1e-15));
        CHECK_THAT(table.value(i, 3), Catch::WithinRel(T * d * 8 / mib, 1e-15));
    }

    const TensorRecord& work = recorded(t, "work", "mult-adds");
    for (std::size_t i = 0; i < 3; ++i) {
        const double T = 16.0 * std::pow(2.0, static_cast<double>(i));
        CHECK_THAT(work.value(i, 0), Catch::WithinRel(6 * T * d * d, 1e-15));
        CHECK_THAT(work.value(i, 1), Catch::WithinRel(2 * T * T * d, 1e-15));
        CHECK_THAT(work.value(i, 2), Catch::WithinRel(T / (3 * d), 1e-15));
    }

    // at T_max = 64 the runs held 64 x 64 scores and weights, 64 x 8 outputs, states and three gate tensors
    const TensorRecord& held = recorded(t, "memory", "held");
    REQUIRE(held.shape() == Shape{5});
    CHECK_THAT(held.value(0), Catch::WithinRel(64.0 * 64 * 8 / mib, 1e-15));
    CHECK_THAT(held.value(1), Catch::WithinRel(64.0 * 64 * 8 / mib, 1e-15));
    CHECK_THAT(held.value(3), Catch::WithinRel(64.0 * 8 * 8 / mib, 1e-15));
    CHECK_THAT(held.value(4), Catch::WithinRel(3 * 64.0 * 8 * 8 / mib, 1e-15));
}

TEST_CASE("lesson 7's timings are measured: shown and plotted, never in a golden file", "[scaling]") {
    const Trace t = run_lesson(scaling(), small_config());
    const TensorRecord& timings = recorded(t, "timing", "timings");
    CHECK(timings.measured);
    CHECK(timings.view == View::plot);
    REQUIRE(timings.shape() == Shape{3, 2});
    CHECK(timings.cols == std::vector<std::string>{"GRU ms", "attention ms"});
    for (const double ms : timings.value) CHECK((std::isfinite(ms) && ms >= 0));
    const TensorRecord& growth = recorded(t, "timing", "growth");
    CHECK(growth.measured);
    CHECK(growth.shape() == Shape{2, 2});
    std::size_t measured = 0;
    for (const auto& s : t.steps())
        for (const auto& tensor : s.tensors) measured += tensor.measured ? 1 : 0;
    CHECK(measured == 4);
    // the tiled attention at every length up to T_tiled = 128, one past T_max = 64
    const TensorRecord& tiled = recorded(t, "timing", "tiled");
    CHECK(tiled.measured);
    CHECK(tiled.view == View::plot);
    REQUIRE(tiled.shape() == Shape{4, 1});
    CHECK(tiled.rows == std::vector<std::string>{"T=16", "T=32", "T=64", "T=128"});
    for (const double ms : tiled.value) CHECK((std::isfinite(ms) && ms >= 0));
    CHECK(recorded(t, "timing", "tiled growth").shape() == Shape{3, 1});

    SECTION("the golden writer gets no measured tensor") {
        const std::string json = to_golden_json(t.for_golden());
        CHECK_THAT(json, !Catch::Contains("\"measured\""));
        CHECK_THAT(json, !Catch::Contains("\"timings\""));
        CHECK_THAT(json, !Catch::Contains("\"growth\""));
        CHECK_THAT(json, !Catch::Contains("\"tiled\""));
        CHECK_THAT(json, Catch::Contains("\"scaling\""));
        CHECK_THAT(to_golden_json(t), Catch::Contains("\"measured\": true"));
    }
    SECTION("a second run with other timings matches the first one's golden text") {
        const Trace again = run_lesson(scaling(), small_config());
        CHECK(to_golden_json(again.for_golden()) == to_golden_json(t.for_golden()));
        // the comparer skips the measured tensors of the run it checks
        const Trace golden = parse_golden_json(to_golden_json(t.for_golden()), "test");
        const LessonComparison cmp = compare_traces(again, golden, Tolerance{0.0, 0.0});
        INFO(cmp.report);
        CHECK(cmp.ok);
    }
    SECTION("the timings render with a plot") {
        const std::string text = render_tensor(timings, RenderOptions{});
        CHECK_THAT(text, Catch::Contains("o GRU ms · * attention ms"));
        CHECK_THAT(text, Catch::Contains("x: T, doubling (log2 spacing)"));
    }
}

TEST_CASE("lesson 7 reports its progress once per length", "[scaling]") {
    Trace t(scaling().slug, small_config());
    std::vector<std::string> reports;
    t.on_progress([&](const std::string& what) { reports.push_back(what); });
    scaling().fn(t, small_config());
    CHECK(reports == std::vector<std::string>{"measuring: T = 16 (1 of 4)", "measuring: T = 32 (2 of 4)",
                                              "measuring: T = 64 (3 of 4)", "measuring: T = 128 (4 of 4)"});
}

TEST_CASE("attn list counts the same steps for lesson 7 in its quick and its default configuration", "[scaling]") {
    const Lesson& l = scaling();
    const Trace quick = run_lesson(l, l.quick);
    CHECK(quick.all_checks_hold());
    CHECK(step_ids(quick) == step_ids(run_lesson(l, small_config())));
    // Under the sanitizers the defaults are left to the unsanitized build: which steps a configuration
    // records is the same code in both builds, and check_exact runs lesson 7 at its defaults under the
    // sanitizers as well (a second run of it here took 40 s of the 44 s this test took there).
    if (const std::string sanitized = attn::test::sanitizers(); !sanitized.empty()) {
        WARN("lesson 7 at its defaults: left to the unsanitized build and check_exact (sanitized: " << sanitized
                                                                                                  << ")");
        return;
    }
    CHECK(step_ids(quick) == step_ids(run_lesson(l, l.defaults)));
}

TEST_CASE("lesson 7's limits: powers of two, T_min <= T_max <= T_tiled, the T x T memory, the time", "[scaling]") {
    CHECK_THAT(setting_error({{"T_min", 48}}), Catch::Contains("T_min=48 is not a power of two") &&
                                                  Catch::Contains("32 or 64"));
    CHECK_THAT(setting_error({{"T_max", 1000}}), Catch::Contains("T_max=1000 is not a power of two"));
    CHECK_THAT(setting_error({{"T_min", 128}, {"T_max", 64}}), Catch::Contains("T_min=128 is larger than T_max=64"));
    CHECK_THAT(setting_error({{"T_max", 8192}}),
               Catch::Contains("8192 x 8192 attention scores and weights") && Catch::Contains("GiB"));
    CHECK_THAT(setting_error({{"T_tiled", 5000}}), Catch::Contains("T_tiled=5000 is not a power of two"));
    CHECK_THAT(setting_error({{"T_max", 1024}, {"T_tiled", 512}}),
               Catch::Contains("T_tiled=512 is smaller than T_max=1024"));
    // the tiled attention needs no T x T matrix: 65536 tokens fit the memory cap, not the time cap
    CHECK_THAT(setting_error({{"T_tiled", 65536}}),
               Catch::Contains("would run for minutes") && Catch::Contains("lower T_tiled (now 65536)"));
    CHECK(setting_error({{"T_tiled", 32768}, {"repeats", 1}}).empty());
    // ... until d is wide: 65536 tokens of 1024 numbers, several times over
    CHECK_THAT(setting_error({{"d", 1024}, {"T_max", 64}, {"T_tiled", 65536}}),
               Catch::Contains("65536 x 1024 operands at T_tiled=65536") && Catch::Contains("GiB"));
    CHECK(setting_error({{"T_min", 1}, {"T_max", 1}}).empty());
    CHECK(setting_error({{"T_min", 32}, {"T_max", 32}, {"d", 3}}).empty());
}

}  // namespace test_scaling
