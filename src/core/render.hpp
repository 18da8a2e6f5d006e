// Terminal output: numbers, shapes, heatmaps, bar charts, checks, colour.
// Pure functions from records to text, so tests can compare exact strings.
#pragma once

#include "trace.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace attn {

enum class ColorMode { auto_, always, never };

struct RenderOptions {
    int precision = 4;          // decimals shown (--precision N)
    bool color = false;         // ANSI escapes allowed (decided by use_color)
    std::size_t max_rows = 12;  // larger tensors are summarised: first/last rows with a "…" row
    std::size_t max_cols = 10;  // and first/last columns with a "…" column (fewer when they would not fit)
    std::size_t line_width = 78;  // the rule, the wrapped text, tables and check lines are kept within this many
                                  // columns (attn run: the terminal's width, or --width)
    bool scientific = false;      // every number in scientific notation (render_tensor decides per tensor)
    bool show_params = false;     // drawn parameters in full (--show-params), not one summary line each
};

// The fewest columns attn draws in: below, a table of a few columns with its labels cannot fit.
inline constexpr std::size_t min_line_width = 60;

// The columns of the terminal that file descriptor `fd` writes to, 0 when it is not a terminal or does
// not say.
std::size_t terminal_columns(int fd);

// The line width to draw in on a terminal `columns` wide (terminal_columns): RenderOptions' 78 for 0,
// otherwise the width, at least min_line_width and at most 400.
std::size_t drawing_width(std::size_t columns);

// Whether to emit colour: never/always as asked; auto means "stdout is a terminal"
// and NO_COLOR unset or empty (https://no-color.org).
bool use_color(ColorMode mode, bool stdout_is_tty);

// Columns a UTF-8 string occupies on a terminal: combining marks (e.g. Devanagari
// vowel signs that do not advance, anusvara, virama) take 0, East Asian wide and
// fullwidth characters take 2, everything else printable 1. Invalid UTF-8 bytes count 1.
std::size_t display_width(std::string_view utf8);

// `text` wrapped at its spaces to lines of at most `width` columns, the first starting with `first`, the
// others with `rest` (a hanging indent); text that fits is kept as written; "" for empty text.
std::string wrap_hanging(std::string_view text, std::size_t width, std::string_view first, std::string_view rest);

// Pads (right-aligns when `right`) to `width` display columns.
std::string pad(std::string_view utf8, std::size_t width, bool right = false);

// One number the numpy way at `precision` decimals: "0.1235", "-1.0000", "-inf", "nan".
std::string format_number(double x, int precision);

// How the numbers of one tensor are written in its table, decided once for the whole tensor:
// whole numbers without decimals; else `precision` decimals, or scientific notation for all of
// them when some need it (huge, or too small for fixed notation) and others do not.
struct NumberStyle {
    int precision = 4;
    bool scientific = false;
    bool integers = false;  // every value a whole number below 1e15: written out in full ("3000000", not "3e+06")
};
NumberStyle number_style(const Array& values, int precision);
std::string format_in_style(double x, const NumberStyle& style);

// Every finite value a whole number below 1e15 (token ids, counts): tables show them without decimals.
bool all_integers(const Array& values);

// A tensor: header "name  [r, c]  = equation", then the numbers in aligned columns with
// row/column labels when present; summarised with explicit "…" rows/columns when larger
// than the limits. View::heatmap adds the shaded grid (with a legend of its range),
// View::bars adds a horizontal bar chart.
std::string render_tensor(const TensorRecord& t, const RenderOptions& opt);

// "  ✓ claim  (max |error| 2.2e-16 <= tolerance 1e-12)" or with ✗ and ">"; the numbers go
// on a second line when the whole would be wider than opt.line_width.
std::string render_check(const CheckRecord& c, const RenderOptions& opt);

// A whole step: "── Step i/n · title ──" across opt.line_width columns, the equation, the explanation
// wrapped to opt.line_width - 2 columns and indented by 2, each tensor, each check.
std::string render_step(const Step& s, std::size_t index, std::size_t count, const RenderOptions& opt);

// The same step in two parts: `head`, the rule and the equation (what --pause keeps on every screenful),
// and `body`, the rest; render_step is head, a blank line and body (head alone when body is empty).
struct StepText {
    std::string head, body;
};
StepText render_step_parts(const Step& s, std::size_t index, std::size_t count, const RenderOptions& opt);

}  // namespace attn
