// The online softmax and tiled attention (lesson 10's maths): the one-pass softmax against the
// two-pass nn::softmax and a long double computation on the rows where mistakes show (logits that
// overflow an unshifted exp, a maximum that arrives last, one entry, ties, -inf everywhere, +inf,
// NaN); tiled attention against nn::scaled_dot_product_attention for block sizes that do and do
// not divide T, with and without the causal flag, and the number of exponentials it evaluates.
// T = tokens, d_k = query/key width, d_v = value width, B_r x B_c = one tile.
#include "core/rng.hpp"
#include "nn/backward.hpp"
#include "nn/fast_attention.hpp"
#include "nn/kernels.hpp"
#include "nn/online_softmax.hpp"
#include "nn/reductions.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"
#include "nn/tiled_attention.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

namespace test_online_softmax {

using namespace attn;

namespace {

const double inf = std::numeric_limits<double>::infinity();

// Weights lie in [0, 1] and a row here has at most 16 entries: the one-pass and two-pass forms
// round a few times each, ~1e-16 apiece; a missing rescale or a lost term is off by far more.
constexpr double softmax_tolerance = 1e-15;
// Attention outputs are O(1) sums of up to 40 products, added in another order than nn's. The fast
// path's outputs (sums of up to 300 weighted values of size ~3, its scores sums of up to 130
// products of size ~4) are off by a few ulp of those sums in each step: at most 2e-14 on the cases
// below (and at T = 1024), with or without fused multiply-add (FMA rounds once per product where the
// portable code rounds twice, and its exp is within 2 ulp), so 1e-12 leaves a margin of 50; a missed
// rescale, a lost tile or a wrong key is off by 1e-3 or more.
constexpr double attention_tolerance = 1e-12;

// softmax from its definition in long double (finite and -inf entries, at least one finite)
std::vector<double> long_double_softmax(const std::vector<double>& x) {
    long double m = -inf, sum = 0.0L;
    for (double v : x) m = std::max(m, static_cast<long double>(v));
    for (double v : x) sum += std::exp(static_cast<long double>(v) - m);
    std::vector<double> out;
    for (double v : x) out.push_back(static_cast<double>(std::exp(static_cast<long double>(v) - m) / sum));
    return out;
}

Vec vec_of(const std::vector<double>& x) {
    Vec v = xt::empty<double>({x.size()});
    for (std::size_t j = 0; j < x.size(); ++j) v(j) = x[j];
    return v;
}

// The fast path's variants: each kernel copy this processor runs, with portable and with native
// arithmetic (the fused copies where it has FMA; in the baseline copy native is the portable code).
// `run(arithmetic)` runs under every one of them, with INFO naming it; the copy in use is restored.
template <class Run>
void for_each_fast_variant(Run run) {
    const nn::KernelPath in_use = nn::kernel_path();
    for (const nn::KernelPath path : nn::kernel_paths_supported()) {
        nn::use_kernel_path(path);
        for (const nn::Arithmetic arithmetic : {nn::Arithmetic::portable, nn::Arithmetic::native}) {
            const bool fused = arithmetic == nn::Arithmetic::native && nn::native_is_fused();
            INFO("the " << nn::kernel_path_name(path) << " copy, "
                        << (arithmetic == nn::Arithmetic::portable ? "portable" : fused ? "native (FMA)"
                                                                                         : "native (no FMA)"));
            run(arithmetic);
        }
    }
    nn::use_kernel_path(in_use);
}

Mat causal_plain(const Mat& Q, const Mat& K, const Mat& V, bool causal, nn::AttentionResult& plain) {
    plain = causal ? nn::scaled_dot_product_attention(Q, K, V, nn::causal_mask(Q.shape(0)))
                   : nn::scaled_dot_product_attention(Q, K, V);
    return plain.output;
}

}  // namespace

TEST_CASE("the online softmax equals the two-pass softmax on the rows where mistakes show", "[online_softmax]") {
    const std::vector<std::vector<double>> rows = {
        {1.0, 2.0, 3.0},
        {1000.0, -1000.0, 999.0},           // exp(1000) overflows unshifted
        {-700.0, 700.0, 0.0, 710.0},        // and exp(710) too
        {0.5, 1.0, -2.0, 0.0, 3.0, 9.0},    // the maximum last: without the rescale l is far too large
        {-3.5},                             // T = 1
        {2.0, 2.0, 2.0, 2.0},               // ties
        {-inf, 0.25, -inf, 1.0},            // masked entries
    };
    for (const auto& row : rows) {
        INFO("row of " << row.size() << ", first " << row[0]);
        const Vec x = vec_of(row);
        const Vec online = nn::online_softmax(x);
        CHECK(max_abs_difference(online, nn::softmax(x)) <= softmax_tolerance);
        CHECK(max_abs_difference(online, vec_of(long_double_softmax(row))) <= softmax_tolerance);
        CHECK(std::abs(nn::sum_of(online) - 1.0) <= softmax_tolerance);
    }
    CHECK(nn::online_softmax(Vec{-3.5})(0) == 1.0);
    CHECK(max_abs_difference(nn::online_softmax(Vec{2.0, 2.0, 2.0, 2.0}), Vec{0.25, 0.25, 0.25, 0.25}) == 0.0);
}

TEST_CASE("the online softmax keeps the conventions of nn::softmax at the edges", "[online_softmax]") {
    // every entry -inf: zeros, not 0/0 = NaN
    CHECK(max_abs_difference(nn::online_softmax(Vec{-inf, -inf, -inf}), Vec{0.0, 0.0, 0.0}) == 0.0);
    // +inf entries share the weight, as nn::softmax gives them
    CHECK(max_abs_difference(nn::online_softmax(Vec{inf, 1.0, inf}), nn::softmax(Vec{inf, 1.0, inf})) == 0.0);
    CHECK(max_abs_difference(nn::online_softmax(Vec{inf, 1.0, inf}), Vec{0.5, 0.0, 0.5}) == 0.0);
    // a NaN makes its row NaN, and only its row
    const Mat rows = nn::online_softmax_rows(Mat{{0.0, std::nan(""), 1.0}, {-inf, -inf, -inf}, {1e308, -1e308, 0.0}});
    for (std::size_t j = 0; j < 3; ++j) CHECK(std::isnan(rows(0, j)));
    CHECK(max_abs_difference(nn::row_of(rows, 1), Vec{0.0, 0.0, 0.0}) == 0.0);
    CHECK(max_abs_difference(nn::row_of(rows, 2), Vec{1.0, 0.0, 0.0}) == 0.0);
}

TEST_CASE("online_softmax_rows treats each row on its own", "[online_softmax]") {
    Rng rng(11);
    Mat S = rng.normal_mat(5, 9, 30.0);
    S(2, 8) = 950.0;  // a late, huge maximum in one row
    S(4, 0) = -inf;
    const Mat online = nn::online_softmax_rows(S);
    CHECK(max_abs_difference(online, nn::softmax_rows(S)) <= softmax_tolerance);
    for (std::size_t i = 0; i < S.shape(0); ++i) {
        const Vec row = nn::row_of(S, i);
        CHECK(max_abs_difference(nn::row_of(online, i), nn::online_softmax(row)) == 0.0);
    }
}

TEST_CASE("the running normaliser: m_j is the prefix maximum and l_n the shifted sum", "[online_softmax]") {
    const std::vector<double> row = {0.5, 1.0, -2.0, 0.0, 3.0, 9.0, -700.0};
    const Mat steps = nn::online_normalizer_steps(vec_of(row));
    REQUIRE(steps.shape(0) == row.size());
    double prefix_max = -inf;
    for (std::size_t j = 0; j < row.size(); ++j) {
        prefix_max = std::max(prefix_max, row[j]);
        CHECK(steps(j, 0) == prefix_max);  // a maximum is never rounded
        long double sum = 0.0L;
        for (std::size_t k = 0; k <= j; ++k) sum += std::exp(static_cast<long double>(row[k]) - prefix_max);
        CHECK(std::abs(steps(j, 1) - static_cast<double>(sum)) <= 1e-15 * static_cast<double>(sum));
    }
    // a row that begins with -inf: l stays 0 (no NaN) until the first finite entry
    const Mat masked = nn::online_normalizer_steps(Vec{-inf, -inf, 2.0});
    CHECK(masked(1, 0) == -inf);
    CHECK(masked(1, 1) == 0.0);
    CHECK(masked(2, 0) == 2.0);
    CHECK(masked(2, 1) == 1.0);
}

TEST_CASE("tiled attention equals the plain form for every block size, causal or not", "[online_softmax]") {
    const std::vector<std::pair<std::size_t, std::size_t>> blocks = {{1, 1}, {2, 3}, {4, 4}, {3, 7}, {16, 5}, {64, 64}};
    for (const std::size_t T : {std::size_t{1}, std::size_t{7}, std::size_t{10}, std::size_t{16}, std::size_t{33}}) {
        Rng rng(100 + T);
        const Mat Q = rng.normal_mat(T, 5), K = rng.normal_mat(T, 5), V = rng.normal_mat(T, 3);
        for (const bool causal : {false, true}) {
            nn::AttentionResult plain;
            const Mat expected = causal_plain(Q, K, V, causal, plain);
            for (const auto& [Br, Bc] : blocks) {
                INFO("T = " << T << ", B_r = " << Br << ", B_c = " << Bc << (causal ? ", causal" : ""));
                const nn::TiledAttention tiled = nn::tiled_attention(Q, K, V, Br, Bc, causal);
                CHECK(max_abs_difference(tiled.output, expected) <= attention_tolerance);
                // one exponential per score that takes part: T^2, or T (T + 1) / 2 under the causal mask
                CHECK(tiled.exponentials == (causal ? T * (T + 1) / 2 : T * T));
                const std::size_t all_tiles = ((T + Br - 1) / Br) * ((T + Bc - 1) / Bc);
                CHECK(tiled.tiles + tiled.tiles_skipped == all_tiles);
                if (!causal) CHECK(tiled.tiles_skipped == 0);
                // m_i is the largest visible score exactly; l_i the sum of the shifted exponentials
                for (std::size_t i = 0; i < T; ++i) {
                    const Vec s = nn::row_of(plain.scores, i);
                    const double m = nn::max_of(s);
                    CHECK(tiled.row_max(i) == m);
                    long double l = 0.0L;
                    for (std::size_t j = 0; j < T; ++j) l += std::exp(static_cast<long double>(s(j)) - m);
                    CHECK(std::abs(tiled.row_sum(i) - static_cast<double>(l)) <= 1e-13);
                }
                // the working memory: O, m and l, and one tile no larger than B_r x B_c
                CHECK(tiled.working_bytes ==
                      static_cast<double>(8 * (T * 3 + 2 * T + std::min(Br, T) * std::min(Bc, T))));
            }
        }
    }
}

TEST_CASE("under the causal flag no key block right of the diagonal is touched", "[online_softmax]") {
    Rng rng(5);
    const std::size_t T = 12;
    const Mat Q = rng.normal_mat(T, 4), K = rng.normal_mat(T, 4), V = rng.normal_mat(T, 2);
    // B_r = B_c = 4: query block b sees key blocks 0 .. b, so 3 + 2 + 1 = 6 tiles of 9 are computed
    const nn::TiledAttention tiled = nn::tiled_attention(Q, K, V, 4, 4, true);
    CHECK(tiled.tiles == 6);
    CHECK(tiled.tiles_skipped == 3);
    // after a key block wholly right of query i: -inf where the block was skipped for i's whole
    // query block, else unchanged (all of i's keys came earlier, so m is already final)
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t b = 0; b < 3; ++b) {
            const std::size_t last_of_query_block = (i / 4) * 4 + 3;
            if (b * 4 > i) CHECK(tiled.max_after_block(i, b) == (b * 4 > last_of_query_block ? -inf : tiled.row_max(i)));
        }
}

TEST_CASE("the accumulator is rescaled exactly when the running max grows", "[online_softmax]") {
    // one query, keys whose scores rise (every key a new maximum) or fall (the first is the maximum)
    const std::size_t T = 6;
    const Mat q = {{1.0}};
    Mat rising = xt::empty<double>({T, std::size_t{1}}), V = xt::empty<double>({T, std::size_t{1}});
    for (std::size_t j = 0; j < T; ++j) rising(j, 0) = 100.0 * static_cast<double>(j), V(j, 0) = static_cast<double>(j);
    const Mat falling = -rising;
    const nn::TiledAttention up = nn::tiled_attention(q, rising, V, 1, 1, false);
    const nn::TiledAttention down = nn::tiled_attention(q, falling, V, 1, 1, false);
    CHECK(up.rescalings == T - 1);
    CHECK(down.rescalings == 0);
    // the last key dominates the rising row, the first the falling one
    CHECK(std::abs(up.output(0, 0) - 5.0) <= 1e-12);
    CHECK(std::abs(down.output(0, 0) - 0.0) <= 1e-12);
    // scores of +-500: an unshifted exp would overflow, the tiled form stays finite and right
    const Mat big_q = {{50.0}};
    CHECK(max_abs_difference(nn::tiled_attention(big_q, rising, V, 2, 4, false).output,
                             nn::scaled_dot_product_attention(big_q, rising, V).output) <= attention_tolerance);
}

TEST_CASE("tiled attention refuses what it cannot compute", "[online_softmax]") {
    const Mat Q = nn::ones(3, 4), K = nn::ones(5, 4), V = nn::ones(5, 2);
    CHECK_THROWS_AS(nn::tiled_attention(Q, K, V, 0, 2, false), std::invalid_argument);
    CHECK_THROWS_AS(nn::tiled_attention(Q, K, V, 2, 0, false), std::invalid_argument);
    CHECK_THROWS_AS(nn::tiled_attention(Q, K, V, 2, 2, true), std::invalid_argument);  // 3 queries, 5 keys
    CHECK_THROWS_AS(nn::tiled_attention(Q, nn::ones(5, 3), V, 2, 2, false), ShapeError);
    CHECK_THROWS_AS(nn::tiled_attention(Q, K, nn::ones(4, 2), 2, 2, false), ShapeError);
    // T_q != T_k without the causal flag is fine
    CHECK(nn::tiled_attention(Q, K, V, 2, 2, false).output.shape(0) == 3);
}

TEST_CASE("the output-only fast attention equals the plain form across its blocks, causal or not",
          "[online_softmax]") {
    // its blocks are 64 queries x 256 keys: T = 300 crosses both, T = 1 and 70 only some; its
    // products go by tiles of 4 rows x 8 columns (d_v = 5 is one short panel, 13 a full one and a
    // short one) and blocks of 128 products (d_k = 130)
    const std::vector<std::pair<std::size_t, std::size_t>> widths = {{6, 5}, {9, 13}, {130, 16}};
    for (const std::size_t T : {std::size_t{1}, std::size_t{70}, std::size_t{300}})
        for (const auto& width : widths) {
            // named copies, not a structured binding: C++17 lets no lambda capture one (Clang refuses)
            const std::size_t d_k = width.first, d_v = width.second;
            Rng rng(200 + T + d_k);
            const Mat Q = rng.normal_mat(T, d_k, 2.0), K = rng.normal_mat(T, d_k, 2.0), V = rng.normal_mat(T, d_v);
            for (const bool causal : {false, true}) {
                INFO("T = " << T << ", d_k = " << d_k << ", d_v = " << d_v << (causal ? ", causal" : ""));
                nn::AttentionResult plain;
                const Mat expected = causal_plain(Q, K, V, causal, plain);
                for_each_fast_variant([&](nn::Arithmetic arithmetic) {
                    const Mat fast = nn::fast_attention(Q, K, V, causal, arithmetic);
                    REQUIRE(fast.shape(0) == T);
                    REQUIRE(fast.shape(1) == d_v);
                    CHECK(max_abs_difference(fast, expected) <= attention_tolerance);
                });
            }
        }
    // under the causal mask the first query sees only the first key: its output is that key's value
    // (weight exp(0) / exp(0) = 1 exactly, also by the fused exp)
    {
        Rng rng(5);
        const Mat Q = rng.normal_mat(100, 4, 3.0), K = rng.normal_mat(100, 4, 3.0), V = rng.normal_mat(100, 3);
        for_each_fast_variant([&](nn::Arithmetic arithmetic) {
            const Mat fast = nn::fast_attention(Q, K, V, true, arithmetic);
            for (std::size_t v = 0; v < 3; ++v) CHECK(fast(0, v) == V(0, v));
        });
    }
    // fewer queries than keys, without the flag; and the refusals
    Rng rng(3);
    const Mat Q = rng.normal_mat(5, 4), K = rng.normal_mat(400, 4), V = rng.normal_mat(400, 2);
    for_each_fast_variant([&](nn::Arithmetic arithmetic) {
        CHECK(max_abs_difference(nn::fast_attention(Q, K, V, false, arithmetic),
                                 nn::scaled_dot_product_attention(Q, K, V).output) <= attention_tolerance);
        CHECK_THROWS_AS(nn::fast_attention(Q, K, V, true, arithmetic), std::invalid_argument);
        CHECK_THROWS_AS(nn::fast_attention(Q, nn::ones(400, 3), V, false, arithmetic), ShapeError);
    });
}

TEST_CASE("the native online softmax row keeps the portable row's semantics, within a few ulp", "[online_softmax]") {
    // rows where mistakes show, fed in two tiles so that the running maximum and sum carry over
    const std::vector<std::vector<double>> rows = {
        {1.0, 2.0, 3.0, -1.0, 0.5, 7.0, 2.0, 2.5, 1.0, -4.0, 3.0},  // 11 entries: 8 lanes and a rest
        {1000.0, -1000.0, 999.0, 998.5, -3.0, 1000.0, 0.0, 1.0, 2.0},  // exp(1000) overflows unshifted
        {-740.0, -745.5, -700.0, -0.5},  // exponentials that underflow to subnormals and 0 in the first tile
        {-inf, -inf, -inf, 2.0, -inf},   // masked entries: weight 0
        {0.5, std::nan(""), 1.0, 2.0},   // NaN: the row's result is NaN
    };
    for_each_fast_variant([&](nn::Arithmetic arithmetic) {
        for (const auto& row : rows) {
            INFO("row of " << row.size() << " entries starting " << row.front());
            const std::size_t first = row.size() / 2;
            double m = -inf, l = 0.0, m_ref = -inf, l_ref = 0.0;
            std::vector<double> s = row, ref = row;
            // the portable baseline (the code every lesson's numbers go through) as the reference
            const nn::KernelPath in_use = nn::kernel_path();
            nn::use_kernel_path(nn::KernelPath::baseline);
            const double f1_ref = nn::online_softmax_row(ref.data(), first, m_ref, l_ref);
            const double f2_ref = nn::online_softmax_row(ref.data() + first, row.size() - first, m_ref, l_ref);
            nn::use_kernel_path(in_use);
            const double f1 = nn::online_softmax_row(s.data(), first, m, l, arithmetic);
            const double f2 = nn::online_softmax_row(s.data() + first, row.size() - first, m, l, arithmetic);
            if (std::any_of(row.begin(), row.end(), [](double x) { return std::isnan(x); })) {
                // the NaN is in the first tile: its factor says so, and the running sum stays NaN
                CHECK(std::isnan(f1_ref));
                CHECK(std::isnan(f1));
                CHECK(std::isnan(l));
                continue;
            }
            CHECK(m == m_ref);  // the maximum is exact in any order
            // factors, sums and exponentials within about 4 ulp of the portable ones (relative 1e-15;
            // exp(-739.5), a subnormal, is rounded once to a multiple of the smallest subnormal)
            const auto close = [](double x, double ref_x) {
                return std::abs(x - ref_x) <= 1e-15 * std::abs(ref_x) + 2 * std::numeric_limits<double>::denorm_min();
            };
            CHECK(close(f1, f1_ref));
            CHECK(close(f2, f2_ref));
            CHECK(close(l, l_ref));
            for (std::size_t j = 0; j < row.size(); ++j) {
                INFO("entry " << j);
                CHECK(close(s[j], ref[j]));
                if (row[j] == -inf) CHECK(s[j] == 0.0);
            }
        }
    });
}

TEST_CASE("the fused exp of the native online softmax is within 1 ulp of exp from -746 to 0", "[online_softmax]") {
    // Rows of 11 entries, all <= 0, against a running maximum of 0: the row's maximum stays 0, so each
    // entry becomes exp(entry) itself (8 through the vector loop, 3 through the rest). Points: one at
    // a random place in each of 2^19 equal intervals of [-746, 0], and 2^19 in [-2, 0], where most of
    // a softmax's exponentials fall. The distance in ulp is the difference of the bit patterns (both
    // results are >= 0; subnormals count as ulp too). The Taylor polynomial of degree 12 that the fused
    // exp had before its minimax one of degree 11 was 2 ulp off at x = -1.035456116501049.
    Rng rng(43);
    const std::size_t n = std::size_t{1} << 19;
    std::vector<double> x;
    for (std::size_t i = 0; i < n; ++i)
        x.push_back(-746.0 + 746.0 * (static_cast<double>(i) + rng.uniform()) / static_cast<double>(n));
    for (std::size_t i = 0; i < n; ++i) x.push_back(rng.uniform(-2.0, 0.0));
    x.push_back(-1.035456116501049);
    for (const double edge : {0.0, -746.0, -745.2, -708.4, -1e-300}) x.push_back(edge);
    while (x.size() % 11 != 0) x.push_back(-0.5);
    std::size_t runs = 0;
    const nn::KernelPath in_use = nn::kernel_path();
    for (const nn::KernelPath path : nn::kernel_paths_supported()) {
        nn::use_kernel_path(path);
        if (!nn::native_is_fused()) continue;
        ++runs;
        INFO("the " << nn::kernel_path_name(path) << " copy");
        std::vector<double> e = x;
        for (std::size_t i = 0; i < e.size(); i += 11) {
            double m = 0.0, l = 0.0;
            CHECK(nn::online_softmax_row(e.data() + i, 11, m, l, nn::Arithmetic::native) == 1.0);
        }
        const test::UlpDistance worst = test::farthest_from_exp(x, e);
        INFO("largest difference " << worst.ulps << " ulp, at x = " << worst.at);
        CHECK(worst.ulps <= 1);
        // exp(0) = 1 exactly (a row's maximum weighs 1), and exp(-746) underflows to 0
        CHECK(e[2 * n + 1] == 1.0);
        CHECK(e[2 * n + 2] == 0.0);
    }
    nn::use_kernel_path(in_use);
    WARN("fused copies checked here: " << runs);
}

TEST_CASE("the fast multi-head attention equals nn::multi_head_attention's output, causal or not",
          "[online_softmax]") {
    // T = 70 queries: one full block of 64 and a short one; d_model = 24 in 3 heads of 8
    const std::size_t T = 70, d_model = 24, heads = 3;
    Rng rng(31);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d_model));
    const Mat X = rng.normal_mat(T, d_model, 1.5);
    nn::MultiHeadParams p;
    p.W_Q = rng.normal_mat(d_model, d_model, scale);
    p.W_K = rng.normal_mat(d_model, d_model, scale);
    p.W_V = rng.normal_mat(d_model, d_model, scale);
    p.W_O = rng.normal_mat(d_model, d_model, scale);
    const Mat mask = nn::causal_mask(T);
    for (const bool causal : {false, true}) {
        INFO((causal ? "causal" : "no mask"));
        const nn::MultiHeadResult plain =
            nn::multi_head_attention(X, X, p, heads, causal ? &mask : nullptr, nn::HeadWeights::drop);
        for_each_fast_variant([&](nn::Arithmetic arithmetic) {
            CHECK(max_abs_difference(nn::fast_multi_head_attention(X, X, p, heads, causal, arithmetic), plain.output) <=
                  attention_tolerance);
        });
    }
    // keys and values from another sequence of another length, without the flag
    const Mat X_kv = rng.normal_mat(300, d_model);
    const Mat expected = nn::multi_head_attention(X, X_kv, p, heads, nullptr, nn::HeadWeights::drop).output;
    for_each_fast_variant([&](nn::Arithmetic arithmetic) {
        CHECK(max_abs_difference(nn::fast_multi_head_attention(X, X_kv, p, heads, false, arithmetic), expected) <=
              attention_tolerance);
        CHECK_THROWS_AS(nn::fast_multi_head_attention(X, X_kv, p, heads, true, arithmetic), std::invalid_argument);
        // 5 does not divide 24
        CHECK_THROWS_AS(nn::fast_multi_head_attention(X, X, p, 5, false, arithmetic), ShapeError);
        CHECK_THROWS_AS(nn::fast_multi_head_attention(X, rng.normal_mat(T, 12), p, heads, false, arithmetic),
                        ShapeError);
    });
}

namespace {

// Lesson 8's dense gradients of softmax(Q K^T / sqrt(d_k) (+ causal mask)) V for dL/dO = dO.
nn::AttentionGrads dense_grads(const Mat& Q, const Mat& K, const Mat& V, const Mat& dO, bool causal) {
    nn::AttentionResult plain;
    causal_plain(Q, K, V, causal, plain);
    return nn::scaled_dot_product_attention_backward(Q, K, V, plain, dO);
}

// The largest |a - b| of dQ, dK and dV, over the largest |b|.
template <class Grads>
double relative_gradient_error(const Grads& a, const nn::AttentionGrads& b) {
    const double scale = std::max({nn::max_abs_of(b.dQ), nn::max_abs_of(b.dK), nn::max_abs_of(b.dV), 1e-300});
    return std::max({max_abs_difference(a.dQ, b.dQ), max_abs_difference(a.dK, b.dK), max_abs_difference(a.dV, b.dV)}) /
           scale;
}

}  // namespace

TEST_CASE("the tiled backward equals lesson 8's dense gradients for every tile shape, causal or not",
          "[online_softmax]") {
    // d_v != d_k, so that a 1/sqrt(d_v) shows; tile shapes that divide T and that do not, and larger than T
    const std::vector<std::pair<std::size_t, std::size_t>> shapes = {{1, 1}, {3, 5}, {4, 4}, {23, 23}, {30, 2}};
    for (const std::size_t T : {std::size_t{1}, std::size_t{8}, std::size_t{23}})
        for (const bool causal : {false, true}) {
            Rng rng(40 + T);
            const Mat Q = rng.normal_mat(T, 4, 2.0), K = rng.normal_mat(T, 4, 2.0), V = rng.normal_mat(T, 3);
            const Mat dO = rng.normal_mat(T, 3);
            const nn::AttentionGrads dense = dense_grads(Q, K, V, dO, causal);
            for (const auto& [r, c] : shapes) {
                INFO("T = " << T << ", tiles " << r << " x " << c << (causal ? ", causal" : ""));
                const nn::TiledAttention forward = nn::tiled_attention(Q, K, V, r, c, causal);
                const Vec L = nn::row_log_sum_exp(forward.row_max, forward.row_sum);
                const nn::TiledAttentionGrads g =
                    nn::tiled_attention_backward(Q, K, V, forward.output, L, dO, r, c, causal);
                CHECK(max_abs_difference(g.dQ, dense.dQ) <= attention_tolerance);
                CHECK(max_abs_difference(g.dK, dense.dK) <= attention_tolerance);
                CHECK(max_abs_difference(g.dV, dense.dV) <= attention_tolerance);
                CHECK(g.tiles + g.tiles_skipped == ((T + r - 1) / r) * ((T + c - 1) / c));
                CHECK(g.tiles_skipped == forward.tiles_skipped);
            }
        }
}

TEST_CASE("one backward tile adds its share and nothing outside it", "[online_softmax]") {
    Rng rng(9);
    const Mat Q = rng.normal_mat(6, 3), K = rng.normal_mat(6, 3), V = rng.normal_mat(6, 2), dO = rng.normal_mat(6, 2);
    const nn::TiledAttention forward = nn::tiled_attention(Q, K, V, 6, 6, true);
    const Vec L = nn::row_log_sum_exp(forward.row_max, forward.row_sum), D = nn::output_gradient_dots(dO, forward.output);
    // the tiles of a 2 x 3 cut, in any order, add up to the whole
    Mat dQ = nn::ones(6, 3), dK = nn::ones(6, 3), dV = nn::ones(6, 2);
    for (const std::size_t i0 : {4, 0, 2})
        for (const std::size_t j0 : {3, 0})
            nn::flash_backward_tile(Q, K, V, dO, L, D, nn::TileSpan{i0, 2, j0, 3}, true, dQ, dK, dV);
    const nn::AttentionGrads dense = dense_grads(Q, K, V, dO, true);
    CHECK(max_abs_difference(Mat(dQ - 1.0), dense.dQ) <= attention_tolerance);
    CHECK(max_abs_difference(Mat(dK - 1.0), dense.dK) <= attention_tolerance);
    CHECK(max_abs_difference(Mat(dV - 1.0), dense.dV) <= attention_tolerance);
    // a tile wholly above the diagonal adds nothing at all
    const Mat before = dQ;
    nn::flash_backward_tile(Q, K, V, dO, L, D, nn::TileSpan{0, 2, 3, 3}, true, dQ, dK, dV);
    CHECK(max_abs_difference(dQ, before) == 0.0);
    // refusals: a tile past the matrices, gradients of the wrong shape
    CHECK_THROWS_AS(nn::flash_backward_tile(Q, K, V, dO, L, D, nn::TileSpan{5, 2, 0, 3}, false, dQ, dK, dV),
                    std::invalid_argument);
    Mat wrong = nn::zeros(6, 2);
    CHECK_THROWS_AS(nn::flash_backward_tile(Q, K, V, dO, L, D, nn::TileSpan{0, 2, 0, 3}, false, wrong, dK, dV),
                    ShapeError);
    CHECK_THROWS_AS(nn::tiled_attention_backward(Q, K, V, forward.output, Vec{1.0}, dO, 2, 2, false), ShapeError);
    CHECK_THROWS_AS(nn::tiled_attention_backward(Q, K, V, forward.output, L, dO, 0, 2, false), std::invalid_argument);
}

TEST_CASE("the fast backward equals the dense gradients within 1e-12, across its blocks, causal or not",
          "[online_softmax]") {
    // tiles of 64 queries x 128 keys, the key blocks dealt to two groups (even and odd): T = 1 is one
    // tile, T = 70 crosses a query block's edge, T = 300 five of them and two key blocks' (group 0 gets
    // two blocks, group 1 one); d_v = 5 is a short panel, 13 a full and a short one, d_k = 130 long products
    const std::vector<std::pair<std::size_t, std::size_t>> widths = {{6, 5}, {9, 13}, {130, 16}};
    for (const std::size_t T : {std::size_t{1}, std::size_t{70}, std::size_t{300}})
        for (const auto& width : widths) {
            const std::size_t d_k = width.first, d_v = width.second;
            Rng rng(500 + T + d_k);
            const Mat Q = rng.normal_mat(T, d_k, 2.0), K = rng.normal_mat(T, d_k, 2.0), V = rng.normal_mat(T, d_v);
            const Mat dO = rng.normal_mat(T, d_v);
            for (const bool causal : {false, true}) {
                INFO("T = " << T << ", d_k = " << d_k << ", d_v = " << d_v << (causal ? ", causal" : ""));
                const nn::AttentionGrads dense = dense_grads(Q, K, V, dO, causal);
                for_each_fast_variant([&](nn::Arithmetic arithmetic) {
                    const nn::FastAttentionForward f = nn::fast_attention_forward(Q, K, V, causal, arithmetic);
                    CHECK(max_abs_difference(f.output, nn::fast_attention(Q, K, V, causal, arithmetic)) == 0.0);
                    const nn::TiledAttention tiled = nn::tiled_attention(Q, K, V, 7, 9, causal);
                    CHECK(max_abs_difference(f.L, nn::row_log_sum_exp(tiled.row_max, tiled.row_sum)) <=
                          attention_tolerance);
                    const nn::FastAttentionGrads g =
                        nn::fast_attention_backward(Q, K, V, f.output, f.L, dO, causal, arithmetic);
                    CHECK(relative_gradient_error(g, dense) <= attention_tolerance);
                });
            }
        }
    // fewer queries than keys, without the flag; and the refusals
    Rng rng(4);
    const Mat Q = rng.normal_mat(5, 4), K = rng.normal_mat(150, 4), V = rng.normal_mat(150, 2), dO = rng.normal_mat(5, 2);
    const nn::FastAttentionForward f = nn::fast_attention_forward(Q, K, V, false, nn::Arithmetic::native);
    CHECK(relative_gradient_error(nn::fast_attention_backward(Q, K, V, f.output, f.L, dO, false, nn::Arithmetic::native),
                                  dense_grads(Q, K, V, dO, false)) <= attention_tolerance);
    CHECK_THROWS_AS(nn::fast_attention_backward(Q, K, V, f.output, f.L, dO, true, nn::Arithmetic::native),
                    std::invalid_argument);
    CHECK_THROWS_AS(nn::fast_attention_backward(Q, K, V, f.output, Vec{0.0}, dO, false, nn::Arithmetic::native),
                    ShapeError);
}

}  // namespace test_online_softmax
