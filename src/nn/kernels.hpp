// Row-by-row kernels behind the matrix products and the fast attention path: plain loops over
// contiguous memory, with large matrices split between two threads. Not an exercise, and none
// computes one: the stable softmax the references of softmax and multi-head vectorise is theirs
// alone (nn/reference/softmax_row.hpp, with the pieces of nn/kernel_parts.hpp).
// n = entries of one row, T_q x T_k = rows x columns of a matrix of scores, m x k times k x n for a product.
//
// Every number a lesson records passes through these kernels, and each gives the same bits on
// every x86-64 processor: each output is computed by the same IEEE operations in the same order
// whichever vector width runs them (the order is fixed per output entry, and vectors only compute
// several entries side by side), and no fused multiply-add (-ffp-contract=off). Each kernel is
// compiled three times: for baseline x86-64 (SSE2), for AVX2 and for AVX-512; the fastest copy
// the processor runs is used, unless the environment variable ATTN_KERNELS names another
// (baseline, avx2 or avx512): tests/test_nn.cpp ([kernels]) runs every copy and compares the bytes, and
// tests/test_cli.cpp blesses every lesson under each.
// One exception, for speed where no number is recorded: the fast path's Arithmetic::native (below)
// has fused copies of its product and online-softmax kernels, compiled for AVX2 and AVX-512 with FMA
// and called only where the processor has FMA; the portable kernels are the default everywhere.
#pragma once

#include "core/tensor.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace attn::nn {

// The copies of the kernels, from the narrowest vectors to the widest.
enum class KernelPath { baseline, avx2, avx512 };

// "baseline", "avx2", "avx512"
const char* kernel_path_name(KernelPath path);

// The copies this processor can run, narrowest first (always at least the baseline).
std::vector<KernelPath> kernel_paths_supported();

// The copy in use: ATTN_KERNELS when it is set (and names a copy this processor runs), otherwise
// the widest supported one. Chosen once, at the first call.
KernelPath kernel_path();

// Why ATTN_KERNELS cannot be honoured ("" when it is unset or fine): an unknown name, or a copy
// this processor cannot run. The command line refuses to start then (exit 2).
std::string kernel_path_problem();

// Makes `path` the copy in use (tests compare the copies); throws std::invalid_argument when the
// processor cannot run it.
void use_kernel_path(KernelPath path);

// How the kernels of the fast path (nn::fast_attention: matmul_span, matmul_packed, online_softmax_row)
// round.
//   portable  as every kernel here: the same bits on every x86-64 processor, whichever copy runs.
//   native    where the processor has FMA and the copy in use is avx2 or avx512, the fused copies:
//             each product's sums c = fma(a, b, c) (one rounding instead of two, the same order of
//             k; the AVX-512 copy in wider register tiles) and the online softmax's exp with fused
//             multiply-adds (a minimax polynomial of degree 11 where portable::exp has a Taylor
//             polynomial of degree 13, within 1 ulp of exp; its sum in the same pass), and
//             nn::fast_attention divides its output rows by multiplying by the reciprocal of their
//             sums. Otherwise (the baseline copy, a processor without FMA) the same as portable. On
//             the project's AMD EPYC (AVX-512, one thread, T = 1024, d = 64) the products ran 1.6
//             times as fast and the online softmax rows 2.3 times; the results are within a few ulp
//             of portable's, but not the same bits, and not the same on a processor without FMA as
//             on one with it (the fused AVX2 and AVX-512 copies agree with each other: a fused
//             multiply-add rounds once, exactly, the sums of each c_ij run in the same order of k
//             whatever the tile, and both copies evaluate the same exp lane by lane): never for a
//             number a lesson records.
//   single    (training whose numbers are reported, asked for with attn train --float32) matmul_span's
//             and matmul_transposed_span's products of at least 8 columns in float32: both operands
//             rounded to float32, each C_ij summed in float32 in the order of k (fused multiply-adds
//             where the processor has FMA), then widened to a double; every other kernel as portable.
//             Twice the values per vector and half the bytes per operand; each product within about
//             k 2^-24 of its exact value relative to the sum of its terms' magnitudes.
enum class Arithmetic { portable, native, single };

// Whether Arithmetic::native runs the fused copies here (FMA and the avx2 or avx512 copy in use).
bool native_is_fused();

// out_j = exp(x_j) for n values (`out` may be `x`), by portable::exp (core/portable_math.hpp); with
// Arithmetic::native by the fused exp of the online softmax (within 1 ulp of exp) where it runs.
void exp_span(const double* x, double* out, std::size_t n, Arithmetic arithmetic = Arithmetic::portable);

// C = A B for row-major A (m x k), B (k x n) and C (m x n, not overlapping A or B):
// C_ij = (((0 + A_i0 B_0j) + A_i1 B_1j) + ...) + A_i,k-1 B_k-1,j, the products added in the order
// of k, exactly the numbers of the textbook triple loop (and of nn::matvec for n = 1). Tiles of C
// are held in registers while k runs (matmul_packed); B is packed 256 columns at a time, at most
// k x 256 doubles besides the operands. With Arithmetic::native, matmul_packed's fused copies (for
// n >= 8; a narrower product stays portable).
void matmul_span(const double* A, const double* B, double* C, std::size_t m, std::size_t k, std::size_t n,
                 Arithmetic arithmetic = Arithmetic::portable);

// C = A B^T for row-major A (m x k) and B (n x k, row stride ldb >= k; C: m x n, not overlapping A or B):
// exactly the numbers of matmul_span(A, B^T), each C_ij = (((0 + A_i0 B_j0) + A_i1 B_j1) + ...) in the
// order of k, without B^T in memory: B's rows are packed straight into the panels (a transpose and then a
// packing read and wrote every weight twice, a sixth of a training step at d_model = 256). ldb > k takes
// columns of a wider matrix (B pointing at the first).
void matmul_transposed_span(const double* A, const double* B, std::size_t ldb, double* C, std::size_t m,
                            std::size_t k, std::size_t n, Arithmetic arithmetic = Arithmetic::portable);

// B packed for matmul_packed: its columns in panels of matmul_panel_width, panel q (columns 8q ..
// 8q + 7) a contiguous k x 8 row-major block at offset 8 q k, zeros past column n - 1.
constexpr std::size_t matmul_panel_width = 8;
constexpr std::size_t matmul_packed_size(std::size_t k, std::size_t n) {
    return (n + matmul_panel_width - 1) / matmul_panel_width * matmul_panel_width * k;
}
void matmul_pack(const double* B, std::size_t k, std::size_t n, double* panels);

// C = A B (or C += A B with `accumulate`) on the calling thread, for A: m x k with row stride lda,
// C: m x n with row stride ldc, and B given as panels of 8 columns: panel q's row p (B_p,8q ..
// B_p,8q+7) at panels[q panel_stride + 8 p] (matmul_pack's layout has panel_stride = 8 k; a larger
// stride picks rows of taller panels). Each C_ij gets its products in the order of k, as
// matmul_span (with `accumulate`, starting from C_ij instead of 0); fused with Arithmetic::native.
void matmul_packed(const double* A, std::size_t lda, const double* panels, std::size_t panel_stride, double* C,
                   std::size_t ldc, std::size_t m, std::size_t k, std::size_t n, bool accumulate,
                   Arithmetic arithmetic = Arithmetic::portable);

// For nn::fast_attention: one row s of a tile of scores meets the running maximum m and sum l of its
// query's earlier tiles (the online softmax). With m' = max(m, max_j s_j): s_j becomes
// exp(s_j - m'), l becomes l exp(m - m') + sum_j s_j, m becomes m'; returns exp(m - m'), the factor
// by which the query's accumulated output must be rescaled (0 for the first finite maximum; NaN
// when s holds a NaN). A row whose m' is -inf (every key masked so far) becomes zeros and returns 1.
// With Arithmetic::native, the fused exp (within about 2 ulp of portable::exp).
double online_softmax_row(double* s, std::size_t n, double& running_max, double& running_sum,
                          Arithmetic arithmetic = Arithmetic::portable);

// Calls row(r) once for every r in [0, rows), on two threads (or ScopedThreads' count) when the rows x
// cols matrix is large enough to repay starting one (and no ScopedOneThread is alive on the calling
// thread). row(r) must touch row r only: then the result is the same, bit for bit, whichever thread
// computes which row. When it starts threads, every row runs under ScopedOneThread (a row's own
// products stay on its thread) and in the calling thread's thread_arithmetic().
void for_each_row(std::size_t rows, std::size_t cols, const std::function<void(std::size_t)>& row);

// The arithmetic nn::matmul uses on the calling thread: portable, unless a ScopedArithmetic alive on
// this thread says native. Only training whose numbers are reported rather than golden-checked sets
// one (translation::Training's lanes: attn train, training_bench); every lesson runs without.
Arithmetic thread_arithmetic();

// Sets thread_arithmetic() on the calling thread for its lifetime (scopes nest; the previous one
// comes back at the end).
class ScopedArithmetic {
public:
    explicit ScopedArithmetic(Arithmetic arithmetic);
    ~ScopedArithmetic();
    ScopedArithmetic(const ScopedArithmetic&) = delete;
    ScopedArithmetic& operator=(const ScopedArithmetic&) = delete;

private:
    Arithmetic previous_;
};

// While one is alive on a thread, for_each_row runs every row on that thread: a thread that is
// itself one of several (a training lane) starts no helper of its own. The results are the same
// bits either way.
class ScopedOneThread {
public:
    ScopedOneThread();
    ~ScopedOneThread();
    ScopedOneThread(const ScopedOneThread&) = delete;
    ScopedOneThread& operator=(const ScopedOneThread&) = delete;

private:
    std::size_t previous_;
};

// While one is alive on a thread, for_each_row splits rows between `threads` threads (the calling one
// among them) instead of two; 1 is ScopedOneThread's. The results are the same bits whatever the count.
class ScopedThreads {
public:
    explicit ScopedThreads(std::size_t threads);
    ~ScopedThreads();
    ScopedThreads(const ScopedThreads&) = delete;
    ScopedThreads& operator=(const ScopedThreads&) = delete;

private:
    std::size_t previous_;
};

}  // namespace attn::nn
