// Data-flow diagrams (issue 44): boxes, arrows and groups laid out in rows and columns, drawn as
// inline SVG for the book. A box may name a tensor of the lesson's trace; its label then carries the
// shape read from the trace at draw time ("Q [6, 4]"), and a diagram whose tensor the trace does not
// hold is refused by name (DiagramError), never drawn wrong. The layout is deterministic: the same
// diagram and trace give the same bytes. No external tool.
#pragma once

#include "trace.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace attn {

// A diagram names a tensor or step its trace does not hold, or is drawn wrong (overlap, arrow to nothing).
struct DiagramError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct DiagramNode {
    enum class Kind { data, op, note };  // a tensor or value (rectangle), an operation (pill), a remark (text only)
    std::string id;                      // unique in the diagram: what arrows and groups name
    std::string text;                    // the label; with a tensor and no text, the tensor's name
    std::string tensor{};                // "" or a tensor of the trace: its shape is appended to the label
    std::string step{};                  // the step holding `tensor` ("" : the diagram's step, else the first step with it)
    int row = 0;                         // rows go down the picture
    double col = 0;                      // centre at column `col` of the diagram's `columns` (fractions allowed)
    Kind kind = Kind::data;
    std::string sub{};                   // an optional second line
};

struct DiagramEdge {
    std::string from, to;
    bool back = false;  // a backward flow (a gradient): dashed and in the accent colour
    // straight from box to box, or around the boxes between them on their left or right (a residual
    // connection): out of the source's side, along a lane beside the boxes, into the target's side
    enum class Route { straight, left, right } route = Route::straight;
};

struct DiagramGroup {
    std::string label;                 // "encoder", "head 1"
    std::vector<std::string> members;  // node ids
};

struct Diagram {
    std::string id;       // unique in the lesson: the ids of the SVG and the file name
    std::string title;    // the SVG's <title>
    std::string caption;  // the figure's caption: what the picture shows, in a sentence or two
    std::string step;     // "" : at the start of the lesson; else the id of the step it is shown in
    int columns = 3;
    std::vector<DiagramNode> nodes;
    std::vector<DiagramEdge> edges;
    std::vector<DiagramGroup> groups;
};

// The geometry of a drawn diagram (in viewBox units): what the SVG is written from and the tests read.
struct DiagramBox {
    std::string id;
    double x = 0, y = 0, w = 0, h = 0;
    std::vector<std::string> lines;  // the text, one entry per line, tensor shapes filled in
    DiagramNode::Kind kind = DiagramNode::Kind::data;
};
struct DiagramArrow {
    std::string from, to;
    double x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // from the edge of `from` to the edge of `to` (the head's tip)
    bool back = false;
    std::vector<std::pair<double, double>> bends{};  // the corners between, in order (a routed edge)
    // (x1, y1), the bends, (x2, y2)
    std::vector<std::pair<double, double>> points() const;
};
struct DiagramFrame {
    std::string label;
    double x = 0, y = 0, w = 0, h = 0;
    double label_x = 0, label_y = 0, label_w = 0;  // the label's baseline start and estimated width
    std::vector<std::string> members;
};
struct DiagramLayout {
    double width = 0, height = 0;
    std::vector<DiagramBox> boxes;
    std::vector<DiagramArrow> arrows;
    std::vector<DiagramFrame> frames;
};

// Widest viewBox and the size of every text: at 390 px (350 px of picture) text is at least 10 px.
inline constexpr double diagram_width = 540, diagram_font = 16;

// The diagram's boxes with their labels (shapes from `trace`), arrows and frames. Throws DiagramError
// naming the diagram and the tensor (or step) when the trace lacks it, and when a node id is
// repeated or an edge or group names no node.
DiagramLayout layout_diagram(const Diagram& d, const Trace& trace);

// What is wrong with a layout, one line each (empty when nothing is): boxes that overlap or leave the
// picture, an arrow that does not end on the border of its box or crosses a third box, a frame's
// label over a box outside the frame.
std::vector<std::string> layout_problems(const DiagramLayout& layout);

// The SVG of a diagram (inline in HTML, or with `standalone` a file with its XML declaration): a <title>,
// role="img" and an aria-label, every label a <text> in <g class="diagram-labels">, colours through
// classes and a <style> with a dark scheme. `ids` prefixes the element ids (unique within a page).
std::string diagram_svg(const Diagram& d, const Trace& trace, const std::string& ids, bool standalone = false);

// The diagrams of a lesson, by its slug ("self-attention"); none for a slug it does not know.
std::vector<Diagram> lesson_diagrams(const std::string& slug);

}  // namespace attn
