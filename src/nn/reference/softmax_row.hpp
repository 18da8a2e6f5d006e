// The stable softmax of one row, vectorised: the body of the exercise softmax's reference
// (src/nn/softmax.cpp) and of multi-head attention's (src/nn/multi_head_attention.cpp), which
// computes its weights in place. Only references include this folder (src/nn/reference/): the
// student edition leaves it out with their sources, and everything here has internal linkage,
// so no other object can call it (tests/test_edition.cpp holds both). The includer must compile
// at -O3 (meson.build's fast references), where the copies vectorise.
// n = entries of a row.
#pragma once

#include "nn/kernel_parts.hpp"
#include "nn/kernels.hpp"

namespace attn::nn {

namespace {  // internal linkage: each including object has its own copy, callable by it alone

using namespace kernel_parts;

// alpha_j = exp(e_j - max_k e_k) / sum_k exp(e_k - max_k e_k) for n logits into `out` (which may
// be `logits`), with the semantics of nn::softmax (nn/softmax.hpp): -inf gets weight 0, a row
// that is -inf everywhere gets zeros, +inf entries share the weight, NaN gives a NaN row. The
// same bits from every copy (nn/kernels.hpp).
ATTN_ALWAYS_INLINE void softmax_body(const double* logits, double* out, std::size_t n) {
    const double inf = std::numeric_limits<double>::infinity();
    // 1. the largest logit
    bool has_nan = false;
    const double largest = largest_of(logits, n, has_nan);
    if (has_nan || largest == -inf) {
        const double fill = has_nan ? std::numeric_limits<double>::quiet_NaN() : 0.0;
        std::fill(out, out + n, fill);
        return;
    }
    if (largest == inf) {
        // exp(inf - inf) would be NaN; the limit gives the +inf entries equal shares.
        const double count = static_cast<double>(std::count(logits, logits + n, inf));
        for (std::size_t j = 0; j < n; ++j) out[j] = logits[j] == inf ? 1.0 / count : 0.0;
        return;
    }
    // 2. exp, shifted by the largest so that exp cannot overflow. exp(-inf) = 0: the -inf (masked)
    // logits at the end of a row, half of every row under a causal mask on average, are not computed.
    std::size_t unmasked = n;
    while (unmasked > 0 && logits[unmasked - 1] == -inf) --unmasked;
    for (std::size_t j = 0; j < unmasked; ++j) out[j] = portable::exp_input(logits[j] - largest);
    for (std::size_t j = 0; j < unmasked; ++j) out[j] = portable::exp_of_clamped(out[j]);
    std::fill(out + unmasked, out + n, 0.0);
    // 3. sum (eight_lane_sum)
    const double total = eight_lane_sum(out, unmasked);
    // 4. normalise: divided, not multiplied by a rounded 1 / total, which would round twice
    divide(out, total, out, n);
}

ATTN_BASELINE_COPY void softmax_row_baseline(const double* x, double* out, std::size_t n) { softmax_body(x, out, n); }
#if ATTN_WIDE_COPIES
ATTN_AVX2_COPY void softmax_row_avx2(const double* x, double* out, std::size_t n) { softmax_body(x, out, n); }
ATTN_AVX512_COPY void softmax_row_avx512(const double* x, double* out, std::size_t n) { softmax_body(x, out, n); }
#endif

// The copy nn::kernel_path() names.
inline void softmax_row(const double* logits, double* out, std::size_t n) {
#if ATTN_WIDE_COPIES
    switch (kernel_path()) {
        case KernelPath::avx2: softmax_row_avx2(logits, out, n); return;
        case KernelPath::avx512: softmax_row_avx512(logits, out, n); return;
        default: break;
    }
#endif
    softmax_row_baseline(logits, out, n);
}

}  // namespace

}  // namespace attn::nn
