// What the SVG heatmap (core/svg.cpp) and the SVG plots (core/svg_plot.cpp) share: the sizes of
// their headings, the document's start and the two heading lines. Internal to src/core.
#pragma once

#include "trace.hpp"

#include <cstddef>
#include <string>

namespace attn::svg_parts {

inline constexpr double margin = 20, title_size = 18, subtitle_size = 12, caption_size = 12;
inline constexpr std::size_t subtitle_limit = 110;  // code points of the subtitle shown
inline constexpr const char* font_families = "DejaVu Sans, Noto Sans Devanagari, Lohit Devanagari, sans-serif";

// "<svg ...>" with its <title> and a white background; the XML declaration first when
// `declaration` (a standalone file; a picture inside an HTML page has none).
std::string document_start(double width, double height, const std::string& title, bool declaration);

// The title (bold) and the subtitle (grey) at the top left.
std::string headings(const std::string& title, const std::u32string& subtitle);

// "alpha [3, 4] = softmax(E) along each row", cut to subtitle_limit code points.
std::u32string subtitle_of(const TensorRecord& t);

}  // namespace attn::svg_parts
