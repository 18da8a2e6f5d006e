// Text for markup (SVG pictures, HTML pages, MathML): any bytes in, valid UTF-8 with the markup
// specials escaped out, and the estimated width of a text in px for layouts without font metrics.
// Shared by core/svg.cpp, core/svg_plot.cpp, core/mathml.cpp and core/html.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace attn {

// The code points of `text`. Each byte that does not start a valid UTF-8 sequence (overlong
// forms and surrogates included) becomes one U+FFFD, and so does each code point that XML 1.0
// forbids or that HTML's parser reports as an error (C0 controls but tab, LF and CR, DEL and
// the C1 controls, the noncharacters U+FDD0..U+FDEF and U+xFFFE, U+xFFFF): whatever a label
// holds, an SVG file stays well-formed and an HTML page parses without errors.
std::u32string code_points(std::string_view text);

// Appends the UTF-8 bytes of one code point.
void append_utf8(std::string& out, char32_t cp);

// Valid UTF-8 with the five specials & < > " ' escaped: safe as element content and as a
// quoted attribute value in XML and in HTML.
std::string xml_escaped(std::u32string_view text);
std::string xml_escaped(std::string_view utf8);

// Estimated advance of `text` in px. Marks that do not advance (display_width 0: Devanagari
// vowel signs above and below, virama, combining accents) count nothing, East Asian wide
// characters 1 em, Devanagari letters 0.85 em (wider than Latin), capitals 0.72 em, the rest
// 0.62 em (DejaVu Sans averages about 0.6 em for lower case). Bold adds a tenth.
double text_width(std::u32string_view text, double font_size, bool bold = false);
double text_width(std::string_view utf8, double font_size, bool bold = false);

// At most `limit` code points, the last one "…" when cut: one long label cannot swallow a picture.
std::u32string shortened(std::u32string text, std::size_t limit);

// Coordinates with at most one decimal and no trailing ".0".
std::string px(double x);

}  // namespace attn
