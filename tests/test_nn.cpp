// The ops in src/nn against independent computations written out with plain loops.
#include "core/rng.hpp"
#include "nn/linalg.hpp"
#include "nn/rnn.hpp"
#include "nn/softmax.hpp"

#include <catch2/catch.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <cmath>
#include <limits>

using namespace attn;
using Catch::Matchers::WithinAbs;

namespace {

// exp(x) / sum exp(x) without the max shift: fine for the moderate logits used here.
Mat naive_softmax(const Mat& m) {
    Mat out = m;
    for (std::size_t i = 0; i < m.shape(0); ++i) {
        double total = 0;
        for (std::size_t j = 0; j < m.shape(1); ++j) total += std::exp(m(i, j));
        for (std::size_t j = 0; j < m.shape(1); ++j) out(i, j) = std::exp(m(i, j)) / total;
    }
    return out;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// One GRU step, one feature at a time, straight from Cho et al. 2014, eqs. 5-8.
Vec loop_gru_step(const nn::GruParams& p, const Vec& x, const Vec& h) {
    const std::size_t d = h.size();
    Vec z = xt::zeros<double>({d}), r = z, out = z;
    for (std::size_t i = 0; i < d; ++i) {
        double az = p.b_z(i), ar = p.b_r(i);
        for (std::size_t j = 0; j < x.size(); ++j) az += p.W_z(i, j) * x(j), ar += p.W_r(i, j) * x(j);
        for (std::size_t j = 0; j < d; ++j) az += p.U_z(i, j) * h(j), ar += p.U_r(i, j) * h(j);
        z(i) = sigmoid(az);
        r(i) = sigmoid(ar);
    }
    for (std::size_t i = 0; i < d; ++i) {
        double a = p.b_h(i);
        for (std::size_t j = 0; j < x.size(); ++j) a += p.W_h(i, j) * x(j);
        for (std::size_t j = 0; j < d; ++j) a += p.U_h(i, j) * r(j) * h(j);
        out(i) = z(i) * h(i) + (1 - z(i)) * std::tanh(a);
    }
    return out;
}

nn::GruParams random_gru(Rng& rng, std::size_t d_in, std::size_t d) {
    return {rng.normal_mat(d, d_in), rng.normal_mat(d, d), rng.normal_vec(d), rng.normal_mat(d, d_in),
            rng.normal_mat(d, d),    rng.normal_vec(d),    rng.normal_mat(d, d_in), rng.normal_mat(d, d),
            rng.normal_vec(d)};
}

}  // namespace

TEST_CASE("softmax rows match exp / sum exp and sum to 1", "[nn][softmax]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    const auto rows = GENERATE(std::size_t{1}, std::size_t{3});
    const auto cols = GENERATE(std::size_t{1}, std::size_t{5});
    Rng rng(seed);
    const Mat logits = rng.normal_mat(rows, cols, 3.0);
    const Mat alpha = nn::softmax_rows(logits);
    CHECK(max_abs_difference(alpha, naive_softmax(logits)) < 1e-15);
    for (std::size_t i = 0; i < rows; ++i) {
        double total = 0;
        for (std::size_t j = 0; j < cols; ++j) total += alpha(i, j);
        CHECK_THAT(total, WithinAbs(1.0, 1e-15));
    }
}

TEST_CASE("softmax survives huge logits, masks and fully masked rows", "[nn][softmax]") {
    const double inf = std::numeric_limits<double>::infinity();
    SECTION("huge logits do not overflow") {
        const Vec a = nn::softmax(Vec{1000.0, 1000.0, -1000.0});
        CHECK_THAT(a(0), WithinAbs(0.5, 1e-15));
        CHECK(a(2) == 0.0);
    }
    SECTION("-inf gets weight exactly 0") {
        const Vec a = nn::softmax(Vec{0.0, -inf, 0.0});
        CHECK(a(1) == 0.0);
        CHECK_THAT(a(0), WithinAbs(0.5, 1e-15));
    }
    SECTION("a fully masked row gives zeros, not NaN") {
        const Vec a = nn::softmax(Vec{-inf, -inf});
        CHECK(a(0) == 0.0);
        CHECK(a(1) == 0.0);
    }
    SECTION("+inf entries share the weight") {
        const Vec a = nn::softmax(Vec{inf, 0.0, inf});
        CHECK(a(0) == 0.5);
        CHECK(a(1) == 0.0);
        CHECK(a(2) == 0.5);
    }
    SECTION("NaN is not hidden") {
        const Vec a = nn::softmax(Vec{0.0, std::nan("")});
        CHECK(std::isnan(a(0)));
    }
}

TEST_CASE("gru_step equals the loop form of Cho et al.'s equations", "[nn][gru]") {
    const auto seed = GENERATE(1u, 5u, 9u);
    const auto d_in = GENERATE(std::size_t{1}, std::size_t{4});
    const auto d = GENERATE(std::size_t{1}, std::size_t{3});
    Rng rng(seed);
    const auto p = random_gru(rng, d_in, d);
    const Vec x = rng.normal_vec(d_in), h = rng.normal_vec(d);
    CHECK(max_abs_difference(nn::gru_step(p, x, h).state, loop_gru_step(p, x, h)) < 1e-14);
}

TEST_CASE("gru_forward chains the steps and checks shapes by name", "[nn][gru]") {
    Rng rng(4);
    const auto p = random_gru(rng, 2, 3);
    const Mat X = rng.normal_mat(5, 2);
    const nn::GruRun run = nn::gru_forward(p, X, xt::zeros<double>({3}));
    Vec h = xt::zeros<double>({3});
    for (std::size_t t = 0; t < 5; ++t) {
        h = loop_gru_step(p, xt::row(X, static_cast<std::ptrdiff_t>(t)), h);
        CHECK(max_abs_difference(Vec(xt::row(run.states, static_cast<std::ptrdiff_t>(t))), h) < 1e-14);
    }
    CHECK_THROWS_WITH(nn::gru_forward(p, rng.normal_mat(5, 3), xt::zeros<double>({3})),
                      Catch::Contains("GRU inputs X: expected shape [5, 2], got [5, 3]"));
}

TEST_CASE("matmul equals the triple loop and names a shape mismatch", "[nn][linalg]") {
    Rng rng(8);
    const Mat A = rng.normal_mat(3, 4), B = rng.normal_mat(4, 2);
    Mat expected = xt::zeros<double>({3, 2});
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < 2; ++j)
            for (std::size_t k = 0; k < 4; ++k) expected(i, j) += A(i, k) * B(k, j);
    CHECK(max_abs_difference(nn::matmul(A, B, "A B"), expected) < 1e-14);
    CHECK_THROWS_WITH(nn::matmul(A, A, "A A"), Catch::Contains("A A: cannot multiply [3, 4] by [3, 4]"));
    // an empty inner dimension is a sum of nothing: zeros, not garbage from BLAS
    const Mat empty_inner = nn::matmul(xt::zeros<double>({2, 0}), xt::zeros<double>({0, 3}), "0-wide");
    CHECK(empty_inner.shape(0) == 2);
    CHECK(empty_inner.shape(1) == 3);
    CHECK(xt::amax(xt::abs(empty_inner))() == 0.0);
    CHECK(nn::matmul(xt::zeros<double>({0, 3}), rng.normal_mat(3, 2), "0 rows").shape(0) == 0);
}

TEST_CASE("linear_map_sending sends every row of A to the same row of B", "[nn][linalg]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    Rng rng(seed);
    const Mat A = rng.normal_mat(3, 5), B = rng.normal_mat(3, 4);  // 3 independent rows in 5 dimensions
    const Mat M = nn::linear_map_sending(A, B);
    REQUIRE(M.shape(0) == 4);
    REQUIRE(M.shape(1) == 5);
    // row r: M a_r = b_r, i.e. A M^T = B
    CHECK(max_abs_difference(nn::matmul(A, nn::transposed(M), "A M^T"), B) < 1e-12);
    CHECK_THROWS_WITH(nn::linear_map_sending(A, rng.normal_mat(2, 4)), Catch::Contains("as many rows"));
}
