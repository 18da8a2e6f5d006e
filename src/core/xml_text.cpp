// Text for markup: see xml_text.hpp.
#include "xml_text.hpp"

#include "render.hpp"

#include <fmt/format.h>

#include <cctype>

namespace attn {
namespace {

constexpr char32_t replacement_character = 0xFFFD;

// XML 1.0 allows tab, LF, CR and everything from U+0020 except surrogates, U+FFFE and U+FFFF;
// HTML's parser also reports DEL, the C1 controls and every noncharacter.
bool allowed_in_markup(char32_t cp) {
    if (cp < 0x20) return cp == 0x09 || cp == 0x0A || cp == 0x0D;
    if (cp >= 0x7F && cp <= 0x9F) return false;
    if (cp >= 0xFDD0 && cp <= 0xFDEF) return false;
    return (cp & 0xFFFE) != 0xFFFE;
}

}  // namespace

std::u32string code_points(std::string_view text) {
    static constexpr char32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};  // by length: no overlong forms
    std::u32string out;
    std::size_t i = 0;
    while (i < text.size()) {
        const auto lead = static_cast<unsigned char>(text[i]);
        const std::size_t length = lead < 0x80             ? 1
                                   : (lead & 0xE0) == 0xC0 ? 2
                                   : (lead & 0xF0) == 0xE0 ? 3
                                   : (lead & 0xF8) == 0xF0 ? 4
                                                           : 0;
        bool valid = length > 0 && text.size() - i >= length;
        char32_t cp = length == 1 ? lead : length == 2 ? lead & 0x1Fu : length == 3 ? lead & 0x0Fu : lead & 0x07u;
        for (std::size_t k = 1; valid && k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            valid = (next & 0xC0) == 0x80;
            cp = (cp << 6) | (next & 0x3Fu);
        }
        valid = valid && cp >= smallest[length] && !(cp >= 0xD800 && cp <= 0xDFFF) && cp <= 0x10FFFF;
        if (!valid) {
            out += replacement_character;
            ++i;
            continue;
        }
        out += allowed_in_markup(cp) ? cp : replacement_character;
        i += length;
    }
    return out;
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// Valid UTF-8 with the five XML specials escaped: safe as element content and attribute value.
std::string xml_escaped(std::u32string_view text) {
    std::string out;
    for (const char32_t cp : text) {
        switch (cp) {
            case U'&': out += "&amp;"; break;
            case U'<': out += "&lt;"; break;
            case U'>': out += "&gt;"; break;
            case U'"': out += "&quot;"; break;
            case U'\'': out += "&apos;"; break;
            default: append_utf8(out, cp);
        }
    }
    return out;
}

std::string xml_escaped(std::string_view utf8) { return xml_escaped(code_points(utf8)); }

// Estimated advance of `text` in px. Marks that do not advance (display_width 0: Devanagari
// vowel signs above and below, virama, combining accents) count nothing, East Asian wide
// characters 1 em, Devanagari letters 0.85 em (wider than Latin), capitals 0.72 em, the rest
// 0.62 em (DejaVu Sans averages about 0.6 em for lower case). Bold adds a tenth.
double text_width(std::u32string_view text, double font_size, bool bold) {
    double ems = 0;
    for (const char32_t cp : text) {
        std::string one;
        append_utf8(one, cp);
        const std::size_t columns = display_width(one);
        const bool devanagari = cp >= 0x0900 && cp <= 0x097F;
        const bool capital = cp < 0x80 && std::isupper(static_cast<int>(cp));
        ems += columns == 0 ? 0.0 : columns == 2 ? 1.0 : devanagari ? 0.85 : capital ? 0.72 : 0.62;
    }
    return ems * font_size * (bold ? 1.1 : 1.0);
}

double text_width(std::string_view utf8, double font_size, bool bold) {
    return text_width(code_points(utf8), font_size, bold);
}

// At most `limit` code points, the last one "…" when cut: one long label cannot swallow the picture.
std::u32string shortened(std::u32string text, std::size_t limit) {
    if (text.size() <= limit) return text;
    text.resize(limit - 1);
    return text + U'…';
}

// Coordinates with at most one decimal and no trailing ".0".
std::string px(double x) {
    std::string s = fmt::format("{:.1f}", x);
    if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
    return s == "-0" ? "0" : s;
}

}  // namespace attn
