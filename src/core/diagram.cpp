// Data-flow diagrams: the layout (rows top to bottom, columns across a fixed width) and the SVG.
// Helpers live in attn::diagram_impl, not an anonymous namespace: core is built as one unity file.
#include "diagram.hpp"

#include "xml_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace attn {
namespace diagram_impl {

constexpr double dg_pad = 10;          // the picture's margin
constexpr double dg_line_height = 20;  // one line of text in a box
constexpr double dg_box_padding = 12;  // text to the box's side
constexpr double dg_row_gap = 40;      // between one row's boxes and the next's (room for an arrow)
constexpr double dg_frame_top = 30;    // a frame above its first row: room for its label
constexpr double dg_frame_side = 8, dg_frame_bottom = 10;
constexpr double dg_head_length = 9, dg_head_half = 4.5;
constexpr double dg_lane = 22;  // a routed edge's lane from the side of the boxes it passes

double box_height(std::size_t lines) { return 16 + dg_line_height * static_cast<double>(lines); }

const TensorRecord* find_tensor(const Trace& trace, const std::string& step, const std::string& name) {
    for (const auto& s : trace.steps()) {
        if (!step.empty() && s.id != step) continue;
        for (const auto& t : s.tensors)
            if (t.name == name) return &t;
    }
    return nullptr;
}

std::vector<std::string> node_lines(const Diagram& d, const DiagramNode& n, const Trace& trace) {
    std::string first = n.text;
    if (!n.tensor.empty()) {
        const std::string step = n.step.empty() ? d.step : n.step;
        if (!step.empty() && trace.find_step(step) == nullptr)
            throw DiagramError(fmt::format("diagram '{}' of lesson '{}': the trace has no step '{}' (for tensor '{}')",
                                           d.id, trace.lesson(), step, n.tensor));
        const TensorRecord* t = find_tensor(trace, step, n.tensor);
        if (t == nullptr)
            throw DiagramError(fmt::format("diagram '{}' of lesson '{}': no tensor '{}' in {}", d.id, trace.lesson(),
                                           n.tensor, step.empty() ? std::string("the trace") : "step '" + step + "'"));
        const Shape shape = t->shape();
        first = (n.text.empty() ? n.tensor : n.text) + (shape.empty() ? std::string(", a number") : " " + shape_string(shape));
    }
    std::vector<std::string> lines{first};
    if (!n.sub.empty()) lines.push_back(n.sub);
    return lines;
}

struct Rect {
    double x, y, w, h;
};

// Where the segment from the centre of r towards (tx, ty) leaves r: the parameter along the segment.
double exit_fraction(const Rect& r, double dx, double dy) {
    const double hw = r.w / 2, hh = r.h / 2;
    double t = 1e300;
    if (std::abs(dx) > 1e-9) t = std::min(t, hw / std::abs(dx));
    if (std::abs(dy) > 1e-9) t = std::min(t, hh / std::abs(dy));
    return t;
}

// Whether the segment crosses the inside of r (Liang-Barsky clipping against r shrunk by `inset`).
bool segment_crosses(const Rect& r, double x1, double y1, double x2, double y2, double inset) {
    const double left = r.x + inset, right = r.x + r.w - inset, top = r.y + inset, bottom = r.y + r.h - inset;
    if (left >= right || top >= bottom) return false;
    double t0 = 0, t1 = 1;
    const double dx = x2 - x1, dy = y2 - y1;
    const double p[4] = {-dx, dx, -dy, dy};
    const double q[4] = {x1 - left, right - x1, y1 - top, bottom - y1};
    for (int i = 0; i < 4; ++i) {
        if (std::abs(p[i]) < 1e-12) {
            if (q[i] < 0) return false;
            continue;
        }
        const double t = q[i] / p[i];
        if (p[i] < 0) t0 = std::max(t0, t);
        else t1 = std::min(t1, t);
        if (t0 > t1) return false;
    }
    return t1 - t0 > 1e-9;
}

bool rects_overlap(const Rect& a, const Rect& b, double margin) {
    return a.x < b.x + b.w + margin && b.x < a.x + a.w + margin && a.y < b.y + b.h + margin && b.y < a.y + a.h + margin;
}

// Distance from (x, y) to the border of r.
double border_distance(const Rect& r, double x, double y) {
    const double dx = std::max({r.x - x, 0.0, x - (r.x + r.w)}), dy = std::max({r.y - y, 0.0, y - (r.y + r.h)});
    if (dx > 0 || dy > 0) return std::hypot(dx, dy);
    return std::min({x - r.x, r.x + r.w - x, y - r.y, r.y + r.h - y});
}

Rect rect_of(const DiagramBox& b) { return {b.x, b.y, b.w, b.h}; }

}  // namespace diagram_impl

std::vector<std::pair<double, double>> DiagramArrow::points() const {
    std::vector<std::pair<double, double>> out{{x1, y1}};
    out.insert(out.end(), bends.begin(), bends.end());
    out.emplace_back(x2, y2);
    return out;
}

DiagramLayout layout_diagram(const Diagram& d, const Trace& trace) {
    using namespace diagram_impl;
    DiagramLayout out;
    out.width = diagram_width;
    std::map<std::string, std::size_t> index;
    int rows = 0;
    for (const auto& n : d.nodes) {
        if (!index.emplace(n.id, out.boxes.size()).second)
            throw DiagramError(fmt::format("diagram '{}': two nodes are called '{}'", d.id, n.id));
        if (n.row < 0 || n.col < 0 || n.col > d.columns - 0.5)
            throw DiagramError(fmt::format("diagram '{}': node '{}' is outside the rows and {} columns", d.id, n.id,
                                           d.columns));
        DiagramBox b;
        b.id = n.id;
        b.kind = n.kind;
        b.lines = node_lines(d, n, trace);
        double widest = 0;
        for (const auto& line : b.lines) widest = std::max(widest, text_width(line, diagram_font));
        b.w = std::max(48.0, std::ceil(widest + 2 * dg_box_padding));
        b.h = box_height(b.lines.size());
        out.boxes.push_back(b);
        rows = std::max(rows, n.row + 1);
    }
    const auto node_of = [&](const std::string& id) -> std::size_t {
        const auto it = index.find(id);
        if (it == index.end()) throw DiagramError(fmt::format("diagram '{}': no node '{}'", d.id, id));
        return it->second;
    };
    // the rows a frame starts and ends in, for the room its label and border take
    std::vector<int> starts(static_cast<std::size_t>(rows), 0), ends(static_cast<std::size_t>(rows), 0);
    for (const auto& g : d.groups) {
        int first = rows, last = -1;
        for (const auto& m : g.members) {
            const int r = d.nodes[node_of(m)].row;
            first = std::min(first, r), last = std::max(last, r);
        }
        if (last < 0) throw DiagramError(fmt::format("diagram '{}': the group '{}' has no member", d.id, g.label));
        starts[static_cast<std::size_t>(first)] = 1;
        ends[static_cast<std::size_t>(last)] = 1;
    }
    std::vector<double> row_height(static_cast<std::size_t>(rows), 0), row_top(static_cast<std::size_t>(rows), 0);
    for (std::size_t k = 0; k < out.boxes.size(); ++k) {
        const auto r = static_cast<std::size_t>(d.nodes[k].row);
        row_height[r] = std::max(row_height[r], out.boxes[k].h);
    }
    double y = dg_pad;
    for (std::size_t r = 0; r < row_height.size(); ++r) {
        if (r > 0) y += dg_row_gap + (ends[r - 1] ? dg_frame_bottom : 0);
        if (starts[r]) y += dg_frame_top;
        row_top[r] = y;
        y += row_height[r];
    }
    const double column_width = (diagram_width - 2 * dg_pad) / d.columns;
    for (std::size_t k = 0; k < out.boxes.size(); ++k) {
        DiagramBox& b = out.boxes[k];
        const auto r = static_cast<std::size_t>(d.nodes[k].row);
        const double cx = dg_pad + (d.nodes[k].col + 0.5) * column_width;
        // centred on its column, moved in where a wide box would leave the picture
        b.x = std::round(std::clamp(cx - b.w / 2, dg_pad, std::max(dg_pad, diagram_width - dg_pad - b.w)));
        b.y = row_top[r] + (row_height[r] - b.h) / 2;
    }
    for (const auto& g : d.groups) {
        DiagramFrame f;
        f.label = g.label;
        f.members = g.members;
        double left = 1e300, right = -1e300, top = 1e300, bottom = -1e300;
        for (const auto& m : g.members) {
            const DiagramBox& b = out.boxes[node_of(m)];
            left = std::min(left, b.x), right = std::max(right, b.x + b.w);
            top = std::min(top, b.y), bottom = std::max(bottom, b.y + b.h);
        }
        f.label_w = text_width(g.label, diagram_font);
        f.x = left - dg_frame_side;
        f.w = std::max(right + dg_frame_side, f.x + f.label_w + 2 * dg_frame_side) - f.x;
        f.y = top - dg_frame_top + 2;
        f.h = bottom + dg_frame_bottom - 2 - f.y;
        f.label_x = f.x + dg_frame_side;
        f.label_y = f.y + 20;
        out.frames.push_back(f);
    }
    for (const auto& e : d.edges) {
        const DiagramBox& a = out.boxes[node_of(e.from)];
        const DiagramBox& b = out.boxes[node_of(e.to)];
        const double ax = a.x + a.w / 2, ay = a.y + a.h / 2, bx = b.x + b.w / 2, by = b.y + b.h / 2;
        const double dx = bx - ax, dy = by - ay;
        const double leave = exit_fraction(rect_of(a), dx, dy), enter = exit_fraction(rect_of(b), -dx, -dy);
        if (e.route != DiagramEdge::Route::straight) {
            // out of the source's side low, into the target's side high, along a lane beside every box between
            const bool right = e.route == DiagramEdge::Route::right;
            const double top = std::min(a.y, b.y), bottom = std::max(a.y + a.h, b.y + b.h);
            double lane = right ? -1e300 : 1e300;
            for (const auto& box : out.boxes)
                if (box.y < bottom && box.y + box.h > top)
                    lane = right ? std::max(lane, box.x + box.w + dg_lane) : std::min(lane, box.x - dg_lane);
            const double sx = right ? a.x + a.w : a.x, tx = right ? b.x + b.w : b.x;
            const double sy = a.y + a.h * 0.65, ty = b.y + b.h * 0.35;
            out.arrows.push_back(DiagramArrow{e.from, e.to, sx, sy, tx, ty, e.back, {{lane, sy}, {lane, ty}}});
            continue;
        }
        DiagramArrow arrow{e.from, e.to, ax + dx * leave, ay + dy * leave, bx - dx * enter, by - dy * enter, e.back, {}};
        out.arrows.push_back(arrow);
    }
    // a frame's label where no arrow crosses it: at the frame's left, else left of the arrows that enter
    // the frame's first row, else right of them (the frame widened to hold it)
    for (auto& f : out.frames) {
        const double band_top = f.label_y - 15, band_bottom = f.label_y + 4;
        std::vector<std::pair<double, double>> crossings;  // x ranges of the arrows within the label's band
        for (const auto& arrow : out.arrows) {
            const auto points = arrow.points();
            for (std::size_t k = 1; k < points.size(); ++k) {
                // plain variables, not structured bindings: a lambda below uses them (Clang 14 refuses that in C++17)
                const double x1 = points[k - 1].first, y1 = points[k - 1].second;
                const double x2 = points[k].first, y2 = points[k].second;
                const double top = std::min(y1, y2), bottom_y = std::max(y1, y2);
                if (bottom_y < band_top || top > band_bottom) continue;
                const auto x_at = [&](double y) {
                    return std::abs(y2 - y1) < 1e-9 ? x1 : x1 + (x2 - x1) * (y - y1) / (y2 - y1);
                };
                const double xa = x_at(std::clamp(band_top, top, bottom_y)), xb = x_at(std::clamp(band_bottom, top, bottom_y));
                crossings.emplace_back(std::min(xa, xb), std::max(xa, xb));
            }
        }
        const auto clear = [&](double x) {
            for (const auto& c : crossings)
                if (x < c.second + 4 && c.first - 4 < x + f.label_w) return false;
            return true;
        };
        if (clear(f.label_x) || crossings.empty()) continue;
        double lowest = 1e300, highest = -1e300;
        for (const auto& c : crossings) lowest = std::min(lowest, c.first), highest = std::max(highest, c.second);
        const double left = lowest - 6 - f.label_w, right = highest + 6;
        // whether the frame from x0 to x1 would cover a box that is not its member
        const auto covers_other = [&](double x0, double x1) {
            for (const auto& b : out.boxes)
                if (std::find(f.members.begin(), f.members.end(), b.id) == f.members.end() &&
                    rects_overlap(Rect{x0, f.y, x1 - x0, f.h}, rect_of(b), 0))
                    return true;
            return false;
        };
        if (left - dg_frame_side >= 0 && clear(left) && !covers_other(std::min(f.x, left - dg_frame_side), f.x + f.w)) {
            f.label_x = left;
            const double x = std::min(f.x, left - dg_frame_side);
            f.w += f.x - x, f.x = x;
        } else if (right + f.label_w + dg_frame_side <= diagram_width && clear(right) &&
                   !covers_other(f.x, std::max(f.x + f.w, right + f.label_w + dg_frame_side))) {
            f.label_x = right;
            f.w = std::max(f.w, right + f.label_w + dg_frame_side - f.x);
        }
    }
    // the picture as wide as what it draws (a narrow diagram is drawn larger on a phone), at most diagram_width
    double leftmost = diagram_width, rightmost = 0;
    for (const auto& b : out.boxes) leftmost = std::min(leftmost, b.x), rightmost = std::max(rightmost, b.x + b.w);
    for (const auto& f : out.frames) leftmost = std::min(leftmost, f.x), rightmost = std::max(rightmost, f.x + f.w);
    for (const auto& a : out.arrows)
        for (const auto& [x, y] : a.points()) leftmost = std::min(leftmost, x), rightmost = std::max(rightmost, x);
    const double shift = std::floor(std::max(0.0, leftmost - dg_pad));
    out.width = std::min(diagram_width, std::ceil(rightmost - shift + dg_pad));
    for (auto& b : out.boxes) b.x -= shift;
    for (auto& f : out.frames) f.x -= shift, f.label_x -= shift;
    for (auto& a : out.arrows) {
        a.x1 -= shift, a.x2 -= shift;
        for (auto& bend : a.bends) bend.first -= shift;
    }
    double bottom = 0;
    for (const auto& b : out.boxes) bottom = std::max(bottom, b.y + b.h);
    for (const auto& f : out.frames) bottom = std::max(bottom, f.y + f.h);
    out.height = std::ceil(bottom + dg_pad);
    return out;
}

std::vector<std::string> layout_problems(const DiagramLayout& layout) {
    using namespace diagram_impl;
    std::vector<std::string> problems;
    std::map<std::string, const DiagramBox*> by_id;
    for (const auto& b : layout.boxes) by_id[b.id] = &b;
    for (std::size_t i = 0; i < layout.boxes.size(); ++i) {
        const DiagramBox& a = layout.boxes[i];
        if (a.x < 0 || a.y < 0 || a.x + a.w > layout.width || a.y + a.h > layout.height)
            problems.push_back(fmt::format("box '{}' leaves the picture ({} wide)", a.id, layout.width));
        for (std::size_t j = i + 1; j < layout.boxes.size(); ++j)
            if (rects_overlap(rect_of(a), rect_of(layout.boxes[j]), 4))
                problems.push_back(fmt::format("boxes '{}' and '{}' overlap", a.id, layout.boxes[j].id));
    }
    for (const auto& arrow : layout.arrows) {
        const auto from = by_id.find(arrow.from), to = by_id.find(arrow.to);
        if (from == by_id.end() || to == by_id.end()) {
            problems.push_back(fmt::format("an arrow from '{}' to '{}' names no box", arrow.from, arrow.to));
            continue;
        }
        if (border_distance(rect_of(*to->second), arrow.x2, arrow.y2) > 0.5)
            problems.push_back(fmt::format("the arrow from '{}' does not end on the border of '{}'", arrow.from, arrow.to));
        if (border_distance(rect_of(*from->second), arrow.x1, arrow.y1) > 0.5)
            problems.push_back(fmt::format("the arrow to '{}' does not start on the border of '{}'", arrow.to, arrow.from));
        const auto points = arrow.points();
        const auto [lx, ly] = points[points.size() - 2];
        if (std::hypot(arrow.x2 - lx, arrow.y2 - ly) < 2 * dg_head_length)
            problems.push_back(fmt::format("the arrow from '{}' to '{}' is too short to see", arrow.from, arrow.to));
        if (points.front().first < 0 || points.front().first > layout.width)
            problems.push_back(fmt::format("the arrow from '{}' to '{}' leaves the picture", arrow.from, arrow.to));
        for (std::size_t k = 1; k < points.size(); ++k) {
            const auto [x1, y1] = points[k - 1];
            const auto [x2, y2] = points[k];
            if (x2 < 0 || x2 > layout.width || y2 < 0 || y2 > layout.height)
                problems.push_back(fmt::format("the arrow from '{}' to '{}' leaves the picture", arrow.from, arrow.to));
            for (const auto& b : layout.boxes)
                if (segment_crosses(rect_of(b), x1, y1, x2, y2, 0) &&
                    !((b.id == arrow.from && k == 1) || (b.id == arrow.to && k + 1 == points.size())))
                    problems.push_back(fmt::format("the arrow from '{}' to '{}' crosses '{}'", arrow.from, arrow.to, b.id));
        }
    }
    for (const auto& f : layout.frames) {
        if (f.x < 0 || f.x + f.w > layout.width || f.y < 0 || f.y + f.h > layout.height)
            problems.push_back(fmt::format("the frame '{}' leaves the picture", f.label));
        const Rect label{f.label_x, f.label_y - 15, f.label_w, 19};
        for (const auto& b : layout.boxes) {
            const bool member = std::find(f.members.begin(), f.members.end(), b.id) != f.members.end();
            if (rects_overlap(label, rect_of(b), 0))
                problems.push_back(fmt::format("the label of frame '{}' covers '{}'", f.label, b.id));
            if (!member && rects_overlap(Rect{f.x, f.y, f.w, f.h}, rect_of(b), 0))
                problems.push_back(fmt::format("the frame '{}' covers '{}', not one of its members", f.label, b.id));
        }
        for (const auto& arrow : layout.arrows) {
            const auto points = arrow.points();
            for (std::size_t k = 1; k < points.size(); ++k)
                if (segment_crosses(label, points[k - 1].first, points[k - 1].second, points[k].first, points[k].second, 0)) {
                    problems.push_back(fmt::format("the arrow from '{}' to '{}' crosses the label of frame '{}'",
                                                   arrow.from, arrow.to, f.label));
                    break;
                }
        }
    }
    return problems;
}

namespace diagram_impl {

// Light colours first; the dark scheme's after. Classes only: the page's own scheme decides.
constexpr const char* diagram_style =
    ".dg-data{fill:#e8f0fb;stroke:#3d6aa8;stroke-width:1.5}"
    ".dg-op{fill:#fdf1dc;stroke:#a86b12;stroke-width:1.5}"
    ".dg-frame{fill:none;stroke:#7b818c;stroke-width:1.2;stroke-dasharray:6 4}"
    ".dg-line{stroke:#3a3e46;stroke-width:1.6;fill:none}.dg-head{fill:#3a3e46}"
    ".dg-back{stroke:#b3261e;stroke-dasharray:6 4}.dg-back-head{fill:#b3261e}"
    ".dg-text{fill:#1b1b1b}.dg-frame-text{fill:#4f535b}"
    "@media (prefers-color-scheme: dark){"
    ".dg-data{fill:#1f2f47;stroke:#8ab4f0}.dg-op{fill:#3b2c14;stroke:#e0a84e}"
    ".dg-frame{stroke:#9aa0aa}.dg-line{stroke:#c9ccd2}.dg-head{fill:#c9ccd2}"
    ".dg-back{stroke:#ff8a80}.dg-back-head{fill:#ff8a80}"
    ".dg-text{fill:#e6e6e6}.dg-frame-text{fill:#b4b8c0}}"
    "@media print{.dg-data{fill:#e8f0fb;stroke:#3d6aa8}.dg-op{fill:#fdf1dc;stroke:#a86b12}"
    ".dg-line{stroke:#3a3e46}.dg-head{fill:#3a3e46}.dg-back{stroke:#b3261e}.dg-back-head{fill:#b3261e}"
    ".dg-text{fill:#1b1b1b}.dg-frame-text{fill:#4f535b}.dg-frame{stroke:#7b818c}}";

std::string arrow_svg(const DiagramArrow& a) {
    const auto points = a.points();
    const auto [lx, ly] = points[points.size() - 2];  // where the last segment starts
    const double dx = a.x2 - lx, dy = a.y2 - ly, length = std::hypot(dx, dy);
    const double ux = length > 0 ? dx / length : 0, uy = length > 0 ? dy / length : 1;
    const double bx = a.x2 - ux * dg_head_length, by = a.y2 - uy * dg_head_length;  // the head's base
    const double line_end = std::max(0.0, length - dg_head_length + 1);
    std::string out;
    if (points.size() == 2) {
        out = fmt::format("<line class=\"dg-line{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", a.back ? " dg-back" : "",
                          px(a.x1), px(a.y1), px(lx + ux * line_end), px(ly + uy * line_end));
    } else {
        out = fmt::format("<polyline class=\"dg-line{}\" points=\"", a.back ? " dg-back" : "");
        for (std::size_t k = 0; k + 1 < points.size(); ++k) out += px(points[k].first) + "," + px(points[k].second) + " ";
        out += px(lx + ux * line_end) + "," + px(ly + uy * line_end) + "\"/>";
    }
    out += fmt::format("<polygon class=\"{}\" points=\"{},{} {},{} {},{}\"/>\n", a.back ? "dg-back-head" : "dg-head",
                       px(a.x2), px(a.y2), px(bx - uy * dg_head_half), px(by + ux * dg_head_half), px(bx + uy * dg_head_half),
                       px(by - ux * dg_head_half));
    return out;
}

}  // namespace diagram_impl

std::string diagram_svg(const Diagram& d, const Trace& trace, const std::string& ids, bool standalone) {
    using namespace diagram_impl;
    const DiagramLayout layout = layout_diagram(d, trace);
    const std::string title = xml_escaped(d.title);
    std::string out = standalone ? "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" : "";
    out += fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"diagram\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "role=\"img\" aria-label=\"{2}\" aria-labelledby=\"{3}-title\" font-family=\"DejaVu Sans, Noto Sans, sans-serif\" "
        "font-size=\"{4}\">\n<title id=\"{3}-title\">{2}</title>\n<style>{5}</style>\n",
        px(layout.width), px(layout.height), title, xml_escaped(ids), px(diagram_font), diagram_style);
    out += "<g class=\"diagram-frames\">\n";
    for (const auto& f : layout.frames)
        out += fmt::format("<rect class=\"dg-frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"8\"/>\n", px(f.x),
                           px(f.y), px(f.w), px(f.h));
    out += "</g>\n<g class=\"diagram-boxes\">\n";
    for (const auto& b : layout.boxes) {
        if (b.kind == DiagramNode::Kind::note) continue;
        const bool op = b.kind == DiagramNode::Kind::op;
        out += fmt::format("<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"{}\"/>\n",
                           op ? "dg-op" : "dg-data", px(b.x), px(b.y), px(b.w), px(b.h), op ? 14 : 4);
    }
    out += "</g>\n<g class=\"diagram-arrows\">\n";
    for (const auto& a : layout.arrows) out += arrow_svg(a);
    out += "</g>\n<g class=\"diagram-labels\">\n";
    for (const auto& f : layout.frames)
        out += fmt::format("<text class=\"dg-frame-text\" x=\"{}\" y=\"{}\">{}</text>\n", px(f.label_x), px(f.label_y),
                           xml_escaped(f.label));
    for (const auto& b : layout.boxes)
        for (std::size_t i = 0; i < b.lines.size(); ++i)
            out += fmt::format("<text class=\"dg-text\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                               px(b.x + b.w / 2), px(b.y + 8 + dg_line_height * static_cast<double>(i) + 15.5),
                               xml_escaped(b.lines[i]));
    return out + "</g>\n</svg>\n";
}

}  // namespace attn
