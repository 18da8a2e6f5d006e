// The ops in src/nn against independent computations written out with plain loops.
#include "core/rng.hpp"
#include "nn/fast_attention.hpp"
#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/rnn.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"
#include "nn/kernels.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>
#include <xtensor/xadapt.hpp>
#include <xtensor/xmath.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <limits>
#include <utility>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_nn {

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
    Vec z = nn::zeros(d), r = z, out = z;
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

TEST_CASE("exp_span is within 2 ulp of std::exp over the whole range (native: 1 ulp), and exact at the special values",
          "[nn][softmax]") {
    const double inf = std::numeric_limits<double>::infinity();
    // 2^21 points over [-745, 710] (glibc's exp underflows to 0 below about -745.13 and overflows
    // above 709.78), one at a random place in each of 2^21 equal intervals, then 2^20 points in
    // [-1, 1], where softmax's exps mostly fall.
    Rng rng(31);
    std::vector<double> x;
    const std::size_t n = std::size_t{1} << 21;
    const double spacing = 1455.0 / static_cast<double>(n);
    for (std::size_t i = 0; i < n; ++i) x.push_back(-745.0 + spacing * (static_cast<double>(i) + rng.uniform()));
    for (std::size_t i = 0; i < n / 2; ++i) x.push_back(rng.uniform(-1.0, 1.0));
    // boundaries: subnormal results, the last normal result, the largest finite result and beyond
    for (const double b : {-745.2, -745.1332191019412, -745.0, -744.44, -708.3964185322641, -708.39, 0.0, -0.0,
                           1e-300, -1e-300, 4.9e-324, 709.782712893384, 709.7827128933841, 709.79, 1000.0})
        x.push_back(b);
    // portable::exp (measured on x86-64 with glibc 2.36: 1 ulp at most), and with native arithmetic
    // the fused exp on each copy that has it (its minimax polynomial: 1 ulp at most)
    const auto check = [&](nn::Arithmetic arithmetic, std::uint64_t most) {
        std::vector<double> ours(x.size());
        nn::exp_span(x.data(), ours.data(), x.size(), arithmetic);
        const test::UlpDistance worst = test::farthest_from_exp(x, ours);
        INFO("largest difference " << worst.ulps << " ulp, at x = " << worst.at);
        CHECK(worst.ulps <= most);

        const std::vector<double> special = {-inf, inf, std::nan(""), -1e308, 1e308, 0.0};
        std::vector<double> out(special.size());
        nn::exp_span(special.data(), out.data(), special.size(), arithmetic);
        CHECK(out[0] == 0.0);
        CHECK(out[1] == inf);
        CHECK(std::isnan(out[2]));
        CHECK(out[3] == 0.0);
        CHECK(out[4] == inf);
        CHECK(out[5] == 1.0);
        nn::exp_span(special.data() + 1, out.data(), 5, arithmetic);  // a length not a multiple of the vector width
        CHECK(out[0] == inf);
        CHECK(std::isnan(out[1]));
    };
    check(nn::Arithmetic::portable, 2);
    const nn::KernelPath in_use = nn::kernel_path();
    for (const nn::KernelPath path : nn::kernel_paths_supported()) {
        nn::use_kernel_path(path);
        if (!nn::native_is_fused()) continue;
        INFO("native arithmetic, the " << nn::kernel_path_name(path) << " copy");
        check(nn::Arithmetic::native, 1);
    }
    nn::use_kernel_path(in_use);
}

TEST_CASE("softmax_rows of a large matrix, on two threads, equals the softmax of each row alone", "[nn][softmax]") {
    const double inf = std::numeric_limits<double>::infinity();
    // rows x cols above the threaded size (2^15 entries) with rows of odd length (the kernels'
    // tails), then one row and two rows, which cannot be split or split only once
    const auto shape = GENERATE(std::make_pair(std::size_t{300}, std::size_t{257}),
                                std::make_pair(std::size_t{1}, std::size_t{40001}),
                                std::make_pair(std::size_t{2}, std::size_t{20001}));
    const std::size_t rows = shape.first, cols = shape.second;
    INFO(rows << " x " << cols);
    Rng rng(21);
    Mat logits = rng.normal_mat(rows, cols, 3.0);
    if (rows > 3) {
        logits(0, cols / 2) = std::nan("");           // a NaN row
        for (std::size_t j = 0; j < cols; ++j) logits(1, j) = -inf;  // fully masked
        logits(2, 0) = logits(2, cols - 1) = inf;     // two +inf entries share the weight
        for (std::size_t j = 0; j < cols; j += 2) logits(3, j) = -inf;  // masked every other entry
    }
    const Mat alpha = nn::softmax_rows(logits);
    for (std::size_t i = 0; i < rows; ++i) {
        INFO("row " << i);
        const Vec row = nn::row_of(logits, i);
        const Vec alone = nn::softmax(row);  // one thread, one row
        bool identical = true;
        for (std::size_t j = 0; j < cols; ++j)
            identical = identical && (alpha(i, j) == alone(j) || (std::isnan(alpha(i, j)) && std::isnan(alone(j))));
        CHECK(identical);
    }
    const std::size_t first_plain_row = rows > 3 ? 4 : 0;
    for (std::size_t i = first_plain_row; i < rows; ++i) {
        double total = 0;
        for (std::size_t j = 0; j < cols; ++j) total += alpha(i, j);
        CHECK_THAT(total, WithinAbs(1.0, 1e-12));
    }
    const Mat plain = nn::rows_of(logits, first_plain_row, rows);
    CHECK(max_abs_difference(nn::rows_of(alpha, first_plain_row, rows), naive_softmax(plain)) < 1e-12);
    if (rows > 3) {
        for (std::size_t j = 0; j < cols; ++j) {
            CHECK(std::isnan(alpha(0, j)));
            CHECK(alpha(1, j) == 0.0);
            CHECK(alpha(2, j) == (j == 0 || j == cols - 1 ? 0.5 : 0.0));
            if (j % 2 == 0) CHECK(alpha(3, j) == 0.0);
        }
    }
}

TEST_CASE("softmax: a special value in any place of short rows", "[nn][softmax]") {
    const double inf = std::numeric_limits<double>::infinity();
    const auto softmax_of = [](const std::vector<double>& x) {
        const Vec out = nn::softmax(xt::adapt(x, {x.size()}));
        return std::vector<double>(out.begin(), out.end());
    };
    // lengths 1 to 9 cover the four-at-a-time and two-at-a-time loops and every tail
    for (std::size_t n = 1; n <= 9; ++n)
        for (std::size_t at = 0; at < n; ++at) {
            INFO("n " << n << ", special value at " << at);
            Rng rng(n * 10 + at);
            std::vector<double> logits(n);
            for (double& x : logits) x = 2.0 * rng.normal();
            std::vector<double> out = softmax_of(logits);
            const double largest = *std::max_element(logits.begin(), logits.end());
            double total = 0;
            for (double x : logits) total += std::exp(x - largest);
            for (std::size_t j = 0; j < n; ++j)
                CHECK_THAT(out[j], WithinAbs(std::exp(logits[j] - largest) / total, 1e-15));

            std::vector<double> with_nan = logits;
            with_nan[at] = std::nan("");
            out = softmax_of(with_nan);
            for (double a : out) CHECK(std::isnan(a));

            std::vector<double> with_inf = logits;
            with_inf[at] = inf;
            out = softmax_of(with_inf);
            for (std::size_t j = 0; j < n; ++j) CHECK(out[j] == (j == at ? 1.0 : 0.0));

            std::vector<double> masked = logits;
            masked[at] = -inf;
            out = softmax_of(masked);
            CHECK(out[at] == 0.0);
            if (n == 1) CHECK(out[0] == 0.0);  // fully masked
        }
}

TEST_CASE("the masks of the references: S / sqrt(d_k) + M, and -inf wherever M is -inf, even on +inf",
          "[nn][softmax]") {
    const double inf = std::numeric_limits<double>::infinity();
    // masked-softmax: a +inf score under the mask gets weight 0, not NaN; unmasked entries as softmax
    const Mat S = {{1.0, inf, 3.0}, {-2.0, 0.5, inf}}, M = {{0.0, -inf, 0.0}, {-inf, 0.0, -inf}};
    const Mat A = nn::masked_softmax(S, M);
    CHECK(A(0, 1) == 0.0);
    CHECK(A(1, 0) == 0.0);
    CHECK(A(1, 2) == 0.0);
    CHECK(A(1, 1) == 1.0);
    CHECK_THAT(A(0, 0), WithinAbs(1.0 / (1.0 + std::exp(2.0)), 1e-15));
    CHECK_THROWS_AS(nn::masked_softmax(S, Mat{{0.0, 0.0}}), ShapeError);
    // scaled attention: each score the quotient itself, bit for bit, then the mask's rule
    Rng rng(4);
    for (const std::size_t d_k : {std::size_t{6}, std::size_t{64}}) {  // sqrt(6), and 8: a power of two
        const Mat Q = rng.normal_mat(30, d_k), K = rng.normal_mat(13, d_k), V = rng.normal_mat(13, 2);
        const Mat mask = xt::where(rng.normal_mat(30, 13) > 0.5, -inf, 0.0);
        const Mat dot = nn::matmul(Q, nn::transposed(K), "Q K^T");
        const nn::AttentionResult r = nn::scaled_dot_product_attention(Q, K, V, mask);
        bool identical = true;
        for (std::size_t i = 0; i < 30; ++i)
            for (std::size_t j = 0; j < 13; ++j)
                identical = identical && r.scores(i, j) == (mask(i, j) == -inf
                                                                ? -inf
                                                                : dot(i, j) / std::sqrt(static_cast<double>(d_k)) +
                                                                      mask(i, j));
        CHECK(identical);
    }
}

namespace {

// Whether two arrays hold the same bytes (NaN included, which == would call unequal).
bool same_bytes(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// Logits with every kind of entry the kernels treat apart: ordinary ones, large ones whose
// unshifted exp would overflow, -inf (masked) runs at the end and in the middle, subnormals.
std::vector<double> awkward_logits(Rng& rng, std::size_t n) {
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> x(n);
    for (auto& v : x) {
        const double u = rng.uniform();
        v = u < 0.1 ? -inf : u < 0.15 ? rng.normal() * 800.0 : u < 0.17 ? 4.9e-320 : rng.normal() * 4.0;
    }
    for (std::size_t j = n - n / 3; j < n; ++j) x[j] = -inf;  // a causal row's masked tail
    return x;
}

}  // namespace

TEST_CASE("every copy of the kernels (baseline, AVX2, AVX-512) gives the same bytes", "[nn][kernels]") {
    const std::vector<nn::KernelPath> paths = nn::kernel_paths_supported();
    REQUIRE(paths.front() == nn::KernelPath::baseline);
    // the processor's copies must all be tested somewhere: say which ran here
    std::string names;
    for (const nn::KernelPath p : paths) names += std::string(" ") + nn::kernel_path_name(p);
    WARN("kernel copies compared on this processor:" << names);
    if (paths.size() == 1) WARN("only the baseline copy runs here: nothing to compare it with");
    const nn::KernelPath in_use = nn::kernel_path();
    // lengths around every vector width and unrolling (2, 4, 8 doubles; 4 rows at once; blocks of
    // 256 columns), and longer ones
    const std::vector<std::size_t> lengths = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 255, 257, 1000};
    struct Outputs {
        std::vector<std::vector<double>> results;
    };
    const auto run_all = [&](nn::KernelPath path) {
        nn::use_kernel_path(path);
        Rng rng(2024);
        Outputs o;
        for (const std::size_t n : lengths) {
            const std::vector<double> logits = awkward_logits(rng, n);
            std::vector<double> out(n);
            // the softmax of the reference (nn/reference/softmax_row.hpp: its own copies, chosen by
            // the same path), as a vector and as the rows of a matrix
            const Vec p = nn::softmax(xt::adapt(logits, {n}));
            o.results.emplace_back(p.begin(), p.end());
            const Mat rows = nn::softmax_rows(xt::adapt(logits, {std::size_t{1}, n}));
            o.results.emplace_back(rows.begin(), rows.end());
            nn::exp_span(logits.data(), out.data(), n);
            o.results.push_back(out);
            // products: m x k times k x n with m, k and n from the lengths
            // (k past 128 for the longest rows: the product's blocks of k carry their sums over)
            const std::size_t m = lengths[(n * 7) % lengths.size()] % 70 + 1, k = n % 97 + 1 + (n > 128 ? 128 : 0);
            std::vector<double> A(m * k), B(k * n), C(m * n);
            for (auto& v : A) v = rng.normal();
            for (auto& v : B) v = rng.normal();
            nn::matmul_span(A.data(), B.data(), C.data(), m, k, n);
            o.results.push_back(C);
        }
        // the fast attention with portable arithmetic (lesson 7 records how far it is from the plain
        // form): its tiles, online softmax and products, across its blocks of queries and keys, causal
        // or not
        const Mat Q = rng.normal_mat(300, 9, 2.0), K = rng.normal_mat(300, 9, 2.0), V = rng.normal_mat(300, 13);
        for (const bool causal : {false, true}) {
            const Mat O = nn::fast_attention(Q, K, V, causal, nn::Arithmetic::portable);
            o.results.emplace_back(O.begin(), O.end());
        }
        return o;
    };
    const Outputs baseline = run_all(nn::KernelPath::baseline);
    for (const nn::KernelPath path : paths) {
        INFO("the " << nn::kernel_path_name(path) << " copy against the baseline");
        const Outputs other = run_all(path);
        REQUIRE(other.results.size() == baseline.results.size());
        std::size_t differing = 0;
        for (std::size_t i = 0; i < baseline.results.size(); ++i)
            if (!same_bytes(other.results[i], baseline.results[i])) ++differing;
        CHECK(differing == 0);
    }
    nn::use_kernel_path(in_use);
}

TEST_CASE("native arithmetic fuses where the processor has FMA, and its fused copies agree bit for bit",
          "[nn][kernels]") {
    // Arithmetic::native is not the portable bits (nn/kernels.hpp), but a fused multiply-add rounds
    // once, exactly, so the AVX2 and AVX-512 fused copies (the same operations per entry in the same
    // order) must still agree with each other; and the baseline copy never fuses.
    const nn::KernelPath in_use = nn::kernel_path();
    const std::vector<nn::KernelPath> paths = nn::kernel_paths_supported();
    nn::use_kernel_path(nn::KernelPath::baseline);
    CHECK_FALSE(nn::native_is_fused());
    Rng rng(77);
    const Mat Q = rng.normal_mat(300, 9, 2.0), K = rng.normal_mat(300, 9, 2.0), V = rng.normal_mat(300, 13);
    std::vector<std::vector<double>> fused_outputs;
    for (const nn::KernelPath path : paths) {
        nn::use_kernel_path(path);
        if (!nn::native_is_fused()) continue;
        for (const bool causal : {false, true}) {
            const Mat O = nn::fast_attention(Q, K, V, causal, nn::Arithmetic::native);
            fused_outputs.emplace_back(O.begin(), O.end());
        }
    }
    WARN("fused copies run here: " << fused_outputs.size() / 2);
    for (std::size_t i = 2; i < fused_outputs.size(); ++i) CHECK(same_bytes(fused_outputs[i], fused_outputs[i % 2]));
    // where FMA runs, native is not the portable code: at least one output differs in its last bits
    // (were the fused copies never chosen, every output would be the portable one)
    if (!fused_outputs.empty()) {
        nn::use_kernel_path(paths.back());
        const Mat portable = nn::fast_attention(Q, K, V, false, nn::Arithmetic::portable);
        CHECK_FALSE(same_bytes(fused_outputs[0], std::vector<double>(portable.begin(), portable.end())));
    }
    nn::use_kernel_path(in_use);
}

TEST_CASE("use_kernel_path refuses a copy the processor cannot run, and names are stable", "[nn][kernels]") {
    CHECK(std::string(nn::kernel_path_name(nn::KernelPath::baseline)) == "baseline");
    CHECK(std::string(nn::kernel_path_name(nn::KernelPath::avx2)) == "avx2");
    CHECK(std::string(nn::kernel_path_name(nn::KernelPath::avx512)) == "avx512");
    const std::vector<nn::KernelPath> paths = nn::kernel_paths_supported();
    for (const nn::KernelPath p : {nn::KernelPath::avx2, nn::KernelPath::avx512})
        if (std::find(paths.begin(), paths.end(), p) == paths.end())
            CHECK_THROWS_AS(nn::use_kernel_path(p), std::invalid_argument);
    if (!std::getenv("ATTN_KERNELS")) CHECK(nn::kernel_path() == paths.back());  // the widest by default
}

TEST_CASE("elimination_pivots counts the rank, with a tolerance for what is zero", "[nn][linalg]") {
    // rows 1 and 2 span the plane that row 3 (their sum) lies in: rank 2
    const Mat A = {{1.0, 2.0, 3.0}, {0.5, -1.0, 4.0}, {1.5, 1.0, 7.0}};
    CHECK(nn::elimination_pivots(A, 1e-12).size() == 2);
    CHECK(nn::elimination_pivots(nn::zeros(3, 3), 1e-12).size() == 0);
    const Mat I = nn::identity(4);
    CHECK(nn::elimination_pivots(I, 1e-12).size() == 4);
    // partial pivoting: the first pivot is the largest entry of the first column
    CHECK(nn::elimination_pivots(A, 1e-12)(0) == 1.5);
}

TEST_CASE("matmul adds the products in the order of k, as the textbook triple loop does", "[nn][linalg]") {
    // Shapes around the kernel's tiles (2 or 4 rows x 8 columns, the last ones short), its blocks of
    // 128 values of k (a sum carried over in C), fewer than 8 columns (no packing), large enough for
    // two threads, and no k at all.
    const auto shape = GENERATE(std::make_tuple(1, 1, 1), std::make_tuple(3, 5, 2), std::make_tuple(9, 17, 300),
                                std::make_tuple(130, 64, 520), std::make_tuple(5, 0, 4), std::make_tuple(5, 0, 9),
                                std::make_tuple(7, 300, 13), std::make_tuple(66, 257, 70), std::make_tuple(1, 9, 8));
    const auto [m, k, n] = shape;
    const auto um = static_cast<std::size_t>(m), uk = static_cast<std::size_t>(k), un = static_cast<std::size_t>(n);
    Rng rng(3);
    const Mat A = rng.normal_mat(um, uk), B = rng.normal_mat(uk, un);
    Mat loop = nn::zeros(um, un);
    for (std::size_t i = 0; i < um; ++i)
        for (std::size_t j = 0; j < un; ++j) {
            double sum = 0.0;
            for (std::size_t p = 0; p < uk; ++p) sum += A(i, p) * B(p, j);
            loop(i, j) = sum;
        }
    const Mat product = nn::matmul(A, B, "A B");
    INFO(m << " x " << k << " times " << k << " x " << n);
    REQUIRE(product.shape(0) == um);
    REQUIRE(product.shape(1) == un);
    CHECK(std::memcmp(product.data(), loop.data(), product.size() * sizeof(double)) == 0);
}

TEST_CASE("matmul_transposed is matmul by the transpose to the bit, and in either arithmetic", "[nn][linalg]") {
    // the shapes of the test above, as A (m x k) times B^T for B: n x k, and a column block of a wider B
    const auto shape = GENERATE(std::make_tuple(1, 1, 1), std::make_tuple(3, 5, 2), std::make_tuple(9, 17, 300),
                                std::make_tuple(130, 64, 520), std::make_tuple(5, 0, 4), std::make_tuple(5, 0, 9),
                                std::make_tuple(7, 300, 13), std::make_tuple(66, 257, 70), std::make_tuple(1, 9, 8),
                                std::make_tuple(12, 64, 256));
    const auto [m, k, n] = shape;
    const auto um = static_cast<std::size_t>(m), uk = static_cast<std::size_t>(k), un = static_cast<std::size_t>(n);
    INFO(m << " x " << k << " times (" << n << " x " << k << ")^T");
    Rng rng(5);
    const Mat A = rng.normal_mat(um, uk), B = rng.normal_mat(un, uk);
    const auto same_bits = [](const Mat& x, const Mat& y) {
        return x.shape() == y.shape() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
    };
    for (const nn::Arithmetic arithmetic : {nn::Arithmetic::portable, nn::Arithmetic::native}) {
        const nn::ScopedArithmetic scope(arithmetic);
        const Mat expected = nn::matmul(A, nn::transposed(B), "A B^T");
        CHECK(same_bits(nn::matmul_transposed(A, B, "A B^T"), expected));
        // columns [2, 2 + k) of a wider matrix: the same product without copying them out
        Mat wide = rng.normal_mat(un, uk + 5);
        for (std::size_t r = 0; r < un; ++r)
            for (std::size_t c = 0; c < uk; ++c) wide(r, c + 2) = B(r, c);
        CHECK(same_bits(nn::matmul_transposed_columns(A, wide, 2, 2 + uk, "A W^T"), expected));
    }
    CHECK(nn::thread_arithmetic() == nn::Arithmetic::portable);  // the scope is gone with its block
    CHECK_THROWS_WITH(nn::matmul_transposed(A, rng.normal_mat(3, uk + 1), "A C^T"),
                      Catch::Contains("A C^T: cannot multiply") && Catch::Contains("by the transpose of"));
    CHECK_THROWS_WITH(nn::matmul_transposed_columns(A, B, 1, uk + 1, "A B_cols^T"),
                      Catch::Contains("columns 1 to"));
}

TEST_CASE("float32 products (Arithmetic::single): within float32's rounding of the exact product, not "
          "double's; the same bytes on 1, 2 and 3 threads; on every copy of the kernels",
          "[nn][kernels]") {
    // 37 x 200 times 200 x 67 (and its transpose): partial tiles in rows and panels, more than one
    // block of rows, k longer than a float's 24 bits make exact for sums of this many terms
    Rng rng(11);
    const Mat A = rng.normal_mat(37, 200), B = rng.normal_mat(200, 67), B_t = nn::transposed(B);
    // the exact product (long double sums of double products: far below float32's 6e-8) and the bound:
    // each operand rounded to float32 (2^-24 relative each), then k sums in float32, so
    // |error| <= (k + 2) 2^-24 sum_p |a_ip b_pj| to first order
    const auto check_single = [&](const Mat& C) {
        double worst = 0.0;
        for (std::size_t i = 0; i < 37; ++i)
            for (std::size_t j = 0; j < 67; ++j) {
                long double exact = 0.0L, magnitude = 0.0L;
                for (std::size_t p = 0; p < 200; ++p) {
                    exact += static_cast<long double>(A(i, p)) * B(p, j);
                    magnitude += std::abs(static_cast<long double>(A(i, p)) * B(p, j));
                }
                worst = std::max(worst, static_cast<double>(std::abs(C(i, j) - exact) / magnitude));
            }
        INFO("largest error " << worst << " of the terms' magnitudes");
        CHECK(worst <= 202.0 * std::ldexp(1.0, -24));
        CHECK(worst > 1e-12);  // float32, not double: double's error here is below 1e-14
    };
    const nn::KernelPath in_use = nn::kernel_path();
    for (const nn::KernelPath path : nn::kernel_paths_supported()) {
        nn::use_kernel_path(path);
        INFO("the " << nn::kernel_path_name(path) << " copy");
        const nn::ScopedArithmetic single(nn::Arithmetic::single);
        std::vector<Mat> products;
        for (const std::size_t threads : {1, 2, 3}) {
            const nn::ScopedThreads split(threads);
            products.push_back(nn::matmul(A, B, "A B"));
            check_single(products.back());
            const Mat transposed = nn::matmul_transposed(A, B_t, "A (B^T)^T");
            CHECK(std::memcmp(transposed.data(), products.back().data(), transposed.size() * sizeof(double)) == 0);
        }
        for (const Mat& C : products) CHECK(std::memcmp(C.data(), products[0].data(), C.size() * sizeof(double)) == 0);
    }
    nn::use_kernel_path(in_use);
}

TEST_CASE("for_each_row visits every row once, on one thread or two", "[nn][softmax]") {
    const auto shape = GENERATE(std::make_pair(std::size_t{0}, std::size_t{5}),
                                std::make_pair(std::size_t{1}, std::size_t{1}),
                                std::make_pair(std::size_t{7}, std::size_t{3}),
                                std::make_pair(std::size_t{1001}, std::size_t{64}));
    INFO(shape.first << " x " << shape.second);
    std::vector<std::atomic<int>> visits(shape.first);
    nn::for_each_row(shape.first, shape.second, [&](std::size_t r) { ++visits[r]; });
    for (const auto& v : visits) CHECK(v.load() == 1);
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
    const nn::GruRun run = nn::gru_forward(p, X, nn::zeros(3));
    Vec h = nn::zeros(3);
    for (std::size_t t = 0; t < 5; ++t) {
        h = loop_gru_step(p, nn::row_of(X, t), h);
        CHECK(max_abs_difference(nn::row_of(run.states, t), h) < 1e-14);
    }
    CHECK_THROWS_WITH(nn::gru_forward(p, rng.normal_mat(5, 3), nn::zeros(3)),
                      Catch::Contains("GRU inputs X: expected shape [5, 2], got [5, 3]"));
}

TEST_CASE("matmul equals the triple loop and names a shape mismatch", "[nn][linalg]") {
    Rng rng(8);
    const Mat A = rng.normal_mat(3, 4), B = rng.normal_mat(4, 2);
    Mat expected = nn::zeros(3, 2);
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < 2; ++j)
            for (std::size_t k = 0; k < 4; ++k) expected(i, j) += A(i, k) * B(k, j);
    CHECK(max_abs_difference(nn::matmul(A, B, "A B"), expected) < 1e-14);
    CHECK_THROWS_WITH(nn::matmul(A, A, "A A"), Catch::Contains("A A: cannot multiply [3, 4] by [3, 4]"));
    // an empty inner dimension is a sum of nothing: zeros, not garbage from BLAS
    const Mat empty_inner = nn::matmul(nn::zeros(2, 0), nn::zeros(0, 3), "0-wide");
    CHECK(empty_inner.shape(0) == 2);
    CHECK(empty_inner.shape(1) == 3);
    CHECK(nn::max_abs_of(empty_inner) == 0.0);
    CHECK(nn::matmul(nn::zeros(0, 3), rng.normal_mat(3, 2), "0 rows").shape(0) == 0);
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

}  // namespace test_nn
