// Lesson 7: why attention replaced recurrence (Vaswani et al. 2017, section 4 and table 1). A GRU
// and a self-attention layer read the same T tokens for T = T_min, 2 T_min, ..., T_max: the steps
// that must run one after another, the multiply-adds, the wall time on this machine, the memory.
// The output-only tiled attention (nn::fast_attention, lesson 10's blocks) is also timed, on up to
// T_tiled tokens, past the T x T matrices' memory cap.
// T = tokens, d = width of the tokens and of the GRU state, n = number of lengths measured.
#include "registry.hpp"
#include "gru.hpp"
#include "support.hpp"

#include "core/rng.hpp"
#include "nn/fast_attention.hpp"
#include "nn/reductions.hpp"
#include "nn/rnn.hpp"
#include "nn/self_attention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace attn {

namespace scaling {  // this lesson's own names (the lessons compile as unity files: meson.build)
namespace {

// ---------------------------------------------------------------- parameters (--set)

namespace param {
const Param d{"d", 64, 1, 1024, "width of the tokens and of the GRU state"};
const Param T_min{"T_min", 64, 1, 16384, "shortest sequence measured; a power of two"};
const Param T_max{"T_max", 4096, 1, 16384,
                  "longest sequence measured; a power of two, at least T_min (T doubles up to it)"};
const Param T_tiled{"T_tiled", 8192, 1, 65536,
                    "longest sequence timed by the output-only tiled attention, which holds no T x T matrix; a "
                    "power of two, at least T_max"};
const Param repeats{"repeats", 3, 1, 100, "timed runs of each layer at each length; the fastest is kept"};
}  // namespace param

// Seconds per multiply-add of the timed runs, measured on this project's 2-core machine (under a
// load of 3.5 to 7, so on the safe side): the GRU's chain of d x d products, whose weights fall out
// of the caches as d grows, attention's large products with its T x T matrices, and the tiled
// attention, whose tiles stay in the caches (about 0.04e-9 s per T^2 d on the quiet machine, 0.3e-9
// under a load of 7). The default (d = 64, T = 64 .. 4096, tiled up to 8192, 3 runs) is estimated
// at 8 s and takes 3 to 10 s (T_tiled = 16384 adds about 10 s under load: not the default, since
// the tests bless every lesson a dozen times); d = 1024 with T_max = 1024 took 59 s.
constexpr double gru_seconds_per_madd = 6e-9, attention_seconds_per_madd = 0.85e-9,
                 tiled_seconds_per_madd = 0.15e-9;

// The timing step runs each layer `repeats` times at every length: the GRU's T d^2 and attention's
// T^2 d multiply-adds up to T_max, the tiled attention's T^2 (d + 16) up to T_tiled. Anything estimated
// above a minute is refused before it starts (time_limit), naming a parameter of the largest part.
TimeEstimate time_estimate(const Config& c) {
    const double d = as_double(c.size(param::d)), runs = as_double(c.size(param::repeats));
    double gru = 0.0, attention = 0.0, tiled = 0.0;
    for (std::size_t T = c.size(param::T_min); T <= c.size(param::T_tiled); T *= 2) {
        // each score also costs an exponential and its share of the tiles' bookkeeping, about as much
        // as 16 multiply-adds: what the time is made of when d is small
        tiled += runs * as_double(T) * as_double(T) * (d + 16.0) * tiled_seconds_per_madd;
        if (T > c.size(param::T_max)) continue;
        gru += runs * as_double(T) * d * d * gru_seconds_per_madd;
        attention += runs * as_double(T) * as_double(T) * d * attention_seconds_per_madd;
    }
    // the parameter to lower is one of the largest part: d or T_max for the GRU, T_max for the plain
    // attention, T_tiled for the tiled one (a power of 0 leaves a parameter out)
    const bool gru_most = gru > std::max(attention, tiled), tiled_most = tiled > std::max(gru, attention);
    return {gru + attention + tiled + 1.0, "the timing step",
            fmt::format("{} runs of the GRU's T d^2 and attention's T^2 d multiply-adds at every length up to T_max, "
                        "and of the tiled attention's T^2 (d + 16) up to T_tiled",
                        c.size(param::repeats)),
            {{&param::d, gru_most ? 2.0 : 1.0},
             {&param::T_max, tiled_most ? 0.0 : (gru_most ? 1.0 : 2.0)},
             {&param::T_tiled, tiled_most ? 2.0 : 0.0},
             {&param::repeats, 1.0}}};
}

std::string limits(const Config& c) {
    for (const Param* p : {&param::T_min, &param::T_max, &param::T_tiled})
        if (auto why = power_of_two(c, *p, "the lengths double from T_min to T_max, so both must be powers of two");
            !why.empty())
            return why;
    if (c.size(param::T_min) > c.size(param::T_max))
        return fmt::format("T_min={} is larger than T_max={}: the lengths run from T_min up to T_max",
                           c.size(param::T_min), c.size(param::T_max));
    if (c.size(param::T_max) > c.size(param::T_tiled))
        return fmt::format("T_tiled={} is smaller than T_max={}: the tiled attention is timed at every length up to "
                           "T_tiled, the GRU and the plain attention up to T_max",
                           c.size(param::T_tiled), c.size(param::T_max));
    // the T_max x T_max scores and weights of the attention run, the T_min x T_max pair of the check
    // that reruns a block of queries, the T_max x d inputs, states and gates, and the tiled run's
    // T_tiled x d tokens, their first rows for one length, output, scaled queries, packed keys and values
    const double T = as_double(c.size(param::T_max)), d = as_double(c.size(param::d));
    if (std::string why = memory_limit(2.0 * T * T + 2.0 * as_double(c.size(param::T_min)) * T + 6.0 * T * d +
                                           6.0 * as_double(c.size(param::T_tiled)) * (d + 8.0),
            fmt::format("the {0} x {0} attention scores and weights at T_max={0} and the tiled run's {1} x {2} "
                        "operands at T_tiled={1}",
                        c.size(param::T_max), c.size(param::T_tiled), c.size(param::d)));
        !why.empty())
        return why;
    return "";
}


// The dependent operations of attention in matrix form: S = X X^T / sqrt(d), A = softmax(S), Y = A X.
// Each must wait for the one before; within each, every entry or row is independent of the others.
constexpr double attention_chain = 3.0;

constexpr double mebibyte = 1024.0 * 1024.0;

// T_min, 2 T_min, ..., T_max (the limits make both powers of two, T_min <= T_max).
std::vector<std::size_t> doubling_lengths(std::size_t T_min, std::size_t T_max) {
    std::vector<std::size_t> out;
    for (std::size_t T = T_min; T <= T_max; T *= 2) out.push_back(T);
    return out;
}

std::vector<std::string> length_labels(const std::vector<std::size_t>& lengths) {
    std::vector<std::string> out;
    for (auto T : lengths) out.push_back("T=" + std::to_string(T));
    return out;
}


Mat first_rows(const Mat& X, std::size_t T) { return nn::rows_of(X, 0, T); }

// The fastest of `repeats` runs in milliseconds: other programs can slow a run down, never speed
// it up. `kept` ends as the last run's result; it is emptied before each run starts, so two
// results of a T x T size are never held at once.
template <class Result, class Run>
double fastest_ms(std::size_t repeats, Result& kept, Run run) {
    using Clock = std::chrono::steady_clock;
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t r = 0; r < repeats; ++r) {
        kept = Result{};
        const auto start = Clock::now();
        kept = run();
        const std::chrono::duration<double, std::milli> took = Clock::now() - start;
        best = std::min(best, took.count());
    }
    return best;
}

// What the lesson keeps of the runs at every length: their sizes and times, and the runs at the
// shortest and the longest length for the checks.
struct Measurements {
    Mat table;    // n x 4: GRU steps, attention steps, weights MiB, GRU states MiB
    Mat timings;  // n x 2: GRU ms, attention ms
    Mat tiled;    // one row per length up to T_tiled: tiled attention ms
    nn::GruRun shortest_gru, longest_gru;
    nn::AttentionResult longest_attention;
    double weights_bytes_error = 0.0, states_bytes_error = 0.0;
    double tiled_error = 0.0;  // largest |tiled output - plain output| at T_max
};

// X_long: the tokens for the tiled runs, T_tiled rows (X's rows first); tiled_lengths: T_min .. T_tiled,
// which begin with `lengths`.
Measurements measure(Trace& trace, const Mat& X, const Mat& X_long, const nn::GruParams& gru,
                     const std::vector<std::size_t>& lengths, const std::vector<std::size_t>& tiled_lengths,
                     std::size_t repeats) {
    const std::size_t n = lengths.size(), d = X.shape(1);
    const Vec h0 = nn::zeros(d);
    Measurements m;
    m.table = nn::zeros(n, 4);
    m.timings = nn::zeros(n, 2);
    m.tiled = nn::zeros(tiled_lengths.size(), 1);
    for (std::size_t i = 0; i < tiled_lengths.size(); ++i) {
        const std::size_t T = tiled_lengths[i];
        trace.progress(fmt::format("measuring: T = {} ({} of {})", T, i + 1, tiled_lengths.size()));
        const Mat X_T = first_rows(X_long, T);
        Mat output;
        // portable arithmetic: the last check records how far these outputs are from the plain form's,
        // a number that must have the same bits on every processor (Arithmetic::native's fused
        // multiply-adds would make it depend on whether the processor has FMA)
        m.tiled(i, 0) = fastest_ms(repeats, output, [&] {
            return nn::fast_attention(X_T, X_T, X_T, false, nn::Arithmetic::portable);
        });
        if (i >= n) continue;  // past T_max: the tiled form alone
        nn::GruRun run;
        nn::AttentionResult attention;
        m.timings(i, 0) = fastest_ms(repeats, run, [&] { return nn::gru_forward(gru, X_T, h0); });
        m.timings(i, 1) =
            fastest_ms(repeats, attention, [&] { return nn::scaled_dot_product_attention(X_T, X_T, X_T); });
        // steps: one GRU state per step, each computed from the one before; memory: what the runs returned
        const double weights_bytes = as_double(attention.weights.size() * sizeof(double));
        const double states_bytes = as_double(run.states.size() * sizeof(double));
        m.table(i, 0) = as_double(run.states.shape(0));
        m.table(i, 1) = attention_chain;
        m.table(i, 2) = weights_bytes / mebibyte;
        m.table(i, 3) = states_bytes / mebibyte;
        m.weights_bytes_error = std::max(m.weights_bytes_error, std::abs(weights_bytes - as_double(T * T * 8)));
        m.states_bytes_error = std::max(m.states_bytes_error, std::abs(states_bytes - as_double(T * d * 8)));
        if (i == 0) m.shortest_gru = run;
        if (i + 1 == n) {
            m.tiled_error = max_abs_difference(output, attention.output);
            m.longest_gru = std::move(run), m.longest_attention = std::move(attention);
        }
    }
    return m;
}

// The states of a loop in which every call of nn::gru_step is given the state the call before returned.
Mat states_step_by_step(const nn::GruParams& gru, const Mat& X) {
    Mat states = xt::empty<double>({X.shape(0), gru.hidden_width()});
    Vec h = nn::zeros(gru.hidden_width());
    for (std::size_t t = 0; t < X.shape(0); ++t) {
        h = nn::gru_step(gru, nn::row_of(X, t), h).state;
        nn::set_row(states, t, h);
    }
    return states;
}

// Largest |column c of the table - expected(T)| over the lengths.
template <class Expected>
double column_error(const Mat& table, std::size_t c, const std::vector<std::size_t>& lengths, Expected expected) {
    double worst = 0.0;
    for (std::size_t i = 0; i < lengths.size(); ++i)
        worst = std::max(worst, std::abs(table(i, c) - expected(lengths[i])));
    return worst;
}

// Multiply-adds per layer, counted from the shapes of the matrices each layer multiplies: every GRU
// step multiplies x_t by W_z, W_r, W_h and a state by U_z, U_r, U_h; attention forms X X^T (T x d
// times d x T) and A X (T x T times T x d).
Mat multiply_adds(const nn::GruParams& gru, const std::vector<std::size_t>& lengths) {
    const double per_gru_step = as_double(gru.W_z.size() + gru.W_r.size() + gru.W_h.size() + gru.U_z.size() +
                                          gru.U_r.size() + gru.U_h.size());
    const double d = as_double(gru.hidden_width());
    Mat table = nn::zeros(lengths.size(), 3);
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        const double T = as_double(lengths[i]);
        table(i, 0) = T * per_gru_step;
        table(i, 1) = T * d * T + T * T * d;
        table(i, 2) = table(i, 1) / table(i, 0);
    }
    return table;
}

// time(T) / time(T/2) for every length after the first: 2 where the time grows like T, 4 like T^2.
Mat growth_per_doubling(const Mat& timings) {
    const std::size_t n = timings.shape(0);
    Mat growth = nn::zeros(n > 0 ? n - 1 : 0, timings.shape(1));
    for (std::size_t i = 1; i < n; ++i)
        for (std::size_t c = 0; c < timings.shape(1); ++c) growth(i - 1, c) = timings(i, c) / timings(i - 1, c);
    return growth;
}

// Attention for the last `count` queries alone, against all T keys, compared with the same rows
// of the full run: no row needs another row, so any block of queries could go to another core.
double block_of_queries_error(const Mat& X, const nn::AttentionResult& full, std::size_t count) {
    const std::size_t T = X.shape(0);
    const Mat queries = nn::rows_of(X, T - count, T);
    const nn::AttentionResult block = nn::scaled_dot_product_attention(queries, X, X);
    return max_abs_difference(block.output, nn::rows_of(full.output, T - count, T));
}

std::string mib_text(double bytes) { return fmt::format("{:g} MiB", bytes / mebibyte); }

std::string runs_text(std::size_t runs) { return runs == 1 ? "1 run" : fmt::format("{} runs", runs); }

// Step [layers]: the two layers and the lengths, with the checks that the GRU runs in order.
void record_layers(Trace& trace, const Mat& X, const nn::GruParams& gru, const std::vector<std::size_t>& lengths,
                   const Measurements& m, std::size_t T_min) {
    const std::size_t T_max = X.shape(0), d = X.shape(1);
    trace.step("layers", "A GRU and self-attention over the same tokens",
               "GRU: h_t = GRU(x_t, h_{t-1}), t = 1 .. T;   attention: Y = softmax(X X^T / sqrt(d)) X",
               fmt::format(
                   "Section 4 of Vaswani et al. (2017), \"Why Self-Attention\", weighs layers that turn a sequence "
                   "of T vectors into another sequence of T vectors on three counts: the work a layer does, how "
                   "many of its operations must run one after another, and how many steps a signal takes between "
                   "two positions (their table 1). This lesson counts the first two, times them on this machine, "
                   "and adds the memory that pays for them. Both layers read the same tokens, the first T rows of "
                   "X, each d = {0} numbers drawn from the seed, for T = {1}, {2}, ..., {3}.\n"
                   "The recurrent layer is the GRU of Cho et al. (2014, eqs. 5 to 8), weights N(0, 1/d), zero "
                   "biases and h_0 = 0 (nn::gru_forward). The attention layer is eq. 1 of Vaswani et al. in its "
                   "barest form: the tokens are their own queries, keys and values (nn::scaled_dot_product_attention "
                   "with Q = K = V = X). A trained layer first projects X three times; those products cost T d^2, "
                   "run side by side, and table 1 leaves them out too.\n"
                   "The checks show what makes the GRU sequential: a loop that hands each call of nn::gru_step the "
                   "state the previous call returned gives the states of nn::gru_forward, and the run over {3} "
                   "tokens begins with exactly the states of the run over {1}, because h_t depends on x_1 .. x_t "
                   "and on nothing later.",
                   d, T_min, 2 * T_min, T_max));
    Vec lengths_vec = nn::zeros(lengths.size());
    for (std::size_t i = 0; i < lengths.size(); ++i) lengths_vec(i) = as_double(lengths[i]);
    trace.tensor("T", "the lengths measured, doubling from T_min to T_max", lengths_vec);
    trace.check(fmt::format("nn::gru_step in a loop, each call fed the last state, gives nn::gru_forward (T = {})",
                            T_min),
                max_abs_difference(states_step_by_step(gru, first_rows(X, T_min)), m.shortest_gru.states), 0.0);
    trace.check(fmt::format("the first {} states of the run over {} tokens are those of the run over {}", T_min, T_max,
                            T_min),
                max_abs_difference(first_rows(m.longest_gru.states, T_min), m.shortest_gru.states), 0.0);
}

// Step [steps]: the sequential steps of each layer and the memory its result takes at every length.
void record_sequential_steps(Trace& trace, const Measurements& m, const std::vector<std::size_t>& lengths,
                             const std::vector<std::string>& labels, std::size_t d) {
    trace.step("steps", "Sequential steps: T for the GRU, 3 for attention",
               "GRU: h_1 -> h_2 -> ... -> h_T (T steps);   attention: S = X X^T / sqrt(d) -> A = softmax(S) -> Y = A X",
               fmt::format(
                   "Count the operations that have to wait for one another. The GRU cannot start h_t before "
                   "h_{{t-1}} is done, so T tokens take T steps in a row whatever the hardware, and each step is "
                   "only six d x d matrix-vector products ({0} multiply-adds at d = {1}): too little work to share "
                   "between cores. Attention in matrix form is a chain of three operations: the scores S, the "
                   "softmax of each row of S, and the weighted sums A X. Each link waits for the one before, but "
                   "inside a link every entry of S, every row of the softmax and every row of A X can be computed "
                   "at the same time. We count one step per link, 3 at every T. This is the middle column of "
                   "table 1: O(n) sequential operations for a recurrent layer, O(1) for self-attention. The path "
                   "column follows the same pattern: from x_1 to h_T a signal crosses T - 1 recurrent steps, while "
                   "in attention every token reads every other through one weight.\n"
                   "The last two columns are the memory that grows with T: the T x T weights A take T^2 x 8 bytes "
                   "(the scores S before the softmax are a second matrix of that size), the GRU's T states T d x 8 "
                   "bytes. At T = d they are equal; every doubling of T doubles the states and quadruples the "
                   "weights.",
                   6 * d * d, d));
    trace.tensor("scaling", fmt::format("one row per length T; d = {}", d), m.table, labels,
                 {"GRU steps", "attention steps", "T×T weights MiB", "GRU states MiB"});
    trace.check("the GRU takes T steps (one state per token) and attention 3, at every T",
                std::max(column_error(m.table, 0, lengths, [](std::size_t T) { return as_double(T); }),
                         column_error(m.table, 1, lengths, [](std::size_t) { return attention_chain; })),
                0.0);
    trace.check("the weights each run returned take T^2 x 8 bytes", m.weights_bytes_error, 0.0);
    trace.check(fmt::format("the states each run returned take T d x 8 = {} T bytes", 8 * d), m.states_bytes_error,
                0.0);
}

// Step [work]: the multiply-adds of each layer, 6 T d^2 against 2 T^2 d.
void record_work(Trace& trace, const nn::GruParams& gru, const std::vector<std::size_t>& lengths,
                 const std::vector<std::string>& labels) {
    const std::size_t d = gru.hidden_width();
    const Mat work = multiply_adds(gru, lengths);
    trace.step("work", "Work: 6 T d^2 multiply-adds against 2 T^2 d",
               "GRU: T x 6 d^2;   attention: T^2 d (X X^T) + T^2 d (A X);   ratio T / 3d",
               fmt::format(
                   "Fewer sequential steps is not less work. The first column of table 1 gives the work per layer: "
                   "O(n d^2) for a recurrent layer, O(n^2 d) for self-attention. The table counts multiply-adds "
                   "from the shapes of the matrices each layer multiplies. A GRU step multiplies x_t by W_z, W_r "
                   "and W_h and the previous state by U_z, U_r and U_h, six d x d products: 6 T d^2 for the "
                   "sequence. Attention forms T^2 scores of d products each, then T outputs that each add up T "
                   "values of width d: 2 T^2 d. Their ratio is T / 3d, so below T = 3d = {0} attention does less "
                   "arithmetic than the GRU and above it more, twice as much more with every doubling of T. The "
                   "T^2 exponentials of the softmax come on top and are not counted.\n"
                   "Vaswani et al. argue that the usual case favours attention, because sentence lengths are "
                   "mostly below the width of the representations (d = 512 in their base model). For long "
                   "sequences they suggest letting each query see only a window of r neighbours: O(r n d) work "
                   "(the last row of table 1), at the price of a longer path between distant tokens.",
                   3 * d));
    trace.tensor("mult-adds", fmt::format("per layer; d = {}", d), work, labels,
                 {"GRU", "attention", "attention / GRU"});
    trace.check("the counts from the matrix shapes are 6 T d^2 and 2 T^2 d",
                std::max(column_error(work, 0, lengths, [d](std::size_t T) { return 6.0 * as_double(T * d * d); }),
                         column_error(work, 1, lengths, [d](std::size_t T) { return 2.0 * as_double(T * T * d); })),
                0.0);
}

// The explanation of step [timing]: repeats runs per size, width d, a block of block queries checked on
// its own, the plain form up to T_max and the tiled one up to T_tiled.
std::string timing_text(std::size_t repeats, std::size_t d, std::size_t block, std::size_t T_max,
                        std::size_t T_tiled) {
    return fmt::format(
        "Now the clock. At every T each layer is timed over {0} and the fastest is kept, since other "
        "programs can only slow a run down. These numbers belong to this machine at this moment: they "
        "are shown, but never written to or compared with the golden file, and the next run will differ "
        "a little.\n"
        "What to look for. The GRU's time grows like T (growth near 2 per doubling), because every step "
        "costs the same. Attention's work grows like T^2, a factor of 4 per doubling, but its measured "
        "time need not: on this project's 2-core machine successive doublings took from 0.8 to 37 times "
        "as long, below 4 while the fixed cost of each call and idle cores hide the work, above 4 when "
        "the T x T weights (8 T^2 bytes: 8 MiB at T = 1024) stop fitting in the caches (2 MiB of L2 per "
        "core there) or other programs take a core during one size and not the next. The T x T work goes "
        "to matrix products and a row-by-row softmax that use "
        "every core (attn's own products, which add in a fixed order so that every recorded number is "
        "the same on every processor; a tuned BLAS library, free to fuse multiply and add and to choose its "
        "own order, is faster still). "
        "Which layer is faster at a given T depends on the machine. Past T = 3d = {1} "
        "the GRU does less arithmetic, yet it spends its time in a long chain of small products that "
        "cannot use the hardware well, while attention's extra work runs in large products that can. "
        "On a few cores the quadratic growth still makes attention the slower layer beyond some length; "
        "a GPU with thousands of arithmetic units moves that length much further out.\n"
        "So the case of Vaswani et al. is not that attention is cheaper on one core. With O(1) "
        "sequential steps a layer can process all positions of a sequence at once, which is what "
        "parallel hardware rewards (they trained on 8 GPUs), and a recurrent layer never can. The checks "
        "confirm that the timed attention is what it claims: its rows are distributions, and the last "
        "{2} queries computed on their own, as another core would, give the rows of the full run.\n"
        "The table 'tiled' times the same outputs computed without the T x T matrices: the tiled form "
        "of lesson 10 (online-softmax), blocks of 64 queries against blocks of 256 keys with a running "
        "maximum and sum per query (nn::fast_attention). It does the same 2 T^2 d multiply-adds, but "
        "in tiles that stay in the caches, and it holds T d numbers instead of 2 T^2, so it runs on "
        "past T_max = {3}, where the plain form's matrices would break the 1 GiB cap, up to T_tiled = "
        "{4}. At those lengths the growth per doubling comes near 4: the quadratic work is all there is. "
        "The last check compares its outputs with the plain form's at T = {3}.",
        runs_text(repeats), 3 * d, block, T_max, T_tiled);
}

// Step [timing]: the wall time of each layer on this machine, shown but never compared.
void record_timing(Trace& trace, const Mat& X, const Measurements& m, const std::vector<std::string>& labels,
                   const std::vector<std::string>& tiled_labels, std::size_t repeats, std::size_t T_min,
                   std::size_t T_tiled) {
    const std::size_t T_max = X.shape(0), d = X.shape(1);
    // a block of T_min queries (fewer when T_min = T_max, so that the block is not the whole run)
    const std::size_t block = std::min(T_min, std::max<std::size_t>(1, T_max / 2));
    trace.step("timing", "Wall time on this machine",
               fmt::format("time = the fastest of {} (std::chrono::steady_clock);  growth = time(T) / time(T/2)",
                           runs_text(repeats)),
               timing_text(repeats, d, block, T_max, T_tiled));
    TensorRecord& timings = trace.tensor("timings", fmt::format("milliseconds, the fastest of {}", runs_text(repeats)),
                                         m.timings, labels, {"GRU ms", "attention ms"}, View::plot);
    timings.measured = true;
    TensorRecord& growth = trace.tensor("growth", "time(T) / time(T/2): 2 for a time that grows like T, 4 like T^2",
                                        growth_per_doubling(m.timings),
                                        std::vector<std::string>(labels.begin() + 1, labels.end()),
                                        {"GRU", "attention"});
    growth.measured = true;
    trace.check(fmt::format("every row of the weights sums to 1 at T = {}", T_max),
                row_sum_error(m.longest_attention.weights), 1e-12);
    trace.check(fmt::format("the last {} queries alone give the same outputs as the full run at T = {}", block, T_max),
                block_of_queries_error(X, m.longest_attention, block), 1e-12);
    TensorRecord& tiled =
        trace.tensor("tiled", fmt::format("milliseconds, the fastest of {}; output only, no T×T matrix", runs_text(repeats)),
                     m.tiled, tiled_labels, {"tiled attention ms"}, View::plot);
    tiled.measured = true;
    TensorRecord& tiled_growth = trace.tensor(
        "tiled growth", "time(T) / time(T/2) of the tiled attention", growth_per_doubling(m.tiled),
        std::vector<std::string>(tiled_labels.begin() + 1, tiled_labels.end()), {"tiled attention"});
    tiled_growth.measured = true;
    trace.check(fmt::format("the tiled attention's outputs are the plain form's at T = {}", T_max), m.tiled_error,
                1e-12);
}

// Step [memory]: the bytes the runs at T_max hold, T^2 for attention against T d for the GRU.
void record_memory(Trace& trace, const Measurements& m, std::size_t T_max, std::size_t d) {
    const nn::AttentionResult& a = m.longest_attention;
    const nn::GruRun& g = m.longest_gru;
    const double T_bytes = as_double(T_max * T_max * 8), states_bytes = as_double(T_max * d * 8);
    trace.step("memory", "The price: T^2 numbers to hold",
               fmt::format("weights: T^2 x 8 bytes = {};   GRU states: T d x 8 bytes = {}   (T = {})",
                           mib_text(T_bytes), mib_text(states_bytes), T_max),
               fmt::format(
                   "What attention gains in sequential steps it pays for in memory. At T = {0} the scores and the "
                   "weights are each a {0} x {0} matrix of {1}, against {2} for all {0} states of the GRU. Double "
                   "T and the two matrices take four times the space; a layer with h heads holds h pairs of them, "
                   "and training keeps them for the backward pass. That is why this lesson refuses a T_max whose "
                   "matrices would not fit in 1 GiB, and why long inputs are the weak side of attention. The "
                   "restricted self-attention of table 1 keeps a band of r keys per query, r T numbers; later work "
                   "(Dao et al. 2022, FlashAttention) computes the softmax block by block, so that the T x T "
                   "matrix is never stored whole. The GRU needs T d numbers for the states it returns, and only d "
                   "if the last state is all that is wanted.",
                   T_max, mib_text(T_bytes), mib_text(states_bytes)));
    trace.tensor("held", fmt::format("MiB held by the runs at T = {}", T_max),
                 Vec{as_double(a.scores.size()) * 8 / mebibyte, as_double(a.weights.size()) * 8 / mebibyte,
                     as_double(a.output.size()) * 8 / mebibyte, as_double(g.states.size()) * 8 / mebibyte,
                     as_double(g.update_gates.size() + g.reset_gates.size() + g.candidates.size()) * 8 / mebibyte},
                 std::vector<std::string>{"attention scores S (T×T)", "attention weights A (T×T)",
                                          "attention outputs Y (T×d)", "GRU states (T×d)",
                                          "GRU gates and candidates (3 T×d)"},
                 {}, View::bars);
}

void lesson_scaling(Trace& trace, const Config& config) {
    const std::size_t d = config.size(param::d), T_min = config.size(param::T_min), T_max = config.size(param::T_max);
    const std::size_t repeats = config.size(param::repeats);
    const std::size_t T_tiled = config.size(param::T_tiled);
    const std::vector<std::size_t> lengths = doubling_lengths(T_min, T_max), tiled_lengths = doubling_lengths(T_min, T_tiled);
    const std::vector<std::string> labels = length_labels(lengths), tiled_labels = length_labels(tiled_lengths);
    Rng rng(config.seed);
    const Mat X = rng.normal_mat(T_max, d);
    // weights N(0, 1/d), so that every pre-activation sums d products and stays near unit scale; no biases
    const nn::GruParams gru = draw_gru(rng, d, d, fan_in_init(GruInit::Order::by_gate, d, d, 0.0, 0.0));
    // the tokens past T_max, for the tiled runs alone, drawn after everything else
    const Mat X_long = nn::concatenated_rows(X, rng.normal_mat(T_tiled - T_max, d));

    const Measurements m = measure(trace, X, X_long, gru, lengths, tiled_lengths, repeats);
    record_layers(trace, X, gru, lengths, m, T_min);
    record_sequential_steps(trace, m, lengths, labels, d);
    record_work(trace, gru, lengths, labels);
    record_timing(trace, X, m, labels, tiled_labels, repeats, T_min, T_tiled);
    record_memory(trace, m, T_max, d);
}

}  // namespace
}  // namespace scaling

Lesson scaling_lesson() {
    using namespace scaling;
    return make_lesson(7, "scaling", "Why attention replaced recurrence: steps, time and memory",
                       "Vaswani et al. 2017, section 4; Cho et al. 2014",
                       {param::d, param::T_min, param::T_max, param::T_tiled, param::repeats}, limits, time_estimate,
                       lesson_scaling,
                       {"layers", "steps", "work", "timing", "memory"}, {{"d", 1}, {"T_min", 1}, {"T_max", 2},
                        {"T_tiled", 4}, {"repeats", 1}});
}

}  // namespace attn
