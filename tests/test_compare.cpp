// allclose semantics and the mismatch report, checked against numpy's assert_allclose rules:
// |actual - expected| <= atol + rtol * |expected|, shapes first, NaN equal only to NaN.
#include "core/compare.hpp"

#include <catch2/catch.hpp>

#include <limits>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_compare {

using namespace attn;

namespace {
const double inf = std::numeric_limits<double>::infinity();
const double not_a_number = std::numeric_limits<double>::quiet_NaN();
}  // namespace

TEST_CASE("rtol scales with the expected value, atol does not", "[compare]") {
    const Tolerance tol{1e-3, 0.0};
    CHECK(close(1000.5, 1000.0, tol));   // 0.5 <= 1e-3 * 1000
    CHECK_FALSE(close(1.5, 1.0, tol));   // 0.5 > 1e-3 * 1
    CHECK(close(1.0005, 1.0, tol));
    // not symmetric, as in numpy: the tolerance scales with |expected| only
    CHECK(close(0.0, 1.0, Tolerance{1.0, 0.0}));
    CHECK_FALSE(close(1.0, 0.0, Tolerance{1.0, 0.0}));
    const Tolerance abs_only{0.0, 0.1};
    CHECK(close(0.05, 0.0, abs_only));
    CHECK_FALSE(close(0.2, 0.0, abs_only));
    CHECK(close(0.1, 0.0, abs_only));  // the bound is inclusive
}

TEST_CASE("NaN equals only NaN; an infinity only the same infinity", "[compare]") {
    const Tolerance loose{1e9, 1e9};
    CHECK(close(not_a_number, not_a_number, loose));
    CHECK_FALSE(close(not_a_number, 1.0, loose));
    CHECK_FALSE(close(1.0, not_a_number, loose));
    CHECK(close(-inf, -inf, loose));
    CHECK_FALSE(close(inf, -inf, loose));
    CHECK_FALSE(close(1e300, inf, loose));  // inf <= atol + rtol * inf would wrongly hold
    CHECK_FALSE(close(-inf, 0.0, loose));
}

TEST_CASE("a shape mismatch is reported before any value", "[compare]") {
    const Array a = xt::zeros<double>({2, 3}), e = xt::zeros<double>({3, 2});
    const TensorDiff d = compare_tensor(a, e, Tolerance{});
    CHECK_FALSE(d.ok());
    CHECK_FALSE(d.shape_matches);
    CHECK_THAT(tensor_diff_report(d, Tolerance{}), Catch::Contains("actual [2, 3], expected [3, 2]"));
}

TEST_CASE("the report counts mismatches and names the first indices", "[compare]") {
    Array expected = xt::zeros<double>({4, 5});
    Array actual = expected;
    actual(1, 2) = 1e-6;
    actual(3, 4) = -2e-6;
    expected(0, 0) = not_a_number;
    actual(0, 0) = not_a_number;  // equal: not a mismatch
    const Tolerance tol{};
    const TensorDiff d = compare_tensor(actual, expected, tol);
    CHECK(d.mismatched == 2);
    CHECK(d.total == 20);
    REQUIRE(d.first.size() == 2);
    CHECK(d.first[0].index == std::vector<std::size_t>{1, 2});
    CHECK(d.first[1].index == std::vector<std::size_t>{3, 4});
    CHECK(d.max_abs == 2e-6);
    const std::string report = tensor_diff_report(d, tol);
    CHECK_THAT(report, Catch::Contains("Mismatched elements: 2 / 20 (10%)"));
    CHECK_THAT(report, Catch::Contains("at [1, 2]"));
    CHECK_THAT(report, Catch::Contains("Max absolute difference: 2e-06"));
    CHECK_THAT(report, Catch::Contains("Max relative difference: inf"));  // expected is 0 there
}

TEST_CASE("-inf masks compare equal and do not poison the maxima", "[compare]") {
    Array m = {{0.5, -inf}, {0.25, 0.75}};
    const TensorDiff d = compare_tensor(m, m, Tolerance{0.0, 0.0});
    CHECK(d.ok());
    CHECK(d.max_abs == 0.0);
}

TEST_CASE("NaN and infinite mismatches are counted and never summed up as a small difference", "[compare]") {
    // issue 16: a softmax that returned NaN for 21 of 49 entries was reported as
    // "Max absolute difference: 1.11e-16"
    Array expected = {{0.5, 0.5, 0.0}, {1.0, 0.0, 0.0}};
    Array actual = {{0.5, 0.5 + 1e-16, 0.0}, {not_a_number, not_a_number, inf}};
    const TensorDiff d = compare_tensor(actual, expected, Tolerance{0.0, 0.0});
    CHECK(d.mismatched == 4);
    CHECK(d.non_finite == 3);
    const std::string report = tensor_diff_report(d, Tolerance{0.0, 0.0});
    CHECK_THAT(report, Catch::Contains("Non-finite mismatches: 3 of the 4"));
    CHECK_THAT(report, Catch::Contains("(over the elements finite on both sides)"));
    CHECK_THAT(report, Catch::Contains("at [1, 0]     actual nan"));
    SECTION("when every mismatch is non-finite, no maximum is shown at all") {
        const Array only_nan = {{0.5, 0.5, 0.0}, {not_a_number, 0.0, 0.0}};
        const TensorDiff n = compare_tensor(only_nan, expected, Tolerance{});
        CHECK(n.non_finite == 1);
        const std::string r = tensor_diff_report(n, Tolerance{});
        CHECK_THAT(r, Catch::Contains("every mismatch is NaN or infinite"));
        CHECK_THAT(r, !Catch::Contains("Max absolute difference: 0"));
    }
}

TEST_CASE("only the first five mismatches are listed", "[compare]") {
    const Array e = xt::zeros<double>({10});
    const Array a = xt::ones<double>({10});
    const TensorDiff d = compare_tensor(a, e, Tolerance{});
    CHECK(d.mismatched == 10);
    CHECK(d.first.size() == 5);
    CHECK_THAT(tensor_diff_report(d, Tolerance{}), Catch::Contains("and 5 more"));
}

TEST_CASE("bad tolerances are refused by name", "[compare]") {
    CHECK_THROWS_WITH(validate_tolerance(Tolerance{-1.0, 0.0}), Catch::Contains("--rtol"));
    CHECK_THROWS_WITH(validate_tolerance(Tolerance{1e-9, not_a_number}), Catch::Contains("--atol"));
    CHECK_THROWS_WITH(validate_tolerance(Tolerance{inf, 0.0}), Catch::Contains("--rtol"));
    CHECK_NOTHROW(validate_tolerance(Tolerance{0.0, 0.0}));
}

namespace {
Trace two_step_trace(double x) {
    Trace t("demo", Config{1, {{"d", 2}}});
    t.step("first", "First", "a = 1", "");
    t.tensor("a", "", Array{1.0, 2.0});
    t.step("second", "Second", "b = x", "");
    t.tensor("b", "", Array{{x, 0.0}, {0.0, x}});
    t.step("third", "Third", "", "");
    t.tensor("c", "", Array{3.0});
    return t;
}
}  // namespace

TEST_CASE("a lesson comparison stops at the first diverging step", "[compare]") {
    const Trace golden = two_step_trace(0.5);
    SECTION("equal traces match") {
        const auto cmp = compare_traces(two_step_trace(0.5), golden, Tolerance{});
        CHECK(cmp.ok);
        CHECK(cmp.steps_compared == 3);
        CHECK(cmp.tensors_compared == 3);
    }
    SECTION("a changed value names step, tensor and index, and later steps are not reached") {
        const auto cmp = compare_traces(two_step_trace(0.6), golden, Tolerance{});
        CHECK_FALSE(cmp.ok);
        CHECK(cmp.steps_compared == 1);
        CHECK_THAT(cmp.report, Catch::Contains("diverges at step 2/3 'second'"));
        CHECK_THAT(cmp.report, Catch::Contains("tensor 'b' [2, 2]"));
        CHECK_THAT(cmp.report, Catch::Contains("at [0, 0]"));
        CHECK_THAT(cmp.report, Catch::Contains("not reached: third"));
    }
    SECTION("a different configuration is reported as such") {
        Trace other("demo", Config{2, {{"d", 2}}});
        const auto cmp = compare_traces(other, golden, Tolerance{});
        CHECK_FALSE(cmp.ok);
        CHECK_THAT(cmp.report, Catch::Contains("configuration differs"));
    }
    SECTION("describe_changes lists exactly the changed tensor") {
        const auto changes = describe_changes(golden, two_step_trace(0.6));
        REQUIRE(changes.size() == 1);
        CHECK_THAT(changes[0], Catch::Contains("second.b: 2 / 4 elements changed"));
    }
}

TEST_CASE("export-only data is never compared, on either side, whole or partial", "[compare]") {
    const Trace golden = two_step_trace(0.5);
    Trace run = two_step_trace(0.5);
    run.steps()[1].tensors.push_back(TensorRecord{"corpus", "", Array{{1.0, 2.0}}, {}, {}, View::numbers});
    SECTION("unflagged, the same tensor is new: the comparison sees it") {
        const auto cmp = compare_traces(run, golden, Tolerance{});
        CHECK_FALSE(cmp.ok);
        CHECK_THAT(cmp.report, Catch::Contains("tensor 'corpus' [1, 2] is new"));
        const auto partial = compare_traces(run, golden, Tolerance{}, Whose::student);
        CHECK_FALSE(partial.ok);
        CHECK_THAT(partial.report, Catch::Contains("tensor 'corpus' is not a tensor of this step"));
    }
    SECTION("flagged, a run's data is skipped, and so is a golden file's") {
        run.steps()[1].tensors.back().export_only = true;
        for (const Whose whose : {Whose::attn, Whose::student}) {
            const auto cmp = compare_traces(run, golden, Tolerance{}, whose);
            INFO(cmp.report);
            CHECK(cmp.ok);
            CHECK(cmp.tensors_compared == 3);
        }
        // a hand-made golden file that holds data the run lacks (or holds otherwise)
        CHECK(compare_traces(two_step_trace(0.5), run, Tolerance{}).ok);
        CHECK(describe_changes(golden, run.for_golden()).empty());
    }
}

TEST_CASE("the tensors of a diverging step are listed by where they first differ", "[compare]") {
    // a GRU-like step: Z, R, H_cand and H, computed row by row (one row per time step). A wrong
    // reset gate leaves R and Z right at row 0 but spoils H_cand and H there, and Z from row 1 on.
    const auto make = [](double zr_row1, double hc_row0) {
        Trace t("demo", Config{1, {}});
        t.step("encoder", "Encoder", "", "");
        t.tensor("Z", "", Array{{0.1, 0.2}, {zr_row1, 0.4}});
        t.tensor("R", "", Array{{0.5, 0.6}, {0.7, 0.8}});
        t.tensor("H_cand", "", Array{{hc_row0, 1.0}, {1.1, 1.2}});
        t.tensor("H", "", Array{{1.3, 1.4}, {1.5, 1.6}});
        return t;
    };
    const auto cmp = compare_traces(make(0.9, 2.0), make(0.3, 0.9), Tolerance{});
    REQUIRE_FALSE(cmp.ok);
    const auto candidate = cmp.report.find("tensor 'H_cand'"), update = cmp.report.find("tensor 'Z'");
    REQUIRE(candidate != std::string::npos);
    REQUIRE(update != std::string::npos);
    CHECK(candidate < update);
    CHECK_THAT(cmp.report, Catch::Contains("2 tensors differ; the first listed differs earliest (row 0"));
}

TEST_CASE("numbers not attn's are compared as each golden tensor declares; attn's own at the tolerance asked",
          "[compare]") {
    // A golden step with three tensors: one at the tolerance asked, central differences whose
    // rounding earns atol 1e-8, and a count of differing bits that is only shown.
    const auto make = [](double weight, double difference, double bits) {
        Trace t("demo", Config{1, {}});
        t.step("gradients", "Gradients", "", "");
        t.tensor("dW", "", Array{0.25, weight});
        t.tensor("numeric", "", Array{difference, 0.5}).foreign_tolerance(0.0, 1e-8, "central differences at h = 1e-6");
        t.tensor("bits", "", Array{bits}).foreign_shown("a count of differing bits");
        return t;
    };
    const Trace golden = make(0.75, 1.0, 3.0);
    SECTION("a right answer written another way: noise in the declared tensors passes") {
        const Trace other = make(0.75, 1.0 + 5e-9, 40.0);
        const auto cmp = compare_traces(other, golden, Tolerance{}, Whose::student);
        INFO(cmp.report);
        CHECK(cmp.ok);
        CHECK(cmp.tensors_compared == 2);
        CHECK(cmp.tensors_shown == 1);
        // attn's own bits are held at the tolerance asked, whatever the tensors declare
        const auto own = compare_traces(other, golden, Tolerance{});
        CHECK_FALSE(own.ok);
        CHECK_THAT(own.report, Catch::Contains("tensor 'numeric'"));
        CHECK_THAT(own.report, Catch::Contains("tensor 'bits'"));
    }
    SECTION("a wrong answer still fails: beyond the declared tolerance, or in an undeclared tensor") {
        const auto beyond = compare_traces(make(0.75, 1.0 + 5e-8, 3.0), golden, Tolerance{}, Whose::student);
        CHECK_FALSE(beyond.ok);
        CHECK_THAT(beyond.report, Catch::Contains("tensor 'numeric' [2] (its tolerance: central differences"));
        CHECK_THAT(beyond.report, Catch::Contains("rtol=1e-09, atol=1e-08"));
        const auto undeclared = compare_traces(make(0.75 + 1e-8, 1.0, 3.0), golden, Tolerance{}, Whose::student);
        CHECK_FALSE(undeclared.ok);
        CHECK_THAT(undeclared.report, Catch::Contains("tensor 'dW'"));
    }
    SECTION("a looser tolerance asked wins over a declared one, component by component") {
        const Tolerance asked{1e-3, 0.0};
        const Tolerance both = foreign_tolerance(golden.steps()[0].tensors[1].foreign, asked);
        CHECK(both.rtol == 1e-3);
        CHECK(both.atol == 1e-8);
        CHECK(compare_traces(make(0.75, 1.0005, 3.0), golden, asked, Whose::student).ok);
    }
    SECTION("a tensor of attn's trained models: compared for a student's functions (the models are loaded), "
            "shown for a peer's numbers (its own training made them)") {
        Trace golden_trained = golden, other = make(0.75, 1.0, 3.0);
        golden_trained.steps()[0].tensors[0].foreign_trained("decoded with lesson 12's trained models");
        other.steps()[0].tensors[0].value(1) = 0.5;
        const auto student = compare_traces(other, golden_trained, Tolerance{}, Whose::student);
        CHECK_FALSE(student.ok);
        CHECK_THAT(student.report, Catch::Contains("tensor 'dW'"));
        const auto peer = compare_traces(other, golden_trained, Tolerance{}, Whose::peer);
        INFO(peer.report);
        CHECK(peer.ok);
        CHECK(peer.tensors_shown == 2);
    }
    SECTION("a shown tensor is not compared, not even its shape (a translation's length follows the training)") {
        Trace other = make(0.75, 1.0, 3.0);
        other.steps()[0].tensors[2].value = Array{1.0, 2.0};
        const auto cmp = compare_traces(other, golden, Tolerance{}, Whose::student);
        INFO(cmp.report);
        CHECK(cmp.ok);
        CHECK(cmp.tensors_shown == 1);
        // attn's own run is held to the shape too
        CHECK_FALSE(compare_traces(other, golden, Tolerance{}).ok);
    }
}

}  // namespace test_compare
