// SVG pictures of tensors (attn run --svg DIR, and the pages of attn book): a heatmap for
// View::heatmap, a line plot for View::plot, a bar chart for View::bars, each a standalone SVG
// 1.1 file for slides and handouts, or inline in an HTML page.
#pragma once

#include "trace.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

struct SvgOptions {
    bool standalone = true;   // a file of its own: the XML declaration first (none inside HTML)
    std::string ids = "attn";  // prefix of the ids of gradients and patterns: unique within a page
};

// A standalone SVG 1.1 document (UTF-8, with XML declaration) of one tensor as a heatmap:
// `title` at the top, the tensor's name, shape and equation below it, one cell per element on
// a viridis colour scale, row labels on the left and column labels on top (indices when the
// tensor has none; rotated when wider than a cell; only every k-th when the cells are too
// small for all of them), axis captions, a colour bar with the finite minimum and maximum, and
// the value in each cell when the matrix is at most 12 x 12. -inf cells are hatched grey with
// the note "−∞ (masked)"; +inf and NaN cells have their own marks and notes. A rank-1 tensor is
// drawn as one row, a rank-0 tensor as one cell, a tensor of rank 3 or more as its rank-2
// slices one below the other. All text is escaped for XML, and bytes that are not UTF-8
// become U+FFFD, so any label gives a well-formed file.
std::string heatmap_svg(const TensorRecord& t, const std::string& title, const SvgOptions& options = {});

// A line plot of a rank-2 tensor whose rows are x values and columns series (View::plot): the
// same axes as the terminal's plot (core/plot_axes.hpp: x from the numbers in the row labels,
// log2 spaced when they double, else the rows in order with their labels as ticks; y linear, or
// log with whole decades when every value is positive and they span more than a factor 10), the
// first six columns as series, each with its own colour, dash and marker, a gap where a value is
// not finite; tick labels, axis titles, a legend naming each series and how each axis is scaled.
std::string plot_svg(const TensorRecord& t, const std::string& title, const SvgOptions& options = {});

// A horizontal bar chart of a vector (View::bars; rank 1, or rank 2 with one column): one bar
// per element from a zero line, labelled by the tensor's row labels (or indices), its value at
// its end; non-finite values are named instead of drawn.
std::string bars_svg(const TensorRecord& t, const std::string& title, const SvgOptions& options = {});

// The picture of a tensor as its view asks: heatmap_svg, plot_svg or bars_svg, or "" when its
// view draws none (View::numbers, a plot that is not a non-empty matrix, bars of a matrix with
// more than one column: the terminal draws none either).
// The figures' dark palette, a CSS @media (prefers-color-scheme: dark) block for <svg class="fig">:
// inside every standalone file's <style>, and once in each page of the book.
std::string_view svg_dark_css();

std::string tensor_svg(const TensorRecord& t, const std::string& title, const SvgOptions& options = {});

// "02-weights-alpha.svg": the lesson number in two digits, the step id and the tensor name,
// each character outside [A-Za-z0-9_.-] replaced by '_' (one '_' per code point).
std::string svg_file_name(int lesson_number, std::string_view step_id, std::string_view tensor_name);

// Writes tensor_svg of every tensor of the trace that has a picture into `dir` (created when missing),
// titled "Lesson N · <step title> · <tensor name>", each file atomically, named by svg_file_name;
// a name already used in this call (ignoring case, for case-insensitive file systems) gets
// "-2", "-3", ... before ".svg". Returns the paths in the order of the trace. Throws
// std::runtime_error naming the path when the directory or a file cannot be written.
std::vector<std::filesystem::path> write_svgs(const Trace& trace, int lesson_number,
                                                      const std::filesystem::path& dir);

}  // namespace attn
