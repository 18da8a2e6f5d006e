// Output-only attention in blocks (see nn/fast_attention.hpp). T_q = queries, T_k = keys,
// d_k = key width, d_v = value width, h = heads.
#include "nn/fast_attention.hpp"

#include "nn/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn::nn {

namespace {

constexpr std::size_t fast_query_block = 64, fast_key_block = 256;
static_assert(fast_key_block % matmul_panel_width == 0, "a key block starts at a panel of packed K and V");

// One attention problem: row-major operands given by their first entry and row stride, and where
// its output goes. `scaled`: Q is already multiplied by 1/sqrt(d_k) (and is read in place).
struct Problem {
    const double* Q;
    std::size_t ldq;
    const double* K;
    std::size_t ldk;
    const double* V;
    std::size_t ldv;
    double* O;
    std::size_t ldo;
    bool scaled;
};

// A problem made ready for the tiles: Q times 1/sqrt(d_k) (a contiguous copy unless it came scaled);
// K^T and V packed as the right operands of matmul_packed (panels of 8 keys, d_k tall; panels of 8
// value columns, T_k tall).
struct Prepared {
    std::vector<double> Q_copy, K_t_panels, V_panels;
    const double* Q;
    std::size_t ldq;
    double* O;
    std::size_t ldo;
    double* L;  // where each row's log-sum-exp goes, or nullptr
};

// The rows of a row-major matrix (n rows of k, row stride ld) as the columns of a right operand of
// matmul_packed: M^T (k x n) in panels of 8 rows of M, k tall (row j of M: panel j / 8, lane j % 8).
std::vector<double> pack_transposed(const double* M, std::size_t ld, std::size_t n, std::size_t k) {
    constexpr std::size_t NR = matmul_panel_width;
    std::vector<double> panels(matmul_packed_size(k, n), 0.0);
    for (std::size_t j = 0; j < n; ++j)
        for (std::size_t p = 0; p < k; ++p) panels[(j / NR) * NR * k + p * NR + j % NR] = M[j * ld + p];
    return panels;
}

Prepared prepare(const Problem& pr, std::size_t T_q, std::size_t T_k, std::size_t d_k, std::size_t d_v) {
    constexpr std::size_t NR = matmul_panel_width;
    Prepared out{{}, pack_transposed(pr.K, pr.ldk, T_k, d_k), std::vector<double>(matmul_packed_size(T_k, d_v), 0.0),
                 pr.Q, pr.ldq, pr.O, pr.ldo, nullptr};
    if (!pr.scaled) {
        const double scale = 1.0 / std::sqrt(static_cast<double>(d_k));
        out.Q_copy.resize(T_q * d_k);
        for (std::size_t i = 0; i < T_q; ++i)
            for (std::size_t p = 0; p < d_k; ++p) out.Q_copy[i * d_k + p] = pr.Q[i * pr.ldq + p] * scale;
        out.Q = out.Q_copy.data();
        out.ldq = d_k;
    }
    for (std::size_t j = 0; j < T_k; ++j)
        for (std::size_t v = 0; v < d_v; ++v)
            out.V_panels[(v / NR) * NR * T_k + j * NR + v % NR] = pr.V[j * pr.ldv + v];
    return out;
}

// Rows i0 .. i0 + rows - 1 of one problem's output: the key blocks in order, each tile's scores,
// their online softmax row by row (the output rows rescaled when a maximum grows), then P V added.
void query_block(const Prepared& pr, std::size_t i0, std::size_t rows, std::size_t T_k, std::size_t d_k,
                 std::size_t d_v, bool causal, Arithmetic arithmetic) {
    constexpr std::size_t NR = matmul_panel_width;
    // S is written by each tile's product before it is read: left uninitialised (zeroing its 128 KiB
    // for every block of queries took 1% of the time at T = 1024, d = 64)
    const std::unique_ptr<double[]> S(new double[rows * fast_key_block]);
    std::vector<double> m(rows, -std::numeric_limits<double>::infinity()), l(rows, 0.0);
    double* out = pr.O + i0 * pr.ldo;
    for (std::size_t a = 0; a < rows; ++a) std::fill(out + a * pr.ldo, out + a * pr.ldo + d_v, 0.0);
    for (std::size_t j0 = 0; j0 < T_k; j0 += fast_key_block) {
        if (causal && j0 > i0 + rows - 1) break;  // every later key block lies after every query here
        // under the mask the block on the diagonal stops at the block's last query: keys past it are
        // masked for every query here, and are neither multiplied nor exponentiated
        const std::size_t cols = std::min(fast_key_block, (causal ? i0 + rows : T_k) - j0);
        matmul_packed(pr.Q + i0 * pr.ldq, pr.ldq, pr.K_t_panels.data() + j0 * d_k, NR * d_k, S.get(), cols, rows,
                      d_k, cols, false, arithmetic);
        for (std::size_t a = 0; a < rows; ++a) {
            const std::size_t i = i0 + a;
            // keys j0 .. i under the mask: none when the block starts after query i
            const std::size_t kept = !causal ? cols : i < j0 ? 0 : std::min(cols, i - j0 + 1);
            double* s = S.get() + a * cols;
            const double factor = online_softmax_row(s, kept, m[a], l[a], arithmetic);
            std::fill(s + kept, s + cols, 0.0);
            if (factor != 1.0)
                for (std::size_t v = 0; v < d_v; ++v) out[a * pr.ldo + v] *= factor;
        }
        matmul_packed(S.get(), cols, pr.V_panels.data() + j0 * NR, NR * T_k, out, pr.ldo, rows, cols, d_v, true,
                      arithmetic);
    }
    // each output row divided by its sum; where native arithmetic runs the fused copies, multiplied
    // by the sum's reciprocal instead (one division per row rather than d_v, which took 2% of the
    // time at T = 1024, d = 64; half an ulp more rounding)
    const bool reciprocal = arithmetic == Arithmetic::native && native_is_fused();
    for (std::size_t a = 0; a < rows; ++a) {
        const double total = l[a];
        if (total == 0.0) continue;
        double* row = out + a * pr.ldo;
        if (reciprocal) {
            const double inverse = 1.0 / total;
            for (std::size_t v = 0; v < d_v; ++v) row[v] *= inverse;
        } else {
            for (std::size_t v = 0; v < d_v; ++v) row[v] /= total;
        }
    }
    if (pr.L)
        for (std::size_t a = 0; a < rows; ++a)
            pr.L[i0 + a] = l[a] == 0.0 ? -std::numeric_limits<double>::infinity() : m[a] + std::log(l[a]);
}

// The problem's query blocks, shared between the threads (each block's products stay on its thread).
// Under the causal mask block b costs b + 1 blocks of keys: the threads take the last (dearest) blocks
// first, so that the cheap ones at the end even out their shares (in order, the thread that takes the
// last block would work alone for its whole time).
void solve(const Problem& problem, std::size_t T_q, std::size_t T_k, std::size_t d_k, std::size_t d_v,
           bool causal, Arithmetic arithmetic, double* L = nullptr) {
    Prepared prepared = prepare(problem, T_q, T_k, d_k, d_v);
    prepared.L = L;
    const std::size_t blocks = (T_q + fast_query_block - 1) / fast_query_block;
    for_each_row(blocks, T_k * (d_k + d_v), [&](std::size_t taken) {
        const std::size_t i0 = (causal ? blocks - 1 - taken : taken) * fast_query_block;
        query_block(prepared, i0, std::min(fast_query_block, T_q - i0), T_k, d_k, d_v, causal, arithmetic);
    });
}

// One weight matrix's share of a head's projection: columns [i d_k, (i+1) d_k) of W, times `scale`.
struct HeadColumns {
    const Mat* W = nullptr;
    double scale = 1.0;
};

// X (T x d_model) times the columns of `parts` side by side (T x parts.size() d_k, row-major), on the
// calling thread: head i's projections of X in one product, which reads each block of X once for
// all of them. The columns are packed straight from W (times the scale, exactly scale W_rc as
// before the product: 1.0 W_rc is W_rc).
std::vector<double> head_projections(const Mat& X, const std::vector<HeadColumns>& parts, std::size_t i,
                                     std::size_t d_k, Arithmetic arithmetic) {
    constexpr std::size_t NR = matmul_panel_width;
    const std::size_t T = X.shape(0), d_model = X.shape(1), n = parts.size() * d_k;
    std::vector<double> panels(matmul_packed_size(d_model, n), 0.0), out(T * n);
    // panel by panel (8 columns of the product, each a few neighbouring columns of a W), row by row:
    // the panel is written straight through, and each row of W gives it one or two cache lines. The
    // rows are 8 d_model bytes apart, a page for d_model = 512, where the processor does not fetch
    // ahead by itself: the line 16 rows on is asked for in advance (the packing took 7% of the call
    // at T = d_model = 512, h = 8 without it, 3% with it)
    constexpr std::size_t ahead = 16;
    for (std::size_t q = 0; q * NR < n; ++q) {
        const double* column[NR] = {};
        double scales[NR] = {};
        const std::size_t lanes = std::min(NR, n - q * NR);
        for (std::size_t lane = 0; lane < lanes; ++lane) {
            const std::size_t c = q * NR + lane;
            column[lane] = parts[c / d_k].W->data() + i * d_k + c % d_k;  // every W is d_model x d_model
            scales[lane] = parts[c / d_k].scale;
        }
        double* panel = panels.data() + q * NR * d_model;
        for (std::size_t r = 0; r < d_model; ++r) {
            if (r + ahead < d_model) {
                __builtin_prefetch(column[0] + (r + ahead) * d_model);
                __builtin_prefetch(column[lanes - 1] + (r + ahead) * d_model);
            }
            for (std::size_t lane = 0; lane < lanes; ++lane)
                panel[r * NR + lane] = scales[lane] * column[lane][r * d_model];
        }
    }
    matmul_packed(X.data(), d_model, panels.data(), NR * d_model, out.data(), n, T, d_model, n, false, arithmetic);
    return out;
}

// ---- the backward pass (FlashAttention's algorithm 4, on the packed product)

constexpr std::size_t backward_rows = 64, backward_cols = 128;  // queries x keys of one tile
static_assert(backward_rows % matmul_panel_width == 0 && backward_cols % matmul_panel_width == 0,
              "a block starts at a panel of the packed operands");

// The operands of the backward's five products, packed once: the right operands of S = Q_s K^T
// (K^T), dP = dO V^T (V^T), dV += P^T dO (dO), dK += dS^T Q_s (Q_s) and dQ += dS K (K), with
// Q_s = Q / sqrt(d_k); and D_i = dO_i . o_i.
struct BackwardPrepared {
    std::vector<double> Q_scaled, K_t, V_t, dO_panels, Q_panels, K_panels, D;
    const double* L;
    const double* dO;
    std::size_t T_q, T_k, d_k, d_v;
    bool causal;
    Arithmetic arithmetic;
};

BackwardPrepared prepare_backward(const Mat& Q, const Mat& K, const Mat& V, const Mat& O, const Vec& L, const Mat& dO,
                                  bool causal, Arithmetic arithmetic) {
    const std::size_t T_q = Q.shape(0), T_k = K.shape(0), d_k = Q.shape(1), d_v = V.shape(1);
    BackwardPrepared b{std::vector<double>(T_q * d_k), pack_transposed(K.data(), d_k, T_k, d_k),
                       pack_transposed(V.data(), d_v, T_k, d_v), std::vector<double>(matmul_packed_size(T_q, d_v)),
                       std::vector<double>(matmul_packed_size(T_q, d_k)), std::vector<double>(matmul_packed_size(T_k, d_k)),
                       std::vector<double>(T_q, 0.0), L.data(), dO.data(), T_q, T_k, d_k, d_v, causal, arithmetic};
    const double scale = 1.0 / std::sqrt(static_cast<double>(d_k));
    for (std::size_t k = 0; k < T_q * d_k; ++k) b.Q_scaled[k] = Q.data()[k] * scale;
    matmul_pack(dO.data(), T_q, d_v, b.dO_panels.data());
    matmul_pack(b.Q_scaled.data(), T_q, d_k, b.Q_panels.data());
    matmul_pack(K.data(), T_k, d_k, b.K_panels.data());
    for (std::size_t i = 0; i < T_q; ++i)
        for (std::size_t v = 0; v < d_v; ++v) b.D[i] += dO(i, v) * O(i, v);
    return b;
}

// One group's tiles in flight: S (then P), dP (then dS), and P^T, dS^T for the products by the keys.
struct BackwardTiles {
    std::vector<double> S, dP, P_t, dS_t;
    BackwardTiles()
        : S(backward_rows * backward_cols), dP(S.size()), P_t(S.size()), dS_t(S.size()) {}
};

// The tile of queries i0 .. i0 + rows - 1 against keys j0 .. j0 + cols - 1: its shares of dV and dK
// (rows j0 .. of dK, dV) and of dQ (rows i0 .. of the group's dQ, still to be divided by sqrt(d_k)).
void backward_tile(const BackwardPrepared& b, BackwardTiles& t, std::size_t i0, std::size_t rows, std::size_t j0,
                   std::size_t cols, double* dK, double* dV, double* dQ) {
    constexpr std::size_t NR = matmul_panel_width;
    const std::size_t d_k = b.d_k, d_v = b.d_v;
    matmul_packed(b.Q_scaled.data() + i0 * d_k, d_k, b.K_t.data() + j0 * d_k, NR * d_k, t.S.data(), cols, rows, d_k,
                  cols, false, b.arithmetic);
    matmul_packed(b.dO + i0 * d_v, d_v, b.V_t.data() + j0 * d_v, NR * d_v, t.dP.data(), cols, rows, d_v, cols, false,
                  b.arithmetic);
    for (std::size_t a = 0; a < rows; ++a) {
        const std::size_t i = i0 + a;
        // keys j0 .. j0 + seen - 1 are seen by query i (all of them without the mask)
        const std::size_t seen = !b.causal ? cols : i < j0 ? 0 : std::min(cols, i - j0 + 1);
        double* s = t.S.data() + a * cols;
        double* dp = t.dP.data() + a * cols;
        for (std::size_t c = 0; c < seen; ++c) s[c] -= b.L[i];
        exp_span(s, s, seen, b.arithmetic);
        for (std::size_t c = 0; c < seen; ++c) dp[c] = s[c] * (dp[c] - b.D[i]);
        for (std::size_t c = seen; c < cols; ++c) s[c] = dp[c] = 0.0;
        for (std::size_t c = 0; c < cols; ++c) {
            t.P_t[c * rows + a] = s[c];
            t.dS_t[c * rows + a] = dp[c];
        }
    }
    matmul_packed(t.P_t.data(), rows, b.dO_panels.data() + i0 * NR, NR * b.T_q, dV + j0 * d_v, d_v, cols, rows, d_v,
                  true, b.arithmetic);
    matmul_packed(t.dS_t.data(), rows, b.Q_panels.data() + i0 * NR, NR * b.T_q, dK + j0 * d_k, d_k, cols, rows, d_k,
                  true, b.arithmetic);
    matmul_packed(t.dP.data(), cols, b.K_panels.data() + j0 * NR, NR * b.T_k, dQ + i0 * d_k, d_k, rows, cols, d_k,
                  true, b.arithmetic);
}

// Group g's key blocks (g, g + 2, g + 4, ...), each against the query blocks that see any of its keys.
void backward_group(const BackwardPrepared& b, std::size_t g, double* dK, double* dV, double* dQ) {
    BackwardTiles tiles;
    constexpr std::size_t B_r = backward_rows, B_c = backward_cols;
    for (std::size_t j0 = g * B_c; j0 < b.T_k; j0 += 2 * B_c) {
        const std::size_t cols = std::min(B_c, b.T_k - j0);
        // under the mask the first query block to see key j0 is the one that holds query j0
        for (std::size_t i0 = b.causal ? j0 / B_r * B_r : 0; i0 < b.T_q; i0 += B_r)
            backward_tile(b, tiles, i0, std::min(B_r, b.T_q - i0), j0, cols, dK, dV, dQ);
    }
}

void expect_fast_shapes(const Mat& Q, const Mat& K, const Mat& V, bool causal) {
    if (K.shape(1) != Q.shape(1) || K.shape(0) != V.shape(0))
        throw ShapeError("fast attention: queries " + shape_string(shape_of(Q)) + ", keys " +
                         shape_string(shape_of(K)) + " and values " + shape_string(shape_of(V)) +
                         " do not fit (Q and K need the same width, K and V the same rows)");
    if (causal && Q.shape(0) != K.shape(0))
        throw std::invalid_argument("fast attention: the causal flag needs as many queries as keys");
}

}  // namespace

Mat fast_attention(const Mat& Q, const Mat& K, const Mat& V, bool causal, Arithmetic arithmetic) {
    expect_fast_shapes(Q, K, V, causal);
    const std::size_t T_q = Q.shape(0), T_k = K.shape(0), d_k = Q.shape(1), d_v = V.shape(1);
    Mat O = xt::zeros<double>({T_q, d_v});
    if (T_k == 0) return O;  // no keys: nothing to weigh, zeros (as the plain form's empty sums)
    solve(Problem{Q.data(), d_k, K.data(), d_k, V.data(), d_v, O.data(), d_v, false}, T_q, T_k, d_k, d_v, causal,
          arithmetic);
    return O;
}

FastAttentionForward fast_attention_forward(const Mat& Q, const Mat& K, const Mat& V, bool causal,
                                            Arithmetic arithmetic) {
    expect_fast_shapes(Q, K, V, causal);
    const std::size_t T_q = Q.shape(0), T_k = K.shape(0), d_k = Q.shape(1), d_v = V.shape(1);
    FastAttentionForward f{xt::zeros<double>({T_q, d_v}), xt::empty<double>({T_q})};
    std::fill(f.L.begin(), f.L.end(), -std::numeric_limits<double>::infinity());
    if (T_k == 0) return f;
    solve(Problem{Q.data(), d_k, K.data(), d_k, V.data(), d_v, f.output.data(), d_v, false}, T_q, T_k, d_k, d_v,
          causal, arithmetic, f.L.data());
    return f;
}

FastAttentionGrads fast_attention_backward(const Mat& Q, const Mat& K, const Mat& V, const Mat& O, const Vec& L,
                                           const Mat& dO, bool causal, Arithmetic arithmetic) {
    expect_fast_shapes(Q, K, V, causal);
    const std::size_t T_q = Q.shape(0), T_k = K.shape(0), d_k = Q.shape(1), d_v = V.shape(1);
    expect_shape("fast attention backward: the saved output O", O, {T_q, d_v});
    expect_shape("fast attention backward: the saved log-sum-exp L", L, {T_q});
    expect_shape("fast attention backward: dL/d(output) dO", dO, {T_q, d_v});
    FastAttentionGrads g{xt::zeros<double>({T_q, d_k}), xt::zeros<double>({T_k, d_k}), xt::zeros<double>({T_k, d_v})};
    if (T_q == 0 || T_k == 0) return g;
    const BackwardPrepared b = prepare_backward(Q, K, V, O, L, dO, causal, arithmetic);
    std::vector<double> dQ_odd(T_q * d_k, 0.0);  // group 1's dQ; group 0 adds into g.dQ
    for_each_row(2, T_q * T_k * (2 * d_k + 2 * d_v) / 2, [&](std::size_t group) {
        backward_group(b, group, g.dK.data(), g.dV.data(), group == 0 ? g.dQ.data() : dQ_odd.data());
    });
    const double scale = 1.0 / std::sqrt(static_cast<double>(d_k));
    for (std::size_t k = 0; k < T_q * d_k; ++k) g.dQ.data()[k] = (g.dQ.data()[k] + dQ_odd[k]) * scale;
    return g;
}

Mat fast_multi_head_attention(const Mat& X_q, const Mat& X_kv, const MultiHeadParams& p, std::size_t heads,
                              bool causal, Arithmetic arithmetic) {
    const std::size_t T_q = X_q.shape(0), T_k = X_kv.shape(0), d_model = X_q.shape(1);
    const std::size_t d_k = head_width(d_model, heads);
    if (X_kv.shape(1) != d_model)
        throw ShapeError("fast multi-head attention: X_kv " + shape_string(shape_of(X_kv)) + " must have d_model = " +
                         std::to_string(d_model) + " columns, as X_q has");
    expect_shape("fast multi-head attention: W_Q", p.W_Q, {d_model, d_model});
    expect_shape("fast multi-head attention: W_K", p.W_K, {d_model, d_model});
    expect_shape("fast multi-head attention: W_V", p.W_V, {d_model, d_model});
    expect_shape("fast multi-head attention: W_O", p.W_O, {d_model, d_model});
    if (causal && T_q != T_k)
        throw std::invalid_argument("fast multi-head attention: the causal flag needs as many queries as keys");
    // The heads go to the threads, each whole on one: Q_i = X_q (W_i^Q / sqrt(d_k)), K_i = X_kv W_i^K,
    // V_i = X_kv W_i^V (one product when X_q and X_kv are the same matrix, two otherwise), then head
    // i's attention written into its columns of Concat(head_1, ..., head_h). One hand-over between the
    // threads instead of one per product (a thread that the system pauses on a busy machine holds the
    // other up at each), and one head's projections per thread at a time.
    const double scale = 1.0 / std::sqrt(static_cast<double>(d_k));
    const bool self = &X_q == &X_kv;
    Mat concat = xt::zeros<double>({T_q, d_model});
    if (T_k > 0)
        for_each_row(heads, T_q * T_k * d_k, [&](std::size_t i) {
            const HeadColumns Q_part{&p.W_Q, scale}, K_part{&p.W_K, 1.0}, V_part{&p.W_V, 1.0};
            std::vector<double> QKV, KV;
            if (self)
                QKV = head_projections(X_q, {Q_part, K_part, V_part}, i, d_k, arithmetic);
            else {
                QKV = head_projections(X_q, {Q_part}, i, d_k, arithmetic);
                KV = head_projections(X_kv, {K_part, V_part}, i, d_k, arithmetic);
            }
            // Q_i, K_i and V_i side by side in the rows of QKV (or Q_i there, K_i and V_i in KV's)
            const std::size_t ldq = self ? 3 * d_k : d_k, ldkv = self ? 3 * d_k : 2 * d_k;
            const double* K_i = self ? QKV.data() + d_k : KV.data();
            const Prepared prepared = prepare(Problem{QKV.data(), ldq, K_i, ldkv, K_i + d_k, ldkv,
                                                      concat.data() + i * d_k, d_model, true},
                                              T_q, T_k, d_k, d_k);
            for (std::size_t i0 = 0; i0 < T_q; i0 += fast_query_block)
                query_block(prepared, i0, std::min(fast_query_block, T_q - i0), T_k, d_k, d_k, causal, arithmetic);
        });
    // Concat(heads) W^O, on both threads
    Mat output = xt::empty<double>({T_q, d_model});
    matmul_span(concat.data(), p.W_O.data(), output.data(), T_q, d_model, d_model, arithmetic);
    return output;
}

}  // namespace attn::nn
