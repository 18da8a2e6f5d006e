// SVG heatmaps. There are no font metrics at hand, so the layout is computed from estimated
// text widths (code points times a fraction of an em, by script) and errs on the wide side;
// then the document is written top to bottom.
//
// The picture (r x c cells, sizes in px):
//   title                                  bold, 18
//   name [r, c] = equation                 grey, 12
//   column caption, column labels          rotated -45 degrees when one is wider than a cell
//   row caption | row labels | cells       values in the cells up to 12 x 12
//                                 colour bar "max", "min"; notes for -inf, +inf, NaN below it
// Labels are thinned to every k-th (k = 1, 2, 5, 10, 20, ...) when cells are smaller than text.
#include "svg.hpp"

#include "golden.hpp"
#include "render.hpp"
#include "svg_parts.hpp"
#include "xml_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <set>
#include <stdexcept>
#include <system_error>

namespace attn {
namespace {

using namespace svg_parts;

// ---------------------------------------------------------------- colour

struct Rgb {
    double r, g, b;  // 0 .. 255
};

// Viridis (van der Walt and Smith, matplotlib 2.0, 2015) at ten equal steps, dark to light:
// perceptually uniform, monotone in lightness (so it survives greyscale printing) and readable
// with the common colour-vision deficiencies. Between steps the colour is interpolated linearly,
// as an SVG gradient over the same stops interpolates the colour bar.
constexpr Rgb viridis[] = {
    {0x44, 0x01, 0x54}, {0x48, 0x28, 0x78}, {0x3E, 0x4A, 0x89}, {0x31, 0x68, 0x8E}, {0x26, 0x82, 0x8E},
    {0x1F, 0x9E, 0x89}, {0x35, 0xB7, 0x79}, {0x6D, 0xCD, 0x59}, {0xB4, 0xDE, 0x2C}, {0xFD, 0xE7, 0x25},
};
constexpr std::size_t viridis_steps = std::size(viridis);

Rgb colour_at(double position) {
    const double scaled = std::clamp(position, 0.0, 1.0) * (viridis_steps - 1);
    const std::size_t k = std::min(static_cast<std::size_t>(scaled), viridis_steps - 2);
    const double f = scaled - static_cast<double>(k);
    const Rgb &a = viridis[k], &b = viridis[k + 1];
    return {a.r + f * (b.r - a.r), a.g + f * (b.g - a.g), a.b + f * (b.b - a.b)};
}

std::string hex(const Rgb& c) {
    const auto byte = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 255.0))); };
    return fmt::format("#{:02x}{:02x}{:02x}", byte(c.r), byte(c.g), byte(c.b));
}

// Black or white, whichever contrasts more with `background` (WCAG 2.1 relative luminance:
// the two contrasts are equal at a luminance of about 0.179).
std::string text_colour_on(const Rgb& background) {
    const auto linear = [](double v) {
        const double s = v / 255.0;
        return s <= 0.04045 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4);
    };
    const double luminance =
        0.2126 * linear(background.r) + 0.7152 * linear(background.g) + 0.0722 * linear(background.b);
    return luminance > 0.179 ? "#111111" : "#ffffff";
}

// ---------------------------------------------------------------- the matrix drawn

// The tensor as the r x c matrix that is drawn, with a label for every row and column.
struct Grid {
    const double* data = nullptr;
    std::size_t rows = 0, cols = 0;
    std::size_t slice_rows = 0;  // rank 3 and above: rows per stacked slice (0: no slices)
    std::vector<std::u32string> row_labels, col_labels;  // none: the axis is not labelled
    std::string row_caption, col_caption;                // without the "every k-th" remark

    double at(std::size_t r, std::size_t c) const { return data[r * cols + c]; }
};

// The tensor's own labels when there is one per position, otherwise the indices 0, 1, ...
std::vector<std::u32string> labels_or_indices(const std::vector<std::string>& labels, std::size_t n) {
    std::vector<std::u32string> out;
    for (std::size_t i = 0; i < n; ++i)
        out.push_back(labels.size() == n ? code_points(labels[i]) : code_points(std::to_string(i)));
    return out;
}

std::string plural(std::size_t n, const char* one, const char* many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
}

Grid grid_of(const TensorRecord& t) {
    const Shape shape = t.shape();
    Grid g;
    g.data = t.value.data();
    switch (shape.size()) {
        case 0:
            g.rows = g.cols = 1;
            g.row_labels = {code_points(t.name)};
            return g;
        case 1:  // one row; axis 0 runs along it, so its labels are the column labels
            g.rows = 1, g.cols = shape[0];
            g.row_labels = {code_points(t.name)};
            g.col_labels = labels_or_indices(t.rows, g.cols);
            g.col_caption = "axis 0 · " + plural(g.cols, "element", "elements");
            return g;
        case 2:
            g.rows = shape[0], g.cols = shape[1];
            g.row_labels = labels_or_indices(t.rows, g.rows);
            g.col_labels = labels_or_indices(t.cols, g.cols);
            // what the rows and columns are, when the lesson says; else the axes and their sizes
            g.row_caption = t.row_axis.empty() ? "axis 0 · " + plural(g.rows, "row", "rows") : t.row_axis;
            g.col_caption = t.col_axis.empty() ? "axis 1 · " + plural(g.cols, "column", "columns") : t.col_axis;
            return g;
        default: break;
    }
    // Rank 3 and above: the slices over the last two axes, one below the other. As in the
    // terminal, labels are used for rank 3 only: axis 0 names the slices, axis 1 the rows.
    const std::size_t rank = shape.size();
    g.cols = shape[rank - 1];
    g.slice_rows = shape[rank - 2];
    g.rows = g.cols == 0 ? 0 : t.value.size() / g.cols;
    for (std::size_t r = 0; r < g.rows; ++r) {
        std::vector<std::size_t> index(rank - 1);
        for (std::size_t axis = rank - 1, rest = r; axis-- > 0; rest /= shape[axis]) index[axis] = rest % shape[axis];
        const bool named = rank == 3 && t.rows.size() == shape[0];
        const std::string row_name =
            rank == 3 && t.cols.size() == shape[1] ? t.cols[index[1]] : std::to_string(index.back());
        g.row_labels.push_back(
            code_points(named ? fmt::format("{} · {}", t.rows[index[0]], row_name)
                              : fmt::format("[{}, {}]", fmt::join(index.begin(), index.end() - 1, ", "), row_name)));
    }
    g.col_labels = labels_or_indices({}, g.cols);
    g.row_caption = fmt::format("axes 0–{} · {}, slices of {}", rank - 2, plural(g.rows, "row", "rows"), g.slice_rows);
    g.col_caption = fmt::format("axis {} · {}", rank - 1, plural(g.cols, "column", "columns"));
    return g;
}

struct ValueSummary {
    double low = 0, high = 0;
    bool any_finite = false, minus_inf = false, plus_inf = false, nan = false;
};

ValueSummary summarise(const Grid& g) {
    ValueSummary s;
    for (std::size_t i = 0; i < g.rows * g.cols; ++i) {
        const double x = g.data[i];
        if (std::isnan(x)) {
            s.nan = true;
        } else if (std::isinf(x)) {
            (x < 0 ? s.minus_inf : s.plus_inf) = true;
        } else {
            s.low = s.any_finite ? std::min(s.low, x) : x;
            s.high = s.any_finite ? std::max(s.high, x) : x;
            s.any_finite = true;
        }
    }
    return s;
}

// Where a finite x lies between the smallest (0) and the largest (1) finite value. Halved
// first, so that a range from -1e308 to 1e308 does not overflow to inf / inf. A constant
// matrix sits in the middle of the scale rather than at one end.
double position_of(double x, const ValueSummary& s) {
    if (s.high == s.low) return 0.5;
    return (x / 2 - s.low / 2) / (s.high / 2 - s.low / 2);
}

// The fill of a cell: a colour of the scale, or the pattern or grey of a non-finite value.
std::string cell_fill(double x, const ValueSummary& s, const std::string& ids) {
    if (std::isnan(x)) return "#b0b0b0";
    if (std::isinf(x)) return fmt::format("url(#{}-{})", ids, x < 0 ? "minus-inf" : "plus-inf");
    return hex(colour_at(position_of(x, s)));
}

std::string cell_text_colour(double x, const ValueSummary& s) {
    return std::isfinite(x) ? text_colour_on(colour_at(position_of(x, s))) : "#111111";
}

// A cell's number: two decimals fit a cell and are what a reader compares on a slide.
std::string cell_number(double x) {
    if (std::isnan(x)) return "NaN";
    if (std::isinf(x)) return x < 0 ? "−∞" : "+∞";
    if (std::fabs(x) >= 1000) return fmt::format("{:.2g}", x);
    const std::string fixed = fmt::format("{:.2f}", x);
    return fixed == "-0.00" ? "0.00" : fixed;
}

// The smallest of 1, 2, 5, 10, 20, 50, ... that is at least `needed`: labelled rows easy to count.
std::size_t label_step(double needed) {
    for (std::size_t decade = 1;; decade *= 10)
        for (const std::size_t m : {1, 2, 5})
            if (static_cast<double>(m * decade) >= needed) return m * decade;
}

// ---------------------------------------------------------------- layout

constexpr const char* fixed_scale_note = "fixed scale 0 to 1: probabilities";
constexpr double value_size = 11;
constexpr double bar_width = 16, note_line = 18, swatch = 12;
constexpr std::size_t label_limit = 28;       // code points of a label shown
constexpr std::size_t values_up_to = 12;      // rows and columns up to which cells show their value
constexpr std::size_t tooltips_up_to = 4096;  // cells up to which each carries a <title> tooltip
const double cos45 = std::sqrt(0.5);

struct SvgLayout {
    double cell_w = 0, cell_h = 0, label_size = 12;
    bool values = false, rotated = false;
    std::size_t row_step = 1, col_step = 1;
    double grid_left = 0, grid_top = 0, caption_top = 0;
    double bar_left = 0, bar_height = 0;
    double width = 0, height = 0;
    std::string row_caption, col_caption;
};

SvgLayout layout_of(const Grid& g, const std::vector<std::string>& notes, const std::vector<std::string>& bar_texts,
                 double title_w, double subtitle_w) {
    SvgLayout L;
    // 1. cells: big enough for their numbers when shown, otherwise a grid about 576 px across
    L.values = g.rows <= values_up_to && g.cols <= values_up_to;
    if (L.values) {
        double widest = 0;
        for (std::size_t i = 0; i < g.rows * g.cols; ++i)
            widest = std::max(widest, text_width(cell_number(g.data[i]), value_size));
        // short column labels (words, not sentences) are easier to read level, so cells widen for them
        double widest_col_label = 0;
        for (const auto& label : g.col_labels) widest_col_label = std::max(widest_col_label, text_width(label, 12));
        L.cell_w =
            std::max({46.0, std::ceil(widest + 12), widest_col_label <= 72 ? std::ceil(widest_col_label + 8) : 0.0});
        L.cell_h = 34;
    } else {
        L.cell_w = L.cell_h = std::clamp(std::floor(576.0 / static_cast<double>(std::max(g.rows, g.cols))), 2.0, 40.0);
    }
    L.label_size = L.values || L.cell_h >= 14 ? 12 : 10;

    // 2. labels: every k-th so that neighbours never overlap
    const auto widest_label = [&](const std::vector<std::u32string>& labels) {
        double w = 0;
        for (const auto& label : labels) w = std::max(w, text_width(shortened(label, label_limit), L.label_size));
        return w;
    };
    L.row_step = label_step((L.label_size + 2) / L.cell_h);
    const double col_label_w = widest_label(g.col_labels);
    const std::size_t level_step = label_step((col_label_w + 6) / L.cell_w);
    // rotated by 45 degrees, neighbouring baselines are cell_w * step * cos45 apart
    const std::size_t rotated_step = label_step(1.05 * L.label_size / (L.cell_w * cos45));
    L.rotated = level_step > 1 && rotated_step < level_step;
    L.col_step = L.rotated ? rotated_step : level_step;
    L.row_caption = g.row_caption;
    L.col_caption = g.col_caption;
    const auto every = [](std::size_t step) {
        return fmt::format(", every {}{} labelled", step, step == 2 ? "nd" : "th");
    };
    if (L.row_step > 1 && !L.row_caption.empty()) L.row_caption += every(L.row_step);
    if (L.col_step > 1 && !L.col_caption.empty()) L.col_caption += every(L.col_step);

    // 3. vertical positions: title, subtitle, column caption, column labels, cells
    double y = margin + title_size + 8 + subtitle_size + 14;
    L.caption_top = y;
    if (!L.col_caption.empty()) y += caption_size + 8;
    const bool col_labels = !g.col_labels.empty();
    if (col_labels) y += L.rotated ? (col_label_w + L.label_size) * cos45 + 8 : L.label_size + 8;
    L.grid_top = y;

    // 4. horizontal positions: row caption (turned 90 degrees), row labels, cells, colour bar
    double row_label_w = 0;
    for (std::size_t r = 0; r < g.rows; r += L.row_step)
        row_label_w = std::max(row_label_w, text_width(shortened(g.row_labels[r], label_limit), L.label_size));
    const double row_caption_w = text_width(L.row_caption, caption_size);
    L.grid_left = margin + (L.row_caption.empty() ? 0 : caption_size + 12) + row_label_w + 8;
    const double grid_w = static_cast<double>(g.cols) * L.cell_w, grid_h = static_cast<double>(g.rows) * L.cell_h;
    L.bar_left = L.grid_left + grid_w + 28;
    L.bar_height = std::max(grid_h, 120.0);
    double panel_w = 0;
    for (const auto& text : bar_texts) panel_w = std::max(panel_w, bar_width + 6 + text_width(text, caption_size));
    for (const auto& text : notes) panel_w = std::max(panel_w, swatch + 6 + text_width(text, caption_size));

    double right = std::max({L.bar_left + panel_w, margin + title_w, margin + subtitle_w,
                             L.grid_left + text_width(L.col_caption, caption_size)});
    if (L.rotated)  // a rotated label reaches up and to the right of its column
        for (std::size_t c = 0; c < g.cols; c += L.col_step)
            right = std::max(
                right, L.grid_left + (static_cast<double>(c) + 0.5) * L.cell_w +
                           (text_width(shortened(g.col_labels[c], label_limit), L.label_size) + L.label_size) * cos45);
    L.width = std::ceil(right + margin);
    // a caption longer than the cells runs down from their top edge
    const double bottom = std::max({L.grid_top + grid_h, L.grid_top + row_caption_w,
                                    L.grid_top + L.bar_height + 10 + note_line * static_cast<double>(notes.size())});
    L.height = std::ceil(bottom + margin);
    return L;
}

// ---------------------------------------------------------------- writing

using Out = std::back_insert_iterator<std::string>;

void write_defs(Out out, const ValueSummary& s, const std::string& ids) {
    fmt::format_to(out, "<defs>\n<linearGradient id=\"{}-scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n", ids);
    for (std::size_t k = 0; k < viridis_steps; ++k)
        fmt::format_to(out, "<stop offset=\"{}\" stop-color=\"{}\"/>\n",
                       px(static_cast<double>(k) / (viridis_steps - 1) * 100) + "%", hex(viridis[k]));
    fmt::format_to(out, "</linearGradient>\n");
    // Masked cells are hatched so that they read as "no value", not as a low one, in any print.
    if (s.minus_inf)
        fmt::format_to(out,
                       "<pattern id=\"{}-minus-inf\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
                       "patternTransform=\"rotate(45)\"><rect class=\"hatch-bg\" width=\"6\" height=\"6\" fill=\"#eeeeee\"/>"
                       "<rect class=\"hatch\" width=\"1.5\" height=\"6\" fill=\"#b4b4b4\"/></pattern>\n",
                       ids);
    if (s.plus_inf)
        fmt::format_to(out,
                       "<pattern id=\"{}-plus-inf\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
                       "patternTransform=\"rotate(-45)\"><rect class=\"plus-bg\" width=\"6\" height=\"6\" fill=\"#fff6c8\"/>"
                       "<rect width=\"1.5\" height=\"6\" fill=\"#d9b800\"/></pattern>\n",
                       ids);
    fmt::format_to(out, "</defs>\n");
}

void write_cells(Out out, const Grid& g, const SvgLayout& L, const ValueSummary& s, const std::string& ids) {
    const bool outlined = L.cell_w >= 12 && L.cell_h >= 12;
    const bool tooltips = g.rows * g.cols <= tooltips_up_to;
    fmt::format_to(out, "<g class=\"cells\" shape-rendering=\"crispEdges\"{}>\n",
                   outlined ? " stroke=\"#ffffff\" stroke-width=\"1\"" : "");
    for (std::size_t r = 0; r < g.rows; ++r) {
        for (std::size_t c = 0; c < g.cols; ++c) {
            const double x = g.at(r, c);
            fmt::format_to(out, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"",
                           px(L.grid_left + c * L.cell_w), px(L.grid_top + r * L.cell_h), px(L.cell_w), px(L.cell_h),
                           cell_fill(x, s, ids));
            if (!tooltips) {
                fmt::format_to(out, "/>\n");
                continue;
            }
            const std::string where = g.col_labels.empty()
                                          ? xml_escaped(g.row_labels[r])
                                          : xml_escaped(g.row_labels[r]) + " · " + xml_escaped(g.col_labels[c]);
            fmt::format_to(out, "><title>{}: {}</title></rect>\n", where,
                           std::isfinite(x) ? format_number(x, 4) : cell_number(x));
        }
    }
    fmt::format_to(out, "</g>\n");
    // stacked slices are parted by a white rule
    for (std::size_t r = g.slice_rows; g.slice_rows > 0 && r < g.rows; r += g.slice_rows)
        fmt::format_to(out,
                       "<rect class=\"slice-rule\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"3\" fill=\"#ffffff\"/>\n",
                       px(L.grid_left), px(L.grid_top + r * L.cell_h - 1.5), px(g.cols * L.cell_w));
    if (!L.values) return;
    fmt::format_to(out, "<g class=\"values\" font-size=\"{}\" text-anchor=\"middle\">\n", px(value_size));
    for (std::size_t r = 0; r < g.rows; ++r)
        for (std::size_t c = 0; c < g.cols; ++c)
            fmt::format_to(out, "<text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>\n",
                           px(L.grid_left + (c + 0.5) * L.cell_w),
                           px(L.grid_top + (r + 0.5) * L.cell_h + 0.35 * value_size), cell_text_colour(g.at(r, c), s),
                           cell_number(g.at(r, c)));
    fmt::format_to(out, "</g>\n");
}

// A visible label, cut when long; the whole label stays in its <title>.
std::string label_content(const std::u32string& label) {
    const std::u32string shown = shortened(label, label_limit);
    if (shown == label) return xml_escaped(label);
    return xml_escaped(shown) + "<title>" + xml_escaped(label) + "</title>";
}

void write_labels(Out out, const Grid& g, const SvgLayout& L) {
    const double size = L.label_size;
    fmt::format_to(out, "<g class=\"row-labels\" font-size=\"{}\" text-anchor=\"end\" fill=\"#222222\">\n", px(size));
    for (std::size_t r = 0; r < g.rows; r += L.row_step)
        fmt::format_to(out, "<text x=\"{}\" y=\"{}\">{}</text>\n", px(L.grid_left - 8),
                       px(L.grid_top + (r + 0.5) * L.cell_h + 0.35 * size), label_content(g.row_labels[r]));
    fmt::format_to(out, "</g>\n");
    if (g.col_labels.empty()) return;
    fmt::format_to(out, "<g class=\"col-labels\" font-size=\"{}\" text-anchor=\"{}\" fill=\"#222222\">\n", px(size),
                   L.rotated ? "start" : "middle");
    for (std::size_t c = 0; c < g.cols; c += L.col_step) {
        const double x = L.grid_left + (c + 0.5) * L.cell_w;
        if (L.rotated)  // the baseline starts a little right of the centre so the letters sit over the column
            fmt::format_to(out, "<text transform=\"translate({} {}) rotate(-45)\">{}</text>\n", px(x + 0.3 * size),
                           px(L.grid_top - 6), label_content(g.col_labels[c]));
        else
            fmt::format_to(out, "<text x=\"{}\" y=\"{}\">{}</text>\n", px(x), px(L.grid_top - 6),
                           label_content(g.col_labels[c]));
    }
    fmt::format_to(out, "</g>\n");
}

void write_captions(Out out, const Grid& g, const SvgLayout& L) {
    const double grid_w = g.cols * L.cell_w, grid_h = g.rows * L.cell_h;
    const std::string style = fmt::format("font-size=\"{}\" font-style=\"italic\" fill=\"#555555\"", px(caption_size));
    if (!L.col_caption.empty()) {
        const bool fits = text_width(L.col_caption, caption_size) <= grid_w;
        fmt::format_to(out, "<text class=\"col-caption\" x=\"{}\" y=\"{}\" text-anchor=\"{}\" {}>{}</text>\n",
                       px(fits ? L.grid_left + grid_w / 2 : L.grid_left), px(L.caption_top + caption_size),
                       fits ? "middle" : "start", style, xml_escaped(L.col_caption));
    }
    if (!L.row_caption.empty()) {
        const bool fits = text_width(L.row_caption, caption_size) <= grid_h;
        fmt::format_to(
            out,
            "<text class=\"row-caption\" transform=\"translate({} {}) rotate(-90)\" text-anchor=\"{}\" {}>{}</text>\n",
            px(margin + caption_size), px(fits ? L.grid_top + grid_h / 2 : L.grid_top), fits ? "middle" : "end", style,
            xml_escaped(L.row_caption));
    }
}

void write_colour_bar(Out out, const SvgLayout& L, const ValueSummary& s, const std::vector<std::string>& bar_texts,
                      const std::vector<std::string>& notes, const std::string& ids) {
    const double x = L.bar_left, top = L.grid_top, h = L.bar_height;
    const double text_x = x + bar_width + 6;
    const std::string fill = !s.any_finite ? "#d0d0d0" : s.low == s.high ? hex(colour_at(0.5)) : "url(#" + ids + "-scale)";
    fmt::format_to(out, "<g class=\"colour-bar\" font-size=\"{}\" fill=\"#222222\">\n", px(caption_size));
    fmt::format_to(
        out,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#888888\" stroke-width=\"0.5\"/>\n",
        px(x), px(top), px(bar_width), px(h), fill);
    // bar_texts: the top line, then the bottom line (one line only when nothing is finite)
    fmt::format_to(out, "<text x=\"{}\" y=\"{}\">{}</text>\n", px(text_x), px(top + caption_size),
                   xml_escaped(bar_texts[0]));
    if (bar_texts.size() > 1)
        fmt::format_to(out, "<text x=\"{}\" y=\"{}\">{}</text>\n", px(text_x), px(top + h), xml_escaped(bar_texts[1]));
    double y = top + h + 10;
    for (const auto& note : notes) {
        if (note == fixed_scale_note) {  // a line of its own, without a swatch
            fmt::format_to(out, "<text class=\"note\" x=\"{}\" y=\"{}\">{}</text>\n", px(x), px(y + swatch - 1),
                           xml_escaped(note));
            y += note_line;
            continue;
        }
        const std::string swatch_fill = note.rfind("−∞", 0) == 0   ? "url(#" + ids + "-minus-inf)"
                                        : note.rfind("+∞", 0) == 0 ? "url(#" + ids + "-plus-inf)"
                                                                   : "#b0b0b0";
        fmt::format_to(out,
                       "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#888888\" "
                       "stroke-width=\"0.5\"/>\n",
                       px(x), px(y), px(swatch), px(swatch), swatch_fill);
        fmt::format_to(out, "<text class=\"note\" x=\"{}\" y=\"{}\">{}</text>\n", px(x + swatch + 6),
                       px(y + swatch - 1), xml_escaped(note));
        y += note_line;
    }
    fmt::format_to(out, "</g>\n");
}

}  // namespace

// The figures' dark palette: the background of the page's dark scheme, light text, dim grid lines,
// lighter series colours; the cells keep viridis (monotone in lightness on any background) and
// their values keep the black or white chosen for each cell.
std::string_view svg_dark_css() {
    return R"(@media (prefers-color-scheme: dark) {
svg.fig .bg { fill: #1c1f24; }
svg.fig .title { fill: #f0f0f0; }
svg.fig .subtitle, svg.fig .row-caption, svg.fig .col-caption, svg.fig .x-title,
svg.fig .y-title, svg.fig .scales, svg.fig .empty { fill: #b4b4b4; }
svg.fig .row-labels, svg.fig .col-labels, svg.fig .colour-bar, svg.fig .y-ticks,
svg.fig .x-ticks, svg.fig .legend, svg.fig .bars { fill: #e2e2e2; }
svg.fig .y-ticks line { stroke: #3c4048; }
svg.fig .x-ticks line, svg.fig .axes, svg.fig .zero { stroke: #a0a0a0; }
svg.fig .cells[stroke] { stroke: #1c1f24; }
svg.fig .slice-rule { fill: #1c1f24; }
svg.fig .hatch-bg { fill: #3a3e46; }
svg.fig .hatch { fill: #8a8e96; }
svg.fig .plus-bg { fill: #4a4320; }
svg.fig .k0 { stroke: #4aa3e0; } svg.fig .f0, svg.fig .pos { fill: #4aa3e0; }
svg.fig .k1 { stroke: #f08a4b; } svg.fig .f1, svg.fig .neg { fill: #f08a4b; }
svg.fig .k2 { stroke: #2cc495; } svg.fig .f2 { fill: #2cc495; }
svg.fig .k3 { stroke: #e29ac4; } svg.fig .f3 { fill: #e29ac4; }
svg.fig .k4 { stroke: #f0b429; } svg.fig .f4 { fill: #f0b429; }
svg.fig .k5 { stroke: #9fd3f5; } svg.fig .f5 { fill: #9fd3f5; }
}
)";
}

namespace svg_parts {

std::string document_start(double width, double height, const std::string& title, bool declaration) {
    // a file of its own carries its dark palette; inside a page the page's stylesheet has it once
    return fmt::format(
        "{4}<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" class=\"fig\" width=\"{0}\" height=\"{1}\" "
        "viewBox=\"0 0 {0} {1}\" font-family=\"{2}\">\n<title>{3}</title>\n{5}<rect class=\"bg\" width=\"{0}\" "
        "height=\"{1}\" fill=\"#ffffff\"/>\n",
        px(width), px(height), font_families, xml_escaped(title),
        declaration ? "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" : "",
        declaration ? "<style>\n" + std::string(svg_dark_css()) + "</style>\n" : "");
}

std::string headings(const std::string& title, const std::u32string& subtitle) {
    return fmt::format(
        "<text class=\"title\" x=\"{}\" y=\"{}\" font-size=\"{}\" font-weight=\"bold\" fill=\"#111111\">{}</text>\n"
        "<text class=\"subtitle\" x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#555555\">{}</text>\n",
        px(margin), px(margin + title_size), px(title_size), xml_escaped(title), px(margin),
        px(margin + title_size + 8 + subtitle_size), px(subtitle_size), xml_escaped(subtitle));
}

// "alpha [3, 4] = alpha = softmax(E) along each row", cut to subtitle_limit code points; single
// spaces, as SVG collapses runs of them.
std::u32string subtitle_of(const TensorRecord& t) {
    std::string text = t.name + " " + shape_string(t.shape());
    if (!t.equation.empty()) text += " = " + t.equation;
    return shortened(code_points(text), subtitle_limit);
}

}  // namespace svg_parts

std::string heatmap_svg(const TensorRecord& t, const std::string& title, const SvgOptions& options) {
    using namespace svg_parts;
    const std::string& ids = options.ids;
    const std::u32string subtitle = subtitle_of(t);
    const double title_w = text_width(title, title_size, true), subtitle_w = text_width(subtitle, subtitle_size);
    const Grid g = grid_of(t);
    if (g.rows * g.cols == 0) {  // nothing to draw but the headings and a word why
        const double width = std::ceil(std::max({title_w, subtitle_w, 200.0}) + 2 * margin);
        const double height = margin + title_size + 8 + subtitle_size + 14 + caption_size + margin;
        return document_start(width, height, title, options.standalone) + headings(title, subtitle) +
               fmt::format(
                   "<text class=\"empty\" x=\"{}\" y=\"{}\" font-size=\"{}\" font-style=\"italic\" fill=\"#555555\">"
                   "empty tensor: no cells to draw</text>\n</svg>\n",
                   px(margin), px(height - margin), px(caption_size));
    }

    ValueSummary s = summarise(g);
    std::vector<std::string> bar_texts = {"no finite values"};
    if (s.any_finite && rows_are_distributions(t.value)) {  // probabilities: the fixed scale 0 to 1
        s.low = 0.0;
        s.high = 1.0;
        bar_texts = {"1", "0"};
    } else if (s.any_finite) {
        bar_texts = {fmt::format("max {}{}", format_number(s.high, 4), s.low == s.high ? " (all equal)" : ""),
                     "min " + format_number(s.low, 4)};
    }
    std::vector<std::string> notes;
    if (bar_texts[0] == "1") notes.push_back(fixed_scale_note);  // said once, under the bar, not split across its ends
    if (s.minus_inf) notes.push_back("−∞ (masked)");
    if (s.plus_inf) notes.push_back("+∞");
    if (s.nan) notes.push_back("NaN (not a number)");

    const SvgLayout L = layout_of(g, notes, bar_texts, title_w, subtitle_w);
    std::string svg = document_start(L.width, L.height, title, options.standalone);
    const Out out(svg);
    write_defs(out, s, ids);
    svg += headings(title, subtitle);
    write_captions(out, g, L);
    write_labels(out, g, L);
    write_cells(out, g, L, s, ids);
    write_colour_bar(out, L, s, bar_texts, notes, ids);
    return svg + "</svg>\n";
}

std::string tensor_svg(const TensorRecord& t, const std::string& title, const SvgOptions& options) {
    const Shape shape = t.shape();
    switch (t.view) {
        case View::heatmap: return heatmap_svg(t, title, options);
        case View::plot: return shape.size() == 2 && t.value.size() > 0 ? plot_svg(t, title, options) : "";
        case View::bars:
            return shape.size() == 1 || (shape.size() == 2 && shape[1] == 1) ? bars_svg(t, title, options) : "";
        case View::numbers: break;
    }
    return "";
}

std::string svg_file_name(int lesson_number, std::string_view step_id, std::string_view tensor_name) {
    const auto safe = [](std::string_view text) {
        std::string out;
        for (const char32_t cp : code_points(text)) {
            const bool kept = cp < 0x80 && (std::isalnum(static_cast<int>(cp)) || cp == '_' || cp == '.' || cp == '-');
            out += kept ? static_cast<char>(cp) : '_';
        }
        return out;
    };
    return fmt::format("{:02d}-{}-{}.svg", lesson_number, safe(step_id), safe(tensor_name));
}

std::vector<std::filesystem::path> write_svgs(const Trace& trace, int lesson_number,
                                                      const std::filesystem::path& dir) {
    std::error_code ec;
    if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
        throw std::runtime_error(
            fmt::format("cannot write SVG files into {}: it exists and is not a directory", dir.string()));
    std::filesystem::create_directories(dir, ec);
    if (ec) throw std::runtime_error(fmt::format("cannot create the directory {}: {}", dir.string(), ec.message()));

    std::vector<std::filesystem::path> written;
    std::set<std::string> used;  // lower-cased, so "A.svg" and "a.svg" stay apart on any file system
    const auto lower = [](std::string s) {
        for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        return s;
    };
    for (const auto& step : trace.steps()) {
        for (const auto& t : step.tensors) {
            const std::string picture =
                tensor_svg(t, fmt::format("Lesson {} · {} · {}", lesson_number, step.title, t.name));
            if (picture.empty()) continue;
            const std::string name = svg_file_name(lesson_number, step.id, t.name);
            const std::string stem = name.substr(0, name.size() - 4);
            std::string unique = name;
            for (int k = 2; used.count(lower(unique)) > 0; ++k) unique = fmt::format("{}-{}.svg", stem, k);
            used.insert(lower(unique));
            const auto file = dir / unique;
            write_file_atomic(file, picture);
            written.push_back(file);
        }
    }
    return written;
}

}  // namespace attn
