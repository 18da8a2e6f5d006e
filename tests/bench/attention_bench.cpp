// Attention against its floor (issue 7): the time of each op next to the time of the same GEMMs
// alone (same shapes, same BLAS), and the op's peak extra memory.
// T = positions, d = query/key/value width, h = heads, d_model = model width, d_k = d_model / h.
//
// Cases: (a) scaled dot-product attention, T = 1024, d = 64; (b) the same with a causal mask;
// (c) multi-head attention, T = 512, d_model = 512, h = 8, without keeping the heads' weights;
// each by the exercise function (which also returns the T x T scores and weights the lessons
// record) and by the output-only fast path (nn::fast_attention, nn::fast_multi_head_attention:
// lesson 10's tiles, for speed, with Arithmetic::native: fused multiply-add where the processor has
// it, as the BLAS of the floors uses; ATTN_KERNELS=baseline times the unfused code); (d) nn::fast_attention also at T = 4096 and 16384, d = 64, with
// and without the causal flag: no GEMM floor there (the T x T matrices of the floor take 2 GiB at
// T = 16384), its own table of times and peak memory instead.
// Targets (issue 19), for the fast paths: time <= 1.15 x the GEMMs for single-head attention,
// <= 0.7 x the full GEMMs for causal attention (which needs only the lower half), <= 1.1 x for
// multi-head (whatever the op does besides them: scaling, softmax, masks, copies, allocation); peak
// extra memory <= 3 T^2 doubles besides the inputs. The memory tables measure only the cases
// whose benchmark ran, so --benchmark_filter also skips the slow T = 16384 calls.
//
// Run with meson compile -C build bench (see tests/bench/meson.build), or by hand; Google
// Benchmark's flags work, e.g. --benchmark_repetitions=5. After Google Benchmark's table come a
// ratio table (medians when repeated) and the memory tables.
//
// The floor's kernels (issue 34, openblas_kernels.hpp): before timing anything the program asks
// OpenBLAS which kernels it runs; generic ones on a processor with AVX2 or AVX-512 and FMA make it
// run itself again with the matching OPENBLAS_CORETYPE (saying so on stderr), and the kernels are
// printed beside every floor. OPENBLAS_CORETYPE set by hand is kept, with a note that the floor is
// not necessarily the best this processor can do. ATTN_BENCH_FAKE_GENERIC=1 starts with
// OPENBLAS_CORETYPE=Prescott, as if OpenBLAS did not know the processor, to see that at work.
// --openblas_decide=CORENAME prints the decision for another program's OpenBLAS as JSON
// (compare_peers.py asks it for numpy's and torch's) and exits.
#include "core/allocator.hpp"
#include "core/rng.hpp"
#include "nn/fast_attention.hpp"
#include "nn/kernels.hpp"
#include "nn/linalg.hpp"
#include "nn/multi_head.hpp"
#include "nn/self_attention.hpp"
#include "openblas_kernels.hpp"

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <unistd.h>
#include <xtensor-blas/xblas.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <new>
#include <set>
#include <string>
#include <vector>

// ---- Counting allocator: every operator new of the program adds its bytes, every delete takes
// them off. A header in front of each block remembers its size, since not every delete is sized.

namespace {

std::atomic<std::int64_t> bytes_now{0};   // bytes allocated with new and not yet deleted
std::atomic<std::int64_t> bytes_peak{0};  // the largest bytes_now since the last reset

void* counted_alloc(std::size_t size, std::size_t align) {
    // The header takes `align` bytes (at least 16, the default new alignment) so the block stays aligned.
    const std::size_t header = std::max<std::size_t>(align, alignof(std::max_align_t));
    const std::size_t total = (size + header + header - 1) / header * header;
    void* raw = std::aligned_alloc(header, total);
    if (!raw) throw std::bad_alloc();
    *static_cast<std::size_t*>(raw) = size;
    const std::int64_t now = bytes_now.fetch_add(static_cast<std::int64_t>(size)) + static_cast<std::int64_t>(size);
    std::int64_t peak = bytes_peak.load();
    while (now > peak && !bytes_peak.compare_exchange_weak(peak, now)) {
    }
    return static_cast<char*>(raw) + header;
}

void counted_free(void* p, std::size_t align) {
    if (!p) return;
    const std::size_t header = std::max<std::size_t>(align, alignof(std::max_align_t));
    void* raw = static_cast<char*>(p) - header;
    bytes_now.fetch_sub(static_cast<std::int64_t>(*static_cast<std::size_t*>(raw)));
    std::free(raw);
}

}  // namespace

void* operator new(std::size_t size) { return counted_alloc(size, 0); }
void* operator new[](std::size_t size) { return counted_alloc(size, 0); }
void* operator new(std::size_t size, std::align_val_t a) { return counted_alloc(size, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t size, std::align_val_t a) { return counted_alloc(size, static_cast<std::size_t>(a)); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return counted_alloc(size, 0);
    } catch (const std::bad_alloc&) {
        return nullptr;
    }
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p) noexcept { counted_free(p, 0); }
void operator delete[](void* p) noexcept { counted_free(p, 0); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p, 0); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p, 0); }
void operator delete(void* p, std::align_val_t a) noexcept { counted_free(p, static_cast<std::size_t>(a)); }
void operator delete[](void* p, std::align_val_t a) noexcept { counted_free(p, static_cast<std::size_t>(a)); }
void operator delete(void* p, std::size_t, std::align_val_t a) noexcept {
    counted_free(p, static_cast<std::size_t>(a));
}
void operator delete[](void* p, std::size_t, std::align_val_t a) noexcept {
    counted_free(p, static_cast<std::size_t>(a));
}
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p, 0); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p, 0); }

namespace {

using namespace attn;

constexpr std::size_t attention_T = 1024, attention_d = 64;
constexpr std::size_t multi_head_T = 512, multi_head_d_model = 512, multi_head_h = 8;
constexpr double memory_target = 3.0;

// ---- Inputs, deterministic: the same numbers on every run and machine.

struct AttentionInputs {
    Mat Q, K, V, causal;
};

AttentionInputs attention_inputs() {
    Rng rng(7);
    AttentionInputs in;
    in.Q = rng.normal_mat(attention_T, attention_d);
    in.K = rng.normal_mat(attention_T, attention_d);
    in.V = rng.normal_mat(attention_T, attention_d);
    in.causal = nn::causal_mask(attention_T);
    return in;
}

struct MultiHeadInputs {
    Mat X;
    nn::MultiHeadParams p;
};

MultiHeadInputs multi_head_inputs() {
    Rng rng(11);
    // 1/sqrt(d_model) keeps the projections, and so the scores, near unit variance
    const double scale = 1.0 / std::sqrt(static_cast<double>(multi_head_d_model));
    MultiHeadInputs in;
    in.X = rng.normal_mat(multi_head_T, multi_head_d_model);
    in.p.W_Q = rng.normal_mat(multi_head_d_model, multi_head_d_model, scale);
    in.p.W_K = rng.normal_mat(multi_head_d_model, multi_head_d_model, scale);
    in.p.W_V = rng.normal_mat(multi_head_d_model, multi_head_d_model, scale);
    in.p.W_O = rng.normal_mat(multi_head_d_model, multi_head_d_model, scale);
    return in;
}

// ---- The ops under test, one call each.

void run_attention(const AttentionInputs& in) {
    benchmark::DoNotOptimize(nn::scaled_dot_product_attention(in.Q, in.K, in.V));
}

void run_causal_attention(const AttentionInputs& in) {
    benchmark::DoNotOptimize(nn::scaled_dot_product_attention(in.Q, in.K, in.V, in.causal));
}

// nn::fast_attention's inputs at a length T, d = attention_d.
struct FastInputs {
    Mat Q, K, V;
};

FastInputs fast_inputs(std::size_t T) {
    Rng rng(19);
    return {rng.normal_mat(T, attention_d), rng.normal_mat(T, attention_d), rng.normal_mat(T, attention_d)};
}

void run_fast_attention(const FastInputs& in, bool causal) {
    benchmark::DoNotOptimize(nn::fast_attention(in.Q, in.K, in.V, causal, nn::Arithmetic::native));
}

void run_multi_head(const MultiHeadInputs& in) {
    benchmark::DoNotOptimize(nn::multi_head_attention(in.X, in.X, in.p, multi_head_h, nullptr, nn::HeadWeights::drop));
}

void run_fast_multi_head(const MultiHeadInputs& in) {
    benchmark::DoNotOptimize(
        nn::fast_multi_head_attention(in.X, in.X, in.p, multi_head_h, false, nn::Arithmetic::native));
}

// ---- The floors: the GEMMs each op makes, into matrices allocated beforehand. Their operands'
// values do not change a GEMM's speed, so each floor computes on fixed operands of the right shapes.

// S = Q K^T (T x d times d x T), O = A V (T x T times T x d).
struct AttentionGemms {
    Mat Q, K_t, S, V, O;
};

AttentionGemms attention_gemms() {
    Rng rng(13);
    const std::size_t T = attention_T, d = attention_d;
    return {rng.normal_mat(T, d), rng.normal_mat(d, T), rng.normal_mat(T, T), rng.normal_mat(T, d),
            rng.normal_mat(T, d)};
}

void run_attention_gemms(AttentionGemms& g) {
    xt::blas::gemm(g.Q, g.K_t, g.S);
    xt::blas::gemm(g.S, g.V, g.O);
    benchmark::DoNotOptimize(g.O.data());
}

// Per head: Q_i = X W_i^Q, K_i = X W_i^K, V_i = X W_i^V (T x d_model times d_model x d_k),
// S_i = Q_i K_i^T (T x d_k times d_k x T), head_i = A_i V_i (T x T times T x d_k); then
// Concat(heads) W^O (T x d_model times d_model x d_model).
struct MultiHeadGemms {
    Mat X, W_i, Q_i, K_i, K_i_t, V_i, S_i, head, concat, W_O, output;
};

MultiHeadGemms multi_head_gemms() {
    Rng rng(17);
    const std::size_t T = multi_head_T, d_model = multi_head_d_model, d_k = d_model / multi_head_h;
    return {rng.normal_mat(T, d_model), rng.normal_mat(d_model, d_k), rng.normal_mat(T, d_k),
            rng.normal_mat(T, d_k),     rng.normal_mat(d_k, T),       rng.normal_mat(T, d_k),
            rng.normal_mat(T, T),       rng.normal_mat(T, d_k),       rng.normal_mat(T, d_model),
            rng.normal_mat(d_model, d_model), rng.normal_mat(T, d_model)};
}

void run_multi_head_gemms(MultiHeadGemms& g) {
    for (std::size_t i = 0; i < multi_head_h; ++i) {
        xt::blas::gemm(g.X, g.W_i, g.Q_i);
        xt::blas::gemm(g.X, g.W_i, g.K_i);
        xt::blas::gemm(g.Q_i, g.K_i_t, g.S_i);
        xt::blas::gemm(g.X, g.W_i, g.V_i);
        xt::blas::gemm(g.S_i, g.V_i, g.head);
    }
    xt::blas::gemm(g.concat, g.W_O, g.output);
    benchmark::DoNotOptimize(g.output.data());
}

// ---- A training step's products (issue 43): T tokens through a weight of training_d x training_d, one
// thread in nn::Arithmetic::native as attn train runs them (each stack, or lane, on a thread of its own):
// X W (the forward's projections), dY W^T (the backward to the inputs: nn::matmul_transposed) and X^T dY
// (a weight's gradient: the small X transposed, then a product), each against OpenBLAS's dgemm of the same
// shapes and transposes. T = 12, a sentence of lesson 12's corpus (the lanes of the GRU, the lessons'
// way); T = 68, a stack of the Transformer's (8 such sentences: attn train stacks a batch of 16 in two).
constexpr std::size_t training_d = 256;
constexpr std::array<std::int64_t, 2> training_Ts = {12, 68};

struct TrainingProducts {
    Mat X, W, dY, Y, dW;
};

TrainingProducts training_products(std::size_t T) {
    Rng rng(29);
    return {rng.normal_mat(T, training_d), rng.normal_mat(training_d, training_d), rng.normal_mat(T, training_d),
            rng.normal_mat(T, training_d), rng.normal_mat(training_d, training_d)};
}

// range(0): 0 X W, 1 dY W^T, 2 X^T dY; range(1): 1 for OpenBLAS's dgemm instead of attn's; range(2): T
void BM_training_product(benchmark::State& state) {
    TrainingProducts g = training_products(static_cast<std::size_t>(state.range(2)));
    const nn::ScopedOneThread one;
    const nn::ScopedArithmetic fused(nn::Arithmetic::native);
    const std::int64_t which = state.range(0);
    const bool blas = state.range(1) != 0;
    for (auto _ : state) {
        if (which == 0) {
            if (blas)
                xt::blas::gemm(g.X, g.W, g.Y);
            else
                g.Y = nn::matmul(g.X, g.W, "X W");
            benchmark::DoNotOptimize(g.Y.data());
        } else if (which == 1) {
            if (blas)
                xt::blas::gemm(g.dY, g.W, g.Y, false, true);
            else
                g.Y = nn::matmul_transposed(g.dY, g.W, "dY W^T");
            benchmark::DoNotOptimize(g.Y.data());
        } else {
            if (blas)
                xt::blas::gemm(g.X, g.dY, g.dW, true, false);
            else
                g.dW = nn::matmul(nn::transposed(g.X), g.dY, "X^T dY");
            benchmark::DoNotOptimize(g.dW.data());
        }
    }
}

const std::array<const char*, 3> training_product_names = {"X W", "dY W^T", "X^T dY"};

// ---- Google Benchmark's cases. Real time, not CPU time: BLAS and the softmax use other threads.

void BM_attention(benchmark::State& state) {
    const AttentionInputs in = attention_inputs();
    for (auto _ : state) run_attention(in);
}

void BM_causal_attention(benchmark::State& state) {
    const AttentionInputs in = attention_inputs();
    for (auto _ : state) run_causal_attention(in);
}

void BM_attention_gemms(benchmark::State& state) {
    AttentionGemms g = attention_gemms();
    for (auto _ : state) run_attention_gemms(g);
}

void BM_multi_head(benchmark::State& state) {
    const MultiHeadInputs in = multi_head_inputs();
    for (auto _ : state) run_multi_head(in);
}

void BM_fast_multi_head(benchmark::State& state) {
    const MultiHeadInputs in = multi_head_inputs();
    for (auto _ : state) run_fast_multi_head(in);
}

void BM_multi_head_gemms(benchmark::State& state) {
    MultiHeadGemms g = multi_head_gemms();
    for (auto _ : state) run_multi_head_gemms(g);
}

// range(0): T, range(1): 1 for the causal flag
void BM_fast_attention(benchmark::State& state) {
    const FastInputs in = fast_inputs(static_cast<std::size_t>(state.range(0)));
    for (auto _ : state) run_fast_attention(in, state.range(1) != 0);
}

// ---- FlashAttention's backward pass (issue 34): nn::fast_attention_backward from the forward's O
// and L, at d = 64; the forward saved once, outside the timing.
struct BackwardInputs {
    FastInputs in;
    nn::FastAttentionForward forward;
    Mat dO;
};

BackwardInputs backward_inputs(std::size_t T, bool causal) {
    BackwardInputs b{fast_inputs(T), {}, Rng(23).normal_mat(T, attention_d)};
    b.forward = nn::fast_attention_forward(b.in.Q, b.in.K, b.in.V, causal, nn::Arithmetic::native);
    return b;
}

void run_fast_backward(const BackwardInputs& b, bool causal) {
    benchmark::DoNotOptimize(nn::fast_attention_backward(b.in.Q, b.in.K, b.in.V, b.forward.output, b.forward.L, b.dO,
                                                         causal, nn::Arithmetic::native));
}

// The peak bytes of a backward call besides its inputs, by benchmark name: measured around the timed
// calls themselves (each frees what it made before the next), so that T = 65536 runs once.
std::map<std::string, double> backward_peak;

// range(0): T, range(1): 1 for the causal flag
void BM_fast_backward(benchmark::State& state) {
    const bool causal = state.range(1) != 0;
    const BackwardInputs b = backward_inputs(static_cast<std::size_t>(state.range(0)), causal);
    const std::int64_t before = bytes_now.load();
    bytes_peak.store(before);
    for (auto _ : state) run_fast_backward(b, causal);
    backward_peak[fmt::format("fast_backward_T{}{}", state.range(0), causal ? "_causal" : "")] =
        static_cast<double>(bytes_peak.load() - before);
}

// The rows of the ratio table: the op's benchmark, its floor's, and T for the memory units.
struct Case {
    std::string name, op, floor;
    std::size_t T;
    std::function<double()> peak_extra_bytes;  // one call, counted
    double time_target;                        // op / floor at most; NaN: shown without a target
};

// Bytes allocated at the peak of one call of `call`, above what was allocated before it (the inputs).
template <class F>
double peak_extra_bytes(F call) {
    const std::int64_t before = bytes_now.load();
    bytes_peak.store(before);
    call();
    return static_cast<double>(bytes_peak.load() - before);
}

// Forwards to Google Benchmark's own display, and keeps every run's real time in ms.
class RecordingReporter : public benchmark::BenchmarkReporter {
public:
    explicit RecordingReporter(benchmark::BenchmarkReporter* display) : display_(display) {}

    bool ReportContext(const Context& context) override { return display_->ReportContext(context); }

    void ReportRuns(const std::vector<Run>& runs) override {
        display_->ReportRuns(runs);
        for (const Run& run : runs) {
            if (run.error_occurred) continue;
            const std::string& name = run.run_name.function_name;
            if (run.run_type == Run::RT_Iteration)
                times_[name].push_back(run.GetAdjustedRealTime());
            else if (run.aggregate_name == "median")
                medians_[name] = run.GetAdjustedRealTime();
        }
    }

    void Finalize() override { display_->Finalize(); }

    // The median real time of `name` in ms, or NaN when it did not run (a --benchmark_filter).
    double median_ms(const std::string& name) const {
        if (const auto m = medians_.find(name); m != medians_.end()) return m->second;
        const auto t = times_.find(name);
        if (t == times_.end() || t->second.empty()) return std::nan("");
        std::vector<double> v = t->second;
        std::sort(v.begin(), v.end());
        const std::size_t n = v.size();
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }

private:
    benchmark::BenchmarkReporter* display_;
    std::map<std::string, std::vector<double>> times_;
    std::map<std::string, double> medians_;
};

// ---- The floor's kernels (openblas_kernels.hpp).

// OpenBLAS's answer to `symbol` (openblas_get_corename, openblas_get_config), or "" when the BLAS
// linked is not OpenBLAS. Looked up at run time, since the build may link another BLAS.
std::string openblas_says(const char* symbol) {
    void* found = dlsym(RTLD_DEFAULT, symbol);
    if (!found) return "";
    char* (*get)() = nullptr;
    std::memcpy(&get, &found, sizeof get);
    const char* text = get();
    return text ? text : "";
}

std::set<std::string> this_cpu_flags() {
    std::ifstream in("/proc/cpuinfo");
    return bench::cpu_flags(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
}

bench::CoretypeEnv coretype_env() {
    return bench::coretype_origin(std::getenv("OPENBLAS_CORETYPE"), std::getenv("ATTN_BENCH_OPENBLAS"));
}

// What the ratio table prints beside the floors.
struct FloorKernels {
    std::string corename, config;
    bench::KernelChoice choice;
};

// Runs the program again (execv of itself, same arguments) with OPENBLAS_CORETYPE = coretype and
// the record beside it; returns only when that fails.
void run_again(char** argv, const std::string& coretype, const std::string& record) {
    setenv("OPENBLAS_CORETYPE", coretype.c_str(), 1);
    setenv("ATTN_BENCH_OPENBLAS", record.c_str(), 1);
    execv("/proc/self/exe", argv);
    fmt::print(stderr, "attention_bench: could not run itself again ({}): going on with these kernels\n",
               std::strerror(errno));
}

// Settles the kernels before any timing: may run the program again, and so not return.
FloorKernels settle_kernels(char** argv) {
    if (const char* fake = std::getenv("ATTN_BENCH_FAKE_GENERIC"); fake && std::string(fake) == "1") {
        if (!std::getenv("OPENBLAS_CORETYPE")) {
            fmt::print(stderr, "attention_bench: ATTN_BENCH_FAKE_GENERIC=1: first with OPENBLAS_CORETYPE=Prescott, "
                               "as if OpenBLAS did not know this CPU\n");
            run_again(argv, "Prescott", "fake");
        } else if (!std::getenv("ATTN_BENCH_OPENBLAS")) {
            fmt::print(stderr, "attention_bench: ATTN_BENCH_FAKE_GENERIC=1 does nothing: OPENBLAS_CORETYPE is set "
                               "(unset it first)\n");
        }
    }
    FloorKernels k{openblas_says("openblas_get_corename"), openblas_says("openblas_get_config"), {}};
    if (k.corename.empty()) {
        k.corename = "not OpenBLAS";
        k.choice.note = "the BLAS linked is not OpenBLAS: its kernels cannot be asked for";
        return k;
    }
    const bench::CoretypeEnv env = coretype_env();
    k.choice = bench::choose_kernels(k.corename, this_cpu_flags(), env.origin, env.tried);
    fmt::print(stderr, "attention_bench: {}\n", k.choice.note);
    if (k.choice.rerun) {
        run_again(argv, k.choice.coretype, bench::record_after(env.tried, k.choice.coretype));
        k.choice.best = false;
    }
    return k;
}

// --openblas_decide=CORENAME: the decision for another program's OpenBLAS in this environment, as
// JSON: {"generic", "rerun", "coretype", "record" (for ATTN_BENCH_OPENBLAS), "best", "note"}.
int print_decision(const std::string& corename) {
    const bench::CoretypeEnv env = coretype_env();
    const bench::KernelChoice c = bench::choose_kernels(corename, this_cpu_flags(), env.origin, env.tried);
    nlohmann::json j{{"corename", corename}, {"generic", c.generic}, {"rerun", c.rerun},
                     {"coretype", c.coretype}, {"record", c.rerun ? bench::record_after(env.tried, c.coretype) : ""},
                     {"best", c.best}, {"note", c.note}};
    std::cout << j.dump() << "\n";
    return 0;
}

// nn::fast_attention_backward: its time against the fast forward's at the same length (target <= 3 at
// T = 1024), and its peak memory besides the inputs (the saved O and L, dO and the gradients it returns
// counted) against the 4 T^2 doubles the dense backward holds (S, P, dP, dS); the lengths whose
// benchmark ran.
void print_backward_table(const RecordingReporter& reporter) {
    constexpr double backward_target = 3.0, mebibyte = 1024.0 * 1024.0;
    fmt::print("\n{:<24}{:>12}{:>12}{:>10}{:>12}{:>14}{:>14}\n", "fast backward, d = 64", "median_ms", "forward_ms",
               "ratio", "peak_MiB", "peak_T_d", "dense_MiB");
    for (const std::size_t T : {std::size_t{1024}, std::size_t{4096}, std::size_t{16384}, std::size_t{65536}})
        for (const bool causal : {false, true}) {
            if (T == 65536 && !causal) continue;
            const std::string suffix = fmt::format("T{}{}", T, causal ? "_causal" : "");
            const std::string label = fmt::format("T={}{}", T, causal ? " causal" : "");
            const double ms = reporter.median_ms("fast_backward_" + suffix);
            if (std::isnan(ms)) {
                fmt::print("{:<24}{:>12}\n", label, "not run");
                continue;
            }
            const double forward = reporter.median_ms("fast_attention_" + suffix), ratio = ms / forward;
            const double peak = backward_peak.at("fast_backward_" + suffix);
            const double T_d = static_cast<double>(T * attention_d * sizeof(double));
            const std::string verdict = T != 1024 || std::isnan(ratio) ? "" : ratio <= backward_target ? "ok" : "OVER";
            fmt::print("{:<24}{:>12.1f}{:>12.1f}{:>10.2f}{:>12.1f}{:>14.1f}{:>14.0f}  {}\n", label, ms, forward, ratio,
                       peak / mebibyte, peak / T_d, 4.0 * static_cast<double>(T * T) * sizeof(double) / mebibyte,
                       verdict);
        }
    fmt::print("(peak: besides the inputs Q, K, V, O, L and dO; the gradients returned, D and the packed operands "
               "included; peak_T_d = peak / (T d doubles), flat when the memory is O(T d); the time target is "
               "ratio <= {} at T = 1024)\n", backward_target);
}

}  // namespace

// A training step's products against OpenBLAS's dgemm (target: at most 1.2 x, issue 43).
void print_training_table(const RecordingReporter& reporter, const FloorKernels& kernels) {
    constexpr double target = 1.2;
    for (const std::int64_t T : training_Ts) {
        fmt::print("\n{:<44}{:>14}{:>10}{:>12}{:>8}{:>8}\n",
                   fmt::format("training product, T={} d_model={}", T, training_d), "attn_us", "gemm_us", "openblas",
                   "ratio", "target");
        for (std::size_t which = 0; which < training_product_names.size(); ++which) {
            const double op = 1e3 * reporter.median_ms(fmt::format("training_{}_T{}", which, T));
            const double floor = 1e3 * reporter.median_ms(fmt::format("training_{}_gemm_T{}", which, T));
            const double ratio = op / floor;
            const std::string verdict = std::isnan(ratio)        ? "not run"
                                        : kernels.choice.generic ? "no floor (generic kernels)"
                                        : ratio <= target        ? "ok"
                                                                 : "OVER";
            fmt::print("{:<44}{:>14.2f}{:>10.2f}{:>12}{:>8.2f}{:>8.2f}  {}\n",
                       fmt::format("{} (fused, one thread)", training_product_names[which]), op, floor,
                       kernels.corename, ratio, target, verdict);
        }
    }
}

int main(int argc, char** argv) {
    const std::string decide = "--openblas_decide=";
    for (int i = 1; i < argc; ++i)
        if (std::strncmp(argv[i], decide.c_str(), decide.size()) == 0) return print_decision(argv[i] + decide.size());
    const FloorKernels kernels = settle_kernels(argv);
    // The same malloc tuning that attn runs with (src/cli/main.cpp), so the ops are timed as attn runs them.
    tune_allocator_for_tensors();
    benchmark::AddCustomContext("openblas_corename", kernels.corename);
    benchmark::AddCustomContext("openblas_config", kernels.config);
    benchmark::AddCustomContext("openblas_floor", kernels.choice.best && !kernels.choice.generic ? "yes" : "no");
    benchmark::AddCustomContext("openblas_note", kernels.choice.note);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

    for (const auto& [name, fn] : std::vector<std::pair<std::string, void (*)(benchmark::State&)>>{
             {"attention", BM_attention},
             {"attention_gemms", BM_attention_gemms},
             {"causal_attention", BM_causal_attention},
             {"multi_head", BM_multi_head},
             {"fast_multi_head", BM_fast_multi_head},
             {"multi_head_gemms", BM_multi_head_gemms}})
        benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kMillisecond)->UseRealTime();

    for (const std::int64_t T : {1024, 4096, 16384})
        for (const std::int64_t causal : {0, 1})
            benchmark::RegisterBenchmark(fmt::format("fast_attention_T{}{}", T, causal ? "_causal" : "").c_str(),
                                         BM_fast_attention)
                ->Args({T, causal})
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();

    // the backward: T = 65536 causal once (half a minute on a quiet machine), for its memory
    for (const std::int64_t T : {1024, 4096, 16384, 65536})
        for (const std::int64_t causal : {0, 1}) {
            if (T == 65536 && !causal) continue;
            auto* b = benchmark::RegisterBenchmark(
                          fmt::format("fast_backward_T{}{}", T, causal ? "_causal" : "").c_str(), BM_fast_backward)
                          ->Args({T, causal})
                          ->Unit(benchmark::kMillisecond)
                          ->UseRealTime();
            if (T >= 65536) b->Iterations(1);
        }

    for (const std::int64_t T : training_Ts)
        for (const std::int64_t which : {0, 1, 2})
            for (const std::int64_t blas : {0, 1})
                benchmark::RegisterBenchmark(fmt::format("training_{}{}_T{}", which, blas ? "_gemm" : "", T).c_str(),
                                             BM_training_product)
                    ->Args({which, blas, T})
                    ->Unit(benchmark::kMillisecond)  // as every case, so that median_ms reads ms
                    ->UseRealTime();

    RecordingReporter reporter(benchmark::CreateDefaultDisplayReporter());
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();

    const AttentionInputs attention = attention_inputs();
    const MultiHeadInputs multi_head = multi_head_inputs();
    const FastInputs fast_attention = fast_inputs(attention_T);
    const std::string attention_shape = fmt::format("T={} d={}", attention_T, attention_d);
    const std::string multi_head_shape =
        fmt::format("T={} d_model={} h={}", multi_head_T, multi_head_d_model, multi_head_h);
    // The fast paths against the targets; the exercise functions, which also return the T x T scores
    // and weights the lessons record, for comparison (no target).
    const double none = std::nan("");
    const std::vector<Case> cases = {
        {"fast attention " + attention_shape, "fast_attention_T1024", "attention_gemms", attention_T,
         [&] { return peak_extra_bytes([&] { run_fast_attention(fast_attention, false); }); }, 1.15},
        {"fast causal attention " + attention_shape, "fast_attention_T1024_causal", "attention_gemms", attention_T,
         [&] { return peak_extra_bytes([&] { run_fast_attention(fast_attention, true); }); }, 0.7},
        {"fast multi-head " + multi_head_shape, "fast_multi_head", "multi_head_gemms", multi_head_T,
         [&] { return peak_extra_bytes([&] { run_fast_multi_head(multi_head); }); }, 1.1},
        {"attention " + attention_shape, "attention", "attention_gemms", attention_T,
         [&] { return peak_extra_bytes([&] { run_attention(attention); }); }, none},
        {"causal attention " + attention_shape, "causal_attention", "attention_gemms", attention_T,
         [&] { return peak_extra_bytes([&] { run_causal_attention(attention); }); }, none},
        {"multi-head " + multi_head_shape, "multi_head", "multi_head_gemms", multi_head_T,
         [&] { return peak_extra_bytes([&] { run_multi_head(multi_head); }); }, none},
    };

    // Times are Google Benchmark's medians (one run each unless --benchmark_repetitions); the
    // floor of the causal cases is the full Q K^T and A V, as without the mask. GEMMs on generic
    // kernels are no floor: their ratios are printed, never judged.
    const bool floor_judged = !kernels.choice.generic && kernels.choice.best;
    fmt::print("\nfloor: {}\n  {}\n", kernels.config.empty() ? kernels.corename : kernels.config, kernels.choice.note);
    fmt::print("{:<44}{:>14}{:>10}{:>12}{:>8}{:>8}\n", "case", "attention_ms", "gemm_ms", "openblas", "ratio", "target");
    for (const Case& c : cases) {
        const double op = reporter.median_ms(c.op), floor = reporter.median_ms(c.floor);
        const double ratio = op / floor;
        const std::string verdict = std::isnan(ratio)           ? "not run"
                                    : std::isnan(c.time_target) ? ""
                                    : kernels.choice.generic    ? "no floor (generic kernels)"
                                    : ratio <= c.time_target    ? (floor_judged ? "ok" : "ok (kernels set by hand)")
                                                                : (floor_judged ? "OVER" : "OVER (kernels set by hand)");
        fmt::print("{:<44}{:>14.2f}{:>10.2f}{:>12}{:>8.2f}{:>8}  {}\n", c.name, op, floor, kernels.corename, ratio,
                   std::isnan(c.time_target) ? "-" : fmt::format("{:.2f}", c.time_target), verdict);
    }

    // Peak memory of one call each, besides the inputs (which exist before the call; for the
    // causal case that includes the T x T mask). The results count: they are allocated by the call.
    // Only the cases whose benchmark ran (--benchmark_filter), so that a filtered run is not made
    // to wait for calls it did not ask for.
    fmt::print("\n{:<44}{:>14}  (target <= {} T^2 doubles besides the inputs)\n", "case", "peak_T^2", memory_target);
    for (const Case& c : cases) {
        if (std::isnan(reporter.median_ms(c.op))) {
            fmt::print("{:<44}{:>14}\n", c.name, "not run");
            continue;
        }
        const double T2_bytes = static_cast<double>(c.T * c.T * sizeof(double));
        const double peak = c.peak_extra_bytes() / T2_bytes;
        fmt::print("{:<44}{:>14.3f}  {}\n", c.name, peak, peak <= memory_target ? "ok" : "OVER");
    }

    // nn::fast_attention: its time, and its peak memory besides the inputs (the T x d result, Q
    // scaled, K and V packed, one tile per query block in flight) against the T x T scores and
    // weights the plain form holds at that length; the lengths whose benchmark ran.
    fmt::print("\n{:<44}{:>14}{:>16}{:>16}\n", "fast attention, d = 64", "median_ms", "peak_MiB", "plain_S+A_MiB");
    for (const std::size_t T : {std::size_t{1024}, std::size_t{4096}, std::size_t{16384}})
        for (const bool causal : {false, true}) {
            const std::string name = fmt::format("fast_attention_T{}{}", T, causal ? "_causal" : "");
            const std::string label = fmt::format("T={}{}", T, causal ? " causal" : "");
            const double ms = reporter.median_ms(name);
            if (std::isnan(ms)) {
                fmt::print("{:<44}{:>14}\n", label, "not run");
                continue;
            }
            const FastInputs in = fast_inputs(T);
            const double peak = peak_extra_bytes([&] { run_fast_attention(in, causal); });
            const double plain = 2.0 * static_cast<double>(T * T * sizeof(double));
            fmt::print("{:<44}{:>14.1f}{:>16.2f}{:>16.0f}\n", label, ms, peak / (1024.0 * 1024.0),
                       plain / (1024.0 * 1024.0));
        }
    print_backward_table(reporter);
    print_training_table(reporter, kernels);
    return 0;
}
