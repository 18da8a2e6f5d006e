// Output-only attention in blocks (see nn/fast_attention.hpp). T_q = queries, T_k = keys,
// d_k = key width, d_v = value width, h = heads.
#include "nn/fast_attention.hpp"

#include "nn/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
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
};

Prepared prepare(const Problem& pr, std::size_t T_q, std::size_t T_k, std::size_t d_k, std::size_t d_v) {
    constexpr std::size_t NR = matmul_panel_width;
    Prepared out{{}, std::vector<double>(matmul_packed_size(d_k, T_k), 0.0),
                 std::vector<double>(matmul_packed_size(T_k, d_v), 0.0), pr.Q, pr.ldq, pr.O, pr.ldo};
    if (!pr.scaled) {
        const double scale = 1.0 / std::sqrt(static_cast<double>(d_k));
        out.Q_copy.resize(T_q * d_k);
        for (std::size_t i = 0; i < T_q; ++i)
            for (std::size_t p = 0; p < d_k; ++p) out.Q_copy[i * d_k + p] = pr.Q[i * pr.ldq + p] * scale;
        out.Q = out.Q_copy.data();
        out.ldq = d_k;
    }
    // K^T's column j is key j: panel j / 8, row p, lane j % 8
    for (std::size_t j = 0; j < T_k; ++j)
        for (std::size_t p = 0; p < d_k; ++p)
            out.K_t_panels[(j / NR) * NR * d_k + p * NR + j % NR] = pr.K[j * pr.ldk + p];
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
    std::vector<double> S(rows * fast_key_block), m(rows, -std::numeric_limits<double>::infinity()), l(rows, 0.0);
    double* out = pr.O + i0 * pr.ldo;
    for (std::size_t a = 0; a < rows; ++a) std::fill(out + a * pr.ldo, out + a * pr.ldo + d_v, 0.0);
    for (std::size_t j0 = 0; j0 < T_k; j0 += fast_key_block) {
        if (causal && j0 > i0 + rows - 1) break;  // every later key block lies after every query here
        // under the mask the block on the diagonal stops at the block's last query: keys past it are
        // masked for every query here, and are neither multiplied nor exponentiated
        const std::size_t cols = std::min(fast_key_block, (causal ? i0 + rows : T_k) - j0);
        matmul_packed(pr.Q + i0 * pr.ldq, pr.ldq, pr.K_t_panels.data() + j0 * d_k, NR * d_k, S.data(), cols, rows,
                      d_k, cols, false, arithmetic);
        for (std::size_t a = 0; a < rows; ++a) {
            const std::size_t i = i0 + a;
            // keys j0 .. i under the mask: none when the block starts after query i
            const std::size_t kept = !causal ? cols : i < j0 ? 0 : std::min(cols, i - j0 + 1);
            double* s = S.data() + a * cols;
            const double factor = online_softmax_row(s, kept, m[a], l[a], arithmetic);
            std::fill(s + kept, s + cols, 0.0);
            if (factor != 1.0)
                for (std::size_t v = 0; v < d_v; ++v) out[a * pr.ldo + v] *= factor;
        }
        matmul_packed(S.data(), cols, pr.V_panels.data() + j0 * NR, NR * T_k, out, pr.ldo, rows, cols, d_v, true,
                      arithmetic);
    }
    for (std::size_t a = 0; a < rows; ++a)
        if (l[a] != 0.0)
            for (std::size_t v = 0; v < d_v; ++v) out[a * pr.ldo + v] /= l[a];
}

// The problem's query blocks, shared between the threads (each block's products stay on its thread).
// Under the causal mask block b costs b + 1 blocks of keys: the threads take the last (dearest) blocks
// first, so that the cheap ones at the end even out their shares (in order, the thread that takes the
// last block would work alone for its whole time).
void solve(const Problem& problem, std::size_t T_q, std::size_t T_k, std::size_t d_k, std::size_t d_v,
           bool causal, Arithmetic arithmetic) {
    const Prepared prepared = prepare(problem, T_q, T_k, d_k, d_v);
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
