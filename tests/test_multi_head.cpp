// Lesson 6 (multi-head attention, Vaswani et al. 2017, section 3.2.2) and the ops it adds:
// split_heads / merge_heads and nn::multi_head_attention against an independent implementation
// written with explicit loops, the h = 1 and causal special cases, shape errors, and the lesson.
#include "core/rng.hpp"
#include "nn/linalg.hpp"
#include "nn/multi_head.hpp"
#include "nn/self_attention.hpp"
#include "run.hpp"

#include "support.hpp"

#include <catch2/catch.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_multi_head {

using namespace attn;
using attn::test::recorded;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;

namespace {

struct Reference {
    std::vector<Mat> weights;  // per head, T_q x T_k
    Mat output;                // T_q x d_model
};

// Multi-head attention from the paper's definition, one number at a time: head i projects with
// columns [i d_k, (i+1) d_k) of W_Q, W_K, W_V, attends with a max-shifted softmax, and the joined
// heads are multiplied by W_O. Masked entries (-inf) get exp(-inf) = 0. Uses nothing from nn::.
Reference reference_multi_head(const Mat& Xq, const Mat& Xkv, const nn::MultiHeadParams& p, std::size_t h,
                               const Mat* mask) {
    const std::size_t T_q = Xq.shape(0), T_k = Xkv.shape(0), d_model = Xq.shape(1), d_k = d_model / h;
    Reference ref;
    Mat concat = xt::zeros<double>({T_q, d_model});
    for (std::size_t i = 0; i < h; ++i) {
        Mat q = xt::zeros<double>({T_q, d_k}), k = xt::zeros<double>({T_k, d_k}), v = xt::zeros<double>({T_k, d_k});
        for (std::size_t a = 0; a < d_k; ++a)
            for (std::size_t c = 0; c < d_model; ++c) {
                for (std::size_t t = 0; t < T_q; ++t) q(t, a) += Xq(t, c) * p.W_Q(c, i * d_k + a);
                for (std::size_t t = 0; t < T_k; ++t) {
                    k(t, a) += Xkv(t, c) * p.W_K(c, i * d_k + a);
                    v(t, a) += Xkv(t, c) * p.W_V(c, i * d_k + a);
                }
            }
        Mat w = xt::zeros<double>({T_q, T_k});
        for (std::size_t t = 0; t < T_q; ++t) {
            std::vector<double> s(T_k, 0.0);
            double largest = -std::numeric_limits<double>::infinity();
            for (std::size_t j = 0; j < T_k; ++j) {
                for (std::size_t a = 0; a < d_k; ++a) s[j] += q(t, a) * k(j, a);
                s[j] /= std::sqrt(static_cast<double>(d_k));
                if (mask) s[j] += (*mask)(t, j);
                largest = std::max(largest, s[j]);
            }
            double total = 0.0;
            for (std::size_t j = 0; j < T_k; ++j) total += std::exp(s[j] - largest);
            for (std::size_t j = 0; j < T_k; ++j) w(t, j) = std::exp(s[j] - largest) / total;
            for (std::size_t a = 0; a < d_k; ++a)
                for (std::size_t j = 0; j < T_k; ++j) concat(t, i * d_k + a) += w(t, j) * v(j, a);
        }
        ref.weights.push_back(w);
    }
    ref.output = xt::zeros<double>({T_q, d_model});
    for (std::size_t t = 0; t < T_q; ++t)
        for (std::size_t c = 0; c < d_model; ++c)
            for (std::size_t r = 0; r < d_model; ++r) ref.output(t, c) += concat(t, r) * p.W_O(r, c);
    return ref;
}

nn::MultiHeadParams random_params(Rng& rng, std::size_t d_model) {
    const double s = 1.0 / std::sqrt(static_cast<double>(d_model));
    return {rng.normal_mat(d_model, d_model, s), rng.normal_mat(d_model, d_model, s),
            rng.normal_mat(d_model, d_model, s), rng.normal_mat(d_model, d_model, s)};
}

Mat head_slice(const nn::Heads& heads, std::size_t i) { return xt::view(heads, i, xt::all(), xt::all()); }

void check_against_reference(const nn::MultiHeadResult& got, const Reference& ref) {
    REQUIRE(got.weights.shape(0) == ref.weights.size());
    for (std::size_t i = 0; i < ref.weights.size(); ++i) {
        INFO("head " << i + 1);
        CHECK_THAT(max_abs_difference(head_slice(got.weights, i), ref.weights[i]), WithinAbs(0.0, 1e-12));
    }
    CHECK_THAT(max_abs_difference(got.output, ref.output), WithinAbs(0.0, 1e-12));
}

}  // namespace

TEST_CASE("multi-head attention equals the loop implementation", "[multi_head]") {
    const std::size_t h = GENERATE(1, 2, 4, 8);
    const std::size_t d_model = GENERATE(8, 16);
    const std::uint64_t seed = GENERATE(1, 2, 3);
    INFO("h = " << h << ", d_model = " << d_model << ", seed = " << seed);
    Rng rng(seed);
    const nn::MultiHeadParams p = random_params(rng, d_model);

    SECTION("self-attention") {
        const Mat X = rng.normal_mat(6, d_model);
        check_against_reference(nn::multi_head_attention(X, X, p, h), reference_multi_head(X, X, p, h, nullptr));
    }
    SECTION("self-attention with a causal mask") {
        const Mat X = rng.normal_mat(6, d_model);
        const Mat mask = nn::causal_mask(6);
        check_against_reference(nn::multi_head_attention(X, X, p, h, &mask), reference_multi_head(X, X, p, h, &mask));
    }
    SECTION("cross-attention: 5 queries, 7 keys, with padding") {
        const Mat Xq = rng.normal_mat(5, d_model), Xkv = rng.normal_mat(7, d_model);
        const Mat mask = nn::padding_mask(5, 7, 4);
        check_against_reference(nn::multi_head_attention(Xq, Xkv, p, h), reference_multi_head(Xq, Xkv, p, h, nullptr));
        check_against_reference(nn::multi_head_attention(Xq, Xkv, p, h, &mask),
                                reference_multi_head(Xq, Xkv, p, h, &mask));
    }
}

TEST_CASE("dropping the weights keeps the output", "[multi_head]") {
    Rng rng(5);
    const nn::MultiHeadParams p = random_params(rng, 8);
    const Mat X = rng.normal_mat(6, 8);
    const auto kept = nn::multi_head_attention(X, X, p, 4);
    const auto dropped = nn::multi_head_attention(X, X, p, 4, nullptr, nn::HeadWeights::drop);
    CHECK(dropped.weights.size() == 0);
    CHECK(kept.weights.size() == 4 * 6 * 6);
    // the same code path computes the output either way, so equal bit for bit
    CHECK(max_abs_difference(dropped.output, kept.output) == 0.0);
}

TEST_CASE("d_model not divisible by h is refused, naming both numbers", "[multi_head]") {
    Rng rng(1);
    const nn::MultiHeadParams p = random_params(rng, 6);
    const Mat X = rng.normal_mat(3, 6);
    // Catch2 v2 combined matchers keep references to their parts, so they are written inline.
    CHECK_THROWS_AS(nn::multi_head_attention(X, X, p, 4), ShapeError);
    CHECK_THROWS_WITH(nn::multi_head_attention(X, X, p, 4), Contains("d_model = 6") && Contains("h = 4"));
    CHECK_THROWS_WITH(nn::split_heads(X, 4), Contains("d_model = 6") && Contains("h = 4"));
    CHECK_THROWS_WITH(nn::head_width(6, 0), Contains("h = 0"));
    CHECK(nn::head_width(6, 3) == 2);
}

TEST_CASE("shape errors name the tensor and its shape", "[multi_head]") {
    Rng rng(2);
    const nn::MultiHeadParams p = random_params(rng, 4);
    const Mat X = rng.normal_mat(3, 4);
    nn::MultiHeadParams wide_output = p;
    wide_output.W_O = rng.normal_mat(4, 5);
    CHECK_THROWS_WITH(nn::multi_head_attention(X, X, wide_output, 2), Contains("W_O") && Contains("[4, 5]"));
    const Mat narrow = rng.normal_mat(3, 3);
    CHECK_THROWS_WITH(nn::multi_head_attention(X, narrow, p, 2), Contains("X_kv") && Contains("[3, 3]"));
    const Mat mask = nn::causal_mask(4);
    CHECK_THROWS_WITH(nn::multi_head_attention(X, X, p, 2, &mask), Contains("mask") && Contains("[4, 4]"));
}

TEST_CASE("split_heads cuts columns into heads; merge_heads undoes it", "[multi_head]") {
    const std::size_t h = GENERATE(1, 2, 3, 6);
    Rng rng(h);
    const Mat X = rng.normal_mat(4, 6);
    const nn::Heads split = nn::split_heads(X, h);
    const std::size_t d_k = 6 / h;
    REQUIRE(split.shape(0) == h);
    REQUIRE(split.shape(1) == 4);
    REQUIRE(split.shape(2) == d_k);
    // pure copies, so exactly equal
    for (std::size_t i = 0; i < h; ++i)
        CHECK(max_abs_difference(head_slice(split, i),
                                 Mat(xt::view(X, xt::all(), xt::range(i * d_k, (i + 1) * d_k)))) == 0.0);
    CHECK(max_abs_difference(nn::merge_heads(split), X) == 0.0);
}

TEST_CASE("one head equals scaled dot-product attention followed by W^O", "[multi_head]") {
    const std::uint64_t seed = GENERATE(1, 2);
    Rng rng(seed);
    const nn::MultiHeadParams p = random_params(rng, 5);
    const Mat X = rng.normal_mat(6, 5);
    const Mat Q = nn::matmul(X, p.W_Q, "Q"), K = nn::matmul(X, p.W_K, "K"), V = nn::matmul(X, p.W_V, "V");
    SECTION("unmasked") {
        const auto multi = nn::multi_head_attention(X, X, p, 1);
        const auto single = nn::scaled_dot_product_attention(Q, K, V);
        CHECK_THAT(max_abs_difference(head_slice(multi.weights, 0), single.weights), WithinAbs(0.0, 1e-12));
        CHECK_THAT(max_abs_difference(multi.output, nn::matmul(single.output, p.W_O, "A V W^O")),
                   WithinAbs(0.0, 1e-12));
    }
    SECTION("causal") {
        const Mat mask = nn::causal_mask(6);
        const auto multi = nn::multi_head_attention(X, X, p, 1, &mask);
        const auto single = nn::scaled_dot_product_attention(Q, K, V, mask);
        CHECK_THAT(max_abs_difference(multi.output, nn::matmul(single.output, p.W_O, "A V W^O")),
                   WithinAbs(0.0, 1e-12));
    }
}

TEST_CASE("causal multi-head weights are zero above the diagonal", "[multi_head]") {
    const std::size_t h = GENERATE(2, 4);
    Rng rng(11);
    const nn::MultiHeadParams p = random_params(rng, 8);
    const Mat X = rng.normal_mat(7, 8);
    const Mat mask = nn::causal_mask(7);
    const auto r = nn::multi_head_attention(X, X, p, h, &mask);
    for (std::size_t i = 0; i < h; ++i)
        for (std::size_t t = 0; t < 7; ++t) {
            double row_sum = 0.0;
            for (std::size_t j = 0; j < 7; ++j) {
                row_sum += r.weights(i, t, j);
                // exp(-inf) is exactly 0, so a masked weight is exactly 0
                if (j > t) CHECK(r.weights(i, t, j) == 0.0);
                else CHECK(r.weights(i, t, j) > 0.0);
            }
            CHECK_THAT(row_sum, WithinAbs(1.0, 1e-12));
        }
}

TEST_CASE("large causal multi-head attention, on two threads, equals the loops", "[multi_head]") {
    // each head's T x T = 40000 scores are above the size the row kernels split over two threads
    const std::size_t T = 200, d_model = 16, h = 4;
    Rng rng(23);
    const nn::MultiHeadParams p = random_params(rng, d_model);
    const Mat X = rng.normal_mat(T, d_model);
    const Mat mask = nn::causal_mask(T);
    const auto r = nn::multi_head_attention(X, X, p, h, &mask);
    check_against_reference(r, reference_multi_head(X, X, p, h, &mask));
    std::size_t nonzero_above = 0;
    double worst_sum_error = 0.0;
    for (std::size_t i = 0; i < h; ++i)
        for (std::size_t t = 0; t < T; ++t) {
            double row_sum = 0.0;
            for (std::size_t j = 0; j < T; ++j) {
                row_sum += r.weights(i, t, j);
                if (j > t && r.weights(i, t, j) != 0.0) ++nonzero_above;
            }
            worst_sum_error = std::max(worst_sum_error, std::abs(row_sum - 1.0));
        }
    CHECK(nonzero_above == 0);
    CHECK(worst_sum_error <= 1e-12);
    const auto dropped = nn::multi_head_attention(X, X, p, h, &mask, nn::HeadWeights::drop);
    CHECK(max_abs_difference(dropped.output, r.output) == 0.0);
}

TEST_CASE("lesson 6 holds its checks and records what it claims", "[multi_head][lessons]") {
    const Lesson* lesson = find_lesson("multi-head");
    REQUIRE(lesson);
    REQUIRE(find_lesson("6") == lesson);
    const Trace t = run_lesson(*lesson, lesson->defaults);
    for (const auto& s : t.steps())
        for (const auto& c : s.checks) {
            INFO("step " << s.id << ": " << c.claim << " (error " << c.max_abs_error << ")");
            CHECK(c.holds);
        }
    CHECK(t.all_checks_hold());

    SECTION("the counts: T = 7, d_model = 6, rows h = 1, 2, 3, 6") {
        const Array& cost = recorded(t, "cost", "cost").value;
        REQUIRE(cost.shape(0) == 4);
        const double heads[] = {1, 2, 3, 6};
        for (std::size_t r = 0; r < 4; ++r) {
            INFO("h = " << heads[r]);
            CHECK_THAT(cost(r, 0), WithinAbs(6 / heads[r], 0.0));  // d_k = d_model / h
            CHECK_THAT(cost(r, 1), WithinAbs(144, 0.0));           // 4 d_model^2 = 4 * 36
            CHECK_THAT(cost(r, 2), WithinAbs(1596, 0.0));          // 4 * 7 * 36 + 2 * 49 * 6 = 1008 + 588
            CHECK_THAT(cost(r, 3), WithinAbs(49 * heads[r], 0.0)); // h T^2 softmax entries
        }
    }
    SECTION("a labelled heatmap per head, with and without the mask") {
        const std::vector<std::string> tokens = {"turn", "off", "the", "lights", "in", "the", "kitchen"};
        for (const auto& [step, name] : std::vector<std::pair<std::string, std::string>>{
                 {"head-1", "A_1"}, {"heads", "A_2"}, {"causal", "A_1"}, {"causal", "A_2"}}) {
            INFO(step << "." << name);
            const TensorRecord& a = recorded(t, step, name);
            CHECK(a.view == View::heatmap);
            CHECK(a.rows == tokens);
            CHECK(a.cols == tokens);
        }
    }
    SECTION("the inputs and parameters are recorded") {
        CHECK(recorded(t, "inputs", "X").shape() == Shape{7, 6});
        for (const char* w : {"W_Q", "W_K", "W_V", "W_O"}) CHECK(recorded(t, "params", w).shape() == Shape{6, 6});
    }
    SECTION("the loop's output in step [concat] is what nn::multi_head_attention computes from X and W") {
        const auto value = [&](const char* step, const char* name) { return recorded(t, step, name).value; };
        const nn::MultiHeadParams p{value("params", "W_Q"), value("params", "W_K"), value("params", "W_V"),
                                    value("params", "W_O")};
        const Mat X = value("inputs", "X");
        CHECK_THAT(max_abs_difference(nn::multi_head_attention(X, X, p, 2).output, value("concat", "Y")),
                   WithinAbs(0.0, 1e-12));
    }
}

TEST_CASE("lesson 6 runs with other head counts and refuses a non-divisor", "[multi_head][lessons]") {
    const Lesson* lesson = find_lesson("multi-head");
    REQUIRE(lesson);
    const Trace three = run_lesson(*lesson, configure(*lesson, 7, {{"heads", 3}}));
    CHECK(three.all_checks_hold());
    CHECK(recorded(three, "heads", "A_3").shape() == Shape{7, 7});
    // configure() refuses before any work, naming both numbers and the head counts that divide d_model
    CHECK_THROWS_WITH(configure(*lesson, 7, {{"heads", 4}}),
                      Contains("d_model=6") && Contains("heads=4") && Contains("1, 2, 3, 6"));
    // and the op itself refuses too, for a caller that skips configure()
    CHECK_THROWS_WITH(run_lesson(*lesson, Config{7, {{"d_model", 6}, {"heads", 4}}}),
                      Contains("d_model = 6") && Contains("h = 4"));
}

}  // namespace test_multi_head
