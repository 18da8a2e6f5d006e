#include "allocator.hpp"

#include <cstdlib>  // any C library header: defines __GLIBC__ where the C library is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace attn {

void tune_allocator_for_tensors() {
#if defined(__GLIBC__)
    // By default glibc serves a block above 128 KiB with a fresh mmap and unmaps it on free (or,
    // once its dynamic threshold has grown, trims the heap above 2x that threshold on free), so
    // every T x T matrix of attention costs its size in page faults, a zeroed page per 4 KiB:
    // ~7 ms for the two 8 MiB matrices of T = 1024, paid again on every call. Serving blocks up to 256 MiB from the heap, and trimming the heap only when
    // more than 256 MiB at its top is free, lets the next call reuse pages already mapped. The
    // cost is that up to 256 MiB of freed memory stays with the process: a small price for a
    // program that runs one lesson and exits. Fixing the thresholds also turns off glibc's
    // dynamic adjustment of them. Older glibc versions refuse an mmap threshold above 32 MiB (half
    // its largest heap on 64-bit systems): there the largest it accepts still covers 8 MiB.
    constexpr int threshold = 256 * 1024 * 1024, older_glibc_largest = 32 * 1024 * 1024;
    if (mallopt(M_MMAP_THRESHOLD, threshold) == 0) mallopt(M_MMAP_THRESHOLD, older_glibc_largest);
    mallopt(M_TRIM_THRESHOLD, threshold);
#endif
}

}  // namespace attn
