// Numerics at the edges (README, "Numerics at the edges"): softmax with logits near the largest
// double, rows masked everywhere, NaN; and the rule that a NaN can never make a check pass, in an
// identity check, a comparison with a golden file, or an --input tensor.
// T_q x T_k = rows x columns of a matrix of scores.
#include "core/compare.hpp"
#include "core/golden.hpp"
#include "core/trace.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"

#include <catch2/catch.hpp>
#include <xtensor/xview.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <string>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_edges {

using namespace attn;
using Catch::Matchers::WithinAbs;

namespace {

const double inf = std::numeric_limits<double>::infinity();
const double NaN = std::numeric_limits<double>::quiet_NaN();
const double biggest = std::numeric_limits<double>::max();  // 1.797...e308

// Every weight finite and in [0, 1], and the row summing to 1 (to rounding).
void check_distribution(const Vec& weights) {
    double total = 0.0;
    for (double w : weights) {
        CHECK(std::isfinite(w));
        CHECK(w >= 0.0);
        CHECK(w <= 1.0);
        total += w;
    }
    CHECK_THAT(total, WithinAbs(1.0, 1e-15));
}

Vec row_of(const Mat& m, std::size_t i) { return xt::row(m, static_cast<std::ptrdiff_t>(i)); }

}  // namespace

TEST_CASE("softmax of logits near +-1e308 stays finite and sums to 1", "[edges][softmax]") {
    // Subtracting the largest logit first keeps every exp() argument <= 0: exp cannot overflow, and
    // a difference that overflows to -inf (1e308 - (-1e308)) gives exp = 0, the right limit.
    SECTION("one huge logit takes all the weight") {
        const Vec a = nn::softmax(Vec{1e308, -1e308, 0.0});
        check_distribution(a);
        CHECK(a(0) == 1.0);
        CHECK(a(1) == 0.0);
        CHECK(a(2) == 0.0);
    }
    SECTION("equal huge logits share the weight equally, of either sign") {
        const Vec up = nn::softmax(Vec{1e308, 1e308, 1e308, 1e308});
        const Vec down = nn::softmax(Vec{-1e308, -1e308});
        check_distribution(up);
        check_distribution(down);
        CHECK(up(0) == 0.25);
        CHECK(down(1) == 0.5);
    }
    SECTION("the largest double and its negative") {
        const Vec a = nn::softmax(Vec{biggest, -biggest, biggest});
        check_distribution(a);
        CHECK(a(0) == 0.5);
        CHECK(a(1) == 0.0);
    }
    SECTION("softmax_rows and masked softmax, row by row") {
        const Mat logits = {{1e308, -1e308, 1e308}, {-biggest, -biggest, -biggest}, {biggest, 0.0, -biggest}};
        const Mat alpha = nn::softmax_rows(logits);
        for (std::size_t i = 0; i < 3; ++i) {
            INFO("row " << i);
            check_distribution(row_of(alpha, i));
        }
        CHECK_THAT(alpha(1, 0), WithinAbs(1.0 / 3.0, 1e-16));
        const Mat masked = nn::masked_softmax(logits, nn::causal_mask(3));
        for (std::size_t i = 0; i < 3; ++i) {
            INFO("row " << i);
            check_distribution(row_of(masked, i));
            for (std::size_t j = i + 1; j < 3; ++j) CHECK(masked(i, j) == 0.0);
        }
        CHECK(masked(0, 0) == 1.0);
        CHECK(masked(2, 0) == 1.0);
    }
}

TEST_CASE("a row that is -inf everywhere gives zeros, by design", "[edges][softmax]") {
    // A query with no key to look at (a padded query, fully masked) gets no weight at all rather
    // than 0/0 = NaN, which would spread to every later sum; its weights sum to 0, not 1.
    SECTION("softmax") {
        const Vec a = nn::softmax(Vec{-inf, -inf, -inf});
        for (double w : a) CHECK(w == 0.0);
    }
    SECTION("softmax_rows: only that row") {
        const Mat alpha = nn::softmax_rows(Mat{{-inf, -inf}, {0.0, 0.0}});
        CHECK(alpha(0, 0) == 0.0);
        CHECK(alpha(0, 1) == 0.0);
        check_distribution(row_of(alpha, 1));
    }
    SECTION("masked softmax: a padded query, whatever its scores") {
        // rows 2 and 3 are padded queries; their scores are huge, +inf and NaN, and still give zeros
        const Mat scores = {{1.0, 2.0, 3.0}, {0.5, 0.5, 0.5}, {1e308, inf, 0.0}, {NaN, 1.0, 1.0}};
        const Mat alpha = nn::masked_softmax(scores, nn::padding_mask(4, 3, 2, 3));
        check_distribution(row_of(alpha, 0));
        check_distribution(row_of(alpha, 1));
        for (std::size_t i = 2; i < 4; ++i)
            for (std::size_t j = 0; j < 3; ++j) CHECK(alpha(i, j) == 0.0);
    }
}

TEST_CASE("a NaN logit makes its row NaN, and only its row", "[edges][softmax]") {
    SECTION("softmax") {
        for (const Vec& logits : {Vec{NaN, 0.0}, Vec{0.0, 1e308, NaN}, Vec{inf, NaN}, Vec{-inf, NaN, -inf}}) {
            const Vec a = nn::softmax(logits);
            for (double w : a) CHECK(std::isnan(w));
        }
    }
    SECTION("softmax_rows") {
        const Mat alpha = nn::softmax_rows(Mat{{0.0, NaN, 1.0}, {0.0, 1.0, 2.0}});
        for (std::size_t j = 0; j < 3; ++j) CHECK(std::isnan(alpha(0, j)));
        check_distribution(row_of(alpha, 1));
    }
    SECTION("masked softmax: NaN where the mask lets it through") {
        const Mat alpha = nn::masked_softmax(Mat{{0.0, 1.0}, {NaN, 1.0}}, nn::causal_mask(2));
        CHECK(std::isnan(alpha(1, 0)));
        CHECK(std::isnan(alpha(1, 1)));
        CHECK(alpha(0, 0) == 1.0);
    }
    SECTION("masked softmax: NaN where the mask is -inf is masked away, like any score there") {
        // The mask says the entry does not exist, so its value cannot matter (nn/self_attention.hpp).
        const Mat alpha = nn::masked_softmax(Mat{{0.0, NaN}, {1.0, 1.0}}, nn::causal_mask(2));
        CHECK(alpha(0, 0) == 1.0);
        CHECK(alpha(0, 1) == 0.0);
        check_distribution(row_of(alpha, 1));
    }
}

TEST_CASE("a NaN can never make a check pass", "[edges][nan]") {
    SECTION("an identity check with a NaN error does not hold, whatever the tolerance") {
        Trace trace("edges", Config{});
        trace.step("s", "a step", "", "");
        CHECK_FALSE(trace.check("a NaN error", NaN, 1e-12));
        CHECK_FALSE(trace.check("a NaN error, infinite tolerance", NaN, inf));
        CHECK_FALSE(trace.steps()[0].checks[0].holds);
        CHECK_FALSE(trace.all_checks_hold());
        // the error of a claim computed from NaN numbers is NaN
        CHECK(std::isnan(max_abs_difference(Array{1.0, NaN}, Array{1.0, 2.0})));
    }
    SECTION("NaN in the actual tensor against a finite golden fails, however loose the tolerance") {
        const Tolerance loosest{std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
        const TensorDiff d = compare_tensor(Array{NaN, 1.0}, Array{0.5, 1.0}, loosest);
        CHECK_FALSE(d.ok());
        CHECK(d.mismatched == 1);
        CHECK_FALSE(close(NaN, 0.5, loosest));
        CHECK_FALSE(close(0.5, NaN, loosest));
        CHECK(close(NaN, NaN, Tolerance{}));  // NaN equals only NaN, as numpy's assert_allclose
        CHECK_FALSE(close(inf, biggest, loosest));
    }
    SECTION("a golden check record that claims to hold with a NaN error is refused") {
        const std::string text = R"({"format": "attn-golden", "version": 1, "lesson": "edges", "config": {"seed": 7},
            "steps": [{"id": "s", "title": "t", "tensors": [],
                       "checks": [{"claim": "c", "max_abs_error": "nan", "tolerance": 1e-12, "holds": true}]}]})";
        CHECK_THROWS_AS(parse_golden_json(text, "edges.json"), GoldenError);
        std::string refused = text;
        refused.replace(refused.find("true"), 4, "false");
        CHECK(parse_golden_json(refused, "edges.json").steps()[0].checks[0].holds == false);
    }
    SECTION("an --input tensor holding NaN or an infinity is refused") {
        for (const double bad : {NaN, inf, -inf}) {
            Trace trace("edges", Config{});
            trace.supply_inputs({{"W", Array{{1.0, bad}}}});
            CHECK_THROWS_AS(trace.input("W", Mat{{0.0, 0.0}}), InputError);
        }
    }
}

}  // namespace test_edges
