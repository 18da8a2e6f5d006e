// Lesson 13's decoding pieces that need no trained model: grouped-query attention (nn/grouped_query.hpp)
// against lesson 6's multi-head attention and against its groups written out by hand, and the
// reshapings of a next-word distribution and the draw from it (nn/sampling.hpp) against small
// distributions worked by hand. h = query heads, n_kv = key-value heads, d = model width.
#include "core/rng.hpp"
#include "nn/grouped_query.hpp"
#include "nn/linalg.hpp"
#include "nn/multi_head.hpp"
#include "nn/reductions.hpp"
#include "nn/sampling.hpp"
#include "nn/self_attention.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

// Everything of this file in a namespace of its own (the test program is built as unity files).
namespace test_decoding {

using namespace attn;

namespace {

bool same_bits(const Mat& a, const Mat& b) {
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

nn::MultiHeadParams random_params(Rng& rng, std::size_t d) {
    const double s = 1.0 / std::sqrt(static_cast<double>(d));
    return {rng.normal_mat(d, d, s), rng.normal_mat(d, d, s), rng.normal_mat(d, d, s), rng.normal_mat(d, d, s)};
}

// Head i of Concat(heads) computed alone: lesson 4's scaled dot-product attention on X W_i^Q and
// key-value head g's X W_g^K, X W_g^V (W_K, W_V: d x (n_kv d_k)).
Mat head_by_hand(const Mat& X, const nn::GroupedQueryParams& p, std::size_t i, std::size_t g, std::size_t d_k,
                 const Mat& mask) {
    const Mat Q = nn::matmul(X, nn::columns_of(p.W_Q, i * d_k, (i + 1) * d_k), "X W_i^Q");
    const Mat K = nn::matmul(X, nn::columns_of(p.W_K, g * d_k, (g + 1) * d_k), "X W_g^K");
    const Mat V = nn::matmul(X, nn::columns_of(p.W_V, g * d_k, (g + 1) * d_k), "X W_g^V");
    return nn::scaled_dot_product_attention(Q, K, V, mask).output;
}

}  // namespace

TEST_CASE("grouped_query_attention with n_kv = h is multi_head_attention to the bit", "[decoding]") {
    Rng rng(31);
    const std::size_t T = 5, d = 8, h = 4;
    const Mat X = rng.normal_mat(T, d), causal = nn::causal_mask(T);
    const nn::MultiHeadParams p = random_params(rng, d);
    const nn::GroupedQueryParams g = nn::grouped_query_params(p, h, h);
    CHECK(same_bits(g.W_K, p.W_K));  // mean-pooling groups of one changes nothing
    for (const Mat* mask : {static_cast<const Mat*>(nullptr), &causal}) {
        const nn::MultiHeadResult a = nn::grouped_query_attention(X, X, g, h, h, mask);
        const nn::MultiHeadResult b = nn::multi_head_attention(X, X, p, h, mask);
        CHECK(same_bits(a.output, b.output));
        CHECK(same_bits(a.concat, b.concat));
        CHECK(std::memcmp(a.weights.data(), b.weights.data(), b.weights.size() * sizeof(double)) == 0);
    }
}

TEST_CASE("grouped_query_attention: query heads 0, 1 read key-value head 0 and heads 2, 3 head 1 (h = 4, n_kv = 2), "
          "not i mod n_kv",
          "[decoding]") {
    Rng rng(32);
    const std::size_t T = 4, d = 8, h = 4, n_kv = 2, d_k = 2;
    const Mat X = rng.normal_mat(T, d), causal = nn::causal_mask(T);
    const nn::GroupedQueryParams p = {rng.normal_mat(d, d, 0.5), rng.normal_mat(d, n_kv * d_k, 0.5),
                                      rng.normal_mat(d, n_kv * d_k, 0.5), rng.normal_mat(d, d, 0.5)};
    const nn::MultiHeadResult r = nn::grouped_query_attention(X, X, p, h, n_kv, &causal);
    const std::size_t right[] = {0, 0, 1, 1}, modular[] = {0, 1, 0, 1};
    for (std::size_t i = 0; i < h; ++i) {
        INFO("query head " << i);
        const Mat head = nn::columns_of(r.concat, i * d_k, (i + 1) * d_k);
        CHECK(nn::max_abs_of(Mat(head - head_by_hand(X, p, i, right[i], d_k, causal))) <= 1e-13);
        // heads 1 and 2 are where the two groupings part: the test tells them apart there
        if (right[i] != modular[i])
            CHECK(nn::max_abs_of(Mat(head - head_by_hand(X, p, i, modular[i], d_k, causal))) > 1e-3);
    }
    CHECK(same_bits(r.output, nn::matmul(r.concat, p.W_O, "Concat W^O")));
}

TEST_CASE("kv_head_of, mean_pooled_heads and repeated_heads on cases worked by hand; bad groupings refused",
          "[decoding]") {
    const std::vector<std::size_t> eight_in_two = {0, 0, 0, 0, 1, 1, 1, 1}, six_in_three = {0, 0, 1, 1, 2, 2};
    for (std::size_t i = 0; i < 8; ++i) CHECK(nn::kv_head_of(i, 8, 2) == eight_in_two[i]);
    for (std::size_t i = 0; i < 6; ++i) CHECK(nn::kv_head_of(i, 6, 3) == six_in_three[i]);
    for (std::size_t i = 0; i < 5; ++i) CHECK(nn::kv_head_of(i, 5, 1) == 0);
    // one row, d_k = 1: heads 1, 2, 3, 5
    const Mat W = {{1.0, 2.0, 3.0, 5.0}};
    CHECK(same_bits(nn::mean_pooled_heads(W, 4, 2), Mat{{1.5, 4.0}}));
    CHECK(same_bits(nn::mean_pooled_heads(W, 4, 1), Mat{{2.75}}));
    CHECK(same_bits(nn::mean_pooled_heads(W, 4, 4), W));
    // d_k = 2: heads (1, 2), (3, 5) of W as two heads of width 2
    CHECK(same_bits(nn::mean_pooled_heads(W, 2, 1), Mat{{2.0, 3.5}}));
    CHECK(same_bits(nn::repeated_heads(Mat{{7.0, 9.0}}, 4, 2), Mat{{7.0, 7.0, 9.0, 9.0}}));
    CHECK(same_bits(nn::repeated_heads(Mat{{7.0, 8.0, 9.0, 6.0}}, 4, 2), Mat{{7.0, 8.0, 7.0, 8.0, 9.0, 6.0, 9.0, 6.0}}));
    CHECK_THROWS_WITH(nn::kv_head_of(0, 4, 3), Catch::Contains("3 key-value heads must be at least 1 and divide the 4"));
    CHECK_THROWS_AS(nn::kv_head_of(0, 4, 0), ShapeError);
    CHECK_THROWS_AS(nn::kv_head_of(0, 2, 4), ShapeError);
    CHECK_THROWS_AS(nn::kv_head_of(4, 4, 2), ShapeError);
    Rng rng(33);
    const Mat X = rng.normal_mat(3, 4);
    const nn::GroupedQueryParams wide = {rng.normal_mat(4, 4), rng.normal_mat(4, 4), rng.normal_mat(4, 2), rng.normal_mat(4, 4)};
    CHECK_THROWS_WITH(nn::grouped_query_attention(X, X, wide, 2, 1), Catch::Contains("W_K"));
}

TEST_CASE("with_temperature on distributions worked by hand: T = 1, 1/2, 2, towards 0, ties and zeros", "[decoding]") {
    const Vec p = {0.5, 0.25, 0.25};
    // T = 1/2 squares: (1/4, 1/16, 1/16) / (3/8)
    const Vec sharp = nn::with_temperature(p, 0.5);
    CHECK_THAT(sharp(0), Catch::WithinRel(2.0 / 3.0, 1e-14));
    CHECK_THAT(sharp(1), Catch::WithinRel(1.0 / 6.0, 1e-14));
    // T = 2 takes square roots: (sqrt(1/2), 1/2, 1/2) / (sqrt(1/2) + 1)
    const Vec flat = nn::with_temperature(p, 2.0);
    CHECK_THAT(flat(0), Catch::WithinRel(std::sqrt(0.5) / (std::sqrt(0.5) + 1.0), 1e-14));
    CHECK_THAT(flat(2), Catch::WithinRel(0.5 / (std::sqrt(0.5) + 1.0), 1e-14));
    const Vec same = nn::with_temperature(p, 1.0);
    for (std::size_t j = 0; j < 3; ++j) CHECK_THAT(same(j), Catch::WithinAbs(p(j), 1e-15));
    CHECK(nn::with_temperature(p, 1e-300)(0) == 1.0);
    CHECK(nn::with_temperature(p, 1e-300)(1) == 0.0);
    // two equal largest share the weight towards 0; a zero stays zero at any T
    const Vec tied = nn::with_temperature(Vec{0.4, 0.0, 0.4, 0.2}, 1e-300);
    CHECK(tied(0) == 0.5);
    CHECK(tied(2) == 0.5);
    CHECK(nn::with_temperature(Vec{0.4, 0.0, 0.6}, 100.0)(1) == 0.0);
    CHECK_THROWS_WITH(nn::with_temperature(p, 0.0), Catch::Contains("above 0"));
    CHECK_THROWS_AS(nn::with_temperature(p, -1.0), std::invalid_argument);
    CHECK_THROWS_AS(nn::with_temperature(p, std::nan("")), std::invalid_argument);
    CHECK_THROWS_WITH(nn::with_temperature(Vec{0.5, -0.1}, 1.0), Catch::Contains("entry 1"));
    CHECK_THROWS_WITH(nn::with_temperature(Vec{0.0, 0.0}, 1.0), Catch::Contains("no mass"));
}

TEST_CASE("ranked, top_k and top_p: exactly k kept, ties by index, the fewest words reaching p", "[decoding]") {
    CHECK(nn::ranked(Vec{0.2, 0.4, 0.2, 0.2}) == std::vector<std::size_t>{1, 0, 2, 3});
    const Vec p = {0.125, 0.25, 0.25, 0.25, 0.125};
    const Vec two = nn::top_k(p, 2);
    CHECK(same_bits(Mat(xt::reshape_view(two, {1, 5})), Mat{{0.0, 0.5, 0.5, 0.0, 0.0}}));
    // k = 4: of the two equal at 0.125 the lower index is kept, the other dropped
    const Vec four = nn::top_k(p, 4);
    CHECK(four(0) == 0.125 / 0.875);
    CHECK(four(4) == 0.0);
    CHECK(nn::top_k(p, 5)(4) == 0.125);
    CHECK_THROWS_WITH(nn::top_k(p, 0), Catch::Contains("k = 0"));
    CHECK_THROWS_AS(nn::top_k(p, 6), std::invalid_argument);
    const Vec q = {0.125, 0.5, 0.25, 0.125};
    // 0.5 reaches 0.5 alone; 0.75 needs two words, 0.76 three (0.5 + 0.25 = 0.75 falls short)
    CHECK(same_bits(Mat(xt::reshape_view(nn::top_p(q, 0.5), {1, 4})), Mat{{0.0, 1.0, 0.0, 0.0}}));
    const Vec nucleus = nn::top_p(q, 0.75);
    CHECK(nucleus(1) == 0.5 / 0.75);
    CHECK(nucleus(0) == 0.0);
    const Vec three = nn::top_p(q, 0.76);
    CHECK(three(0) == 0.125 / 0.875);
    CHECK(three(3) == 0.0);
    CHECK(nn::top_p(q, 1.0)(3) == 0.125);
    CHECK_THROWS_WITH(nn::top_p(q, 0.0), Catch::Contains("(0, 1]"));
    CHECK_THROWS_AS(nn::top_p(q, 1.5), std::invalid_argument);
}

TEST_CASE("sampled: the inverse of the cumulative distribution, never a word of probability 0; frequencies from a seed",
          "[decoding]") {
    const Vec p = {0.25, 0.0, 0.75};
    CHECK(nn::sampled(p, 0.0) == 0);
    CHECK(nn::sampled(p, 0.2499) == 0);
    CHECK(nn::sampled(p, 0.25) == 2);
    CHECK(nn::sampled(p, 0.9999) == 2);
    CHECK(nn::sampled(Vec{0.5, 0.5, 0.0}, std::nextafter(1.0, 0.0)) == 1);
    CHECK_THROWS_AS(nn::sampled(p, 1.0), std::invalid_argument);
    CHECK_THROWS_AS(nn::sampled(p, -0.1), std::invalid_argument);
    // 20000 draws: each share within 5 standard deviations (at most 0.018) of its probability
    Rng rng(34);
    const Vec r = {0.2, 0.3, 0.5};
    std::vector<double> count(3, 0.0);
    for (int n = 0; n < 20000; ++n) count[nn::sampled(r, rng.uniform())] += 1.0;
    for (std::size_t j = 0; j < 3; ++j) CHECK(std::abs(count[j] / 20000.0 - r(j)) < 0.018);
}

}  // namespace test_decoding
