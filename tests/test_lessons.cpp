// Every lesson against its reviewed golden file, and the lesson's own identity checks.
#include "attn_config.hpp"
#include "core/compare.hpp"
#include "core/golden.hpp"
#include "run.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_lessons {

using namespace attn;

// Every lesson against its golden file: the test check_exact (`attn check --rtol 0 --atol 0`, in the quick
// set and in both CI builds), to the bit and with every identity check. A copy of it here, at the default
// tolerances and in this program, ran every lesson again for nothing more (52 s of 123 sanitized).

// Each lesson's run at its quick configuration, made once for the three tests below that read it (the
// determinism test runs it a second time): lessons 9, 12, 13, 14 and 15 train there.
const Trace& quick_run(const Lesson& lesson) {
    static std::map<std::string, Trace> runs;
    auto it = runs.find(lesson.slug);
    if (it == runs.end()) it = runs.emplace(lesson.slug, run_lesson(lesson, lesson.quick)).first;
    return it->second;
}

// Under the sanitizers the lessons that train are not run here: the other_build test runs each of them
// at this same quick configuration in the sanitized program (and holds its export to build 1's bytes),
// and which steps they record and how their heatmaps are labelled is the same code in the unsanitized
// build, which runs them here. Their quick runs were 60 s of this test's 70 there (2026-11-29).
bool left_to_other_build(const Lesson& lesson) {
    const std::string sanitized = attn::test::sanitizers();
    if (sanitized.empty() || !attn::test::trains(lesson.slug)) return false;
    WARN("lesson " << lesson.slug << " at its quick configuration: left to other_build and the unsanitized build "
                                     "(sanitized: "
                   << sanitized << ")");
    return true;
}

// `attn run --step` is checked against each lesson's declared steps before any work: they must be
// the ids its run records, at its quick configuration (lessons 9, 12, 13, 14 and 15 train there for a
// second or two, not the 10 to 20 s of their defaults) and in its golden file (its defaults).
TEST_CASE("every lesson declares the steps its run records, in order", "[lessons]") {
    for (const auto& lesson : all_lessons()) {
        if (left_to_other_build(lesson)) continue;
        INFO("lesson " << lesson.slug);
        std::vector<std::string> recorded, golden;
        const Trace& run = quick_run(lesson);
        for (const auto& s : run.steps()) recorded.push_back(s.id);
        CHECK(lesson.steps == recorded);
        const Trace file = read_golden(std::string(ATTN_GOLDEN_DIR) + "/" + golden_file_name(lesson.number, lesson.slug));
        for (const auto& s : file.steps()) golden.push_back(s.id);
        CHECK(lesson.steps == golden);
    }
}

TEST_CASE("a run asked for lesson 12's steps before the race ends before training", "[lessons]") {
    // attn run 12 --step schedule and attn-student check cross-attention ask for steps 1 to 4: the
    // lesson must stop before its training (Trace::need_next_step), which reports its progress
    const Lesson& lesson = *find_lesson("transformer");
    Trace trace(lesson.slug, lesson.quick);
    std::size_t training_reports = 0;
    trace.on_progress([&](const std::string& what) {
        if (what.find("training") != std::string::npos) ++training_reports;
    });
    trace.stop_after(4);
    const LessonRun run = run_lesson(lesson, std::move(trace), false);
    CHECK_FALSE(run.stopped());
    REQUIRE(run.trace.steps().size() == 4);
    CHECK(run.trace.steps().back().id == "gradients");
    CHECK(training_reports == 0);
    // and the same run asked for one more step does train
    Trace more(lesson.slug, lesson.quick);
    more.on_progress([&](const std::string& what) {
        if (what.find("training") != std::string::npos) ++training_reports;
    });
    more.stop_after(5);
    CHECK(run_lesson(lesson, std::move(more), false).trace.steps().size() == 5);
    CHECK(training_reports > 0);
}

TEST_CASE("a run told to end after the step that departs ends there complete and before training", "[lessons]") {
    // the exercise check (exercises/status.cpp) asks each step, once complete, whether it departs
    // from the golden file: lesson 12's fourth step is taken here for the one that departs
    const Lesson& lesson = *find_lesson("transformer");
    Trace trace(lesson.slug, lesson.quick);
    std::size_t training_reports = 0;
    std::vector<std::string> asked;
    trace.on_progress([&](const std::string& what) {
        if (what.find("training") != std::string::npos) ++training_reports;
    });
    trace.stop_after_step([&](const Step& done) {
        asked.push_back(done.id);
        CHECK_FALSE(done.tensors.empty());  // complete: its tensors recorded
        return done.id == "gradients";
    });
    const LessonRun run = run_lesson(lesson, std::move(trace), false);
    CHECK_FALSE(run.stopped());
    REQUIRE(run.trace.steps().size() == 4);
    CHECK(run.trace.steps().back().id == "gradients");
    CHECK(training_reports == 0);
    // each step asked about once it was complete, the last one before the training too (need_next_step)
    CHECK(asked == std::vector<std::string>{"models", "cross-attention", "schedule", "gradients"});
}

// The trace without its measured tensors (timings differ between runs by nature); its export-only
// data stays: it must be the same bytes every time, like everything else.
Trace without_timings(Trace t) {
    for (auto& s : t.steps())
        s.tensors.erase(std::remove_if(s.tensors.begin(), s.tensors.end(), [](const TensorRecord& r) { return r.measured; }),
                        s.tensors.end());
    return t;
}

TEST_CASE("lessons are deterministic and their step ids unique", "[lessons]") {
    for (const auto& lesson : all_lessons()) {
        INFO("lesson " << lesson.slug);
        // quick: the defaults, except that the scaling lesson measures small sizes
        if (left_to_other_build(lesson)) continue;
        const Trace a = without_timings(quick_run(lesson)), b = without_timings(run_lesson(lesson, lesson.quick));
        CHECK(to_golden_json(a) == to_golden_json(b));
        CHECK(compare_traces(a, b, Tolerance{0.0, 0.0}).ok);
    }
}

TEST_CASE("every heatmap of every lesson says what its rows and columns are", "[lessons]") {
    for (const auto& lesson : all_lessons()) {
        if (left_to_other_build(lesson)) continue;
        const Trace& trace = quick_run(lesson);
        for (const auto& step : trace.steps())
            for (const auto& t : step.tensors) {
                if (t.view != View::heatmap) continue;
                INFO("lesson " << lesson.slug << ", step " << step.id << ", " << t.name);
                CHECK(!t.row_axis.empty());
                CHECK(!t.col_axis.empty());
            }
    }
}

TEST_CASE("lesson 1 shows the bottleneck it claims", "[lessons][bottleneck]") {
    const Trace t = run_lesson(*find_lesson("bottleneck"), find_lesson("1")->defaults);
    const Step* decoder = t.find_step("decoder");
    REQUIRE(decoder);
    // the context part of every decoder input row is c
    CHECK(decoder->checks.at(0).max_abs_error == 0.0);
    const Step* demo = t.find_step("bottleneck");
    REQUIRE(demo);
    const Array* table = nullptr;
    for (const auto& tensor : demo->tensors)
        if (tensor.name == "context_change") table = &tensor.value;
    REQUIRE(table);
    // columns: |c|, Δ_first, Δ_last; at n = 64 the first token moves c far less than the last token does
    CHECK((*table)(4, 1) < 0.01 * (*table)(4, 2));
    // and at n = 4 it still matters
    CHECK((*table)(0, 1) > 0.1 * (*table)(0, 2));
    // at the golden configuration Δ_first falls at every doubling of n (not an identity, so the
    // lesson reports it in its text rather than checks it: a few trials can break it)
    for (std::size_t n = 1; n < table->shape()[0]; ++n) CHECK((*table)(n, 1) < (*table)(n - 1, 1));
    CHECK_THAT(demo->explanation, Catch::Contains("Here Δ_first falls at every doubling of n"));
}

TEST_CASE("lessons are found by number or slug", "[lessons]") {
    CHECK(find_lesson("1") == find_lesson("bottleneck"));
    CHECK(find_lesson("01") == find_lesson("bottleneck"));
    CHECK(find_lesson("bottle") == nullptr);
    CHECK(find_lesson("0") == nullptr);
    CHECK(find_lesson("") == nullptr);
}

}  // namespace test_lessons
