// Helpers shared by the fuzz targets: their entry point's name, comparing doubles as a round trip
// must keep them, and checking that an error message is fit for a terminal.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstring>
#include <string_view>

// A target's entry point: LLVMFuzzerTestOneInput for libFuzzer, which links one target a program.
// The replay program (replay_main.cpp) compiles all three targets in one file (ATTN_FUZZ_REPLAY),
// where each needs a name of its own: attn_fuzz_<target>.
#ifdef ATTN_FUZZ_REPLAY
#define ATTN_FUZZ_ENTRY(target) attn_fuzz_##target
#else
#define ATTN_FUZZ_ENTRY(target) LLVMFuzzerTestOneInput
#endif

namespace attn::fuzz {


// Bit-identical, except that any NaN equals any NaN (the writers spell every NaN "nan").
inline bool same_double(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::memcmp(&a, &b, sizeof a) == 0;  // tells 0.0 from -0.0
}

// Well-formed UTF-8 (Unicode 15, table 3-7): what golden.hpp promises of every GoldenError message.
inline bool is_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto byte = [&](std::size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
        const unsigned c = byte(i);
        std::size_t n = 0;
        unsigned low = 0x80, high = 0xBF;
        if (c < 0x80) n = 1;
        else if (c >= 0xC2 && c <= 0xDF) n = 2;
        else if (c >= 0xE0 && c <= 0xEF) n = 3, low = c == 0xE0 ? 0xA0 : 0x80, high = c == 0xED ? 0x9F : 0xBF;
        else if (c >= 0xF0 && c <= 0xF4) n = 4, low = c == 0xF0 ? 0x90 : 0x80, high = c == 0xF4 ? 0x8F : 0xBF;
        else return false;
        if (n > 1 && (byte(i + 1) < low || byte(i + 1) > high)) return false;
        for (std::size_t k = 2; k < n; ++k)
            if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return false;
        i += n;
    }
    return true;
}

}  // namespace attn::fuzz
