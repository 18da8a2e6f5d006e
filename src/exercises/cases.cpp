// The unit cases of the exercises (exercises/cases.hpp). Each case builds its inputs, calls the
// exercise's function as linked into this program (the student's, or the reference), and holds
// the result to values computed here from the equation in long double.
#include "exercises/cases.hpp"

#include "exercises/not_done.hpp"
#include "core/side_by_side.hpp"
#include "nn/attention.hpp"
#include "nn/backward.hpp"
#include "nn/beam_search.hpp"
#include "nn/bleu.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/kv_cache.hpp"
#include "nn/layer_norm.hpp"
#include "nn/multi_head.hpp"
#include "nn/online_softmax.hpp"
#include "nn/optimizer.hpp"
#include "nn/positional.hpp"
#include "nn/rnn.hpp"
#include "nn/rotary.hpp"
#include "nn/scores.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"
#include "nn/structured.hpp"
#include "nn/transformer.hpp"
#include "nn/tiled_attention.hpp"
#include "nn/unroll.hpp"

#include <fmt/format.h>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>
#include <new>
#include <functional>
#include <optional>
#include <limits>
#include <stdexcept>

namespace attn {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

// One of several results that a case lays into one tensor, entry after entry (row-major): its
// name, its shape and the entry it begins at. A failed case shows each part as its own tensor.
struct CasePart {
    std::string name;
    Shape shape;
    std::size_t offset = 0;
};

// What a case computed: its inputs (shown when it fails), the function's result and the expected
// one; `parts` when the result holds several tensors.
struct CaseResult {
    std::vector<std::pair<std::string, Array>> inputs;
    Array actual, expected;
    std::vector<CasePart> parts{};
};

// Parts laid one after another from the first entry, in the order named.
std::vector<CasePart> parts_of(const std::vector<std::pair<std::string, Shape>>& named) {
    std::vector<CasePart> out;
    std::size_t offset = 0;
    for (const auto& [name, shape] : named) {
        out.push_back({name, shape, offset});
        std::size_t n = 1;
        for (std::size_t extent : shape) n *= extent;
        offset += n;
    }
    return out;
}

// The entries of the matrices one after another: a case's several results in one tensor.
Vec flattened(const std::vector<Mat>& parts) {
    std::size_t n = 0;
    for (const auto& m : parts) n += m.size();
    Vec out = xt::empty<double>({n});
    std::size_t at = 0;
    for (const auto& m : parts)
        for (double x : m) out(at++) = x;
    return out;
}

struct UnitCase {
    std::string exercise;
    std::string name;                // "a row of all -inf"
    std::string catches;             // the mistake it tells apart from the right answer
    std::vector<std::string> calls;  // other exercises whose functions the exercise's code may call
    std::function<CaseResult()> run;
    // the cases checked against central differences have their own tolerance (see fd_tolerance)
    std::optional<Tolerance> tolerance = std::nullopt;
};

// A result of the wrong shape stops its case, which then fails saying so (not with a tensor of NaNs).
struct WrongShape : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// `m`, which must be rows x cols; `what` names it in the message, with its verb ("nn::dot_scores(Q, K)
// returned", "its dgain (as a row) is").
const Mat& shaped(const Mat& m, std::size_t rows, std::size_t cols, const std::string& what) {
    if (m.shape(0) == rows && m.shape(1) == cols) return m;
    throw WrongShape(
        fmt::format("{} {}, expected {}", what, shape_string(shape_of(m)), shape_string(Shape{rows, cols})));
}

// The same for a result of any rank.
template <class T>
const T& shaped_as(const T& a, const Shape& want, const std::string& what) {
    if (shape_of(a) == want) return a;
    throw WrongShape(fmt::format("{} {}, expected {}", what, shape_string(shape_of(a)), shape_string(want)));
}

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
// Q K^T / sqrt(d_k) from the definition, in long double.
Mat scaled_scores_oracle(const Mat& Q, const Mat& K) {
    const std::size_t T_q = Q.shape(0), T_k = K.shape(0), d_k = Q.shape(1);
    Mat S = xt::empty<double>({T_q, T_k});
    for (std::size_t i = 0; i < T_q; ++i)
        for (std::size_t j = 0; j < T_k; ++j) {
            long double dot = 0.0L;
            for (std::size_t a = 0; a < d_k; ++a) dot += static_cast<long double>(Q(i, a)) * K(j, a);
            S(i, j) = static_cast<double>(dot / std::sqrt(static_cast<long double>(d_k)));
        }
    return S;
}

// Every field of the AttentionResult, one after another: the scores (scaled, and masked: -inf wherever
// the mask is), the weights and the output.
CaseResult attention_case(const Mat& Q, const Mat& K, const Mat& V, const Mat* mask = nullptr) {
    const std::size_t T_q = Q.shape(0), T_k = K.shape(0), d_v = V.shape(1);
    const Mat S = mask ? Mat(scaled_scores_oracle(Q, K) + *mask) : scaled_scores_oracle(Q, K);
    const Mat A = softmax_rows_oracle(S);
    Mat O = xt::empty<double>({T_q, d_v});
    for (std::size_t i = 0; i < T_q; ++i)
        for (std::size_t c = 0; c < d_v; ++c) {
            long double sum = 0.0L;
            for (std::size_t j = 0; j < T_k; ++j) sum += static_cast<long double>(A(i, j)) * V(j, c);
            O(i, c) = static_cast<double>(sum);
        }
    const nn::AttentionResult r = mask ? nn::scaled_dot_product_attention(Q, K, V, *mask)
                                       : nn::scaled_dot_product_attention(Q, K, V);
    const std::string call = mask ? "nn::scaled_dot_product_attention(Q, K, V, mask)'s" : "nn::scaled_dot_product_attention(Q, K, V)'s";
    std::vector<std::pair<std::string, Array>> inputs = {{"Q", Q}, {"K", K}, {"V", V}};
    if (mask) inputs.push_back({"mask", *mask});
    return CaseResult{inputs,
                      flattened({shaped(r.scores, T_q, T_k, call + " scores are"),
                                 shaped(r.weights, T_q, T_k, call + " weights are"),
                                 shaped(r.output, T_q, d_v, call + " output is")}),
                      flattened({S, A, O}),
                      parts_of({{mask ? "scores (Q K^T / sqrt(d_k) + M)" : "scores (Q K^T / sqrt(d_k))", {T_q, T_k}},
                                {"weights", {T_q, T_k}}, {"output", {T_q, d_v}}})};
}

Mat causal_oracle(std::size_t T) {
    Mat M = xt::zeros<double>({T, T});
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = i + 1; j < T; ++j) M(i, j) = -inf;
    return M;
}

// A B from the definition, summed in long double.
Mat product(const Mat& A, const Mat& B) {
    Mat out = xt::empty<double>({A.shape(0), B.shape(1)});
    for (std::size_t i = 0; i < A.shape(0); ++i)
        for (std::size_t j = 0; j < B.shape(1); ++j) {
            long double sum = 0.0L;
            for (std::size_t k = 0; k < A.shape(1); ++k) sum += static_cast<long double>(A(i, k)) * B(k, j);
            out(i, j) = static_cast<double>(sum);
        }
    return out;
}

Mat transpose_of(const Mat& A) {
    Mat out = xt::empty<double>({A.shape(1), A.shape(0)});
    for (std::size_t i = 0; i < A.shape(0); ++i)
        for (std::size_t j = 0; j < A.shape(1); ++j) out(j, i) = A(i, j);
    return out;
}

Mat column(const Vec& v) {
    Mat out = xt::empty<double>({v.size(), std::size_t{1}});
    for (std::size_t i = 0; i < v.size(); ++i) out(i, 0) = v(i);
    return out;
}

// One GRU step from Cho et al. 2014, eqs. 5-8, in long double: its four vectors as the rows z, r, h~, h.
Mat gru_oracle(const nn::GruParams& p, const Vec& x, const Vec& h) {
    const std::size_t d = h.size();
    const Mat zx = product(p.W_z, column(x)), zh = product(p.U_z, column(h));
    const Mat rx = product(p.W_r, column(x)), rh = product(p.U_r, column(h));
    Mat out = xt::empty<double>({std::size_t{4}, d});
    Vec reset_state = xt::empty<double>({d});
    for (std::size_t i = 0; i < d; ++i) {
        out(0, i) = static_cast<double>(1.0L / (1.0L + std::exp(-(static_cast<long double>(zx(i, 0)) + zh(i, 0) + p.b_z(i)))));
        out(1, i) = static_cast<double>(1.0L / (1.0L + std::exp(-(static_cast<long double>(rx(i, 0)) + rh(i, 0) + p.b_r(i)))));
        reset_state(i) = out(1, i) * h(i);
    }
    const Mat hx = product(p.W_h, column(x)), hh = product(p.U_h, column(reset_state));
    for (std::size_t i = 0; i < d; ++i) {
        out(2, i) = static_cast<double>(std::tanh(static_cast<long double>(hx(i, 0)) + hh(i, 0) + p.b_h(i)));
        out(3, i) = static_cast<double>(static_cast<long double>(out(0, i)) * h(i) + (1.0L - out(0, i)) * out(2, i));
    }
    return out;
}

// A GRU of input width 3 and state width 2 (d != d_in, so a transposed weight does not fit), with
// no two weights alike.
nn::GruParams small_gru() {
    nn::GruParams p;
    p.W_z = Mat{{0.5, -0.3, 0.8}, {0.1, 0.7, -0.6}};
    p.U_z = Mat{{0.4, -0.9}, {0.2, 0.3}};
    p.b_z = Vec{0.1, -0.2};
    p.W_r = Mat{{-0.7, 0.2, 0.5}, {0.6, -0.4, 0.9}};
    p.U_r = Mat{{1.1, 0.5}, {-0.8, 0.3}};
    p.b_r = Vec{0.3, 0.05};
    p.W_h = Mat{{0.9, 0.4, -0.2}, {-0.5, 0.8, 0.3}};
    p.U_h = Mat{{-0.6, 1.2}, {0.7, -0.1}};
    p.b_h = Vec{-0.1, 0.2};
    return p;
}

// Gradients checked against central differences of a long double oracle: step h = 1e-5, where
// the truncation error (about h^2 times the third derivative, ~1e-10) and the rounding (about
// 1e-19 / h) are far below rtol 1e-7; a wrong term is off by the size of the gradient itself.
constexpr long double fd_h = 1e-5L;
const Tolerance fd_tolerance{1e-7, 1e-9};

// dL/dX by central differences with step h, entry by entry. The layer norm's cases need a step
// smaller than fd_h: each derivative of x^ brings a factor r = 1 / sqrt(sigma^2 + eps), up to 316,
// so the truncation error is about (h r)^2 relative, 1e-5 at h = 1e-5 but 1e-11 at h = 1e-8, where
// the rounding of the long double loss, about 1e-19 / h, is 1e-11 too.
Mat central_differences(const std::function<long double(const Mat&)>& loss, const Mat& X, long double h = fd_h) {
    Mat out = xt::empty<double>({X.shape(0), X.shape(1)});
    for (std::size_t i = 0; i < X.shape(0); ++i)
        for (std::size_t j = 0; j < X.shape(1); ++j) {
            Mat up = X, down = X;
            up(i, j) = static_cast<double>(X(i, j) + h);
            down(i, j) = static_cast<double>(X(i, j) - h);
            out(i, j) = static_cast<double>((loss(up) - loss(down)) / (static_cast<long double>(up(i, j)) - down(i, j)));
        }
    return out;
}

// sum_ij G_ij O_ij with O = softmax(Q K^T / sqrt(d_k)) V, all in long double.
long double attention_loss(const Mat& Q, const Mat& K, const Mat& V, const Mat& G) {
    const std::size_t T_q = Q.shape(0), T_k = K.shape(0), d_k = Q.shape(1), d_v = V.shape(1);
    long double total = 0.0L;
    for (std::size_t i = 0; i < T_q; ++i) {
        std::vector<long double> e(T_k);
        long double m = -inf, sum = 0.0L;
        for (std::size_t j = 0; j < T_k; ++j) {
            long double dot = 0.0L;
            for (std::size_t a = 0; a < d_k; ++a) dot += static_cast<long double>(Q(i, a)) * K(j, a);
            e[j] = dot / std::sqrt(static_cast<long double>(d_k));
            m = std::max(m, e[j]);
        }
        for (auto& x : e) sum += (x = std::exp(x - m));
        for (std::size_t c = 0; c < d_v; ++c) {
            long double o = 0.0L;
            for (std::size_t j = 0; j < T_k; ++j) o += e[j] / sum * V(j, c);
            total += G(i, c) * o;
        }
    }
    return total;
}

// A vector as a 1 x n matrix.
Mat as_row(const Vec& v) {
    Mat out = xt::empty<double>({std::size_t{1}, v.size()});
    for (std::size_t j = 0; j < v.size(); ++j) out(0, j) = v(j);
    return out;
}

// Layer norm of every row from Ba et al. 2016, eqs. 3-4, in long double: the biased variance
// (1/d), eps inside the square root, then gain and bias.
Mat layer_norm_oracle(const Mat& X, const Vec& g, const Vec& b, double eps) {
    const std::size_t T = X.shape(0), d = X.shape(1);
    Mat out = xt::empty<double>({T, d});
    for (std::size_t t = 0; t < T; ++t) {
        long double mu = 0.0L, var = 0.0L;
        for (std::size_t j = 0; j < d; ++j) mu += X(t, j);
        mu /= static_cast<long double>(d);
        for (std::size_t j = 0; j < d; ++j) var += (X(t, j) - mu) * (X(t, j) - mu);
        var /= static_cast<long double>(d);
        for (std::size_t j = 0; j < d; ++j)
            out(t, j) = static_cast<double>(g(j) * (X(t, j) - mu) / std::sqrt(var + eps) + b(j));
    }
    return out;
}

// sum_ij G_ij LN(X)_ij with the layer norm in long double (its rounding to double at the end of
// each entry is far below the step of the central differences).
long double layer_norm_loss(const Mat& X, const Vec& g, const Vec& b, double eps, const Mat& G) {
    const std::size_t T = X.shape(0), d = X.shape(1);
    long double total = 0.0L;
    for (std::size_t t = 0; t < T; ++t) {
        long double mu = 0.0L, var = 0.0L;
        for (std::size_t j = 0; j < d; ++j) mu += X(t, j);
        mu /= static_cast<long double>(d);
        for (std::size_t j = 0; j < d; ++j) var += (X(t, j) - mu) * (X(t, j) - mu);
        var /= static_cast<long double>(d);
        for (std::size_t j = 0; j < d; ++j) total += G(t, j) * (g(j) * (X(t, j) - mu) / std::sqrt(var + eps) + b(j));
    }
    return total;
}

// The forward a layer norm backward is handed: every field of LayerNormResult from the oracle's
// equations, so that the backward's case needs no other exercise.
nn::LayerNormResult layer_norm_forward_oracle(const Mat& X, const Vec& g, const Vec& b, double eps) {
    const std::size_t T = X.shape(0), d = X.shape(1);
    nn::LayerNormResult r{xt::empty<double>({T}), xt::empty<double>({T}), xt::empty<double>({T}),
                          xt::empty<double>({T, d}), layer_norm_oracle(X, g, b, eps)};
    for (std::size_t t = 0; t < T; ++t) {
        long double mu = 0.0L, var = 0.0L;
        for (std::size_t j = 0; j < d; ++j) mu += X(t, j);
        mu /= static_cast<long double>(d);
        for (std::size_t j = 0; j < d; ++j) var += (X(t, j) - mu) * (X(t, j) - mu);
        var /= static_cast<long double>(d);
        const long double r_t = 1.0L / std::sqrt(var + eps);
        r.mean(t) = static_cast<double>(mu), r.variance(t) = static_cast<double>(var), r.inv_std(t) = static_cast<double>(r_t);
        for (std::size_t j = 0; j < d; ++j) r.normalized(t, j) = static_cast<double>((X(t, j) - mu) * r_t);
    }
    return r;
}


// A layer norm backward's case: dX, dg, db of L = sum G * LN(X) one after another, against
// central differences (step 1e-8) of the long double loss.
CaseResult layer_norm_backward_case(const Mat& X, const Vec& g, const Vec& b, double eps, const Mat& G) {
    const nn::LayerNormGrads grads = nn::layer_norm_backward(layer_norm_forward_oracle(X, g, b, eps), g, G);
    const std::size_t T = X.shape(0), d = X.shape(1);
    const long double h = 1e-8L;
    const Mat dX = central_differences([&](const Mat& M) { return layer_norm_loss(M, g, b, eps, G); }, X, h);
    const Mat dg = central_differences(
        [&](const Mat& M) { return layer_norm_loss(X, Vec(xt::row(M, 0)), b, eps, G); }, as_row(g), h);
    const Mat db = central_differences(
        [&](const Mat& M) { return layer_norm_loss(X, g, Vec(xt::row(M, 0)), eps, G); }, as_row(b), h);
    Mat dnormalized = xt::empty<double>({T, d});  // dx^ = dY * g, from its equation
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t j = 0; j < d; ++j) dnormalized(t, j) = G(t, j) * g(j);
    return CaseResult{{{"X", X}, {"g", g}, {"b", b}, {"eps", Vec{eps}}, {"dL/dY", G}},
                      flattened({shaped(grads.dX, T, d, "nn::layer_norm_backward's dX is"),
                                 shaped(as_row(grads.dgain), 1, d, "its dgain (as a row) is"),
                                 shaped(as_row(grads.dbias), 1, d, "its dbias (as a row) is"),
                                 shaped(grads.dnormalized, T, d, "its dnormalized is")}),
                      flattened({dX, dg, db, dnormalized}),
                      parts_of({{"dX", {T, d}}, {"dgain", {1, d}}, {"dbias", {1, d}}, {"dnormalized = dY * g", {T, d}}})};
}

// One tile of FlashAttention's backward (exercise flash-backward-tile): Q, K, V, dO and the tile, the
// gradients the tile starts from (`start`: dQ, dK, dV one after another, as the result). L_i is the
// log-sum-exp of row i's scores over every key it sees (the whole row, not the tile), from the
// definition in long double; D_i = dO_i . o_i with o_i from the same weights, unless `D` is given.
// The result: dQ, dK, dV after the call, flattened, against the equation of nn/tiled_attention.hpp.
struct FlashTile {
    Mat Q, K, V, dO;
    nn::TileSpan tile;
    bool causal = false;
    double start = 0.0;            // every entry of dQ, dK, dV before the call
    std::optional<Vec> D = std::nullopt;
};

CaseResult flash_tile_case(const FlashTile& c) {
    const std::size_t T_q = c.Q.shape(0), T_k = c.K.shape(0), d_k = c.Q.shape(1), d_v = c.V.shape(1);
    const long double scale = std::sqrt(static_cast<long double>(d_k));
    const auto sees = [&](std::size_t i, std::size_t j) { return !c.causal || j <= i; };
    const auto score = [&](std::size_t i, std::size_t j) {
        long double dot = 0.0L;
        for (std::size_t p = 0; p < d_k; ++p) dot += static_cast<long double>(c.Q(i, p)) * c.K(j, p);
        return dot / scale;
    };
    Vec L = xt::empty<double>({T_q}), D = xt::zeros<double>({T_q});
    std::vector<long double> L_exact(T_q);
    for (std::size_t i = 0; i < T_q; ++i) {
        long double m = -inf, sum = 0.0L;
        for (std::size_t j = 0; j < T_k; ++j) m = sees(i, j) ? std::max(m, score(i, j)) : m;
        for (std::size_t j = 0; j < T_k; ++j) sum += sees(i, j) ? std::exp(score(i, j) - m) : 0.0L;
        L_exact[i] = m + std::log(sum);
        L(i) = static_cast<double>(L_exact[i]);
        long double d = 0.0L;  // dO_i . o_i, o_i = sum_j P_ij v_j
        for (std::size_t j = 0; j < T_k; ++j)
            for (std::size_t v = 0; v < d_v && sees(i, j); ++v)
                d += std::exp(score(i, j) - L_exact[i]) * c.V(j, v) * c.dO(i, v);
        D(i) = static_cast<double>(d);
    }
    if (c.D) D = *c.D;
    std::vector<long double> dQ(T_q * d_k, c.start), dK(T_k * d_k, c.start), dV(T_k * d_v, c.start);
    for (std::size_t i = c.tile.first_query; i < c.tile.first_query + c.tile.queries; ++i)
        for (std::size_t j = c.tile.first_key; j < c.tile.first_key + c.tile.keys; ++j) {
            if (!sees(i, j)) continue;
            const long double P = std::exp(score(i, j) - static_cast<long double>(L(i)));
            long double dP = 0.0L;
            for (std::size_t v = 0; v < d_v; ++v) {
                dV[j * d_v + v] += P * c.dO(i, v);
                dP += static_cast<long double>(c.dO(i, v)) * c.V(j, v);
            }
            const long double dS = P * (dP - D(i)) / scale;
            for (std::size_t p = 0; p < d_k; ++p) {
                dQ[i * d_k + p] += dS * c.K(j, p);
                dK[j * d_k + p] += dS * c.Q(i, p);
            }
        }
    Mat dQ_actual = xt::empty<double>({T_q, d_k}), dK_actual = xt::empty<double>({T_k, d_k});
    Mat dV_actual = xt::empty<double>({T_k, d_v});
    dQ_actual.fill(c.start);
    dK_actual.fill(c.start);
    dV_actual.fill(c.start);
    nn::flash_backward_tile(c.Q, c.K, c.V, c.dO, L, D, c.tile, c.causal, dQ_actual, dK_actual, dV_actual);
    const auto as_mat = [](const std::vector<long double>& x, std::size_t rows, std::size_t cols) {
        Mat out = xt::empty<double>({rows, cols});
        for (std::size_t k = 0; k < x.size(); ++k) out.data()[k] = static_cast<double>(x[k]);
        return out;
    };
    const Mat span = {{static_cast<double>(c.tile.first_query), static_cast<double>(c.tile.queries),
                       static_cast<double>(c.tile.first_key), static_cast<double>(c.tile.keys)}};
    return CaseResult{{{"Q", c.Q}, {"K", c.K}, {"V", c.V}, {"dO", c.dO}, {"L", L}, {"D", D},
                       {"tile: first_query, queries, first_key, keys", span}},
                      flattened({shaped(dQ_actual, T_q, d_k, "dQ is"), shaped(dK_actual, T_k, d_k, "dK is"),
                                 shaped(dV_actual, T_k, d_v, "dV is")}),
                      flattened({as_mat(dQ, T_q, d_k), as_mat(dK, T_k, d_k), as_mat(dV, T_k, d_v)})};
}

// Multi-head attention from Vaswani et al. 2017, section 3.2.2, in long double sums: head i on columns
// [i d_k, (i+1) d_k) of W^Q, W^K, W^V, scores scaled by 1 / sqrt(d_k), the mask added. Every field of
// the MultiHeadResult: each head's weights, Concat(head_1, ..., head_h) and the output.
nn::MultiHeadResult multi_head_fields_oracle(const Mat& X_q, const Mat& X_kv, const nn::MultiHeadParams& p,
                                             std::size_t heads, const Mat* mask) {
    const std::size_t T_q = X_q.shape(0), T_k = X_kv.shape(0), d = X_q.shape(1), d_k = d / heads;
    nn::MultiHeadResult r;
    r.weights = xt::empty<double>({heads, T_q, T_k});
    r.concat = xt::empty<double>({T_q, d});
    for (std::size_t i = 0; i < heads; ++i) {
        const auto block = [&](const Mat& W) {
            Mat out = xt::empty<double>({d, d_k});
            for (std::size_t row = 0; row < d; ++row)
                for (std::size_t c = 0; c < d_k; ++c) out(row, c) = W(row, i * d_k + c);
            return out;
        };
        Mat S = scaled_scores_oracle(product(X_q, block(p.W_Q)), product(X_kv, block(p.W_K)));
        if (mask) S += *mask;
        const Mat A = softmax_rows_oracle(S);
        const Mat head = product(A, product(X_kv, block(p.W_V)));
        for (std::size_t t = 0; t < T_q; ++t) {
            for (std::size_t c = 0; c < d_k; ++c) r.concat(t, i * d_k + c) = head(t, c);
            for (std::size_t j = 0; j < T_k; ++j) r.weights(i, t, j) = A(t, j);
        }
    }
    r.output = product(r.concat, p.W_O);
    return r;
}

// Multi-head self-attention's output (multi_head_fields_oracle with X_q = X_kv = X).
Mat multi_head_oracle(const Mat& X, const nn::MultiHeadParams& p, std::size_t heads, const Mat* mask) {
    return multi_head_fields_oracle(X, X, p, heads, mask).output;
}

// W_2 max(0, W_1 h + b_1) + b_2 for each row h of H — Vaswani et al. 2017, eq. 2.
Mat feed_forward_oracle(const nn::FeedForward& f, const Mat& H) {
    Mat hidden = product(H, transpose_of(f.W_1));
    for (std::size_t t = 0; t < hidden.shape(0); ++t)
        for (std::size_t k = 0; k < hidden.shape(1); ++k) hidden(t, k) = std::max(0.0, hidden(t, k) + f.b_1(k));
    Mat out = product(hidden, transpose_of(f.W_2));
    for (std::size_t t = 0; t < out.shape(0); ++t)
        for (std::size_t j = 0; j < out.shape(1); ++j) out(t, j) += f.b_2(j);
    return out;
}

// The pre-LN block from its equations: H = X + MHA(LN_1(X)), Y = H + FFN(LN_2(H)). Returns H's
// rows, then Y's.
Vec pre_ln_oracle(const Mat& X, const nn::BlockParams& p, std::size_t heads, const Mat* mask) {
    const Mat H = X + multi_head_oracle(layer_norm_oracle(X, p.norm_1.gain, p.norm_1.bias, p.norm_1.eps), p.attention,
                                        heads, mask);
    const Mat Y = H + feed_forward_oracle(p.feed_forward, layer_norm_oracle(H, p.norm_2.gain, p.norm_2.bias, p.norm_2.eps));
    return flattened({H, Y});
}

// A block of width 4, two heads and d_ff = 3, with gains and biases that are not 1 and 0.
nn::BlockParams small_block() {
    nn::BlockParams p;
    p.norm_1 = {Vec{1.2, 0.8, 1.0, 0.9}, Vec{0.1, -0.2, 0.0, 0.3}, 1e-5};
    p.attention.W_Q = Mat{{0.5, -0.2, 0.1, 0.7}, {0.3, 0.9, -0.4, 0.2}, {-0.6, 0.1, 0.8, -0.3}, {0.2, 0.4, 0.5, 1.0}};
    p.attention.W_K = Mat{{0.1, 0.6, -0.5, 0.3}, {-0.7, 0.2, 0.4, 0.8}, {0.9, -0.1, 0.3, -0.2}, {0.0, 0.5, -0.6, 0.4}};
    p.attention.W_V = Mat{{1.0, 0.2, -0.3, 0.5}, {-0.4, 0.7, 0.6, 0.1}, {0.3, -0.8, 0.2, 0.9}, {0.6, 0.1, -0.5, -0.2}};
    p.attention.W_O = Mat{{0.2, -0.6, 0.4, 0.1}, {0.7, 0.3, -0.2, 0.5}, {-0.1, 0.8, 0.6, -0.4}, {0.5, 0.0, 0.3, 0.9}};
    p.norm_2 = {Vec{0.9, 1.1, 1.3, 0.7}, Vec{-0.1, 0.2, 0.05, 0.0}, 1e-5};
    p.feed_forward = {Mat{{0.4, -0.3, 0.6, 0.2}, {-0.5, 0.8, 0.1, -0.2}, {0.3, 0.3, -0.7, 0.5}}, Vec{0.1, -0.1, 0.2},
                      Mat{{0.6, -0.4, 0.3}, {0.2, 0.5, -0.6}, {-0.3, 0.7, 0.4}, {0.5, -0.2, 0.1}}, Vec{0.05, -0.05, 0.1, 0.0}};
    return p;
}

// pre_ln_block's H (its residual_1) and Y, one after another, against the oracle's.
CaseResult pre_ln_case(const Mat& X, const nn::BlockParams& p, const Mat* mask) {
    const std::size_t T = X.shape(0), d = X.shape(1);
    const nn::BlockForward f = nn::pre_ln_block(X, p, 2, mask);
    std::vector<std::pair<std::string, Array>> inputs = {{"X", X}, {"W_O", p.attention.W_O}, {"W_2", p.feed_forward.W_2}};
    if (mask) inputs.push_back({"mask", *mask});
    return CaseResult{inputs,
                      flattened({shaped(f.residual_1, T, d, "nn::pre_ln_block's residual_1 is"),
                                 shaped(f.output, T, d, "its output is")}),
                      pre_ln_oracle(X, p, 2, mask), parts_of({{"residual_1", {T, d}}, {"output", {T, d}}})};
}

// The h x T_q x T_k weights of a MultiHeadResult as (h T_q) x T_k rows, head after head; `what` names them
// when their shape is wrong.
Mat heads_as_rows(const nn::Heads& w, std::size_t heads, std::size_t T_q, std::size_t T_k, const std::string& what) {
    const auto& kept = shaped_as(w, Shape{heads, T_q, T_k}, what);
    Mat out = xt::empty<double>({heads * T_q, T_k});
    std::copy(kept.begin(), kept.end(), out.begin());
    return out;
}

// The fields of a LayerNormResult: mean, variance and inv_std as rows, normalized, output; `what`
// names the result ("norm_1").
std::vector<Mat> layer_norm_fields(const nn::LayerNormResult& r, std::size_t T, std::size_t d, const std::string& what) {
    return {shaped(as_row(r.mean), 1, T, what + ".mean (as a row) is"),
            shaped(as_row(r.variance), 1, T, what + ".variance (as a row) is"),
            shaped(as_row(r.inv_std), 1, T, what + ".inv_std (as a row) is"),
            shaped(r.normalized, T, d, what + ".normalized is"), shaped(r.output, T, d, what + ".output is")};
}

std::vector<std::pair<std::string, Shape>> layer_norm_parts(const std::string& what, std::size_t T, std::size_t d) {
    return {{what + ".mean", {1, T}}, {what + ".variance", {1, T}}, {what + ".inv_std", {1, T}},
            {what + ".normalized", {T, d}}, {what + ".output", {T, d}}};
}

// Every field of pre_ln_block's BlockForward (two heads), against the block's equations in long double:
// norm_1 = LN_1(X), attention = MHA(norm_1.output) with every head's weights, residual_1 = X + its
// output, norm_2 = LN_2(residual_1), feed_forward = FFN(norm_2.output), residual_2 = residual_1 +
// feed_forward, output = residual_2.
CaseResult pre_ln_fields_case(const Mat& X, const nn::BlockParams& p, const Mat* mask) {
    const std::size_t T = X.shape(0), d = X.shape(1), heads = 2;
    const nn::LayerNormResult n1 = layer_norm_forward_oracle(X, p.norm_1.gain, p.norm_1.bias, p.norm_1.eps);
    const nn::MultiHeadResult a = multi_head_fields_oracle(n1.output, n1.output, p.attention, heads, mask);
    const Mat r1 = X + a.output;
    const nn::LayerNormResult n2 = layer_norm_forward_oracle(r1, p.norm_2.gain, p.norm_2.bias, p.norm_2.eps);
    const Mat ff = feed_forward_oracle(p.feed_forward, n2.output);
    const Mat r2 = r1 + ff;
    const nn::BlockForward f = nn::pre_ln_block(X, p, heads, mask);
    std::vector<Mat> actual = layer_norm_fields(f.norm_1, T, d, "nn::pre_ln_block's norm_1");
    for (const Mat& m : {heads_as_rows(f.attention.weights, heads, T, T, "its attention.weights are"),
                         shaped(f.attention.concat, T, d, "its attention.concat is"),
                         shaped(f.attention.output, T, d, "its attention.output is"),
                         shaped(f.residual_1, T, d, "its residual_1 is")})
        actual.push_back(m);
    for (const Mat& m : layer_norm_fields(f.norm_2, T, d, "its norm_2")) actual.push_back(m);
    for (const Mat& m : {shaped(f.feed_forward, T, d, "its feed_forward is"), shaped(f.residual_2, T, d, "its residual_2 is"),
                         shaped(f.output, T, d, "its output is")})
        actual.push_back(m);
    std::vector<Mat> expected = {as_row(n1.mean), as_row(n1.variance), as_row(n1.inv_std), n1.normalized, n1.output,
                                 heads_as_rows(a.weights, heads, T, T, "the oracle's weights are"), a.concat, a.output, r1,
                                 as_row(n2.mean), as_row(n2.variance), as_row(n2.inv_std), n2.normalized, n2.output,
                                 ff, r2, r2};
    std::vector<std::pair<std::string, Shape>> parts = layer_norm_parts("norm_1", T, d);
    for (const auto& part : std::vector<std::pair<std::string, Shape>>{{"attention.weights (head 1, then head 2)", {heads * T, T}},
                                                                       {"attention.concat", {T, d}},
                                                                       {"attention.output", {T, d}},
                                                                       {"residual_1", {T, d}}})
        parts.push_back(part);
    for (const auto& part : layer_norm_parts("norm_2", T, d)) parts.push_back(part);
    for (const auto& part : std::vector<std::pair<std::string, Shape>>{{"feed_forward", {T, d}}, {"residual_2", {T, d}},
                                                                       {"output", {T, d}}})
        parts.push_back(part);
    std::vector<std::pair<std::string, Array>> inputs = {{"X", X}, {"W_O", p.attention.W_O}, {"W_2", p.feed_forward.W_2}};
    if (mask) inputs.push_back({"mask", *mask});
    return CaseResult{inputs, flattened(actual), flattened(expected), parts_of(parts)};
}

// cross_attention(Y, H, p, 2) against its equation: queries Y W^Q, keys H W^K, values H W^V, two
// heads of d_k = 2, no mask, in long double; the output, then both heads' T_y x T_x weights.
CaseResult cross_attention_case(const Mat& Y, const Mat& H) {
    nn::MultiHeadParams p;
    p.W_Q = Mat{{0.5, -0.2, 0.1, 0.7}, {0.3, 0.9, -0.4, 0.2}, {-0.6, 0.1, 0.8, -0.3}, {0.2, 0.4, 0.5, 1.0}};
    p.W_K = Mat{{0.1, 0.6, -0.5, 0.3}, {-0.7, 0.2, 0.4, 0.8}, {0.9, -0.1, 0.3, -0.2}, {0.0, 0.5, -0.6, 0.4}};
    p.W_V = Mat{{1.0, 0.2, -0.3, 0.5}, {-0.4, 0.7, 0.6, 0.1}, {0.3, -0.8, 0.2, 0.9}, {0.6, 0.1, -0.5, -0.2}};
    p.W_O = Mat{{0.2, -0.6, 0.4, 0.1}, {0.7, 0.3, -0.2, 0.5}, {-0.1, 0.8, 0.6, -0.4}, {0.5, 0.0, 0.3, 0.9}};
    const std::size_t T_y = Y.shape(0), T_x = H.shape(0), d_k = 2;
    Mat concat = xt::empty<double>({T_y, std::size_t{4}}), weights = xt::empty<double>({2 * T_y, T_x});
    for (std::size_t i = 0; i < 2; ++i) {
        const auto block = [&](const Mat& W) {
            Mat out = xt::empty<double>({std::size_t{4}, d_k});
            for (std::size_t r = 0; r < 4; ++r)
                for (std::size_t c = 0; c < d_k; ++c) out(r, c) = W(r, i * d_k + c);
            return out;
        };
        const Mat A = softmax_rows_oracle(scaled_scores_oracle(product(Y, block(p.W_Q)), product(H, block(p.W_K))));
        const Mat head = product(A, product(H, block(p.W_V)));
        for (std::size_t t = 0; t < T_y; ++t) {
            for (std::size_t c = 0; c < d_k; ++c) concat(t, i * d_k + c) = head(t, c);
            for (std::size_t j = 0; j < T_x; ++j) weights(i * T_y + t, j) = A(t, j);
        }
    }
    const nn::MultiHeadResult r = nn::cross_attention(Y, H, p, 2);
    const auto& kept = shaped_as(r.weights, Shape{2, T_y, T_x}, "nn::cross_attention's weights are");
    Mat actual_weights = xt::empty<double>({2 * T_y, T_x});
    for (std::size_t k = 0; k < actual_weights.size(); ++k) actual_weights.data()[k] = kept.data()[k];
    return CaseResult{{{"Y (decoder)", Y}, {"H (encoder)", H}, {"W_Q", p.W_Q}, {"W_K", p.W_K}},
                      flattened({shaped(r.output, T_y, 4, "nn::cross_attention's output is"), actual_weights,
                                 shaped(r.concat, T_y, 4, "nn::cross_attention's concat is")}),
                      flattened({product(concat, p.W_O), weights, concat}),
                      parts_of({{"output", {T_y, 4}}, {"weights (head 1, then head 2)", {2 * T_y, T_x}},
                                {"concat", {T_y, 4}}})};
}

// warmup_learning_rate at the steps `at` against d^-0.5 min(s^-0.5, s w^-1.5) in long double.
CaseResult warmup_case(const std::vector<std::size_t>& at, std::size_t d_model, std::size_t warmup) {
    Vec actual = xt::empty<double>({at.size()}), expected = xt::empty<double>({at.size()}), steps = actual;
    const long double w = static_cast<long double>(warmup);
    for (std::size_t k = 0; k < at.size(); ++k) {
        const long double s = static_cast<long double>(at[k]);
        steps(k) = static_cast<double>(at[k]);
        actual(k) = nn::warmup_learning_rate(at[k], d_model, warmup);
        expected(k) = static_cast<double>(std::min(1.0L / std::sqrt(s), s / (w * std::sqrt(w))) /
                                          std::sqrt(static_cast<long double>(d_model)));
    }
    return CaseResult{{{"step s", steps}, {"d_model, warmup", Vec{static_cast<double>(d_model), static_cast<double>(warmup)}}}, actual,
                      expected};
}

// kv_cache_step on a cache of K_old, V_old with new Q, K_new, V_new, against the equation in long
// double: the cache [K_old; K_new], [V_old; V_new]; S = Q K^T (the scale already in Q); the mask
// aligned to the bottom right (query i reads keys j <= T_k - T_q + i); A = softmax(S + M), O = A V.
// The weights, the output, then the cache's K and V after the step.
CaseResult kv_cache_case(const Mat& K_old, const Mat& V_old, const Mat& Q, const Mat& K_new, const Mat& V_new) {
    const std::size_t T_q = Q.shape(0), T_k = K_old.shape(0) + T_q, d_k = Q.shape(1), d_v = V_new.shape(1);
    const Mat K = K_old.shape(0) == 0 ? K_new : Mat(xt::concatenate(xt::xtuple(K_old, K_new), 0));
    const Mat V = V_old.shape(0) == 0 ? V_new : Mat(xt::concatenate(xt::xtuple(V_old, V_new), 0));
    Mat S = product(Q, transpose_of(K));
    for (std::size_t i = 0; i < T_q; ++i)
        for (std::size_t j = T_k - T_q + i + 1; j < T_k; ++j) S(i, j) = -inf;
    const Mat A = softmax_rows_oracle(S);
    nn::KVCache cache{K_old, V_old};
    const nn::AttentionResult r = nn::kv_cache_step(cache, Q, K_new, V_new);
    return CaseResult{{{"cached K", K_old}, {"cached V", V_old}, {"Q (scaled)", Q}, {"K_new", K_new}, {"V_new", V_new}},
                      flattened({shaped(r.weights, T_q, T_k, "nn::kv_cache_step returned weights"),
                                 shaped(r.output, T_q, d_v, "nn::kv_cache_step returned an output"),
                                 shaped(cache.K, T_k, d_k, "the cache's K after the step is"),
                                 shaped(cache.V, T_k, d_v, "the cache's V after the step is"),
                                 shaped(r.scores, T_q, T_k, "nn::kv_cache_step returned scores")}),
                      flattened({A, product(A, V), K, V, S}),
                      parts_of({{"weights", {T_q, T_k}}, {"output", {T_q, d_v}}, {"the cache's K after the step", {T_k, d_k}},
                                {"the cache's V after the step", {T_k, d_v}}, {"scores (Q K^T + M)", {T_q, T_k}}})};
}

// Hypotheses laid out in one row: per hypothesis its log-probability, finished (1 or 0), its number
// of words, then its words.
Vec hypotheses_row(const std::vector<nn::Hypothesis>& hs) {
    std::vector<double> row;
    for (const nn::Hypothesis& h : hs) {
        row.push_back(h.log_prob);
        row.push_back(h.finished ? 1.0 : 0.0);
        row.push_back(static_cast<double>(h.words.size()));
        for (std::size_t w : h.words) row.push_back(static_cast<double>(w));
    }
    Vec out = xt::empty<double>({row.size()});
    std::copy(row.begin(), row.end(), out.begin());
    return out;
}

// beam_step(beams, log_probs, eos, k) against the definition: every candidate scored (a finished
// hypothesis as it is, an unfinished one extended by each word, log-probabilities added in long
// double), the k highest, ties to the earlier candidate.
CaseResult beam_case(const std::vector<nn::Hypothesis>& beams, const Mat& log_probs, std::size_t eos, std::size_t k) {
    struct Candidate {
        long double score;
        std::size_t order;
        nn::Hypothesis h;
    };
    std::vector<Candidate> all;
    for (std::size_t b = 0; b < beams.size(); ++b) {
        if (beams[b].finished) {
            all.push_back({beams[b].log_prob, all.size(), beams[b]});
            continue;
        }
        for (std::size_t w = 0; w < log_probs.shape(1); ++w) {
            nn::Hypothesis h = beams[b];
            const long double score = static_cast<long double>(h.log_prob) + log_probs(b, w);
            h.words.push_back(w);
            h.log_prob = static_cast<double>(score);
            h.finished = w == eos;
            all.push_back({score, all.size(), h});
        }
    }
    std::sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
        return a.score != b.score ? a.score > b.score : a.order < b.order;
    });
    std::vector<nn::Hypothesis> best;
    for (std::size_t i = 0; i < std::min(k, all.size()); ++i) best.push_back(all[i].h);
    Mat given = xt::empty<double>({beams.size(), std::size_t{2}});
    for (std::size_t b = 0; b < beams.size(); ++b)
        given(b, 0) = beams[b].log_prob, given(b, 1) = beams[b].finished ? 1.0 : 0.0;
    return CaseResult{{{"hypotheses (log_prob, finished)", given}, {"log_probs", log_probs}},
                      hypotheses_row(nn::beam_step(beams, log_probs, eos, k)), hypotheses_row(best)};
}

// A corpus of sentence pairs for bleu: (candidate, reference), word ids.
using BleuPairs = std::vector<std::pair<std::vector<std::size_t>, std::vector<std::size_t>>>;

// What a bleu case compares: the counts and precisions, the lengths and the brevity penalty, the score.
enum BleuParts : unsigned { bleu_counts = 1, bleu_lengths = 2, bleu_score = 4, bleu_everything = 7 };

// How often the n words of `from` at `at` occur in `words`, counted by comparing every position.
long double occurrences(const std::vector<std::size_t>& words, const std::vector<std::size_t>& from, std::size_t at,
                        std::size_t n) {
    long double k = 0.0L;
    for (std::size_t i = 0; i + n <= words.size(); ++i)
        k += std::equal(from.begin() + static_cast<std::ptrdiff_t>(at), from.begin() + static_cast<std::ptrdiff_t>(at + n),
                        words.begin() + static_cast<std::ptrdiff_t>(i))
                 ? 1.0L
                 : 0.0L;
    return k;
}

// BLEU from Papineni et al. 2002's definition in long double: per pair and n, each distinct candidate
// n-gram (at its first position) matches min(its count in the candidate, in the reference); the
// counts and lengths summed over the corpus; p_n = matches / totals (0 for no n-grams); BP = 1 if
// c > r, exp(1 - r/c) if 0 < c <= r, 0 if c = 0; BLEU = BP exp(sum log p_n / 4), 0 when a p_n is 0.
// Laid out as bleu_row lays out a BleuScore.
std::vector<double> bleu_oracle(const BleuPairs& pairs, unsigned parts) {
    long double matches[4] = {}, totals[4] = {}, c = 0.0L, r = 0.0L;
    for (const auto& [cand, ref] : pairs) {
        c += static_cast<long double>(cand.size()), r += static_cast<long double>(ref.size());
        for (std::size_t n = 1; n <= 4; ++n)
            for (std::size_t i = 0; i + n <= cand.size(); ++i) {
                totals[n - 1] += 1.0L;
                bool seen = false;
                for (std::size_t j = 0; j < i && !seen; ++j)
                    seen = std::equal(cand.begin() + static_cast<std::ptrdiff_t>(i), cand.begin() + static_cast<std::ptrdiff_t>(i + n),
                                      cand.begin() + static_cast<std::ptrdiff_t>(j));
                if (!seen) matches[n - 1] += std::min(occurrences(cand, cand, i, n), occurrences(ref, cand, i, n));
            }
    }
    long double p[4], log_sum = 0.0L;
    bool zero = false;
    for (std::size_t n = 0; n < 4; ++n) {
        p[n] = totals[n] > 0.0L ? matches[n] / totals[n] : 0.0L;
        zero = zero || p[n] == 0.0L;
        if (!zero) log_sum += std::log(p[n]);
    }
    const long double bp = c == 0.0L ? 0.0L : c > r ? 1.0L : std::exp(1.0L - r / c);
    std::vector<double> row;
    if (parts & bleu_counts)
        for (const long double* x : {matches, totals, p})
            for (std::size_t n = 0; n < 4; ++n) row.push_back(static_cast<double>(x[n]));
    if (parts & bleu_lengths)
        for (long double x : {c, r, bp}) row.push_back(static_cast<double>(x));
    if (parts & bleu_score) row.push_back(zero ? 0.0 : static_cast<double>(bp * std::exp(log_sum / 4.0L)));
    return row;
}

// The fields of a BleuScore that `parts` names, in bleu_oracle's order.
std::vector<double> bleu_row(const nn::BleuScore& s, unsigned parts) {
    std::vector<double> row;
    if (parts & bleu_counts)
        for (const auto* x : {&s.matches, &s.totals, &s.precisions}) row.insert(row.end(), x->begin(), x->end());
    if (parts & bleu_lengths) row.insert(row.end(), {s.candidate_length, s.reference_length, s.brevity_penalty});
    if (parts & bleu_score) row.push_back(s.bleu);
    return row;
}

// nn::bleu on each corpus against the oracle, the rows of all corpora one after the other.
CaseResult bleu_case(const std::vector<BleuPairs>& corpora, unsigned parts) {
    CaseResult r;
    std::vector<double> actual, expected;
    for (std::size_t k = 0; k < corpora.size(); ++k) {
        std::vector<std::vector<std::size_t>> candidates, references;
        for (std::size_t i = 0; i < corpora[k].size(); ++i) {
            candidates.push_back(corpora[k][i].first), references.push_back(corpora[k][i].second);
            const std::string which = corpora.size() > 1 ? fmt::format("corpus {}, ", k + 1) : std::string();
            for (const auto& [name, words] : {std::pair{"candidate", &candidates.back()}, std::pair{"reference", &references.back()}}) {
                Vec v = xt::empty<double>({words->size()});
                for (std::size_t j = 0; j < words->size(); ++j) v(j) = static_cast<double>((*words)[j]);
                r.inputs.push_back({fmt::format("{}{} {}", which, name, i + 1), v});
            }
        }
        const std::vector<double> a = bleu_row(nn::bleu(candidates, references), parts), e = bleu_oracle(corpora[k], parts);
        actual.insert(actual.end(), a.begin(), a.end()), expected.insert(expected.end(), e.begin(), e.end());
    }
    r.actual = xt::empty<double>({actual.size()});
    r.expected = xt::empty<double>({expected.size()});
    std::copy(actual.begin(), actual.end(), r.actual.begin());
    std::copy(expected.begin(), expected.end(), r.expected.begin());
    return r;
}

// RoPE from Su et al. 2021, sections 3.2.2 and 3.4.2, in long double: row t of X turned at position
// positions[t], pair i (columns 2i and 2i + 1 interleaved, i and i + d/2 in halves) by the angle
// p 10000^(-2i/d), (x, y) -> (x cos a - y sin a, x sin a + y cos a).
Mat rope_oracle(const Mat& X, const std::vector<std::size_t>& positions, nn::RotaryLayout layout) {
    const std::size_t T = X.shape(0), d = X.shape(1);
    Mat out = xt::empty<double>({T, d});
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t i = 0; i < d / 2; ++i) {
            const std::size_t a = layout == nn::RotaryLayout::halves ? i : 2 * i;
            const std::size_t b = layout == nn::RotaryLayout::halves ? i + d / 2 : 2 * i + 1;
            const long double angle = static_cast<long double>(positions[t]) *
                                      std::pow(10000.0L, -2.0L * static_cast<long double>(i) / static_cast<long double>(d));
            const long double x = X(t, a), y = X(t, b);
            out(t, a) = static_cast<double>(x * std::cos(angle) - y * std::sin(angle));
            out(t, b) = static_cast<double>(x * std::sin(angle) + y * std::cos(angle));
        }
    return out;
}

CaseResult rope_case(const Mat& X, const std::vector<std::size_t>& positions, nn::RotaryLayout layout) {
    Vec p = xt::empty<double>({positions.size()});
    for (std::size_t t = 0; t < positions.size(); ++t) p(t) = static_cast<double>(positions[t]);
    const std::string call = layout == nn::RotaryLayout::halves ? "nn::rotary_rotation(X, positions, RotaryLayout::halves) returned"
                                                                 : "nn::rotary_rotation(X, positions) returned";
    return CaseResult{{{"X", X}, {"positions", p}},
                      shaped(nn::rotary_rotation(X, positions, layout), X.shape(0), X.shape(1), call),
                      rope_oracle(X, positions, layout)};
}

// ALiBi's slopes from Press et al. 2022 (section 3, and their code's rule for other numbers of heads),
// in long double: n = the largest power of two not above h; 2^(-8k/n) for k = 1 .. n, then the odd
// slopes of 2n heads, 2^(-8(2j+1)/(2n)) = 2^(-4(2j+1)/n) for j = 0 .. h - n - 1.
std::vector<double> alibi_slopes_oracle(std::size_t h) {
    std::size_t n = 1;
    while (2 * n <= h) n *= 2;
    const long double N = static_cast<long double>(n);
    std::vector<double> out;
    for (std::size_t k = 1; k <= n; ++k) out.push_back(static_cast<double>(std::pow(2.0L, -8.0L * static_cast<long double>(k) / N)));
    for (std::size_t j = 0; n + j < h; ++j)
        out.push_back(static_cast<double>(std::pow(2.0L, -4.0L * static_cast<long double>(2 * j + 1) / N)));
    return out;
}

// alibi_slopes(h) for each h, laid one after another, against the oracle.
CaseResult alibi_slopes_case(const std::vector<std::size_t>& heads) {
    std::vector<double> actual, expected;
    std::vector<std::pair<std::string, Shape>> named;
    Vec h_values = xt::empty<double>({heads.size()});
    for (std::size_t k = 0; k < heads.size(); ++k) {
        const std::size_t h = heads[k];
        h_values(k) = static_cast<double>(h);
        const Vec got = shaped_as(nn::alibi_slopes(h), Shape{h}, fmt::format("nn::alibi_slopes({}) returned", h));
        actual.insert(actual.end(), got.begin(), got.end());
        const std::vector<double> want = alibi_slopes_oracle(h);
        expected.insert(expected.end(), want.begin(), want.end());
        named.push_back({fmt::format("slopes for {} heads", h), Shape{h}});
    }
    Vec a = xt::empty<double>({actual.size()}), e = xt::empty<double>({expected.size()});
    std::copy(actual.begin(), actual.end(), a.begin());
    std::copy(expected.begin(), expected.end(), e.begin());
    return CaseResult{{{"heads", h_values}}, a, e, parts_of(named)};
}

// alibi_bias(T, m) and causal_alibi_bias(T, m) against B_ij = -m (i - j) (Press et al. 2022, figure 3),
// in long double, and -inf for j > i in the causal form.
CaseResult alibi_bias_case(std::size_t T, double m) {
    Mat B = xt::empty<double>({T, T}), causal = xt::empty<double>({T, T});
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) {
            B(i, j) = static_cast<double>(-static_cast<long double>(m) *
                                          (static_cast<long double>(i) - static_cast<long double>(j)));
            causal(i, j) = j > i ? -inf : B(i, j);
        }
    return CaseResult{{{"T, m", Vec{static_cast<double>(T), m}}},
                      flattened({shaped(nn::alibi_bias(T, m), T, T, fmt::format("nn::alibi_bias({}, m) returned", T)),
                                 shaped(nn::causal_alibi_bias(T, m), T, T, fmt::format("nn::causal_alibi_bias({}, m) returned", T))}),
                      flattened({B, causal}),
                      parts_of({{"alibi_bias", {T, T}}, {"causal_alibi_bias", {T, T}}})};
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
         "T = 1 (a single logit gets weight 1) and equal logits (equal weights); and nn::softmax of a vector, "
         "which the lessons call on its own, held to the same: equal logits, and logits of 1000 and -inf (row 5: "
         "without the shift exp(1000) is inf)",
         {},
         [] {
             CaseResult one = softmax_rows_case(Mat{{-3.5}, {1e300}});
             CaseResult ties = softmax_rows_case(Mat{{2.0, 2.0, 2.0, 2.0}});
             const Vec v = shaped_as(nn::softmax(Vec{4.0, 4.0}), Shape{2}, "nn::softmax(e) returned");
             const Vec large_logits = {1000.0, 999.0, -inf, 0.0};
             const Vec large = shaped_as(nn::softmax(large_logits), Shape{4}, "nn::softmax(e) returned");
             const std::vector<double> large_expected = softmax_oracle({1000.0, 999.0, -inf, 0.0});
             Mat actual = xt::zeros<double>({std::size_t{5}, std::size_t{4}});
             Mat expected = actual;
             actual(0, 0) = one.actual(0, 0), actual(1, 0) = one.actual(1, 0);
             expected(0, 0) = one.expected(0, 0), expected(1, 0) = one.expected(1, 0);
             for (std::size_t j = 0; j < 4; ++j) actual(2, j) = ties.actual(0, j), expected(2, j) = 0.25;
             actual(3, 0) = v(0), actual(3, 1) = v(1), expected(3, 0) = 0.5, expected(3, 1) = 0.5;
             for (std::size_t j = 0; j < 4; ++j) actual(4, j) = large(j), expected(4, j) = large_expected[j];
             return CaseResult{{{"S (rows 1-2: one column each)", Mat{{-3.5}, {1e300}}},
                                {"S (row 3)", Mat{{2.0, 2.0, 2.0, 2.0}}},
                                {"softmax(e) for e (row 4)", Vec{4.0, 4.0}},
                                {"softmax(e) for e (row 5)", large_logits}},
                               actual,
                               expected};
         }},
        // ---- scaled-attention
        {"scaled-attention", "d_v != d_k",
         "the scale: 1 / sqrt(d_k), the width of the queries and keys (here 4), not of the values (here 2); "
         "every field of the AttentionResult is compared (the scaled scores, the weights that attention-backward "
         "and the lessons read, the output), one after another",
         {"softmax", "dot-scores"},
         [] {
             return attention_case(Mat{{1.0, 0.5, -1.0, 2.0}, {0.0, 1.0, 1.0, -0.5}, {2.0, -1.0, 0.5, 0.0}},
                                   Mat{{0.5, 1.0, 0.0, 1.0}, {-1.0, 0.5, 2.0, 0.0}, {1.0, 1.0, -1.0, 0.5}},
                                   Mat{{1.0, 0.0}, {0.0, 1.0}, {2.0, -3.0}});
         }},
        {"scaled-attention", "one query, one key",
         "T = 1: the only key gets weight 1, so the output is its value row",
         {"softmax", "dot-scores"},
         [] { return attention_case(Mat{{3.0, -1.0}}, Mat{{0.5, 2.0}}, Mat{{7.0, -2.0, 0.25}}); }},
        {"scaled-attention", "with a mask, and a fully masked row",
         "the masked form: softmax(Q K^T / sqrt(d_k) + M) V, the mask added to the scaled scores before the "
         "softmax (after it, the rows no longer sum to 1), and a query that may see no key gets a zero row; the "
         "mask here is not causal, so this case needs no other exercise's mask",
         {"softmax", "dot-scores"},
         [] {
             const Mat mask = {{0.0, -inf, 0.0}, {-inf, 0.0, -inf}, {-inf, -inf, -inf}};
             return attention_case(Mat{{1.0, 0.5, -1.0}, {0.0, 2.0, 1.0}, {0.5, -0.5, 0.5}},
                                   Mat{{0.5, 1.0, 0.0}, {-1.0, 0.5, 2.0}, {1.0, 1.0, -1.0}},
                                   Mat{{1.0, 0.0}, {0.0, 1.0}, {2.0, -3.0}}, &mask);
         }},
        // ---- causal-mask
        {"causal-mask", "T = 1 and T = 4",
         "-inf strictly above the diagonal (key j > query i), 0 on and below it; a 1 x 1 mask is [0]",
         {},
         [] {
             const Mat one = shaped(nn::causal_mask(1), 1, 1, "nn::causal_mask(1) returned");
             const Mat four = shaped(nn::causal_mask(4), 4, 4, "nn::causal_mask(4) returned");
             Mat actual = xt::zeros<double>({std::size_t{5}, std::size_t{4}}), expected = actual;
             actual(0, 0) = one(0, 0);
             expected(0, 0) = 0.0;
             const Mat want = causal_oracle(4);
             for (std::size_t i = 0; i < 4; ++i)
                 for (std::size_t j = 0; j < 4; ++j) {
                     actual(i + 1, j) = four(i, j);
                     expected(i + 1, j) = want(i, j);
                 }
             return CaseResult{{{"T", Vec{1.0, 4.0}}}, actual, expected,
                               {{"causal_mask(1)", {1, 1}, 0}, {"causal_mask(4)", {4, 4}, 4}}};
         }},
        {"causal-mask", "both padding masks, T_q != T_k",
         "padding_mask(T_q, T_k, L_k): -inf in the key columns j >= L_k of every row, 0 elsewhere; "
         "padding_mask(T_q, T_k, L_q, L_k): the same plus whole rows of -inf for the padded queries i >= L_q. "
         "Rows are queries (here 3), columns keys (here 4)",
         {},
         [] {
             const Mat keys = shaped(nn::padding_mask(3, 4, 2), 3, 4, "nn::padding_mask(3, 4, 2) returned");
             const Mat both = shaped(nn::padding_mask(3, 4, 2, 3), 3, 4, "nn::padding_mask(3, 4, 2, 3) returned");
             Mat expected_keys = xt::zeros<double>({std::size_t{3}, std::size_t{4}}), expected_both = expected_keys;
             for (std::size_t i = 0; i < 3; ++i)
                 for (std::size_t j = 0; j < 4; ++j) {
                     expected_keys(i, j) = j >= 2 ? -inf : 0.0;
                     expected_both(i, j) = j >= 3 || i >= 2 ? -inf : 0.0;
                 }
             return CaseResult{{{"T_q, T_k, L_k", Vec{3.0, 4.0, 2.0}}, {"T_q, T_k, L_q, L_k", Vec{3.0, 4.0, 2.0, 3.0}}},
                               flattened({keys, both}), flattened({expected_keys, expected_both}),
                               parts_of({{"padding_mask(3, 4, 2)", {3, 4}}, {"padding_mask(3, 4, 2, 3)", {3, 4}}})};
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
        // ---- gru-step
        {"gru-step", "one step, d_in = 3 and d = 2",
         "the reset gate inside U_h (r * h_{t-1}), not after it, and h_t = z h_{t-1} + (1 - z) h~ (not z h~)",
         {},
         [] {
             const nn::GruParams p = small_gru();
             const Vec x = {1.0, -0.5, 2.0}, h = {0.3, -0.8};
             const nn::GruStep step = nn::gru_step(p, x, h);
             Mat actual = xt::empty<double>({std::size_t{4}, std::size_t{2}});
             for (std::size_t i = 0; i < 2; ++i) {
                 actual(0, i) = step.update_gate.size() == 2 ? step.update_gate(i) : std::nan("");
                 actual(1, i) = step.reset_gate.size() == 2 ? step.reset_gate(i) : std::nan("");
                 actual(2, i) = step.candidate.size() == 2 ? step.candidate(i) : std::nan("");
                 actual(3, i) = step.state.size() == 2 ? step.state(i) : std::nan("");
             }
             return CaseResult{{{"x_t", x}, {"h_{t-1}", h}, {"W_z", p.W_z}, {"U_h", p.U_h}}, actual,
                               gru_oracle(p, x, h),
                               parts_of({{"z_t (update gate)", {2}}, {"r_t (reset gate)", {2}},
                                         {"h~_t (candidate)", {2}}, {"h_t (state)", {2}}})};
         }},
        // ---- additive-score
        {"additive-score", "two queries, three keys, d_q != d_k",
         "e_ij = v^T tanh(W_q q_i + W_k k_j): the tanh of the sum, then the dot product with v",
         {},
         [] {
             const Mat Q = {{1.0, -1.0}, {0.5, 2.0}}, K = {{0.2, 0.4, -1.0}, {1.0, 0.0, 0.5}, {-0.3, 0.8, 0.1}};
             const Mat W_q = {{0.5, -0.2}, {0.3, 0.9}}, W_k = {{0.1, -0.6, 0.4}, {0.7, 0.2, -0.5}};
             const Vec v = {1.5, -0.7};
             const Mat pq = product(Q, transpose_of(W_q)), pk = product(K, transpose_of(W_k));
             Mat expected = xt::empty<double>({std::size_t{2}, std::size_t{3}});
             for (std::size_t i = 0; i < 2; ++i)
                 for (std::size_t j = 0; j < 3; ++j) {
                     long double e = 0.0L;
                     for (std::size_t a = 0; a < 2; ++a) e += v(a) * std::tanh(static_cast<long double>(pq(i, a)) + pk(j, a));
                     expected(i, j) = static_cast<double>(e);
                 }
             return CaseResult{{{"Q", Q}, {"K", K}, {"W_q", W_q}, {"W_k", W_k}, {"v", v}},
                               nn::additive_scores(Q, K, W_q, W_k, v), expected};
         }},
        {"additive-score", "projections made beforehand, T_q != T_k",
         "additive_scores_projected(P_q, P_k, v): e_ij = sum_a v_a tanh(P_q(i, a) + P_k(j, a)), query i's row "
         "of P_q with key j's row of P_k (lessons 2 and 9 call it with projections of their own)",
         {},
         [] {
             const Mat P_q = {{0.4, -1.2, 0.3}, {2.0, 0.1, -0.5}};
             const Mat P_k = {{-0.3, 0.8, 1.1}, {0.6, -0.4, 0.0}, {1.5, 0.2, -2.0}, {-1.0, -1.0, 0.7}};
             const Vec v = {0.9, -1.3, 0.6};
             Mat expected = xt::empty<double>({std::size_t{2}, std::size_t{4}});
             for (std::size_t i = 0; i < 2; ++i)
                 for (std::size_t j = 0; j < 4; ++j) {
                     long double e = 0.0L;
                     for (std::size_t a = 0; a < 3; ++a)
                         e += v(a) * std::tanh(static_cast<long double>(P_q(i, a)) + P_k(j, a));
                     expected(i, j) = static_cast<double>(e);
                 }
             const Mat actual = shaped(nn::additive_scores_projected(P_q, P_k, v), 2, 4,
                                       "nn::additive_scores_projected(P_q, P_k, v) returned");
             return CaseResult{{{"P_q", P_q}, {"P_k", P_k}, {"v", v}}, actual, expected};
         }},
        // ---- context
        {"context", "two weight rows over three values",
         "c_i = sum_j alpha_ij h_j: the weights of row i times the value rows, not the transpose",
         {},
         [] {
             const Mat A = {{0.2, 0.5, 0.3}, {1.0, 0.0, 0.0}}, H = {{1.0, 2.0}, {-1.0, 0.5}, {4.0, -2.0}};
             return CaseResult{{{"weights", A}, {"values", H}}, nn::context_vectors(A, H), product(A, H)};
         }},
        // ---- dot-scores
        {"dot-scores", "the three scores, T_q != T_k",
         "Q K^T, Q W K^T and Q K^T / sqrt(d): rows are queries, columns keys",
         {},
         [] {
             const Mat Q = {{1.0, 2.0, 0.0, -1.0}, {0.5, -1.0, 3.0, 1.0}};
             const Mat K = {{2.0, 0.0, 1.0, 1.0}, {-1.0, 1.0, 0.5, 0.0}, {0.0, 0.5, -2.0, 1.0}};
             const Mat W = {{1.0, 0.5, 0.0, 0.0}, {0.0, 2.0, 0.0, -1.0}, {0.5, 0.0, 1.0, 0.0}, {0.0, 0.0, 0.3, 1.0}};
             const Mat dot = product(Q, transpose_of(K)), general = product(product(Q, W), transpose_of(K));
             Mat actual = xt::empty<double>({std::size_t{6}, std::size_t{3}}), expected = actual;
             // T_q x T_k = 2 x 3: K Q^T would be 3 x 2
             const Mat a = shaped(nn::dot_scores(Q, K), 2, 3, "nn::dot_scores(Q, K) returned");
             const Mat b = shaped(nn::general_scores(Q, W, K), 2, 3, "nn::general_scores(Q, W, K) returned");
             const Mat c = shaped(nn::scaled_dot_scores(Q, K), 2, 3, "nn::scaled_dot_scores(Q, K) returned");
             for (std::size_t i = 0; i < 2; ++i)
                 for (std::size_t j = 0; j < 3; ++j) {
                     actual(i, j) = a(i, j);
                     actual(i + 2, j) = b(i, j);
                     actual(i + 4, j) = c(i, j);
                     expected(i, j) = dot(i, j);
                     expected(i + 2, j) = general(i, j);
                     expected(i + 4, j) = static_cast<double>(dot(i, j) / 2.0L);  // sqrt(4)
                 }
             return CaseResult{{{"Q", Q}, {"K", K}, {"W", W}}, actual, expected};
         }},
        // ---- lin-penalty
        {"lin-penalty", "two annotation rows",
         "||A A^T - I||_F^2: the Gram matrix of the rows minus the identity, every entry squared",
         {},
         [] {
             const Mat A = {{0.7, 0.2, 0.1}, {0.1, 0.3, 0.6}};
             const Mat G = product(A, transpose_of(A));
             long double sum = 0.0L;
             for (std::size_t i = 0; i < 2; ++i)
                 for (std::size_t j = 0; j < 2; ++j) {
                     const long double e = G(i, j) - (i == j ? 1.0L : 0.0L);
                     sum += e * e;
                 }
             return CaseResult{{{"A", A}}, Vec{nn::redundancy_penalty(A)}, Vec{static_cast<double>(sum)}};
         }},
        {"lin-penalty", "rows whose squares do not sum to r / 2",
         "the -I: ||A A^T - I||^2 = ||A A^T||^2 - 2 trace(A A^T) + r, so leaving out the identity goes unseen "
         "only when trace(A A^T) = r / 2, as in the case before; here it is 2.66 with r = 2",
         {},
         [] {
             const Mat A = {{0.9, 0.3, -0.4, 0.1}, {0.2, 1.1, 0.5, -0.3}};
             const Mat G = product(A, transpose_of(A));
             long double sum = 0.0L;
             for (std::size_t i = 0; i < 2; ++i)
                 for (std::size_t j = 0; j < 2; ++j) {
                     const long double e = G(i, j) - (i == j ? 1.0L : 0.0L);
                     sum += e * e;
                 }
             return CaseResult{{{"A", A}}, Vec{nn::redundancy_penalty(A)}, Vec{static_cast<double>(sum)}};
         }},
        // ---- positional
        {"positional", "T = 3, d = 4",
         "sin on even columns, cos on odd ones, both of pos / 10000^(2i/d) with i the pair's index",
         {},
         [] {
             Mat expected = xt::empty<double>({std::size_t{3}, std::size_t{4}});
             for (std::size_t pos = 0; pos < 3; ++pos)
                 for (std::size_t i = 0; i < 2; ++i) {
                     const long double angle = pos / std::pow(10000.0L, (2.0L * i) / 4.0L);
                     expected(pos, 2 * i) = static_cast<double>(std::sin(angle));
                     expected(pos, 2 * i + 1) = static_cast<double>(std::cos(angle));
                 }
             return CaseResult{{{"T, d", Vec{3.0, 4.0}}}, nn::sinusoidal_encoding(3, 4), expected};
         }},
        // ---- heads
        {"heads", "two heads of a 2 x 4 matrix, and back",
         "head i takes columns [i d_k, (i+1) d_k), and merge_heads undoes split_heads",
         {},
         [] {
             const Mat X = {{1.0, 2.0, 3.0, 4.0}, {5.0, 6.0, 7.0, 8.0}};
             const nn::Heads h = shaped_as(nn::split_heads(X, 2), Shape{2, 2, 2}, "nn::split_heads(X, 2) returned");
             const Mat back = shaped(nn::merge_heads(h), 2, 4, "nn::merge_heads(split_heads(X, 2)) returned");
             Mat actual = xt::empty<double>({std::size_t{6}, std::size_t{2}});
             const Mat expected = {{1.0, 2.0}, {5.0, 6.0}, {3.0, 4.0}, {7.0, 8.0}, {1.0, 2.0}, {3.0, 4.0}};
             for (std::size_t k = 0; k < 2; ++k)
                 for (std::size_t t = 0; t < 2; ++t)
                     for (std::size_t c = 0; c < 2; ++c) actual(2 * k + t, c) = h(k, t, c);
             for (std::size_t c = 0; c < 4; ++c) actual(4 + c / 2, c % 2) = back(0, c);
             return CaseResult{{{"X", X}}, actual, expected};
         }},
        // ---- multi-head
        {"multi-head", "two heads, T_q != T_k",
         "head i uses columns [i d_k, (i+1) d_k) of W^Q, W^K and W^V, scales by 1 / sqrt(d_k) of a head (not of "
         "d_model), and Concat(head_1, head_2) is multiplied by W^O; the result is the output, then Concat",
         {"softmax", "dot-scores", "scaled-attention", "heads"},
         [] {
             const Mat X_q = {{1.0, 0.0, -1.0, 0.5}, {0.2, 0.8, 0.3, -0.4}};
             const Mat X_kv = {{0.5, -0.5, 1.0, 0.0}, {-1.0, 0.3, 0.2, 0.9}, {0.4, 0.6, -0.8, 0.1}};
             nn::MultiHeadParams p;
             p.W_Q = Mat{{0.5, -0.2, 0.1, 0.7}, {0.3, 0.9, -0.4, 0.2}, {-0.6, 0.1, 0.8, -0.3}, {0.2, 0.4, 0.5, 1.0}};
             p.W_K = Mat{{0.1, 0.6, -0.5, 0.3}, {-0.7, 0.2, 0.4, 0.8}, {0.9, -0.1, 0.3, -0.2}, {0.0, 0.5, -0.6, 0.4}};
             p.W_V = Mat{{1.0, 0.2, -0.3, 0.5}, {-0.4, 0.7, 0.6, 0.1}, {0.3, -0.8, 0.2, 0.9}, {0.6, 0.1, -0.5, -0.2}};
             p.W_O = Mat{{0.2, -0.6, 0.4, 0.1}, {0.7, 0.3, -0.2, 0.5}, {-0.1, 0.8, 0.6, -0.4}, {0.5, 0.0, 0.3, 0.9}};
             const std::size_t d_k = 2;
             Mat concat = xt::empty<double>({std::size_t{2}, std::size_t{4}});
             for (std::size_t i = 0; i < 2; ++i) {
                 const auto block = [&](const Mat& W) {
                     Mat out = xt::empty<double>({std::size_t{4}, d_k});
                     for (std::size_t r = 0; r < 4; ++r)
                         for (std::size_t c = 0; c < d_k; ++c) out(r, c) = W(r, i * d_k + c);
                     return out;
                 };
                 const Mat Q_i = product(X_q, block(p.W_Q)), K_i = product(X_kv, block(p.W_K));
                 const Mat V_i = product(X_kv, block(p.W_V));
                 const Mat head = product(softmax_rows_oracle(scaled_scores_oracle(Q_i, K_i)), V_i);
                 for (std::size_t t = 0; t < 2; ++t)
                     for (std::size_t c = 0; c < d_k; ++c) concat(t, i * d_k + c) = head(t, c);
             }
             const nn::MultiHeadResult r = nn::multi_head_attention(X_q, X_kv, p, 2, nullptr, nn::HeadWeights::drop);
             return CaseResult{{{"X_q", X_q}, {"X_kv", X_kv}, {"W_Q", p.W_Q}, {"W_O", p.W_O}},
                               flattened({shaped(r.output, 2, 4, "nn::multi_head_attention's output is"),
                                          shaped(r.concat, 2, 4, "its concat is")}),
                               flattened({product(concat, p.W_O), concat}),
                               parts_of({{"output", {2, 4}}, {"concat", {2, 4}}})};
         }},
        {"multi-head", "the weights kept, under a causal mask",
         "weights filled with HeadWeights::keep, h x T_q x T_k (here 2 x 3 x 3), each head's softmax(Q_i K_i^T / "
         "sqrt(d_k) + M) with the mask in every head; the result is the output, then each head's weights",
         {"softmax", "dot-scores", "scaled-attention", "heads"},
         [] {
             const Mat X = {{1.0, -0.5, 0.3, 2.0}, {0.4, 0.8, -1.2, 0.1}, {-0.7, 0.2, 0.9, -0.3}};
             const nn::MultiHeadParams p = small_block().attention;
             const Mat mask = causal_oracle(3);
             const nn::MultiHeadResult r = nn::multi_head_attention(X, X, p, 2, &mask, nn::HeadWeights::keep);
             const nn::Heads& w = shaped_as(r.weights, Shape{2, 3, 3},
                                            "nn::multi_head_attention(..., HeadWeights::keep) returned weights of shape");
             std::vector<Mat> parts = {shaped(r.output, 3, 4, "nn::multi_head_attention's output is")};
             std::vector<Mat> want = {multi_head_oracle(X, p, 2, &mask)};
             for (std::size_t i = 0; i < 2; ++i) {
                 Mat head = xt::empty<double>({std::size_t{3}, std::size_t{3}}), expected = head;
                 const auto block = [&](const Mat& W) {
                     Mat out = xt::empty<double>({std::size_t{4}, std::size_t{2}});
                     for (std::size_t r_ = 0; r_ < 4; ++r_)
                         for (std::size_t c = 0; c < 2; ++c) out(r_, c) = W(r_, i * 2 + c);
                     return out;
                 };
                 const Mat A = softmax_rows_oracle(
                     Mat(scaled_scores_oracle(product(X, block(p.W_Q)), product(X, block(p.W_K))) + mask));
                 for (std::size_t t = 0; t < 3; ++t)
                     for (std::size_t j = 0; j < 3; ++j) head(t, j) = w(i, t, j), expected(t, j) = A(t, j);
                 parts.push_back(head);
                 want.push_back(expected);
             }
             return CaseResult{{{"X", X}, {"W_Q", p.W_Q}, {"W_K", p.W_K}, {"mask", mask}}, flattened(parts),
                               flattened(want),
                               parts_of({{"output", {3, 4}}, {"weights of head 1", {3, 3}}, {"weights of head 2", {3, 3}}})};
         }},
        // ---- softmax-backward
        {"softmax-backward", "two rows, and the Jacobian",
         "dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik), row by row; J = diag(p) - p p^T",
         {},
         [] {
             const Mat P = {{0.2, 0.3, 0.5}, {0.6, 0.4, 0.0}}, dP = {{1.0, -2.0, 0.5}, {0.3, 0.3, 9.0}};
             const Mat dS = shaped(nn::softmax_rows_backward(P, dP), 2, 3, "nn::softmax_rows_backward(P, dP) returned");
             const Mat J = shaped(nn::softmax_jacobian(Vec{0.2, 0.3, 0.5}), 3, 3, "nn::softmax_jacobian(p) returned");
             Mat actual = xt::empty<double>({std::size_t{5}, std::size_t{3}}), expected = actual;
             for (std::size_t i = 0; i < 2; ++i) {
                 long double dot = 0.0L;
                 for (std::size_t k = 0; k < 3; ++k) dot += static_cast<long double>(P(i, k)) * dP(i, k);
                 for (std::size_t j = 0; j < 3; ++j) {
                     expected(i, j) = static_cast<double>(P(i, j) * (dP(i, j) - dot));
                     actual(i, j) = dS(i, j);
                 }
             }
             const Vec p = {0.2, 0.3, 0.5};
             for (std::size_t j = 0; j < 3; ++j)
                 for (std::size_t k = 0; k < 3; ++k) {
                     expected(2 + j, k) = (j == k ? p(j) : 0.0) - p(j) * p(k);
                     actual(2 + j, k) = J(j, k);
                 }
             return CaseResult{{{"P", P}, {"dP", dP}, {"p (for J)", p}}, actual, expected,
                               parts_of({{"dS = softmax_rows_backward(P, dP)", {2, 3}}, {"J = softmax_jacobian(p)", {3, 3}}})};
         }},
        {"softmax-backward", "masked entries get +0, not -0",
         "dS_ij = +0 exactly where P_ij = 0 (a masked entry): P * (dP - D) gives -0 there when dP_ij < D_i, "
         "and -0 compares equal to 0, so the rows after dS hold 1 wherever dS_ij is -0 (its sign bit set) "
         "and must be all 0",
         {},
         [] {
             const Mat P = {{0.5, 0.0, 0.5}, {0.0, 0.0, 1.0}}, dP = {{1.0, -3.0, 2.0}, {-1.0, 0.5, 2.0}};
             const Mat dS = shaped(nn::softmax_rows_backward(P, dP), 2, 3, "nn::softmax_rows_backward(P, dP) returned");
             Mat actual = xt::empty<double>({std::size_t{4}, std::size_t{3}}), expected = actual;
             for (std::size_t i = 0; i < 2; ++i) {
                 long double dot = 0.0L;
                 for (std::size_t k = 0; k < 3; ++k) dot += static_cast<long double>(P(i, k)) * dP(i, k);
                 for (std::size_t j = 0; j < 3; ++j) {
                     expected(i, j) = P(i, j) == 0.0 ? 0.0 : static_cast<double>(P(i, j) * (dP(i, j) - dot));
                     actual(i, j) = dS(i, j);
                     expected(2 + i, j) = 0.0;
                     actual(2 + i, j) = dS(i, j) == 0.0 && std::signbit(dS(i, j)) ? 1.0 : 0.0;
                 }
             }
             return CaseResult{{{"P", P}, {"dP", dP}}, actual, expected,
                               parts_of({{"dS", {2, 3}}, {"-0 in dS (1 where dS_ij is -0)", {2, 3}}})};
         }},
        // ---- unrolled-weights
        {"unrolled-weights", "T = 3, two features",
         "a_{t,0} = prod u_j and a_{t,i} = (1 - u_i) prod_{j=i+1..t} u_j: the recurrence h_t = u_t h_{t-1} + "
         "(1 - u_t) h~_t, run on one unit input at a time, must give the same weights",
         {},
         [] {
             const Mat u = {{0.9, 0.2}, {0.5, 0.7}, {0.3, 0.6}};
             const std::size_t T = 3, d = 2;
             const auto a =
                 shaped_as(nn::unrolled_weights(u), Shape{2, 3, 4}, "nn::unrolled_weights(u) (d x T x T+1) returned");
             Mat actual = xt::empty<double>({d * T, T + 1}), expected = actual;
             for (std::size_t k = 0; k < d; ++k)
                 for (std::size_t source = 0; source <= T; ++source) {
                     // h_0 = 1 when source is 0, else h~_source = 1; every other input 0
                     long double h = source == 0 ? 1.0L : 0.0L;
                     for (std::size_t t = 1; t <= T; ++t) {
                         const long double candidate = t == source ? 1.0L : 0.0L;
                         h = u(t - 1, k) * h + (1.0L - u(t - 1, k)) * candidate;
                         expected(k * T + t - 1, source) = static_cast<double>(h);
                         actual(k * T + t - 1, source) = a(k, t - 1, source);
                     }
                 }
             return CaseResult{{{"update gates u (T x d)", u}}, actual, expected};
         }},
        // ---- attention-backward
        {"attention-backward", "d_v != d_k, against central differences",
         "dQ = dS K / sqrt(d_k), dK = dS^T Q / sqrt(d_k), dV = P^T dO, with dS the softmax's backward of "
         "dP = dO V^T; for L = sum dO * O, checked against (L(x + h) - L(x - h)) / 2h in long double; then "
         "the fields dP and dS themselves (the lessons read them), against their equations",
         {"softmax-backward"},
         [] {
             const Mat Q = {{0.5, -1.0, 0.3}, {1.2, 0.4, -0.7}};
             const Mat K = {{0.2, 0.9, -0.4}, {-1.1, 0.3, 0.6}, {0.7, -0.2, 1.0}};
             const Mat V = {{1.0, -0.5}, {0.3, 2.0}, {-1.2, 0.8}}, G = {{0.6, -1.0}, {1.5, 0.25}};
             // the forward from the equation, so that this case needs no other exercise
             nn::AttentionResult forward;
             forward.scores = scaled_scores_oracle(Q, K);
             forward.weights = softmax_rows_oracle(forward.scores);
             forward.output = product(forward.weights, V);
             const nn::AttentionGrads g = nn::scaled_dot_product_attention_backward(Q, K, V, forward, G);
             const Mat dQ = central_differences([&](const Mat& X) { return attention_loss(X, K, V, G); }, Q);
             const Mat dK = central_differences([&](const Mat& X) { return attention_loss(Q, X, V, G); }, K);
             const Mat dV = central_differences([&](const Mat& X) { return attention_loss(Q, K, X, G); }, V);
             // the intermediate gradients from their equations: dP = dO V^T, dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik)
             const Mat dP = product(G, transpose_of(V));
             Mat dS = xt::empty<double>({std::size_t{2}, std::size_t{3}});
             for (std::size_t i = 0; i < 2; ++i) {
                 long double D = 0.0L;
                 for (std::size_t k = 0; k < 3; ++k) D += static_cast<long double>(forward.weights(i, k)) * dP(i, k);
                 for (std::size_t j = 0; j < 3; ++j) dS(i, j) = static_cast<double>(forward.weights(i, j) * (dP(i, j) - D));
             }
             return CaseResult{{{"Q", Q}, {"K", K}, {"V", V}, {"dO", G}},
                               flattened({shaped(g.dQ, 2, 3, "dQ is"), shaped(g.dK, 3, 3, "dK is"),
                                          shaped(g.dV, 3, 2, "dV is"), shaped(g.dP, 2, 3, "dP is"),
                                          shaped(g.dS, 2, 3, "dS is")}),
                               flattened({dQ, dK, dV, dP, dS}),
                               parts_of({{"dQ", {2, 3}}, {"dK", {3, 3}}, {"dV", {3, 2}}, {"dP = dO V^T", {2, 3}},
                                         {"dS (the scores' gradient)", {2, 3}}})};
         },
         fd_tolerance},
        // ---- gru-step-backward
        {"gru-step-backward", "one step, against central differences",
         "dx, dh_{t-1} (with the direct z * dh), dU_h (from r * h_{t-1}, not h_{t-1}) and every other weight's "
         "and bias's gradient, each added to what the gradients held before (here 1), for L = dh . h_t; the "
         "result is dx, dh_{t-1}, then dW, dU, db of z, r and h one after another, checked against central "
         "differences of the step in long double",
         {},
         [] {
             const nn::GruParams p = small_gru();
             const Vec x = {1.0, -0.5, 2.0}, h = {0.3, -0.8}, dh = {0.7, -1.3};
             const auto loss = [&](const nn::GruParams& q, const Vec& xx, const Vec& hh) {
                 const Mat step = gru_oracle(q, xx, hh);
                 return static_cast<long double>(dh(0)) * step(3, 0) + static_cast<long double>(dh(1)) * step(3, 1);
             };
             // the forward from the equation, so that this case needs no other exercise
             const Mat o = gru_oracle(p, x, h);
             nn::GruStep step;
             step.update_gate = Vec{o(0, 0), o(0, 1)};
             step.reset_gate = Vec{o(1, 0), o(1, 1)};
             step.candidate = Vec{o(2, 0), o(2, 1)};
             step.state = Vec{o(3, 0), o(3, 1)};
             nn::GruGrads grads = nn::zero_gru_grads(p);
             // "added to": what the gradients held before, 1 in every entry of the nine
             for (Mat* m : {&grads.dW_z, &grads.dU_z, &grads.dW_r, &grads.dU_r, &grads.dW_h, &grads.dU_h}) *m += 1.0;
             for (Vec* v : {&grads.db_z, &grads.db_r, &grads.db_h}) *v += 1.0;
             const nn::GruStepGrads g = nn::gru_step_backward(p, x, h, step, dh, grads);
             const Mat dx = central_differences([&](const Mat& X) { return loss(p, Vec(xt::row(X, 0)), h); }, as_row(x));
             const Mat dh_prev =
                 central_differences([&](const Mat& X) { return loss(p, x, Vec(xt::row(X, 0))); }, as_row(h));
             const auto weight = [&](Mat nn::GruParams::*w) {
                 const Mat numeric = central_differences(
                     [&](const Mat& X) {
                         nn::GruParams q = p;
                         q.*w = X;
                         return loss(q, x, h);
                     },
                     p.*w);
                 return Mat(numeric + 1.0);
             };
             const auto bias = [&](Vec nn::GruParams::*b) {
                 const Mat numeric = central_differences(
                     [&](const Mat& X) {
                         nn::GruParams q = p;
                         q.*b = xt::row(X, 0);
                         return loss(q, x, h);
                     },
                     as_row(p.*b));
                 return Mat(numeric + 1.0);
             };
             return CaseResult{{{"x_t", x}, {"h_{t-1}", h}, {"dL/dh_t", dh}},
                               flattened({shaped(as_row(g.dx), 1, 3, "dx (as a row) is"),
                                          shaped(as_row(g.dh_prev), 1, 2, "dh_prev (as a row) is"),
                                          shaped(grads.dW_z, 2, 3, "dW_z is"), shaped(grads.dU_z, 2, 2, "dU_z is"),
                                          shaped(as_row(grads.db_z), 1, 2, "db_z (as a row) is"),
                                          shaped(grads.dW_r, 2, 3, "dW_r is"), shaped(grads.dU_r, 2, 2, "dU_r is"),
                                          shaped(as_row(grads.db_r), 1, 2, "db_r (as a row) is"),
                                          shaped(grads.dW_h, 2, 3, "dW_h is"), shaped(grads.dU_h, 2, 2, "dU_h is"),
                                          shaped(as_row(grads.db_h), 1, 2, "db_h (as a row) is")}),
                               flattened({dx, dh_prev, weight(&nn::GruParams::W_z), weight(&nn::GruParams::U_z),
                                          bias(&nn::GruParams::b_z), weight(&nn::GruParams::W_r),
                                          weight(&nn::GruParams::U_r), bias(&nn::GruParams::b_r),
                                          weight(&nn::GruParams::W_h), weight(&nn::GruParams::U_h),
                                          bias(&nn::GruParams::b_h)}),
                               parts_of({{"dx", {1, 3}}, {"dh_prev", {1, 2}}, {"dW_z", {2, 3}}, {"dU_z", {2, 2}},
                                         {"db_z", {1, 2}}, {"dW_r", {2, 3}}, {"dU_r", {2, 2}}, {"db_r", {1, 2}},
                                         {"dW_h", {2, 3}}, {"dU_h", {2, 2}}, {"db_h", {1, 2}}})};
         },
         fd_tolerance},
        // ---- adam-step
        {"adam-step", "two steps on three weights",
         "the bias correction m / (1 - b1^t), v / (1 - b2^t), g^2 (not g) in v, and a step against the gradient; "
         "m and v as they are left for the next step (the moments themselves, not their bias-corrected m_hat "
         "and v_hat): theta, m and v after each step",
         {},
         [] {
             const nn::AdamSettings s{0.1, 0.9, 0.999, 1e-8};
             const Mat g = {{0.5, -2.0, 0.0}, {0.25, 4.0, 0.0}};
             std::vector<double> theta = {1.0, -1.0, 0.5}, m(3, 0.0), v(3, 0.0);
             std::vector<long double> w = {1.0L, -1.0L, 0.5L}, mm(3, 0.0L), vv(3, 0.0L);
             // rows 0-1 theta after steps 1 and 2, rows 2-3 m, rows 4-5 v
             Mat actual = xt::empty<double>({std::size_t{6}, std::size_t{3}}), expected = actual;
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
                     actual(t, k) = theta[k], actual(2 + t, k) = m[k], actual(4 + t, k) = v[k];
                     expected(t, k) = static_cast<double>(w[k]);
                     expected(2 + t, k) = static_cast<double>(mm[k]), expected(4 + t, k) = static_cast<double>(vv[k]);
                 }
             }
             return CaseResult{{{"g (one row per step; lr 0.1)", g}, {"theta at the start", Vec{1.0, -1.0, 0.5}}},
                               actual, expected,
                               parts_of({{"theta (a row per step)", {2, 3}}, {"m (a row per step)", {2, 3}},
                                         {"v (a row per step)", {2, 3}}})};
         }},
        // ---- online-softmax
        {"online-softmax", "logits of +-1e3",
         "exp taken before subtracting the running maximum: exp(1000) is inf, and inf / inf is NaN",
         {},
         [] {
             const Mat S = {{-1000.0, 999.0, 1000.0, 1000.5}, {710.0, -710.0, 709.0, 0.0}};
             return CaseResult{{{"S", S}}, nn::online_softmax_rows(S), softmax_rows_oracle(S)};
         }},
        {"online-softmax", "the maximum last",
         "a running sum that is not rescaled when the maximum grows: l keeps terms measured against an old, "
         "smaller maximum, and every weight comes out too small",
         {},
         [] {
             const Mat S = {{0.5, 1.0, -2.0, 3.0, 9.0}, {1.0, 2.0, 3.0, 4.0, 5.0}};
             return CaseResult{{{"S", S}}, nn::online_softmax_rows(S), softmax_rows_oracle(S)};
         }},
        {"online-softmax", "one entry, and ties",
         "T = 1 (a single logit gets weight 1) and equal logits (equal weights, no rescale ever); and "
         "online_softmax of a vector whose maximum comes last (row 3), held to the same rescale as the rows",
         {},
         [] {
             const Vec one = nn::online_softmax(Vec{-3.5});
             const Mat ties = nn::online_softmax_rows(Mat{{2.0, 2.0, 2.0, 2.0}});
             const Vec growing = {0.5, -1.0, 3.0, 8.0};
             const Vec late = shaped_as(nn::online_softmax(growing), Shape{4}, "nn::online_softmax(x) returned");
             const std::vector<double> late_expected = softmax_oracle({0.5, -1.0, 3.0, 8.0});
             Mat actual = xt::zeros<double>({std::size_t{3}, std::size_t{4}}), expected = actual;
             actual(0, 0) = one.size() == 1 ? one(0) : std::nan("");
             expected(0, 0) = 1.0;
             for (std::size_t j = 0; j < 4; ++j) actual(1, j) = ties(0, j), expected(1, j) = 0.25;
             for (std::size_t j = 0; j < 4; ++j) actual(2, j) = late(j), expected(2, j) = late_expected[j];
             return CaseResult{{{"x (row 1)", Vec{-3.5}}, {"S (row 2)", Mat{{2.0, 2.0, 2.0, 2.0}}}, {"x (row 3)", growing}},
                               actual, expected};
         }},
        {"online-softmax", "a row of all -inf",
         "exp(m_{j-1} - m_j) while m is still -inf: exp(-inf - (-inf)) is NaN; a row of all -inf must give "
         "zeros, and a row that starts with -inf its ordinary weights",
         {},
         [] {
             const Mat S = {{-inf, -inf, -inf}, {-inf, -inf, 3.0}};
             return CaseResult{{{"S", S}}, nn::online_softmax_rows(S), softmax_rows_oracle(S)};
         }},
        {"online-softmax", "+inf entries",
         "entries of +inf share the weight equally, as in nn::softmax (two of them get 1/2 each, not 1 each), "
         "and the others get 0: exp(+inf - (+inf)) is NaN, so a running sum that meets +inf needs its own rule",
         {},
         [] {
             const Mat S = {{inf, 1.0, inf, -inf}, {2.0, -1.0, 0.5, inf}, {inf, inf, inf, inf}};
             return CaseResult{{{"S", S}}, nn::online_softmax_rows(S), softmax_rows_oracle(S)};
         }},
        {"online-softmax", "a NaN entry",
         "a NaN entry makes its whole row NaN (the starter's contract, as the reference does): NaN first, "
         "where max(-inf, NaN) may stay -inf and the NaN is skipped like a -inf, and NaN beside +inf; "
         "a row without NaN keeps its weights",
         {},
         [] {
             const double not_a_number = std::numeric_limits<double>::quiet_NaN();
             const Mat S = {{not_a_number, 1.0, 2.0}, {0.5, inf, not_a_number}, {1.0, 2.0, 3.0}};
             Mat expected = softmax_rows_oracle(Mat{{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {1.0, 2.0, 3.0}});
             for (std::size_t i = 0; i < 2; ++i)
                 for (std::size_t j = 0; j < 3; ++j) expected(i, j) = not_a_number;
             return CaseResult{{{"S", S}}, nn::online_softmax_rows(S), expected};
         }},
        {"online-softmax", "the normaliser's table",
         "online_normalizer_steps: row j holds m_j and l_j after entry j, from m_0 = -inf and l_0 = 0; while "
         "every entry is -inf, l stays 0 (not NaN), and l is rescaled by exp(m_{j-1} - m_j) when m grows",
         {},
         [] {
             const Vec x = {-inf, 1.0, 3.0, 2.0};
             Mat expected = xt::empty<double>({std::size_t{4}, std::size_t{2}});
             long double m = -std::numeric_limits<long double>::infinity(), l = 0.0L;
             for (std::size_t j = 0; j < 4; ++j) {
                 // the sum of exp(x_k - m_j) over k <= j, from the definition
                 m = std::max(m, static_cast<long double>(x(j)));
                 l = 0.0L;
                 if (m != -std::numeric_limits<long double>::infinity())
                     for (std::size_t k = 0; k <= j; ++k) l += std::exp(static_cast<long double>(x(k)) - m);
                 expected(j, 0) = static_cast<double>(m), expected(j, 1) = static_cast<double>(l);
             }
             const Mat actual = shaped(nn::online_normalizer_steps(x), 4, 2, "nn::online_normalizer_steps(x) returned");
             return CaseResult{{{"x", x}}, actual, expected};
         }},
        // ---- flash-backward-tile
        {"flash-backward-tile", "the whole matrix as one tile, D = 0",
         "the sign of dS = P * (dP - D): D - dP flips every entry of dQ and dK. D is given as 0 here (a dO "
         "orthogonal to every output), so that only the sign shows; the result is dQ, dK, dV one after another",
         {},
         [] {
             return flash_tile_case({Mat{{0.5, -1.0}, {1.2, 0.4}}, Mat{{0.2, 0.9}, {-1.1, 0.3}, {0.7, -0.2}},
                                     Mat{{1.0, -0.5, 0.25}, {0.3, 2.0, -1.0}, {-1.2, 0.8, 0.5}},
                                     Mat{{0.6, -1.0, 0.4}, {1.5, 0.25, -0.75}}, nn::TileSpan{0, 2, 0, 3}, false, 0.0,
                                     Vec{0.0, 0.0}});
         }},
        {"flash-backward-tile", "the whole matrix as one tile",
         "D_i = dO_i . o_i subtracted from every dP_ij (dS = P * dP without it misses the softmax's row term "
         "P_ij D_i); d_v != d_k (3 and 2)",
         {},
         [] {
             return flash_tile_case({Mat{{0.5, -1.0}, {1.2, 0.4}}, Mat{{0.2, 0.9}, {-1.1, 0.3}, {0.7, -0.2}},
                                     Mat{{1.0, -0.5, 0.25}, {0.3, 2.0, -1.0}, {-1.2, 0.8, 0.5}},
                                     Mat{{0.6, -1.0, 0.4}, {1.5, 0.25, -0.75}}, nn::TileSpan{0, 2, 0, 3}, false, 0.0});
         }},
        {"flash-backward-tile", "a tile of some of the keys, added to what is there",
         "the weights recomputed from the saved L, P_ij = exp(s_ij - L_i), where the tile's own softmax "
         "(normalised over its 2 of 4 keys) is too large; the tile's share added to the gradients (which hold "
         "0.5 everywhere before the call), not assigned; nothing written outside queries 2-3 and keys 2-3",
         {},
         [] {
             return flash_tile_case({Mat{{0.5, -1.0}, {1.2, 0.4}, {-0.3, 0.8}}, Mat{{0.2, 0.9}, {-1.1, 0.3},
                                                                                   {0.7, -0.2}, {0.4, 1.1}},
                                     Mat{{1.0, -0.5, 0.25}, {0.3, 2.0, -1.0}, {-1.2, 0.8, 0.5}, {0.6, 0.1, -0.9}},
                                     Mat{{0.6, -1.0, 0.4}, {1.5, 0.25, -0.75}, {-0.5, 1.25, 0.3}},
                                     nn::TileSpan{1, 2, 1, 2}, false, 0.5});
         }},
        {"flash-backward-tile", "a causal tile across the diagonal, away from the start",
         "the mask on positions, key first_key + c seen by query first_query + a when first_key + c <= "
         "first_query + a: queries 3-4 against keys 2-4 (T = 4) hide only key 4 from query 3, where the tile's "
         "own indices (c <= a) hide keys 3 and 4 and no mask hides none",
         {},
         [] {
             return flash_tile_case({Mat{{0.5, -1.0}, {1.2, 0.4}, {-0.3, 0.8}, {0.9, 0.1}},
                                     Mat{{0.2, 0.9}, {-1.1, 0.3}, {0.7, -0.2}, {0.4, 1.1}},
                                     Mat{{1.0, -0.5, 0.25}, {0.3, 2.0, -1.0}, {-1.2, 0.8, 0.5}, {0.6, 0.1, -0.9}},
                                     Mat{{0.6, -1.0, 0.4}, {1.5, 0.25, -0.75}, {-0.5, 1.25, 0.3}, {0.2, -0.4, 1.0}},
                                     nn::TileSpan{2, 2, 1, 3}, true, 0.0});
         }},
        // ---- layer-norm
        // Each case is blind to the mistakes of the cases after it, so that a mistake fails at its own
        // case: the first two use circulant inputs (every column holds the same numbers as every row, so
        // normalising columns gives the same result) and the first has eps = 0 (where it sits cannot matter).
        {"layer-norm", "the biased variance, d = 4",
         "the variance over the d entries of a row divided by d, not by d - 1 (the unbiased estimate): "
         "with d = 4 every output is off by a factor sqrt(4 / 3)",
         {},
         [] {
             const Mat X = {{1.0, 2.0, 3.0, 6.0}, {6.0, 1.0, 2.0, 3.0}, {3.0, 6.0, 1.0, 2.0}, {2.0, 3.0, 6.0, 1.0}};
             const Vec g = {1.5, 0.5, 1.0, 2.0}, b = {0.1, 0.0, -0.3, 0.2};
             return CaseResult{{{"X", X}, {"g", g}, {"b", b}, {"eps", Vec{0.0}}},
                               nn::layer_norm(X, g, b, 0.0).output, layer_norm_oracle(X, g, b, 0.0)};
         }},
        {"layer-norm", "an almost constant row",
         "eps inside the square root, (x - mu) / sqrt(sigma^2 + eps), not (x - mu) / (sqrt(sigma^2) + eps): "
         "they differ where sigma^2 is near eps (here sigma^2 = 5e-7, eps = 1e-5)",
         {},
         [] {
             const Mat X = {{1.0, 1.001, 0.999, 1.0}, {1.0, 1.0, 1.001, 0.999}, {0.999, 1.0, 1.0, 1.001},
                            {1.001, 0.999, 1.0, 1.0}};
             const Vec g = {2.0, 0.5, 1.0, 1.5}, b = {0.1, -0.2, 0.3, 0.0};
             return CaseResult{{{"X", X}, {"g", g}, {"b", b}, {"eps", Vec{1e-5}}},
                               nn::layer_norm(X, g, b, 1e-5).output, layer_norm_oracle(X, g, b, 1e-5)};
         }},
        {"layer-norm", "rows, not columns: T = 3, d = 2, and a constant row",
         "the statistics of each row (one token's d features), not of each column (one feature over the "
         "tokens); a constant row gives the bias, not 0 / 0",
         {},
         [] {
             const Mat X = {{1.0, 4.0}, {-3.0, 0.5}, {2.0, 2.0}};
             const Vec g = {1.5, 0.5}, b = {0.25, -1.0};
             return CaseResult{{{"X", X}, {"g", g}, {"b", b}, {"eps", Vec{1e-5}}},
                               nn::layer_norm(X, g, b, 1e-5).output, layer_norm_oracle(X, g, b, 1e-5)};
         }},
        {"layer-norm", "every field: mean, variance, inv_std, normalized",
         "the fields that layer_norm_backward and the block's backward read besides the output: mean mu, the "
         "biased variance sigma^2, inv_std = 1 / sqrt(sigma^2 + eps) (not sqrt(sigma^2 + eps), the standard "
         "deviation) and normalized x^ = (x - mu) inv_std, each row's own; then the output",
         {},
         [] {
             const Mat X = {{0.5, -1.5, 2.0}, {3.0, 2.5, -0.5}};
             const Vec g = {1.2, 0.8, -0.5}, b = {0.0, 0.3, -0.1};
             const double eps = 1e-3;
             const nn::LayerNormResult f = nn::layer_norm(X, g, b, eps);
             const nn::LayerNormResult want = layer_norm_forward_oracle(X, g, b, eps);
             return CaseResult{{{"X", X}, {"g", g}, {"b", b}, {"eps", Vec{eps}}},
                               flattened({shaped(as_row(f.mean), 1, 2, "nn::layer_norm's mean (as a row) is"),
                                          shaped(as_row(f.variance), 1, 2, "its variance (as a row) is"),
                                          shaped(as_row(f.inv_std), 1, 2, "its inv_std (as a row) is"),
                                          shaped(f.normalized, 2, 3, "its normalized is"),
                                          shaped(f.output, 2, 3, "its output is")}),
                               flattened({as_row(want.mean), as_row(want.variance), as_row(want.inv_std),
                                          want.normalized, want.output}),
                               parts_of({{"mean", {1, 2}}, {"variance", {1, 2}}, {"inv_std", {1, 2}},
                                         {"normalized", {2, 3}}, {"output", {2, 3}}})};
         }},
        // ---- layer-norm-backward
        {"layer-norm-backward", "two rows, against central differences",
         "dx = r (dx^ - mean(dx^) - x^ mean(dx^ x^)) with dx^ = dy * g: the mean's path (-mean(dx^)) and the "
         "variance's; dg = sum_t dy_t x^_t, db = sum_t dy_t. dX, dg and db one after another, against "
         "(L(x + h) - L(x - h)) / 2h in long double, then the field dnormalized, dx^ = dy * g",
         {},
         [] {
             return layer_norm_backward_case(Mat{{1.0, -0.5, 2.0, 0.3}, {0.2, 0.9, -1.4, 0.6}}, Vec{1.2, 0.7, 1.0, 0.9},
                                             Vec{0.1, 0.0, -0.3, 0.2}, 1e-5,
                                             Mat{{0.8, 1.1, -0.4, 0.9}, {-0.6, 0.5, 0.7, 1.3}});
         },
         fd_tolerance},
        {"layer-norm-backward", "an almost constant row",
         "r = 1 / sqrt(sigma^2 + eps) with eps inside the root, the same r as the forward's (here sigma^2 is "
         "below eps, so any other r is far off)",
         {},
         [] {
             return layer_norm_backward_case(Mat{{1.0, 1.002, 0.999, 1.001}}, Vec{1.0, 2.0, 0.5, 1.0},
                                             Vec{0.0, 0.0, 0.0, 0.0}, 1e-5, Mat{{0.3, -1.2, 0.8, 0.4}});
         },
         fd_tolerance},
        // ---- pre-ln-block
        {"pre-ln-block", "zero output projections",
         "the residual connections: with W^O = 0, W_2 = 0 and b_2 = 0 both sub-layers give zeros and the block "
         "is exactly the identity, Y = H = X; a missing residual gives zeros (the rows of X have mean 0 and "
         "variance 1, with g = 1, b = 0, eps = 0, so that post-LN wiring, LN_2(LN_1(X)) = X here, passes "
         "this case and fails the next)",
         {"layer-norm", "multi-head"},
         [] {
             nn::BlockParams p = small_block();
             p.norm_1 = {xt::ones<double>({std::size_t{4}}), xt::zeros<double>({std::size_t{4}}), 0.0};
             p.norm_2 = p.norm_1;
             p.attention.W_O = xt::zeros<double>({std::size_t{4}, std::size_t{4}});
             p.feed_forward.W_2 = xt::zeros<double>({std::size_t{4}, std::size_t{3}});
             p.feed_forward.b_2 = xt::zeros<double>({std::size_t{4}});
             return pre_ln_case(Mat{{1.0, -1.0, 1.0, -1.0}, {1.0, 1.0, -1.0, -1.0}}, p, nullptr);
         }},
        {"pre-ln-block", "three tokens under the causal mask",
         "the pre-LN wiring H = X + MHA(LN_1(X)), Y = H + FFN(LN_2(H)): the norm inside each branch, the "
         "residual sum outside it (post-LN wiring LN(x + Sublayer(x)) gives other numbers), the mask passed to "
         "the attention; H (residual_1) and Y one after another",
         {"layer-norm", "multi-head"},
         [] {
             const Mat X = {{1.0, -0.5, 0.3, 2.0}, {0.4, 0.8, -1.2, 0.1}, {-0.7, 0.2, 0.9, -0.3}};
             const Mat mask = causal_oracle(3);
             return pre_ln_case(X, small_block(), &mask);
         }},
        {"pre-ln-block", "every field of the block's result",
         "what the block's backward and lesson 11 read besides H and Y: norm_1 (LN_1(X), every field), attention "
         "(MHA(norm_1.output) under the mask, with every head's weights kept), norm_2 (LN_2 of residual_1, not of "
         "X), feed_forward (FFN(norm_2.output)), residual_2 = residual_1 + feed_forward and output = residual_2; "
         "three tokens under the causal mask, all seventeen fields one after another",
         {"layer-norm", "multi-head"},
         [] {
             const Mat X = {{0.8, -1.1, 0.4, 1.5}, {-0.3, 0.6, 1.2, -0.9}, {1.0, 0.1, -0.7, 0.2}};
             const Mat mask = causal_oracle(3);
             return pre_ln_fields_case(X, small_block(), &mask);
         }},
        // ---- cross-attention
        {"cross-attention", "two queries from the decoder, three keys from the encoder",
         "queries from the decoder's Y and keys and values from the encoder's H: with them swapped the result "
         "has T_x = 3 rows, not T_y = 2, and other numbers; the weights are T_y x T_x. Every field of the "
         "MultiHeadResult: the output, the weights, and Concat(head_1, head_2) (the backward reads it)",
         {"multi-head"},
         [] {
             const Mat Y = {{1.0, 0.0, -1.0, 0.5}, {0.2, 0.8, 0.3, -0.4}};
             const Mat H = {{0.5, -0.5, 1.0, 0.0}, {-1.0, 0.3, 0.2, 0.9}, {0.4, 0.6, -0.8, 0.1}};
             return cross_attention_case(Y, H);
         }},
        {"cross-attention", "no mask: the first query reads the last key",
         "a causal mask applied to cross-attention: with T_y = T_x = 3 it fits, and hides keys 2 and 3 from the "
         "first query (weight 0 above the diagonal); cross-attention has no mask",
         {"multi-head"},
         [] {
             const Mat Y = {{0.3, -0.7, 0.9, 0.2}, {-0.5, 0.4, 0.1, 0.8}, {0.6, 0.6, -0.2, -0.9}};
             const Mat H = {{-0.2, 1.0, 0.4, -0.6}, {0.8, -0.3, -0.7, 0.5}, {0.1, 0.2, 0.9, 1.1}};
             return cross_attention_case(Y, H);
         }},
        // ---- warmup-schedule
        {"warmup-schedule", "the first steps, s = 1, 2, 3",
         "the step counted from 1: at s = 1 the rate is d^-0.5 w^-1.5, not 0 (a step counted from 0) nor twice "
         "that (s + 1); d_model = 16, warmup = 4",
         {},
         [] { return warmup_case({1, 2, 3}, 16, 4); }},
        {"warmup-schedule", "the peak and the decay",
         "both branches, min(s^-0.5, s w^-1.5) (not max), meeting at s = warmup, the factor d_model^-0.5 and "
         "the exponents -0.5 and -1.5; d_model = 64, warmup = 10, s = 10, 11, 40, 1000",
         {},
         [] { return warmup_case({10, 11, 40, 1000}, 64, 10); }},
        // ---- kv-cache-step
        {"kv-cache-step", "an empty cache, two new positions",
         "both keys and values kept in the cache, below what it held (the cache must hold 2 rows after the step); "
         "no second 1/sqrt(d_k) (the scale is already in Q); a causal mask (without one the first query reads the "
         "second key). Here T_q = T_k, where both alignments of the mask agree. Every field of the result: the "
         "weights, the output, the cache's K and V, and the scores Q K^T + M (-inf where masked)",
         {"masked-softmax"},
         [] {
             const Mat Q = {{0.9, -0.4}, {0.3, 1.2}}, K = {{0.5, 1.0}, {-1.1, 0.6}};
             const Mat V = {{1.0, -0.5, 0.25}, {-0.75, 2.0, 0.5}};
             return kv_cache_case(xt::zeros<double>({std::size_t{0}, std::size_t{2}}), xt::zeros<double>({std::size_t{0}, std::size_t{3}}), Q, K, V);
         }},
        {"kv-cache-step", "two new queries against a cache of three",
         "a causal mask aligned to the top left (j <= i, the square mask's first rows): query 1 is position 4 of "
         "T_k = 5 and must read keys 1 to 4, query 2 all five, where the top-left mask leaves query 1 key 1 alone "
         "and query 2 keys 1 and 2",
         {"masked-softmax"},
         [] {
             const Mat K_old = {{0.2, -0.7}, {1.0, 0.4}, {-0.6, -0.3}}, V_old = {{0.5, 1.5, -1.0}, {2.0, -0.25, 0.75},
                                                                              {-1.5, 0.5, 1.25}};
             const Mat Q = {{0.8, 0.1}, {-0.5, 0.9}}, K_new = {{0.3, 0.3}, {-0.9, 1.1}};
             const Mat V_new = {{0.0, 1.0, -0.5}, {1.75, -1.25, 0.25}};
             return kv_cache_case(K_old, V_old, Q, K_new, V_new);
         }},
        {"kv-cache-step", "one new query against a cache of four: a decoding step",
         "the new word's query reads all five positions, its own included (a top-left mask leaves it key 1 "
         "alone); the new key and value go last",
         {"masked-softmax"},
         [] {
             const Mat K_old = {{0.4, -0.2}, {-0.8, 0.5}, {0.1, 1.3}, {0.7, 0.6}};
             const Mat V_old = {{1.0, 0.0, -1.0}, {0.5, 0.5, 0.5}, {-0.25, 1.5, 0.75}, {2.0, -1.0, 0.0}};
             return kv_cache_case(K_old, V_old, Mat{{0.6, -1.0}}, Mat{{-0.4, 0.9}}, Mat{{0.25, -0.75, 1.5}});
         }},
        // ---- beam-step
        {"beam-step", "two hypotheses, three words: the best two of all six",
         "scores that add the hypothesis's log-probability to the word's (the word's alone ranks hypothesis 2's "
         "words first) and the best k of all candidates together (the best word of each hypothesis would keep "
         "one of each; both kept here extend hypothesis 1); word 0 is <eos>. Each result: log_prob, finished, "
         "the number of words, the words",
         {},
         [] {
             const std::vector<nn::Hypothesis> beams = {{{3}, -0.5, false}, {{4}, -2.5, false}};
             const Mat log_probs = {{-2.0, -0.9, -1.2}, {-1.5, -0.2, -0.3}};
             return beam_case(beams, log_probs, 0, 2);
         }},
        {"beam-step", "a finished hypothesis is kept as it is",
         "a hypothesis that ended with <eos> is a candidate with its own score and is never extended (its row "
         "of log_probs is NaN here and must not be read), and a word <eos> finishes its hypothesis; k = 3",
         {},
         [] {
             const double nan = std::numeric_limits<double>::quiet_NaN();
             const std::vector<nn::Hypothesis> beams = {{{2, 0}, -1.0, true}, {{1}, -0.7, false}};
             const Mat log_probs = {{nan, nan, nan}, {-0.1, -2.3, -1.6}};
             return beam_case(beams, log_probs, 0, 3);
         }},
        {"beam-step", "sums of logs near -800",
         "log-probabilities compared as sums: exp(-800) underflows to 0, so probabilities multiplied instead "
         "tie every candidate and keep the first ones, not the best",
         {},
         [] {
             const std::vector<nn::Hypothesis> beams = {{{1, 2}, -812.0, false}, {{2, 1}, -790.0, false}};
             const Mat log_probs = {{-0.5, -1.0, -3.0}, {-2.0, -4.0, -1.5}};
             return beam_case(beams, log_probs, 0, 2);
         }},
        // ---- bleu
        {"bleu", "a word said more often than its reference says it",
         "clipped counts: word 5 is three of the candidate's six words and two of the reference's, so it "
         "matches twice, not three times (p_1 = 5/6, not 6/6). Compared: matches, totals and precisions for "
         "n = 1 .. 4",
         {},
         [] { return bleu_case({{{{5, 5, 5, 1, 2, 3}, {5, 1, 2, 3, 5, 4}}}}, bleu_counts); }},
        {"bleu", "a candidate shorter than its reference, and one longer",
         "the brevity penalty exp(1 - r/c) for c <= r: 4 words against 6 give exp(-0.5), where exp(1 - c/r) "
         "gives exp(1/3), above 1; and 1 for c > r (corpus 2). Compared: c, r and BP of each corpus",
         {},
         [] {
             return bleu_case({{{{1, 2, 3, 4}, {1, 2, 3, 4, 5, 6}}}, {{{1, 2, 3, 4, 5}, {1, 2, 3}}}}, bleu_lengths);
         }},
        {"bleu", "four different precisions",
         "the geometric mean of p_1 .. p_4 = 7/8, 5/7, 1/2, 2/5: (1/8)^(1/4) = 0.5946, where their arithmetic "
         "mean is 0.6223; c = r, so BP = 1. Compared: everything",
         {},
         [] { return bleu_case({{{{1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 3, 4, 5, 9, 7, 8}}}}, bleu_everything); }},
        {"bleu", "two sentences: the counts summed before dividing",
         "corpus level: matches, totals and lengths summed over both pairs, then divided (BLEU 0.5286); the "
         "mean of the two sentences' BLEU is 0.3352 (the second has no 4-gram in common: its own BLEU is 0). "
         "Compared: everything",
         {},
         [] {
             return bleu_case({{{{1, 2, 3, 4, 5}, {1, 2, 3, 4, 5, 6, 7}}, {{8, 9, 10, 11, 12, 13}, {8, 9, 10, 14, 12, 13}}}},
                              bleu_everything);
         }},
        {"bleu", "no 4-gram in common, a candidate of three words, an empty candidate",
         "BLEU 0 when a precision is 0, not log 0 = -inf or NaN: no 4-gram matched (corpus 1), no 4-gram at all "
         "(p_4 = 0 / 0 is 0, corpus 2), and an empty candidate (every p_n 0, BP 0, corpus 3). Compared: "
         "everything",
         {},
         [] {
             return bleu_case({{{{1, 2, 3, 4, 5}, {1, 2, 3, 9, 4, 5}}}, {{{1, 2, 3}, {1, 2, 3}}}, {{{}, {1, 2, 3}}}},
                              bleu_everything);
         }},
        // ---- rope
        {"rope", "the frequencies, d = 8",
         "theta_i = 10000^(-2i/d) with i the pair's index from 0: 1, 0.1, 0.01, 0.001 (pair 0 turns by one radian "
         "a position); the index off by one gives 0.1 first, i/d instead of 2i/d 10000^(-1/8) = 0.316",
         {},
         [] {
             const Vec theta = shaped_as(nn::rotary_frequencies(8), Shape{4}, "nn::rotary_frequencies(8) returned");
             Vec expected = xt::empty<double>({std::size_t{4}});
             for (std::size_t i = 0; i < 4; ++i)
                 expected(i) = static_cast<double>(1.0L / std::pow(10000.0L, 2.0L * static_cast<long double>(i) / 8.0L));
             return CaseResult{{{"d", Vec{8.0}}}, theta, expected};
         }},
        {"rope", "interleaved pairs at positions 3, 0 and 10, d = 6",
         "pair i = (x_2i, x_2i+1) turned by p theta_i with p = positions[t] (not the row's index t), counter-clockwise: "
         "(x cos a - y sin a, x sin a + y cos a), not the other way; three pairs, so a frequency off by one pair, "
         "or pairs taken as (x_i, x_i+d/2), move every row but the one at position 0, which stays as it is",
         {},
         [] {
             const Mat X = {{1.0, 0.5, -0.8, 0.3, 0.6, -1.2}, {-0.4, 0.9, 0.7, -1.1, 0.2, 0.5}, {0.8, -0.6, 1.3, 0.4, -0.9, 0.1}};
             return rope_case(X, {3, 0, 10}, nn::RotaryLayout::interleaved);
         }},
        {"rope", "halves at positions 2 and 5, d = 6",
         "RotaryLayout::halves: pair i = (x_i, x_i+d/2), GPT-NeoX's and LLaMA's rotate_half, with pair i's frequency "
         "theta_i as in the interleaved layout; neighbouring columns taken as pairs here turn the wrong coordinates",
         {},
         [] {
             const Mat X = {{0.7, -0.3, 1.1, 0.4, -0.5, 0.9}, {-1.0, 0.6, 0.2, 0.8, 1.4, -0.7}};
             return rope_case(X, {2, 5}, nn::RotaryLayout::halves);
         }},
        // ---- alibi-bias
        {"alibi-bias", "1, 2, 8 and 16 heads: the geometric sequence",
         "for h a power of two, m_k = 2^(-8k/h) for k = 1 .. h (8 heads: 1/2, 1/4, ..., 1/256): k counted from 1, "
         "not 0 (a slope of 1), and the exponent -8k/h, not -k/h",
         {},
         [] { return alibi_slopes_case({1, 2, 8, 16}); }},
        {"alibi-bias", "6, 3 and 12 heads: not powers of two",
         "the slopes of the largest power of two n below h, then every other slope of 2n heads: 6 heads get 1/4, "
         "1/16, 1/64, 1/256, 1/2, 1/8; the geometric sequence 2^(-8k/6) starts at 0.397 and is not ALiBi's",
         {},
         [] { return alibi_slopes_case({6, 3, 12}); }},
        {"alibi-bias", "the bias and its causal form, T = 4, m = 0.3",
         "B_ij = -m (i - j) with i the query (row) and j the key (column): 0 on the diagonal, -m one key back, +m "
         "one key ahead; not m (i - j), nor its transpose. The causal form is -inf exactly above the diagonal (not "
         "on it, and not a large negative number such as -1e9) and B on and below it",
         {},
         [] { return alibi_bias_case(4, 0.3); }},
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
    // the part of `a` that `p` names, as its own tensor; empty when `a` is too short for it
    const auto part = [](const Array& a, const CasePart& p) {
        std::size_t n = 1;
        for (std::size_t extent : p.shape) n *= extent;
        Array out = xt::empty<double>(p.shape);
        if (p.offset + n > a.size()) return Array{};
        std::copy(a.begin() + static_cast<std::ptrdiff_t>(p.offset),
                  a.begin() + static_cast<std::ptrdiff_t>(p.offset + n), out.begin());
        return out;
    };
    bool shown = false, reported = false;  // the parts shown; a part's mismatch reported
    if (!r.parts.empty() && r.actual.size() == r.expected.size()) {
        shown = true;
        for (const CasePart& p : r.parts) {
            const Array actual = part(r.actual, p), expected = part(r.expected, p);
            if (actual.size() == 0 || expected.size() == 0) continue;
            const std::string table = render_side_by_side(actual, expected, tol);
            if (!table.empty()) out += fmt::format("  the result, {} {}:\n{}", p.name, shape_string(p.shape), table);
            const TensorDiff pd = compare_tensor(actual, expected, tol);  // indices within the part
            if (!pd.ok()) out += tensor_diff_report(pd, tol) + "\n";
            reported = reported || !pd.ok();
        }
    }
    const std::string table = shown ? std::string() : render_side_by_side(r.actual, r.expected, tol);
    if (!table.empty()) out += "  the result:\n" + table;
    if (!reported) out += tensor_diff_report(d, tol) + "\n";
    return out;
}

}  // namespace

namespace {

// How one case stopped when it gave no result: an exercise not done yet, memory, or any exception.
UnitOutcome outcome_of_exception() {
    UnitOutcome o;
    try {
        throw;
    } catch (const ExerciseNotDone& e) {
        o.kind = UnitOutcome::Kind::not_done;
        o.text = e.exercise;
        o.function = e.function;
    } catch (const WrongShape& e) {
        o.kind = UnitOutcome::Kind::wrong_shape;
        o.text = e.what();
    } catch (const std::bad_alloc&) {
        o.kind = UnitOutcome::Kind::out_of_memory;
    } catch (const std::exception& e) {
        o.kind = UnitOutcome::Kind::threw;
        o.text = e.what();
    } catch (...) {
        o.kind = UnitOutcome::Kind::threw;
        o.text = "an exception that is not a std::exception";
    }
    return o;
}

// Adds case `c`'s outcome to `check`. `reference` holds the case's inputs and expected value (from
// this process) when the outcome is a value.
void judge_case(UnitCheck& check, const UnitCase& c, const UnitOutcome& o, const CaseResult* reference,
                const Tolerance& tol) {
    ++check.cases;
    if (!check.failed_case.empty() || !check.not_done.empty()) return;
    switch (o.kind) {
        case UnitOutcome::Kind::value: {
            const Tolerance used = c.tolerance ? *c.tolerance : tol;
            const TensorDiff d = compare_tensor(o.actual, reference->expected, used);
            if (d.ok()) {
                ++check.passed;
                return;
            }
            CaseResult shown = *reference;
            shown.actual = o.actual;
            check.report = case_report(c, shown, d, used);
            break;
        }
        case UnitOutcome::Kind::not_done:
            check.not_done = o.text;
            check.not_done_function = o.function;
            return;
        case UnitOutcome::Kind::out_of_memory:
            check.out_of_memory = true;
            check.report = fmt::format("unit case '{}' of exercise {}: the function ran out of memory "
                                       "(std::bad_alloc) on inputs of a few numbers\n",
                                       c.name, c.exercise);
            break;
        case UnitOutcome::Kind::threw:
            check.report = fmt::format("unit case '{}' of exercise {}: it catches {}.\n  the function threw: {}\n",
                                       c.name, c.exercise, c.catches, o.text);
            break;
        case UnitOutcome::Kind::wrong_shape:
            // the shape first: a report cut short (grade keeps 500 characters) still says it
            check.report = fmt::format("unit case '{}' of exercise {}: the shape is wrong: {}\n  it catches {}.\n",
                                       c.name, c.exercise, o.text, c.catches);
            break;
    }
    check.failed_case = c.name;
    check.calls = c.calls;
}

}  // namespace

UnitCheck check_unit_cases(const std::string& id, const Tolerance& tol) {
    UnitCheck check;
    for (const auto& c : unit_cases()) {
        if (c.exercise != id) continue;
        if (!check.failed_case.empty() || !check.not_done.empty()) {
            ++check.cases;
            continue;
        }
        try {
            const CaseResult r = c.run();
            judge_case(check, c, UnitOutcome{UnitOutcome::Kind::value, r.actual, "", ""}, &r, tol);
        } catch (...) {
            judge_case(check, c, outcome_of_exception(), nullptr, tol);
        }
    }
    return check;
}

std::vector<UnitOutcome> observe_unit_cases(const std::string& id) {
    std::vector<UnitOutcome> out;
    for (const auto& c : unit_cases()) {
        if (c.exercise != id) continue;
        try {
            out.push_back(UnitOutcome{UnitOutcome::Kind::value, c.run().actual, "", ""});
        } catch (...) {
            out.push_back(outcome_of_exception());
        }
    }
    return out;
}

UnitCheck judge_unit_cases(const std::string& id, const std::vector<UnitOutcome>& observed, const Tolerance& tol) {
    UnitCheck check;
    std::size_t i = 0;
    for (const auto& c : unit_cases()) {
        if (c.exercise != id) continue;
        UnitOutcome o{UnitOutcome::Kind::threw, {}, "the program ended before this case gave a result", ""};
        if (i < observed.size()) o = observed[i];
        ++i;
        if (!check.failed_case.empty() || !check.not_done.empty()) {
            ++check.cases;
            continue;
        }
        // the expected value and the inputs come from this process: the reference and the oracle
        const std::optional<CaseResult> reference =
            o.kind == UnitOutcome::Kind::value ? std::optional<CaseResult>(c.run()) : std::nullopt;
        judge_case(check, c, o, reference ? &*reference : nullptr, tol);
    }
    return check;
}

std::vector<std::string> unit_case_names(const std::string& id) {
    std::vector<std::string> out;
    for (const auto& c : unit_cases())
        if (c.exercise == id) out.push_back(c.name);
    return out;
}

std::vector<std::string> unit_case_calls(const std::string& id) {
    std::vector<std::string> out;
    for (const auto& c : unit_cases())
        if (c.exercise == id)
            for (const auto& other : c.calls)
                if (std::find(out.begin(), out.end(), other) == out.end()) out.push_back(other);
    return out;
}

}  // namespace attn
