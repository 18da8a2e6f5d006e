// SVG pictures of heatmap tensors (attn run --svg DIR): one standalone SVG 1.1 file per
// tensor whose view is View::heatmap, for slides and handouts.
#pragma once

#include "trace.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

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
std::string heatmap_svg(const TensorRecord& t, const std::string& title);

// "02-weights-alpha.svg": the lesson number in two digits, the step id and the tensor name,
// each character outside [A-Za-z0-9_.-] replaced by '_' (one '_' per code point).
std::string svg_file_name(int lesson_number, std::string_view step_id, std::string_view tensor_name);

// Writes heatmap_svg of every heatmap tensor of the trace into `dir` (created when missing),
// titled "Lesson N · <step id> · <tensor name>", each file atomically, named by svg_file_name;
// a name already used in this call (ignoring case, for case-insensitive file systems) gets
// "-2", "-3", ... before ".svg". Returns the paths in the order of the trace. Throws
// std::runtime_error naming the path when the directory or a file cannot be written.
std::vector<std::filesystem::path> write_heatmap_svgs(const Trace& trace, int lesson_number,
                                                      const std::filesystem::path& dir);

}  // namespace attn
