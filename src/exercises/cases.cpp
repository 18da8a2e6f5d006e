// The unit cases of the exercises (exercises/cases.hpp). Each case builds its inputs, calls the
// exercise's function as linked into this program (the student's, or the reference), and holds
// the result to values computed here from the equation in long double.
#include "exercises/cases.hpp"

#include "exercises/not_done.hpp"
#include "core/side_by_side.hpp"
#include "nn/optimizer.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <limits>

namespace attn {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// What a case computed: its inputs (shown when it fails), the function's result and the expected one.
struct CaseResult {
    std::vector<std::pair<std::string, Array>> inputs;
    Array actual, expected;
};

struct UnitCase {
    std::string exercise;
    std::string name;                // "a row of all -inf"
    std::string catches;             // the mistake it tells apart from the right answer
    std::vector<std::string> calls;  // other exercises whose functions the exercise's code may call
    std::function<CaseResult()> run;
};

// softmax of one row from the equation, in long double: -inf entries get 0, a row of all -inf
// gets zeros, +inf entries share the weight; otherwise exp(e_j - m) / sum_k exp(e_k - m).
std::vector<double> softmax_oracle(const std::vector<double>& e) {
    long double m = -inf;
    for (double x : e) m = std::max(m, static_cast<long double>(x));
    std::vector<double> out(e.size(), 0.0);
    if (m == -inf) return out;
    if (m == inf) {
        std::size_t n = 0;
        for (double x : e) n += x == inf ? 1 : 0;
        for (std::size_t j = 0; j < e.size(); ++j) out[j] = e[j] == inf ? 1.0 / static_cast<double>(n) : 0.0;
        return out;
    }
    long double sum = 0.0L;
    for (double x : e) sum += std::exp(static_cast<long double>(x) - m);
    for (std::size_t j = 0; j < e.size(); ++j) out[j] = static_cast<double>(std::exp(e[j] - m) / sum);
    return out;
}

Mat softmax_rows_oracle(const Mat& S) {
    Mat out = xt::empty<double>({S.shape(0), S.shape(1)});
    for (std::size_t i = 0; i < S.shape(0); ++i) {
        std::vector<double> row(S.shape(1));
        for (std::size_t j = 0; j < S.shape(1); ++j) row[j] = S(i, j);
        const auto p = softmax_oracle(row);
        for (std::size_t j = 0; j < S.shape(1); ++j) out(i, j) = p[j];
    }
    return out;
}

// softmax_rows of `S` against the oracle
CaseResult softmax_rows_case(const Mat& S) { return {{{"S", S}}, nn::softmax_rows(S), softmax_rows_oracle(S)}; }

// softmax(Q K^T / sqrt(d_k)) V from the equation: the weights' rows and the output side by side.
CaseResult attention_case(const Mat& Q, const Mat& K, const Mat& V) {
    const std::size_t T_q = Q.shape(0), T_k = K.shape(0), d_k = Q.shape(1), d_v = V.shape(1);
    Mat S = xt::empty<double>({T_q, T_k});
    for (std::size_t i = 0; i < T_q; ++i)
        for (std::size_t j = 0; j < T_k; ++j) {
            long double dot = 0.0L;
            for (std::size_t a = 0; a < d_k; ++a) dot += static_cast<long double>(Q(i, a)) * K(j, a);
            S(i, j) = static_cast<double>(dot / std::sqrt(static_cast<long double>(d_k)));
        }
    const Mat A = softmax_rows_oracle(S);
    Mat O = xt::empty<double>({T_q, d_v});
    for (std::size_t i = 0; i < T_q; ++i)
        for (std::size_t c = 0; c < d_v; ++c) {
            long double sum = 0.0L;
            for (std::size_t j = 0; j < T_k; ++j) sum += static_cast<long double>(A(i, j)) * V(j, c);
            O(i, c) = static_cast<double>(sum);
        }
    return {{{"Q", Q}, {"K", K}, {"V", V}}, nn::scaled_dot_product_attention(Q, K, V).output, O};
}

Mat causal_oracle(std::size_t T) {
    Mat M = xt::zeros<double>({T, T});
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = i + 1; j < T; ++j) M(i, j) = -inf;
    return M;
}

const std::vector<UnitCase>& unit_cases() {
    static const std::vector<UnitCase> cases = {
        // ---- softmax
        {"softmax", "three logits",
         "the plain equation: exp(e_i) / sum_k exp(e_k) over the row, not over a column",
         {},
         [] { return softmax_rows_case(Mat{{1.0, 2.0, 3.0}, {0.5, 0.5, -1.0}}); }},
        {"softmax", "logits of +-1e308",
         "a softmax without the shift by the row's largest logit: exp(1e308) is inf, and inf / inf is NaN",
         {},
         [] { return softmax_rows_case(Mat{{1e308, -1e308, 0.0}, {710.0, 709.0, -710.0}}); }},
        {"softmax", "a row of all -inf",
         "a row with every entry masked: the weights must be zeros, not 0 / 0 = NaN (the padded rows of "
         "lesson 4 need it)",
         {},
         [] { return softmax_rows_case(Mat{{-inf, -inf, -inf}, {0.0, -inf, 0.0}}); }},
        {"softmax", "one column, and ties",
         "T = 1 (a single logit gets weight 1) and equal logits (equal weights)",
         {},
         [] {
             CaseResult one = softmax_rows_case(Mat{{-3.5}, {1e300}});
             CaseResult ties = softmax_rows_case(Mat{{2.0, 2.0, 2.0, 2.0}});
             const Vec v = nn::softmax(Vec{4.0, 4.0});
             Mat actual = xt::zeros<double>({std::size_t{4}, std::size_t{4}});
             Mat expected = actual;
             actual(0, 0) = one.actual(0, 0), actual(1, 0) = one.actual(1, 0);
             expected(0, 0) = one.expected(0, 0), expected(1, 0) = one.expected(1, 0);
             for (std::size_t j = 0; j < 4; ++j) actual(2, j) = ties.actual(0, j), expected(2, j) = 0.25;
             actual(3, 0) = v(0), actual(3, 1) = v(1), expected(3, 0) = 0.5, expected(3, 1) = 0.5;
             return CaseResult{{{"S (rows 1-2: one column each)", Mat{{-3.5}, {1e300}}},
                                {"S (row 3)", Mat{{2.0, 2.0, 2.0, 2.0}}},
                                {"softmax(e) for e", Vec{4.0, 4.0}}},
                               actual,
                               expected};
         }},
        // ---- scaled-attention
        {"scaled-attention", "d_v != d_k",
         "the scale: 1 / sqrt(d_k), the width of the queries and keys (here 4), not of the values (here 2)",
         {"softmax"},
         [] {
             return attention_case(Mat{{1.0, 0.5, -1.0, 2.0}, {0.0, 1.0, 1.0, -0.5}, {2.0, -1.0, 0.5, 0.0}},
                                   Mat{{0.5, 1.0, 0.0, 1.0}, {-1.0, 0.5, 2.0, 0.0}, {1.0, 1.0, -1.0, 0.5}},
                                   Mat{{1.0, 0.0}, {0.0, 1.0}, {2.0, -3.0}});
         }},
        {"scaled-attention", "one query, one key",
         "T = 1: the only key gets weight 1, so the output is its value row",
         {"softmax"},
         [] { return attention_case(Mat{{3.0, -1.0}}, Mat{{0.5, 2.0}}, Mat{{7.0, -2.0, 0.25}}); }},
        // ---- causal-mask
        {"causal-mask", "T = 1 and T = 4",
         "-inf strictly above the diagonal (key j > query i), 0 on and below it; a 1 x 1 mask is [0]",
         {},
         [] {
             const Mat one = nn::causal_mask(1), four = nn::causal_mask(4);
             Mat actual = xt::zeros<double>({std::size_t{5}, std::size_t{4}}), expected = actual;
             actual(0, 0) = one.shape(0) == 1 && one.shape(1) == 1 ? one(0, 0) : std::nan("");
             expected(0, 0) = 0.0;
             const Mat want = causal_oracle(4);
             for (std::size_t i = 0; i < 4; ++i)
                 for (std::size_t j = 0; j < 4; ++j) {
                     actual(i + 1, j) = four.shape(0) == 4 && four.shape(1) == 4 ? four(i, j) : std::nan("");
                     expected(i + 1, j) = want(i, j);
                 }
             return CaseResult{{{"T", Vec{1.0, 4.0}}}, actual, expected};
         }},
        // ---- masked-softmax
        {"masked-softmax", "a fully masked row",
         "a query that may look at no key: its weights are zeros, not NaN",
         {"softmax"},
         [] {
             const Mat S = {{0.5, 1.0, -2.0}, {3.0, 0.0, 1.0}};
             const Mat M = {{0.0, -inf, 0.0}, {-inf, -inf, -inf}};
             return CaseResult{{{"S", S}, {"M", M}}, nn::masked_softmax(S, M), softmax_rows_oracle(S + M)};
         }},
        {"masked-softmax", "+inf under the mask",
         "S + M written as a plain sum: +inf + -inf is NaN and spoils the row; a masked entry must count as "
         "-inf whatever its score",
         {"softmax"},
         [] {
             const Mat S = {{inf, 0.0, 1.0}, {-1.0, 2.0, 0.5}};
             const Mat M = {{-inf, 0.0, 0.0}, {0.0, 0.0, -inf}};
             Mat filled = S;
             for (std::size_t i = 0; i < S.shape(0); ++i)
                 for (std::size_t j = 0; j < S.shape(1); ++j)
                     if (M(i, j) == -inf) filled(i, j) = -inf;
             return CaseResult{{{"S", S}, {"M", M}}, nn::masked_softmax(S, M), softmax_rows_oracle(filled)};
         }},
        // ---- adam-step
        {"adam-step", "two steps on three weights",
         "the bias correction m / (1 - b1^t), v / (1 - b2^t), g^2 (not g) in v, and a step against the gradient",
         {},
         [] {
             const nn::AdamSettings s{0.1, 0.9, 0.999, 1e-8};
             const Mat g = {{0.5, -2.0, 0.0}, {0.25, 4.0, 0.0}};
             std::vector<double> theta = {1.0, -1.0, 0.5}, m(3, 0.0), v(3, 0.0);
             std::vector<long double> w = {1.0L, -1.0L, 0.5L}, mm(3, 0.0L), vv(3, 0.0L);
             Mat actual = xt::empty<double>({std::size_t{2}, std::size_t{3}}), expected = actual;
             long double b1 = 1.0L, b2 = 1.0L;
             for (std::size_t t = 0; t < 2; ++t) {
                 b1 *= s.beta1;
                 b2 *= s.beta2;
                 const std::vector<double> grad = {g(t, 0), g(t, 1), g(t, 2)};
                 nn::adam_step(theta.data(), grad.data(), m.data(), v.data(), 3, s, static_cast<double>(b1),
                               static_cast<double>(b2));
                 for (std::size_t k = 0; k < 3; ++k) {
                     mm[k] = s.beta1 * mm[k] + (1.0L - s.beta1) * grad[k];
                     vv[k] = s.beta2 * vv[k] + (1.0L - s.beta2) * grad[k] * grad[k];
                     w[k] -= s.learning_rate * (mm[k] / (1.0L - b1)) / (std::sqrt(vv[k] / (1.0L - b2)) + s.epsilon);
                     actual(t, k) = theta[k];
                     expected(t, k) = static_cast<double>(w[k]);
                 }
             }
             return CaseResult{{{"g (one row per step; lr 0.1)", g}, {"theta at the start", Vec{1.0, -1.0, 0.5}}},
                               actual, expected};
         }},
    };
    return cases;
}

// A small tensor's values, a row per line: "    [0]  1  -inf  0.5".
std::string values_text(const Array& a) {
    const Shape shape = shape_of(a);
    const std::size_t rows = shape.size() == 2 ? shape[0] : 1, cols = shape.empty() ? 1 : shape.back();
    std::string out;
    for (std::size_t i = 0; i < rows; ++i) {
        out += shape.size() == 2 ? fmt::format("    [{}]", i) : std::string("    ");
        for (std::size_t j = 0; j < cols; ++j) out += fmt::format("  {:.6g}", *(a.begin() + static_cast<std::ptrdiff_t>(i * cols + j)));
        out += "\n";
    }
    return out;
}

std::string case_report(const UnitCase& c, const CaseResult& r, const TensorDiff& d, const Tolerance& tol) {
    std::string out = fmt::format("unit case '{}' of exercise {}: it catches {}.\n", c.name, c.exercise, c.catches);
    for (const auto& [name, value] : r.inputs)
        out += fmt::format("  input {} {}:\n{}", name, shape_string(shape_of(value)), values_text(value));
    const std::string table = render_side_by_side(r.actual, r.expected, tol);
    if (!table.empty()) out += "  the result:\n" + table;
    out += tensor_diff_report(d, tol) + "\n";
    return out;
}

}  // namespace

UnitCheck check_unit_cases(const std::string& id, const Tolerance& tol) {
    UnitCheck check;
    for (const auto& c : unit_cases()) {
        if (c.exercise != id) continue;
        ++check.cases;
        if (!check.failed_case.empty() || !check.not_done.empty()) continue;
        try {
            const CaseResult r = c.run();
            const TensorDiff d = compare_tensor(r.actual, r.expected, tol);
            if (d.ok()) {
                ++check.passed;
                continue;
            }
            check.failed_case = c.name;
            check.calls = c.calls;
            check.report = case_report(c, r, d, tol);
        } catch (const ExerciseNotDone& e) {
            check.not_done = e.exercise;
        } catch (const std::exception& e) {
            check.failed_case = c.name;
            check.calls = c.calls;
            check.report = fmt::format("unit case '{}' of exercise {}: it catches {}.\n  the function threw: {}\n",
                                       c.name, c.exercise, c.catches, e.what());
        }
    }
    return check;
}

std::vector<std::string> unit_case_names(const std::string& id) {
    std::vector<std::string> out;
    for (const auto& c : unit_cases())
        if (c.exercise == id) out.push_back(c.name);
    return out;
}

}  // namespace attn
