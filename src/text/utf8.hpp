// UTF-8, as lesson 14's text code reads it (text/bpe.cpp and text/corpus.cpp).
#pragma once

#include <cstddef>
#include <string_view>

namespace attn::text {

// The length of the well-formed UTF-8 sequence at text[i], or 0 when none starts there (the Unicode
// Standard, chapter 3, table 3-7: the second byte's range excludes overlong forms, surrogates and
// code points past U+10FFFF; RFC 3629).
inline std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = byte(i);
    if (lead < 0x80) return 1;
    std::size_t n = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        n = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        n = 3;
        if (lead == 0xE0) low = 0xA0;   // overlong below U+0800
        if (lead == 0xED) high = 0x9F;  // the surrogates U+D800 to U+DFFF
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        n = 4;
        if (lead == 0xF0) low = 0x90;   // overlong below U+10000
        if (lead == 0xF4) high = 0x8F;  // past U+10FFFF
    } else {
        return 0;  // a continuation byte, C0, C1, F5 to FF
    }
    if (i + n > text.size() || byte(i + 1) < low || byte(i + 1) > high) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
    return n;
}

// The code point of the well-formed sequence of n bytes at text[i] (n from utf8_sequence_length).
inline char32_t utf8_code_point(std::string_view text, std::size_t i, std::size_t n) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    if (n == 1) return byte(i);
    char32_t c = byte(i) & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
    for (std::size_t k = 1; k < n; ++k) c = (c << 6) | (byte(i + k) & 0x3F);
    return c;
}

}  // namespace attn::text
