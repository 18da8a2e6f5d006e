// Terminal output. Every layout is computed on plain text first (widths from
// display_width), and colour escapes are wrapped around finished pieces last, so
// colour can never shift a column.
//
// Formats (colour off; every line ends in '\n', lines carry no indent beyond what is shown):
//   header   "name  [r, c]  = equation"            (scalars: "name  []")
//   rank 0   "  0.1235"
//   rank 1   one row of numbers "   0.1000  -0.2000   0.3000"; with row labels a labelled
//            column instead, one element per line, so the labels stay readable
//   rank 2   "  " + row label padded to the widest label + "  " + numbers right-aligned in
//            columns of one width, two spaces apart; column labels right-aligned above
//   rank 3+  one rank-2 table per slice, titled "  [i, :, :]", indented four spaces
//   heatmap  a grid of cells 2 columns wide (3 from 10 columns on), columns numbered above
//            and named in a legend below ("  1 turn  2 off"), then
//            "  scale: ░ low = 0.0500 … █ high = 0.8000"; -inf and NaN cells are "··"
//   bars     "  label  ████▌ (padded to 40)  value"
//   plot     a line plot 12 lines high: y tick labels right-aligned before "┤" (or "│"), points
//            marked o * + # % & per column ("@" where several meet) joined by "·", the x axis
//            "└──┬──" with the numbers of the row labels centred under the ticks, then a legend
//            "  o GRU ms · * attention ms · x: T, doubling (log2 spacing) · y: log scale"
// A summarised axis shows its first and last halves around a "…" row or column.
#include "render.hpp"

#include "plot_axes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <vector>

#include <sys/ioctl.h>
#include <unistd.h>

namespace attn {
namespace {

// ---------------------------------------------------------------- display width

struct CodepointRange {
    char32_t first, last;
};

// Unicode general categories Mn/Me plus the joiners, marks and selectors that shape
// neighbouring characters without advancing the cursor.
constexpr CodepointRange zero_width_ranges[] = {
    {0x0300, 0x036F},    // combining diacritical marks (e + U+0301 = é)
    {0x0483, 0x0489},    // Cyrillic combining marks
    {0x0900, 0x0902},    // Devanagari candrabindu, anusvara
    {0x093A, 0x093A},    // Devanagari vowel sign oe
    {0x093C, 0x093C},    // Devanagari nukta
    {0x0941, 0x0948},    // Devanagari vowel signs u .. ai (written above or below)
    {0x094D, 0x094D},    // Devanagari virama
    {0x0951, 0x0957},    // Devanagari stress signs and vowel signs
    {0x0962, 0x0963},    // Devanagari vowel signs vocalic l, ll
    {0x1AB0, 0x1AFF},    // combining diacritical marks extended
    {0x1DC0, 0x1DFF},    // combining diacritical marks supplement
    {0x200B, 0x200F},    // zero width space, ZWNJ, ZWJ, direction marks
    {0x2060, 0x2064},    // word joiner and invisible operators
    {0x20D0, 0x20FF},    // combining marks for symbols
    {0xFE00, 0xFE0F},    // variation selectors
    {0xFE20, 0xFE2F},    // combining half marks
    {0xFEFF, 0xFEFF},    // zero width no-break space
    {0xE0100, 0xE01EF},  // variation selectors supplement
};

// East Asian wide and fullwidth characters, as glibc's wcwidth counts them.
constexpr CodepointRange wide_ranges[] = {
    {0x1100, 0x115F},    // Hangul Jamo initial consonants
    {0x2E80, 0x303E},    // CJK radicals, punctuation (U+303F is a half-width space)
    {0x3040, 0xA4CF},    // kana, CJK unified ideographs, Yi
    {0xAC00, 0xD7A3},    // Hangul syllables
    {0xF900, 0xFAFF},    // CJK compatibility ideographs
    {0xFE30, 0xFE4F},    // CJK compatibility forms
    {0xFF00, 0xFF60},    // fullwidth forms
    {0xFFE0, 0xFFE6},    // fullwidth signs
    {0x1F300, 0x1F64F},  // pictographs, emoticons
    {0x1F900, 0x1F9FF},  // supplemental pictographs
    {0x20000, 0x3FFFD},  // CJK extension planes
};

template <std::size_t N>
bool in_ranges(char32_t cp, const CodepointRange (&ranges)[N]) {
    return std::any_of(std::begin(ranges), std::end(ranges),
                       [cp](const CodepointRange& r) { return r.first <= cp && cp <= r.last; });
}

struct Decoded {
    char32_t codepoint;
    std::size_t length;
};

// The code point starting at s[i], or nothing when the bytes there are not UTF-8.
std::optional<Decoded> decode_utf8(std::string_view s, std::size_t i) {
    const auto lead = static_cast<unsigned char>(s[i]);
    if (lead < 0x80) return Decoded{lead, 1};
    std::size_t length = 0;
    char32_t cp = 0, smallest = 0;
    if ((lead & 0xE0) == 0xC0) {
        length = 2, cp = lead & 0x1F, smallest = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
        length = 3, cp = lead & 0x0F, smallest = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
        length = 4, cp = lead & 0x07, smallest = 0x10000;
    } else {
        return std::nullopt;
    }
    if (s.size() - i < length) return std::nullopt;
    for (std::size_t k = 1; k < length; ++k) {
        const auto next = static_cast<unsigned char>(s[i + k]);
        if ((next & 0xC0) != 0x80) return std::nullopt;
        cp = (cp << 6) | (next & 0x3F);
    }
    // Overlong encodings, UTF-16 surrogates and values past U+10FFFF are not UTF-8.
    if (cp < smallest || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return std::nullopt;
    return Decoded{cp, length};
}

std::size_t codepoint_width(char32_t cp) {
    const bool control = cp < 0x20 || (cp >= 0x7F && cp < 0xA0);
    if (control || in_ranges(cp, zero_width_ranges)) return 0;
    return in_ranges(cp, wide_ranges) ? 2 : 1;
}

// ---------------------------------------------------------------- small text helpers

const std::string ellipsis = "…";

std::string repeat(std::string_view piece, std::size_t times) {
    std::string out;
    for (std::size_t i = 0; i < times; ++i) out += piece;
    return out;
}

// Wraps `text` in an SGR escape when colour is on.
std::string paint(const std::string& text, std::string_view sgr, bool color) {
    return color ? fmt::format("\x1b[{}m{}\x1b[0m", sgr, text) : text;
}

std::size_t widest(const std::vector<std::string>& texts) {
    std::size_t width = 0;
    for (const auto& text : texts) width = std::max(width, display_width(text));
    return width;
}

// Greedy word wrap by display width; a word wider than `width` gets a line of its own.
std::vector<std::string> wrap_words(std::string_view paragraph, std::size_t width) {
    std::vector<std::string> lines;
    std::string line;
    std::size_t start = 0;
    while (start < paragraph.size()) {
        const std::size_t end = std::min(paragraph.find(' ', start), paragraph.size());
        const std::string word(paragraph.substr(start, end - start));
        start = end + 1;
        if (word.empty()) continue;
        if (!line.empty() && display_width(line) + 1 + display_width(word) > width) {
            lines.push_back(line);
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty()) lines.push_back(line);
    return lines;
}

// Each '\n' in the text starts a new line, so authors control paragraph breaks (a final
// '\n' adds nothing); empty lines stay empty rather than carrying the indent.
std::string wrap_text(std::string_view text, std::size_t width, std::string_view indent) {
    std::string out;
    std::size_t start = 0;
    while (start < text.size()) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        const auto lines = wrap_words(text.substr(start, end - start), width);
        if (lines.empty()) out += "\n";
        for (const auto& line : lines) out += std::string(indent) + line + "\n";
        start = end + 1;
    }
    return out;
}

// ---------------------------------------------------------------- summarising

// Positions shown along one axis; nullopt marks the "…" standing for the hidden middle.
using Shown = std::vector<std::optional<std::size_t>>;

Shown shown_indices(std::size_t n, std::size_t limit) {
    // At least one element each side, so the first and last are always visible.
    const std::size_t half = std::max<std::size_t>(1, limit / 2);
    Shown shown;
    if (n <= std::max(limit, 2 * half)) {
        for (std::size_t i = 0; i < n; ++i) shown.emplace_back(i);
        return shown;
    }
    for (std::size_t i = 0; i < half; ++i) shown.emplace_back(i);
    shown.emplace_back(std::nullopt);
    for (std::size_t i = n - half; i < n; ++i) shown.emplace_back(i);
    return shown;
}

// The labels of the shown positions ("…" at the cut), or none when the axis has none.
std::vector<std::string> shown_labels(const std::vector<std::string>& labels, const Shown& shown) {
    std::vector<std::string> out;
    if (labels.empty()) return out;
    for (const auto& i : shown) out.push_back(i ? labels[*i] : ellipsis);
    return out;
}

// ---------------------------------------------------------------- matrices

// A rank-2 window onto row-major storage: a matrix, a vector laid out as one row or
// one column, or one slice of a higher-rank tensor.
struct MatrixView {
    const double* data;
    std::size_t rows, cols;
    double at(std::size_t r, std::size_t c) const { return data[r * cols + c]; }
};

// Labels and shown positions of a matrix view, decided once and shared by every drawing.
struct Layout {
    Shown rows, cols;
    std::vector<std::string> row_labels, col_labels;  // shown ones; empty when unlabelled
    bool numbered = false;  // the columns' labels too wide for the line: numbers above, a legend below
};

// Column numbers (1-based, as in the legend) fit the cells; labels would not.
std::vector<std::string> column_numbers(const Shown& cols) {
    std::vector<std::string> numbers;
    for (const auto& c : cols) numbers.push_back(c ? std::to_string(*c + 1) : ellipsis);
    return numbers;
}

// One format per table: when some entries of a tensor need scientific notation (huge, or too
// small for fixed notation) and others do not, all of them are written in it, so a column never
// shows 0.0000 beside 9.2943e-06.
bool needs_one_scientific_format(const Array& values, int precision) {
    bool scientific = false, fixed = false;
    for (const double x : values) {
        if (!std::isfinite(x) || x == 0) continue;
        (format_number(x, precision).find('e') != std::string::npos ? scientific : fixed) = true;
    }
    return scientific && fixed;
}

std::string format_cell(double x, const RenderOptions& opt) {
    if (opt.scientific && std::isfinite(x) && x != 0) return fmt::format("{:.{}e}", x, std::max(opt.precision, 0));
    return format_number(x, opt.precision);
}

// How many columns to show so a table line fits in opt.line_width: wide numbers or long
// row labels leave room for fewer columns (one place is kept for the "…" column).
std::size_t column_limit(const MatrixView& m, const Layout& layout, const std::vector<std::string>& col_labels,
                         const RenderOptions& opt) {
    std::size_t cell_width = widest(col_labels);
    for (const auto& r : layout.rows)
        if (r)
            for (std::size_t c = 0; c < m.cols; ++c)
                cell_width = std::max(cell_width, format_cell(m.at(*r, c), opt).size());
    const std::size_t label_width = widest(layout.row_labels);
    const std::size_t used = 4 + (label_width > 0 ? label_width + 2 : 0);  // the deepest indent is 4
    const std::size_t room = opt.line_width > used ? opt.line_width - used : 0;
    const std::size_t fit = (room + 2) / (cell_width + 2);
    if (m.cols <= std::min(fit, opt.max_cols)) return opt.max_cols;
    return std::max<std::size_t>(2, std::min(opt.max_cols, fit > 0 ? fit - 1 : 0));
}

// "  1 turn  2 off  3 the  4 lights", wrapped so it never exceeds `width` columns.
std::string column_legend(const Layout& layout, std::size_t width) {
    std::string out, line;
    for (std::size_t k = 0; k < layout.cols.size(); ++k) {
        const auto& c = layout.cols[k];
        const std::string item = c ? fmt::format("{} {}", *c + 1, layout.col_labels[k]) : ellipsis;
        if (!line.empty() && display_width(line) + 2 + display_width(item) > width) {
            out += line + "\n";
            line.clear();
        }
        line += "  " + item;
    }
    return out + line + "\n";
}

// The widest line of number_table at the deepest indent (4): row labels, then the cells, two apart.
std::size_t table_width(const MatrixView& m, const Layout& layout, const RenderOptions& opt) {
    std::size_t cell_width = layout.numbered ? widest(column_numbers(layout.cols)) : widest(layout.col_labels);
    for (const auto& r : layout.rows)
        for (const auto& c : layout.cols)
            cell_width = std::max(cell_width, r && c ? format_cell(m.at(*r, *c), opt).size() : std::size_t{1});
    const std::size_t label_width = widest(layout.row_labels);
    return 4 + (label_width > 0 ? label_width + 2 : 0) + layout.cols.size() * (cell_width + 2) - 2;
}

Layout make_layout(const MatrixView& m, const std::vector<std::string>& row_labels,
                   const std::vector<std::string>& col_labels, const RenderOptions& opt) {
    Layout layout;
    layout.rows = shown_indices(m.rows, opt.max_rows);
    layout.row_labels = shown_labels(row_labels, layout.rows);
    layout.cols = shown_indices(m.cols, column_limit(m, layout, col_labels, opt));
    layout.col_labels = shown_labels(col_labels, layout.cols);
    if (!col_labels.empty() && table_width(m, layout, opt) > opt.line_width) {
        // the labels make the table too wide: numbers instead, which leave room for more columns
        Shown all;
        for (std::size_t c = 0; c < m.cols; ++c) all.emplace_back(c);
        layout.cols = shown_indices(m.cols, column_limit(m, layout, column_numbers(all), opt));
        layout.col_labels = shown_labels(col_labels, layout.cols);
        layout.numbered = true;
    }
    return layout;
}

// One table line: indent, the row label padded (when rows are labelled), then the cells
// right-aligned to `cell_width` and joined by `gap`.
std::string table_line(std::string_view indent, const std::string& label, std::size_t label_width,
                       const std::vector<std::string>& cells, std::size_t cell_width,
                       std::string_view gap) {
    std::string line(indent);
    if (label_width > 0) line += pad(label, label_width) + "  ";
    for (std::size_t c = 0; c < cells.size(); ++c)
        line += (c ? std::string(gap) : "") + pad(cells[c], cell_width, true);
    return line + "\n";
}

std::vector<std::vector<std::string>> formatted_cells(const MatrixView& m, const Layout& layout,
                                                      const RenderOptions& opt) {
    std::vector<std::vector<std::string>> cells;
    for (const auto& r : layout.rows) {
        auto& row = cells.emplace_back();
        for (const auto& c : layout.cols)
            row.push_back(r && c ? format_cell(m.at(*r, *c), opt) : ellipsis);
    }
    return cells;
}

std::string number_table(const MatrixView& m, const Layout& layout, const RenderOptions& opt,
                         std::string_view indent) {
    if (m.rows * m.cols == 0) return "";  // the header's shape already says it is empty
    const auto cells = formatted_cells(m, layout, opt);
    const std::vector<std::string> heads = layout.numbered ? column_numbers(layout.cols) : layout.col_labels;
    std::size_t cell_width = widest(heads);
    for (const auto& row : cells) cell_width = std::max(cell_width, widest(row));
    std::size_t label_width = widest(layout.row_labels);
    // Row labels too long for the line (sentences) go on a line of their own, the cells under them.
    const bool labels_above = label_width > 0 && display_width(indent) + label_width + 2 +
                                                         cells.front().size() * (cell_width + 2) - 2 >
                                                     opt.line_width;
    const std::string cell_indent = labels_above ? std::string(indent) + "  " : std::string(indent);
    if (labels_above) label_width = 0;
    std::string out;
    if (!heads.empty()) out += table_line(cell_indent, "", label_width, heads, cell_width, "  ");
    for (std::size_t r = 0; r < cells.size(); ++r) {
        const std::string label = layout.row_labels.empty() ? "" : layout.row_labels[r];
        if (labels_above) out += wrap_hanging(label, opt.line_width, indent, std::string(indent) + "  ");
        out += table_line(cell_indent, label, label_width, cells[r], cell_width, "  ");
    }
    if (layout.numbered) out += column_legend(layout, opt.line_width);
    return out;
}

// ---------------------------------------------------------------- heatmap

struct ValueRange {
    double low, high;
    bool any;  // false when no element is finite
};

ValueRange finite_range(const Array& values) {
    ValueRange range{0.0, 0.0, false};
    for (const double x : values) {
        if (!std::isfinite(x)) continue;
        range.low = range.any ? std::min(range.low, x) : x;
        range.high = range.any ? std::max(range.high, x) : x;
        range.any = true;
    }
    return range;
}

// Where x lies between low (0) and high (1); a flat tensor sits in the middle of the ramp.
double position_in(const ValueRange& range, double x) {
    if (range.high == range.low) return 0.5;
    return (x - range.low) / (range.high - range.low);
}

const char* const shades[] = {" ", "░", "▒", "▓", "█"};

// The greys of the 256-colour palette give finer steps than the five shades, so colour
// mode paints backgrounds instead. The ramp starts at 235, not at 232 (black), so the
// lowest cells still stand out from a dark terminal's background.
std::string grey_swatch(double position, std::size_t width) {
    const long grey = 235 + std::lround(position * 20);
    return fmt::format("\x1b[48;5;{}m{}\x1b[0m", grey, std::string(width, ' '));
}

std::string heat_cell(double x, const ValueRange& range, std::size_t width, bool color) {
    if (!std::isfinite(x)) return repeat("·", width);
    const double position = position_in(range, x);
    if (color) return grey_swatch(position, width);
    return repeat(shades[std::lround(position * 4)], width);
}

std::string scale_legend(const ValueRange& range, bool fixed, int precision, bool color, std::size_t width) {
    if (!range.any) return "  scale: no finite values\n";
    const std::string low_mark = color ? grey_swatch(0.0, 1) : "░";
    const std::string high_mark = color ? grey_swatch(1.0, 1) : "█";
    if (fixed)
        return fmt::format("  scale: {} 0 … {} 1, fixed (probabilities)\n", low_mark, high_mark);
    const std::string low = fmt::format("{} low = {}", low_mark, format_number(range.low, precision));
    const std::string high = fmt::format("{} high = {}", high_mark, format_number(range.high, precision));
    // colour escapes count no width: the plain marks decide whether it fits
    const std::size_t plain = display_width(fmt::format("  scale of this tensor's own range: ░ low = {} … █ high = {}",
                                                        format_number(range.low, precision),
                                                        format_number(range.high, precision)));
    if (plain <= width) return fmt::format("  scale of this tensor's own range: {} … {}\n", low, high);
    return fmt::format("  scale of this tensor's own range:\n    {} … {}\n", low, high);
}

std::string heatmap(const MatrixView& m, const Layout& layout, const ValueRange& range, bool fixed,
                    const RenderOptions& opt) {
    // A space before each column number keeps "26 27" from reading as "2627".
    std::size_t cell_width = std::max<std::size_t>(2, std::to_string(m.cols).size() + 1);
    const std::size_t label_width = widest(layout.row_labels);
    const bool labelled_cols = !layout.col_labels.empty();
    // The columns' own labels above the cells when cells that wide still fit the line; else
    // numbers, with a legend below.
    const std::size_t named_width = widest(layout.col_labels) + 1;
    const bool named = labelled_cols && 2 + (label_width > 0 ? label_width + 2 : 0) +
                                                layout.cols.size() * std::max(cell_width, named_width) <=
                                            opt.line_width;
    if (named) cell_width = std::max(cell_width, named_width);
    std::string out;
    if (labelled_cols)
        out += table_line("  ", "", label_width, named ? layout.col_labels : column_numbers(layout.cols), cell_width,
                          "");
    for (std::size_t k = 0; k < layout.rows.size(); ++k) {
        const auto& r = layout.rows[k];
        std::string line = "  ";
        if (label_width > 0) line += pad(layout.row_labels[k], label_width) + "  ";
        for (const auto& c : layout.cols)
            line += r && c ? heat_cell(m.at(*r, *c), range, cell_width, opt.color)
                           : pad(ellipsis, cell_width, true);
        out += line + "\n";
    }
    if (labelled_cols && !named) out += column_legend(layout, opt.line_width);
    return out + scale_legend(range, fixed, opt.precision, opt.color, opt.line_width);
}

// ---------------------------------------------------------------- bars

constexpr std::size_t bar_columns = 40;

// Whole blocks plus one of the eighth blocks for the remainder.
std::string bar(double magnitude, double largest, std::size_t columns) {
    static const char* const eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    if (!std::isfinite(magnitude) || largest <= 0) return "";
    const long total_eighths = std::lround(magnitude / largest * static_cast<double>(columns) * 8);
    return repeat("█", static_cast<std::size_t>(total_eighths / 8)) + eighths[total_eighths % 8];
}

// One bar per element of a column view, labelled by `labels` or by index.
std::string bar_chart(const MatrixView& column, const std::vector<std::string>& labels,
                      const RenderOptions& opt) {
    const Shown shown = shown_indices(column.rows, opt.max_rows);
    double largest = 0;
    for (std::size_t r = 0; r < column.rows; ++r)
        if (std::isfinite(column.at(r, 0))) largest = std::max(largest, std::fabs(column.at(r, 0)));
    std::vector<std::string> names, values;
    for (const auto& r : shown) {
        names.push_back(!r ? ellipsis : labels.empty() ? std::to_string(*r) : labels[*r]);
        values.push_back(r ? format_cell(column.at(*r, 0), opt) : "");
    }
    const std::size_t name_width = widest(names), value_width = widest(values);
    // the bars take what the line leaves, at most bar_columns and at least 10
    const std::size_t used = 2 + name_width + 2 + 2 + value_width;
    const std::size_t bar_width = std::clamp<std::size_t>(opt.line_width > used ? opt.line_width - used : 0, 10,
                                                          bar_columns);
    std::string out;
    for (std::size_t k = 0; k < shown.size(); ++k) {
        const auto& r = shown[k];
        if (!r) {
            out += "  " + names[k] + "\n";
            continue;
        }
        out += "  " + pad(names[k], name_width) + "  " +
               pad(bar(std::fabs(column.at(*r, 0)), largest, bar_width), bar_width) + "  " +
               pad(values[k], value_width, true) + "\n";
    }
    return out;
}

// ---------------------------------------------------------------- plot

constexpr std::size_t plot_height = 12;  // lines of the plotting area
constexpr std::size_t plot_series = 6;   // columns plotted at most, one marker each
const char* const plot_markers[plot_series] = {"o", "*", "+", "#", "%", "&"};
const char* const plot_colors[plot_series] = {"34", "31", "32", "35", "33", "36"};
const char* const shared_marker = "@";  // points of several series in one cell
const char* const line_dot = "·";

// What a cell of the plotting area shows: nothing, a line of `series`, or a point of it (or of several).
struct PlotCell {
    int series = -1;
    bool point = false;
    bool shared = false;
};

using PlotGrid = std::vector<std::vector<PlotCell>>;  // [line from the top][column]

// Dots from cell (r0, c0) to (r1, c1), ends excluded, wherever no point or line is yet.
void draw_segment(PlotGrid& grid, long r0, long c0, long r1, long c1, int series) {
    const long steps = std::max(std::labs(r1 - r0), std::labs(c1 - c0));
    for (long k = 1; k < steps; ++k) {
        const double t = static_cast<double>(k) / static_cast<double>(steps);
        const auto r = static_cast<std::size_t>(std::lround(static_cast<double>(r0) + t * static_cast<double>(r1 - r0)));
        const auto c = static_cast<std::size_t>(std::lround(static_cast<double>(c0) + t * static_cast<double>(c1 - c0)));
        if (grid[r][c].series < 0) grid[r][c].series = series;
    }
}

void draw_point(PlotGrid& grid, std::size_t r, std::size_t c, int series) {
    PlotCell& cell = grid[r][c];
    cell.shared = cell.shared || (cell.point && cell.series != series);
    cell.series = series;
    cell.point = true;
}

std::string cell_text(const PlotCell& cell, bool color) {
    if (cell.series < 0) return " ";
    if (cell.shared) return paint(shared_marker, "1", color);
    const auto s = static_cast<std::size_t>(cell.series);
    return paint(cell.point ? plot_markers[s] : line_dot, plot_colors[s], color);
}

// One line of the plotting area, without the empty cells at its end.
std::string grid_line(const std::vector<PlotCell>& cells, bool color) {
    std::size_t used = cells.size();
    while (used > 0 && cells[used - 1].series < 0) --used;
    std::string out;
    for (std::size_t k = 0; k < used; ++k) out += cell_text(cells[k], color);
    return out;
}

// Which ticks get a label, each centred under its column: labels 0, k, 2k, ... for the smallest
// stride k that keeps a space between neighbours.
std::vector<std::size_t> labelled_ticks(const std::vector<std::size_t>& columns, const std::vector<std::string>& texts) {
    for (std::size_t stride = 1;; ++stride) {
        std::vector<std::size_t> shown;
        long free_from = std::numeric_limits<long>::min();  // the first column the next label may use
        bool fits = true;
        for (std::size_t i = 0; i < columns.size(); i += stride) {
            const auto text_width = static_cast<long>(texts[i].size());
            const long begin = static_cast<long>(columns[i]) - (text_width - 1) / 2;
            fits = fits && begin >= free_from;
            free_from = begin + text_width + 1;
            shown.push_back(i);
        }
        if (fits || stride >= columns.size()) return shown;
    }
}

// Legend items ("o GRU ms", "x: T, doubling (log2 spacing)") joined by " · ", wrapped to `width`.
// `marks` holds each item's coloured marker (or "") and `texts` its plain text after it, so the
// wrapping is decided on plain text.
std::string plot_legend(const std::vector<std::string>& marks, const std::vector<std::string>& texts, std::size_t width) {
    std::string out, line;
    std::size_t line_width = 0;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        const std::size_t item_width = (marks[i].empty() ? 0 : 2) + display_width(texts[i]);
        if (line_width > 0 && line_width + 3 + item_width > width) {
            out += line + "\n";
            line.clear(), line_width = 0;
        }
        line += line_width == 0 ? "  " : " · ";
        line_width += line_width == 0 ? 2 : 3;
        line += (marks[i].empty() ? "" : marks[i] + " ") + texts[i];
        line_width += item_width;
    }
    return out + line + "\n";
}

// A line plot under a table: x from the row labels, one series per column, within opt.line_width.
std::string line_plot(const MatrixView& m, const std::vector<std::string>& row_labels,
                      const std::vector<std::string>& col_labels, const RenderOptions& opt) {
    const std::size_t series = std::min(m.cols, plot_series);
    double low = std::numeric_limits<double>::infinity(), high = -low;
    for (std::size_t r = 0; r < m.rows; ++r)
        for (std::size_t c = 0; c < series; ++c)
            if (std::isfinite(m.at(r, c))) low = std::min(low, m.at(r, c)), high = std::max(high, m.at(r, c));
    if (!(low <= high)) return "  plot: no finite values\n";

    // 1. axes: x from the labels, y from the values; the plotting area fills what the y labels leave
    const XValues x = x_values(row_labels, m.rows);
    const PlotAxis xa = x_axis(x);
    std::vector<YTick> ticks;
    const PlotAxis ya = y_axis(low, high, ticks, plot_height / 2);
    std::size_t label_width = 0;
    for (const auto& t : ticks) label_width = std::max(label_width, display_width(t.text));
    const std::size_t width = opt.line_width > label_width + 24 ? opt.line_width - label_width - 4 : 20;
    // the outermost x labels, centred on their points, must stay above the area
    const std::size_t margin = (widest(x.texts) + 1) / 2;
    const double span = width > 2 * margin + 1 ? static_cast<double>(width - 1 - 2 * margin) : 0.0;
    const auto column_of = [&](double v) { return margin + static_cast<std::size_t>(std::lround(xa.fraction(v) * span)); };
    const auto line_at = [&](double position) {
        const double fraction = ya.clamped_fraction((position - ya.low) / (ya.high - ya.low));
        return static_cast<std::size_t>(std::lround((1 - fraction) * static_cast<double>(plot_height - 1)));
    };
    const auto line_of = [&](double v) { return line_at(ya.position(v)); };

    // 2. lines between the points of each series, then the points over them
    PlotGrid grid(plot_height, std::vector<PlotCell>(width));
    for (std::size_t c = 0; c < series; ++c) {
        bool joined = false;  // whether the previous row had a point to draw a line from
        long previous_line = 0, previous_column = 0;
        for (std::size_t r = 0; r < m.rows; ++r) {
            if (!std::isfinite(m.at(r, c))) {
                joined = false;  // a gap in the series breaks its line
                continue;
            }
            const auto line = static_cast<long>(line_of(m.at(r, c)));
            const auto column = static_cast<long>(column_of(x.values[r]));
            if (joined) draw_segment(grid, previous_line, previous_column, line, column, static_cast<int>(c));
            joined = true, previous_line = line, previous_column = column;
        }
    }
    for (std::size_t c = 0; c < series; ++c)
        for (std::size_t r = 0; r < m.rows; ++r)
            if (std::isfinite(m.at(r, c)))
                draw_point(grid, line_of(m.at(r, c)), column_of(x.values[r]), static_cast<int>(c));

    // 3. the area with the y ticks on its left
    std::vector<std::string> tick_at(plot_height);
    for (const auto& t : ticks) tick_at[line_at(t.value)] = t.text;
    std::string out;
    bool any_shared = false;
    for (std::size_t line = 0; line < plot_height; ++line) {
        out += "  " + pad(tick_at[line], label_width, true) + (tick_at[line].empty() ? " │" : " ┤") +
               grid_line(grid[line], opt.color) + "\n";
        for (const auto& cell : grid[line]) any_shared = any_shared || cell.shared;
    }

    // 4. the x axis, ticks where a label fits, the labels centred under them
    std::vector<std::size_t> columns;
    for (const double v : x.values) columns.push_back(column_of(v));
    const std::vector<std::size_t> shown = labelled_ticks(columns, x.texts);
    std::vector<std::string> axis(width, "─");
    std::string labels(width, ' ');
    for (const std::size_t i : shown) {
        axis[columns[i]] = "┬";
        labels.replace(columns[i] - (x.texts[i].size() - 1) / 2, x.texts[i].size(), x.texts[i]);
    }
    while (!labels.empty() && labels.back() == ' ') labels.pop_back();
    out += "  " + std::string(label_width, ' ') + " └" + fmt::format("{}", fmt::join(axis, "")) + "\n";
    out += std::string(label_width + 4, ' ') + labels + "\n";

    // 5. the legend: one marker per series, then how the axes are scaled
    std::vector<std::string> marks, texts;
    for (std::size_t c = 0; c < series; ++c) {
        marks.push_back(paint(plot_markers[c], plot_colors[c], opt.color));
        texts.push_back(c < col_labels.size() ? col_labels[c] : fmt::format("column {}", c + 1));
    }
    if (any_shared) marks.push_back(paint(shared_marker, "1", opt.color)), texts.push_back("several");
    const std::string x_scale = x_scale_text(xa, x);
    marks.push_back(""), texts.push_back(fmt::format("x: {}{}", x.name.empty() ? "x" : x.name, x_scale));
    marks.push_back(""), texts.push_back(ya.log ? "y: log scale" : "y: linear scale");
    if (m.cols > series) marks.push_back(""), texts.push_back(fmt::format("first {} of {} columns", series, m.cols));
    return out + plot_legend(marks, texts, opt.line_width);
}

// ---------------------------------------------------------------- tensors by rank

// "name  [r, c]  = equation" on one line when it fits in `width`; else the equation goes on under the
// name, wrapped at its spaces ("  = ..." then "    ..."). Only the name is painted.
std::string header_line(const TensorRecord& t, bool color, std::size_t width) {
    const std::string head = t.name + "  " + shape_string(t.shape());
    const std::string painted = paint(t.name, "1", color) + "  " + shape_string(t.shape());
    if (t.equation.empty()) return painted + "\n";
    if (display_width(head) + 4 + display_width(t.equation) <= width) return painted + "  = " + t.equation + "\n";
    return painted + "\n" + wrap_hanging(t.equation, width, "  = ", "    ");
}

std::string render_vector(const TensorRecord& t, const RenderOptions& opt) {
    const std::size_t n = t.value.size();
    const MatrixView column{t.value.data(), n, 1};
    const MatrixView row{t.value.data(), 1, n};
    const MatrixView& shown = t.rows.empty() ? row : column;
    std::string out = number_table(shown, make_layout(shown, t.rows, {}, opt), opt, "  ");
    if (t.view == View::bars) out += bar_chart(column, t.rows, opt);
    return out;
}

std::string render_matrix(const TensorRecord& t, const RenderOptions& opt) {
    const Shape shape = t.shape();
    const MatrixView m{t.value.data(), shape[0], shape[1]};
    const Layout layout = make_layout(m, t.rows, t.cols, opt);
    std::string out = number_table(m, layout, opt, "  ");
    if (t.view == View::heatmap && t.value.size() > 0) {
        const bool probabilities = rows_are_distributions(t.value);
        out += heatmap(m, layout, probabilities ? ValueRange{0.0, 1.0, true} : finite_range(t.value), probabilities,
                       opt);
        if (!t.row_axis.empty() || !t.col_axis.empty())
            out += wrap_hanging(fmt::format("rows: {} · columns: {}", t.row_axis, t.col_axis), opt.line_width, "  ",
                                "    ");
    }
    if (t.view == View::bars && m.cols == 1) out += bar_chart(m, t.rows, opt);
    if (t.view == View::plot && m.rows * m.cols > 0) out += line_plot(m, t.rows, t.cols, opt);
    return out;
}

// "[i, j, :, :]" for the slice at flat position `slice` over the leading axes.
std::string slice_title(const Shape& shape, std::size_t slice) {
    const std::size_t leading = shape.size() - 2;
    std::vector<std::size_t> index(leading);
    for (std::size_t axis = leading; axis-- > 0;) {
        index[axis] = slice % shape[axis];
        slice /= shape[axis];
    }
    return fmt::format("[{}, :, :]", fmt::join(index, ", "));
}

// Each slice over the last two axes as its own table. Labels are placed only for rank 3,
// where axis 0 names the slices and axis 1 the rows of every slice (heads x tokens).
std::string render_slices(const TensorRecord& t, const RenderOptions& opt) {
    const Shape shape = t.shape();
    const std::size_t rows = shape[shape.size() - 2], cols = shape.back();
    const std::size_t slices = rows * cols == 0 ? 0 : t.value.size() / (rows * cols);
    const bool rank3 = shape.size() == 3;
    std::string out;
    for (const auto& s : shown_indices(slices, opt.max_rows)) {
        if (!s) {
            out += "  " + ellipsis + "\n";
            continue;
        }
        out += wrap_hanging(slice_title(shape, *s) + (rank3 && !t.rows.empty() ? "  " + t.rows[*s] : std::string()),
                            opt.line_width, "  ", "    ");
        const MatrixView m{t.value.data() + *s * rows * cols, rows, cols};
        const Layout layout = make_layout(m, rank3 ? t.cols : std::vector<std::string>{}, {}, opt);
        out += number_table(m, layout, opt, "    ");
    }
    return out;
}

}  // namespace

std::size_t terminal_columns(int fd) {
    winsize size{};
    if (::isatty(fd) == 0 || ::ioctl(fd, TIOCGWINSZ, &size) != 0) return 0;
    return size.ws_col;
}

std::size_t drawing_width(std::size_t columns) {
    return columns == 0 ? RenderOptions{}.line_width : std::clamp<std::size_t>(columns, min_line_width, 400);
}

bool use_color(ColorMode mode, bool stdout_is_tty) {
    if (mode != ColorMode::auto_) return mode == ColorMode::always;
    const char* no_color = std::getenv("NO_COLOR");
    return stdout_is_tty && (no_color == nullptr || *no_color == '\0');
}

std::size_t display_width(std::string_view utf8) {
    std::size_t width = 0, i = 0;
    while (i < utf8.size()) {
        const auto decoded = decode_utf8(utf8, i);
        width += decoded ? codepoint_width(decoded->codepoint) : 1;
        i += decoded ? decoded->length : 1;
    }
    return width;
}

std::string pad(std::string_view utf8, std::size_t width, bool right) {
    const std::size_t used = display_width(utf8);
    const std::string fill(used < width ? width - used : 0, ' ');
    return right ? fill + std::string(utf8) : std::string(utf8) + fill;
}

std::string format_number(double x, int precision) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
    const int p = std::max(precision, 0);
    const double magnitude = std::fabs(x);
    // Like numpy: scientific for huge values, and for small non-zero ones that fixed
    // notation would round to zero (a tiny gradient is not a zero gradient).
    if (magnitude >= 1e6 || (x != 0 && magnitude < 0.5 * std::pow(10.0, -p)))
        return fmt::format("{:.{}e}", x, p);
    // x == 0 here includes -0.0, whose sign only adds noise to a table.
    return fmt::format("{:.{}f}", x == 0 ? 0.0 : x, p);
}

// Token ids and counts read better as "12" than "12.0000".
bool all_integers(const Array& values) {
    return std::all_of(values.begin(), values.end(),
                       [](double x) { return !std::isfinite(x) || (std::fabs(x) < 1e15 && x == std::floor(x)); });
}

NumberStyle number_style(const Array& values, int precision) {
    if (values.size() > 0 && all_integers(values)) return {0, false, true};
    return {precision, needs_one_scientific_format(values, precision)};
}

std::string format_in_style(double x, const NumberStyle& style) {
    if (style.integers && std::isfinite(x) && std::fabs(x) < 1e15 && x == std::floor(x))
        return fmt::format("{:.0f}", x == 0 ? 0.0 : x);
    RenderOptions opt;
    opt.precision = style.precision;
    opt.scientific = style.scientific;
    return format_cell(x, opt);
}

namespace {

// A drawn parameter in one line: its entries' mean, standard deviation and range, 3 significant digits.
std::string parameter_summary(const TensorRecord& t, std::size_t width) {
    const std::size_t n = t.value.size();
    double sum = 0.0, lowest = t.value.data()[0], highest = t.value.data()[0];
    for (std::size_t i = 0; i < n; ++i) {
        const double x = t.value.data()[i];
        sum += x;
        lowest = std::min(lowest, x);
        highest = std::max(highest, x);
    }
    if (lowest == highest)
        return wrap_hanging(fmt::format("all {} entries {:.3g}; --show-params prints them", n, lowest), width, "  ", "    ");
    const double mean = sum / static_cast<double>(n);
    double squares = 0.0;
    for (std::size_t i = 0; i < n; ++i) squares += (t.value.data()[i] - mean) * (t.value.data()[i] - mean);
    return wrap_hanging(fmt::format("drawn: mean {:.3g}, sd {:.3g}, from {:.3g} to {:.3g}; --show-params prints all {}",
                                    mean, std::sqrt(squares / static_cast<double>(n)), lowest, highest, n),
                        width, "  ", "    ");
}

// A step's export-only data in one line (wrapped): how many tensors and numbers, and their names
// and shapes (the first three and the last when there are more than six).
std::string export_only_summary(const std::vector<const TensorRecord*>& data, std::size_t width) {
    std::size_t numbers = 0;
    std::vector<std::string> names;
    for (std::size_t k = 0; k < data.size(); ++k) {
        numbers += data[k]->value.size();
        if (data.size() <= 6 || k < 3 || k + 1 == data.size()) {
            // "train_src 1200x19": a shape without spaces is never wrapped apart
            const Shape shape = data[k]->shape();
            names.push_back(data[k]->name + " " + (shape.empty() ? "(scalar)" : fmt::format("{}", fmt::join(shape, "x"))));
        }
        if (data.size() > 6 && k == 3) names.push_back("…");
    }
    return wrap_text(fmt::format("Export-only data, not shown: {} tensor{} of {} numbers in all ({}); attn export "
                                 "writes them.",
                                 data.size(), data.size() == 1 ? "" : "s", numbers, fmt::join(names, ", ")),
                     width, "  ");
}

}  // namespace

std::string render_tensor(const TensorRecord& t, const RenderOptions& options) {
    if (t.drawn && !options.show_params && t.value.size() > 1)
        return header_line(t, options.color, options.line_width) + parameter_summary(t, options.line_width);
    RenderOptions opt = options;
    if (t.value.size() > 0 && all_integers(t.value)) opt.precision = 0;
    else opt.scientific = needs_one_scientific_format(t.value, opt.precision);
    std::string out = header_line(t, opt.color, opt.line_width);
    switch (t.value.dimension()) {
        case 0: return out + "  " + format_number(*t.value.data(), opt.precision) + "\n";
        case 1: return out + render_vector(t, opt);
        case 2: return out + render_matrix(t, opt);
        default: return out + render_slices(t, opt);
    }
}

std::string render_check(const CheckRecord& c, const RenderOptions& opt) {
    const std::string mark = c.holds ? paint("✓", "32", opt.color) : paint("✗", "31", opt.color);
    // The relation comes from the numbers, so a NaN error reads "not <=" rather than ">".
    const char* relation = c.max_abs_error <= c.tolerance ? "<="
                           : c.max_abs_error > c.tolerance ? ">"
                                                           : "not <=";
    const std::string numbers =
        fmt::format("(max |error| {:.3g} {} tolerance {:.3g})", c.max_abs_error, relation, c.tolerance);
    const std::string line = "  ✓ " + c.claim + "  " + numbers;  // its width, whatever the colour
    if (display_width(line) <= opt.line_width) return fmt::format("  {} {}  {}\n", mark, c.claim, numbers);
    // the claim wrapped under its mark (the mark painted after wrapping, so colour never counts as width)
    std::string claim = wrap_hanging(c.claim, opt.line_width, "  ✓ ", "    ");
    claim.replace(2, std::string_view("✓").size(), mark);
    return claim + wrap_hanging(numbers, opt.line_width, "    ", "    ");
}

std::string render_step(const Step& s, std::size_t index, std::size_t count, const RenderOptions& opt) {
    const StepText parts = render_step_parts(s, index, count, opt);
    return parts.body.empty() ? parts.head : parts.head + "\n" + parts.body;
}

StepText render_step_parts(const Step& s, std::size_t index, std::size_t count, const RenderOptions& opt) {
    const std::size_t rule_width = opt.line_width;
    // The id sits at the right end of the rule: it is what --step expects. A title too long for the width
    // (a narrow terminal) goes on under the rule's start, word by word, and the rule ends its last line.
    const std::string left = fmt::format("── Step {}/{} · ", index, count);
    const std::string right = fmt::format(" [{}] ──", s.id);
    const std::size_t indent = display_width(left), room = rule_width > indent + 8 ? rule_width - indent : 8;
    std::vector<std::string> title = {s.title};
    if (indent + display_width(s.title) + 1 + 2 + display_width(right) > rule_width) title = wrap_words(s.title, room);
    std::string rule;
    for (std::size_t k = 0; k + 1 < title.size(); ++k) rule += (k == 0 ? left : std::string(indent, ' ')) + title[k] + "\n";
    std::string last = (title.size() == 1 ? left : std::string(indent, ' ')) + title.back();
    if (display_width(last) + 1 + 2 + display_width(right) > rule_width) {
        rule += last + "\n";
        last = std::string(indent, ' ');
    } else {
        last += " ";
    }
    const std::size_t used = display_width(last) + display_width(right);
    rule += last + repeat("─", used + 2 < rule_width ? rule_width - used : 2) + right;

    // Blocks are separated by one blank line; the result ends without a trailing blank line.
    std::vector<std::string> blocks;
    const std::string head = paint(rule, "1;36", opt.color) + "\n" + wrap_hanging(s.equation, rule_width, "  ", "      ");
    if (!s.explanation.empty()) blocks.push_back(wrap_text(s.explanation, rule_width - 2, "  "));
    std::vector<const TensorRecord*> data;
    for (const auto& t : s.tensors) {
        if (t.export_only) data.push_back(&t);
        else blocks.push_back(render_tensor(t, opt));
    }
    if (!data.empty()) blocks.push_back(export_only_summary(data, rule_width - 2));
    if (!s.checks.empty()) {
        std::string checks;
        for (const auto& c : s.checks) checks += render_check(c, opt);
        blocks.push_back(checks);
    }
    return {head, fmt::format("{}", fmt::join(blocks, "\n"))};
}

std::string wrap_hanging(std::string_view text, std::size_t width, std::string_view first, std::string_view rest) {
    if (text.empty()) return {};
    // what fits is kept as written (an equation's runs of spaces separate its parts)
    if (display_width(first) + display_width(text) <= width && text.find('\n') == std::string_view::npos)
        return std::string(first) + std::string(text) + "\n";
    const std::size_t first_room = width > display_width(first) ? width - display_width(first) : 1;
    const std::size_t rest_room = width > display_width(rest) ? width - display_width(rest) : 1;
    std::vector<std::string> lines = wrap_words(text, first_room);
    if (lines.size() > 1 && rest_room != first_room) {
        // the lines after the first are wrapped again, at their own room
        std::string after;
        for (std::size_t k = 1; k < lines.size(); ++k) after += (k > 1 ? " " : "") + lines[k];
        std::vector<std::string> more = wrap_words(after, rest_room);
        lines.resize(1);
        lines.insert(lines.end(), more.begin(), more.end());
    }
    std::string out;
    for (std::size_t k = 0; k < lines.size(); ++k) out += std::string(k == 0 ? first : rest) + lines[k] + "\n";
    return out;
}

}  // namespace attn
