// The book's pages. Everything is written top to bottom into one string per page; every text
// from a trace goes through xml_escaped (valid UTF-8, & < > " ' escaped, and the code points
// HTML's parser reports as errors replaced), so no label can open an element or break a page.
#include "html.hpp"

#include "diagram.hpp"
#include "golden.hpp"
#include "mathml.hpp"
#include "prose.hpp"
#include "render.hpp"
#include "svg.hpp"
#include "xml_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <system_error>

namespace attn {
namespace {

std::string html_text(std::string_view text) { return xml_escaped(text); }

// Tables up to this many rows and columns are shown open; larger ones fold under <details>.
constexpr std::size_t open_rows = 12, open_cols = 10;
// Folded tables show at most this many rows and columns: the first and last halves around "…".
constexpr std::size_t table_rows = 64, table_cols = 32;

constexpr const char* stylesheet = R"(:root { color-scheme: light dark; --fg: #1b1b1b; --bg: #ffffff; --muted: #5b5b5b;
  --rule: #d8d8d8; --panel: #f4f5f7; --link: #0b57a4; --pass: #1a7f37; --fail: #c62828; --shade: rgba(0, 0, 0, 0.28); }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6e6e6; --bg: #16181c; --muted: #a6a6a6; --rule: #3a3d44; --panel: #22252b; --link: #8ab8ff;
    --pass: #5cc878; --fail: #ff7b72; --shade: rgba(0, 0, 0, 0.75); }
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0 auto; max-width: 62rem; padding: 1rem 1.25rem 3rem; color: var(--fg); background: var(--bg);
  font: 16px/1.55 "DejaVu Sans", "Noto Sans", "Noto Sans Devanagari", "Lohit Devanagari", system-ui, sans-serif;
  overflow-wrap: anywhere; }
a { color: var(--link); }
h1 { font-size: 1.6rem; line-height: 1.25; margin: 0.5rem 0; }
h2 { font-size: 1.25rem; margin: 2.2rem 0 0.6rem; padding-top: 0.6rem; border-top: 1px solid var(--rule); }
h3 { font-size: 1rem; margin: 1.4rem 0 0.4rem; font-weight: normal; }
code, table { font-family: "DejaVu Sans Mono", "Noto Sans Mono", ui-monospace, monospace; }
.muted, .sources, .shape, .step-id, .note { color: var(--muted); }
nav.pages { display: flex; flex-wrap: wrap; gap: 0.4rem 1.2rem; font-size: 0.95rem; }
nav.toc { background: var(--panel); padding: 0.6rem 1rem; border-radius: 6px; margin: 1rem 0; }
nav.toc ol { margin: 0.3rem 0; padding-left: 1.6rem; }
.equation { --cover: var(--panel); padding: 0.5rem 0.8rem; border-radius: 6px; overflow-x: auto; margin: 0.6rem 0; }
math { font-size: 1.1em; }
.eq-piece { white-space: nowrap; }
.explanation p, ul.checks li, h2, h3, nav.toc li, p.note, p.muted, .stopped { overflow-x: auto; overflow-y: hidden; }
.explanation p, ul.checks li, nav.toc li, p.note, p.muted, .stopped { padding-block: 0.3em; }
.scroll { --cover: var(--bg); overflow-x: auto; max-width: 100%; }
/* a box wider than the column scrolls, and shows it: a shadow on the side with more to see (the covers
   scroll with the content and hide the shadows at its ends), a thin visible scrollbar, a focus ring */
.scroll, .equation { position: relative; scrollbar-width: thin; scrollbar-color: var(--muted) transparent;
  background: linear-gradient(to right, var(--cover) 30%, transparent) left center / 2.5rem 100% no-repeat local,
    linear-gradient(to left, var(--cover) 30%, transparent) right center / 2.5rem 100% no-repeat local,
    radial-gradient(farthest-side at 0 50%, var(--shade), transparent) left center / 0.9rem 100% no-repeat scroll,
    radial-gradient(farthest-side at 100% 50%, var(--shade), transparent) right center / 0.9rem 100% no-repeat scroll,
    var(--cover); }
.scroll:focus-visible, .equation:focus-visible { outline: 2px solid var(--link); outline-offset: 2px; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.3rem 0; font-variant-numeric: tabular-nums; }
th, td { padding: 0.1rem 0.55rem; text-align: right; white-space: nowrap; }
th { color: var(--muted); font-weight: normal; }
tbody th { text-align: left; }
thead th { border-bottom: 1px solid var(--rule); }
table.lessons { font-family: inherit; font-size: 0.95rem; }
table.lessons td, table.lessons th { text-align: left; white-space: normal; overflow-wrap: normal; vertical-align: top;
  padding: 0.3rem 0.6rem; }
table.lessons .n { white-space: nowrap; }
details { margin: 0.3rem 0; }
summary { cursor: pointer; color: var(--muted); }
figure { margin: 0.6rem 0; }
figure svg { max-width: 100%; height: auto; border-radius: 4px; display: block; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
figure.diagram { margin: 1rem 0; }
figure.diagram figcaption { color: var(--muted); font-size: 0.9rem; margin-top: 0.3rem; }
ul.checks { list-style: none; padding-left: 0; }
ul.checks li { margin: 0.25rem 0; }
.pass .mark { color: var(--pass); font-weight: bold; }
.fail .mark, .failed { color: var(--fail); font-weight: bold; }
.numbers { color: var(--muted); font-size: 0.9rem; }
.stopped { border-left: 4px solid var(--fail); padding: 0.4rem 0.8rem; background: var(--panel); }
.measured { border-left: 3px solid var(--rule); padding-left: 0.6rem; }
details.code pre { background: var(--panel); padding: 0.5rem 0.8rem; border-radius: 6px; overflow-x: auto;
  font-size: 0.85rem; line-height: 1.4; margin: 0.3rem 0; }
details.code .file { color: var(--muted); }
.export-only { color: var(--muted); font-size: 0.95rem; }
pre.task { white-space: pre-wrap; background: var(--panel); padding: 0.5rem 0.8rem; border-radius: 6px; overflow-x: auto; }
.task-page p, .task-page li, .task-link { overflow-x: auto; overflow-y: hidden; padding-block: 0.3em; }
.task-page code, .task-link code { overflow-wrap: anywhere; }
.task-link { border-left: 3px solid var(--link); padding-left: 0.6rem; }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; color: #000; background: #fff; }
  nav.pages { display: none; }
  a { color: inherit; text-decoration: none; }
  h2 { break-after: avoid; }
  figure, table, .equation, ul.checks li { break-inside: avoid; }
  .scroll, .equation { overflow: visible; }
  details > summary { color: #000; }
}
)";

std::string page_start(const std::string& title) {
    return fmt::format(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta name=\"color-scheme\" content=\"light dark\">\n<title>{}</title>\n<style>\n{}</style>\n</head>\n<body>\n",
        html_text(title), std::string(stylesheet) + std::string(svg_dark_css()));
}

std::string lesson_name(const BookLesson& l) { return fmt::format("Lesson {} · {}", l.number, l.title); }

struct CheckCount {
    std::size_t all = 0, failed = 0;
};

CheckCount count_checks(const Trace& trace) {
    CheckCount n;
    for (const auto& s : trace.steps())
        for (const auto& c : s.checks) n.all += 1, n.failed += c.holds ? 0 : 1;
    return n;
}

// "all 12 checks hold", "2 of 12 checks FAIL", with "; stopped early" when it stopped.
std::string check_summary(const BookLesson& l) {
    const CheckCount n = l.trace ? count_checks(*l.trace) : CheckCount{};
    std::string text = n.failed == 0 ? fmt::format("<span class=\"pass\"><span class=\"mark\">✓</span> all {} check{} hold</span>",
                                                   n.all, n.all == 1 ? "" : "s")
                                     : fmt::format("<span class=\"fail\"><span class=\"mark\">✗</span> {} of {} checks fail</span>",
                                                   n.failed, n.all);
    if (!l.stopped.empty()) text += " · <span class=\"failed\">stopped early</span>";
    return text;
}

// ---------------------------------------------------------------- tensors

// Positions shown of an axis of n: all up to `limit`, else the first and last halves (nullopt: "…").
std::vector<std::optional<std::size_t>> shown(std::size_t n, std::size_t limit) {
    std::vector<std::optional<std::size_t>> out;
    if (n <= limit) {
        for (std::size_t i = 0; i < n; ++i) out.emplace_back(i);
        return out;
    }
    for (std::size_t i = 0; i < limit / 2; ++i) out.emplace_back(i);
    out.emplace_back(std::nullopt);
    for (std::size_t i = n - limit / 2; i < n; ++i) out.emplace_back(i);
    return out;
}

std::string label_or_index(const std::vector<std::string>& labels, std::size_t i, std::size_t n, const ProseLinks* links) {
    return labels.size() == n ? prose_html(labels[i], links) : std::to_string(i);
}

// The start of a box that scrolls sideways when its content is wider than the column: reachable by
// the keyboard (tabindex 0) and named for a screen reader (a region labelled `name`).
std::string scroll_box(const std::string& cls, const std::string& name) {
    return fmt::format("<div class=\"{}\" tabindex=\"0\" role=\"region\" aria-label=\"{}\">", cls, html_text(name));
}

// A matrix view as a table: column labels above, row labels on the left.
std::string matrix_table(const double* data, std::size_t rows, std::size_t cols, const std::vector<std::string>& row_labels,
                         const std::vector<std::string>& col_labels, const NumberStyle& style, const std::string& name,
                         bool show_cols = true, const ProseLinks* links = nullptr) {
    std::string out = scroll_box("scroll", "the numbers of " + name) + "<table>\n";
    const auto shown_rows = shown(rows, table_rows), shown_cols = shown(cols, table_cols);
    // a column of counts in a table of measurements ("entries" beside errors) is written as whole numbers
    std::vector<NumberStyle> col_style(cols, style);
    for (std::size_t c = 0; c < cols && !style.integers; ++c) {
        bool whole = rows > 0, count = false;
        for (std::size_t r = 0; r < rows && whole; ++r) {
            const double x = data[r * cols + c];
            whole = std::isfinite(x) && std::fabs(x) < 1e15 && x == std::floor(x);
            count = count || std::fabs(x) >= 2;
        }
        if (whole && count) col_style[c] = NumberStyle{0, false, true};
    }
    if (show_cols) {  // the corner cell names what the row labels are, for a screen reader only
        out += "<thead><tr><th><span class=\"visually-hidden\">row</span></th>";
        for (const auto& c : shown_cols) out += "<th>" + (c ? label_or_index(col_labels, *c, cols, links) : "…") + "</th>";
        out += "</tr></thead>\n";
    }
    out += "<tbody>\n";
    for (const auto& r : shown_rows) {
        out += "<tr><th>" + (r ? label_or_index(row_labels, *r, rows, links) : "…") + "</th>";
        for (const auto& c : shown_cols)
            out += "<td>" + (r && c ? html_text(format_in_style(data[*r * cols + *c], col_style[*c])) : std::string("…")) + "</td>";
        out += "</tr>\n";
    }
    return out + "</tbody></table></div>\n";
}

// "[i, j, :, :]" for the slice at flat position `slice` over the leading axes.
std::string slice_name(const Shape& shape, std::size_t slice) {
    std::vector<std::size_t> index(shape.size() - 2);
    for (std::size_t axis = index.size(); axis-- > 0;) {
        index[axis] = slice % shape[axis];
        slice /= shape[axis];
    }
    return fmt::format("[{}, :, :]", fmt::join(index, ", "));
}

// `name`: what the tables are of, unique in the page ("alpha (step 3, tensor 1)").
std::string numbers_of(const TensorRecord& t, const std::string& name, const ProseLinks* links) {
    const NumberStyle style = number_style(t.value, 4);
    const Shape shape = t.shape();
    const double* data = t.value.data();
    switch (shape.size()) {
        case 0: return "<p class=\"scalar\"><code>" + html_text(format_in_style(*data, style)) + "</code></p>\n";
        case 1:  // labelled: one element per line, the labels readable; else one row
            if (t.rows.size() == shape[0]) return matrix_table(data, shape[0], 1, t.rows, {}, style, name, false, links);
            return matrix_table(data, 1, shape[0], {}, {}, style, name, true, links);
        case 2: return matrix_table(data, shape[0], shape[1], t.rows, t.cols, style, name, true, links);
        default: break;
    }
    // rank 3 and more: one table per slice; for rank 3, axis 0 names the slices, axis 1 the rows
    const std::size_t rows = shape[shape.size() - 2], cols = shape.back();
    const std::size_t slices = rows * cols == 0 ? 0 : t.value.size() / (rows * cols);
    std::string out;
    for (const auto& s : shown(slices, 16)) {
        if (!s) {
            out += "<p class=\"muted\">…</p>\n";
            continue;
        }
        const bool named = shape.size() == 3 && t.rows.size() == shape[0];
        out += "<p class=\"muted\">" + html_text(slice_name(shape, *s)) + (named ? " " + prose_html(t.rows[*s], links) : "") + "</p>\n";
        out += matrix_table(data + *s * rows * cols, rows, cols, shape.size() == 3 ? t.cols : std::vector<std::string>{},
                            {}, style, name + " " + slice_name(shape, *s), true, links);
    }
    return out;
}

// A drawn parameter in one line: mean, spread, range (as the terminal's summary).
std::string parameter_line(const TensorRecord& t) {
    const std::size_t n = t.value.size();
    const double* v = t.value.data();
    double sum = 0, lowest = v[0], highest = v[0];
    for (std::size_t i = 0; i < n; ++i) sum += v[i], lowest = std::min(lowest, v[i]), highest = std::max(highest, v[i]);
    const double mean = sum / static_cast<double>(n);
    double squares = 0;
    for (std::size_t i = 0; i < n; ++i) squares += (v[i] - mean) * (v[i] - mean);
    return fmt::format("drawn at random: mean {:.3g}, sd {:.3g}, from {:.3g} to {:.3g}", mean,
                       std::sqrt(squares / static_cast<double>(n)), lowest, highest);
}

// The narrowest a picture may be drawn: its smallest text (the font-size attributes the SVG writers
// give every text, 10 to 18 px) no smaller than 10 px on screen. A narrower column scrolls it.
long narrowest_width(const std::string& svg) {
    const auto number_at = [&](std::size_t at) { return std::strtod(svg.c_str() + at, nullptr); };
    const std::size_t width_at = svg.find(" width=\"");
    const double width = width_at == std::string::npos ? 0.0 : number_at(width_at + 8);
    double smallest = 0;
    const std::string key = "font-size=\"";
    for (std::size_t at = svg.find(key); at != std::string::npos; at = svg.find(key, at + 1)) {
        const double size = number_at(at + key.size());
        smallest = smallest == 0 ? size : std::min(smallest, size);
    }
    return smallest <= 0 ? 0 : static_cast<long>(std::ceil(width * std::min(1.0, 10.0 / smallest)));
}

std::string tensor_block(const TensorRecord& t, const Step& step, int lesson, std::size_t step_index,
                         std::size_t tensor_index, const ProseLinks& links) {
    const Shape shape = t.shape();
    // unique in the page even ignoring case ("G" and "g" of one step), as a region's name must be
    const std::string name = fmt::format("{} (step {}, tensor {})", t.name, step_index, tensor_index);
    std::string out = fmt::format("<div class=\"tensor{}\" id=\"s{}-t{}\">\n", t.measured ? " measured" : "", step_index,
                                  tensor_index);
    out += "<h3><code>" + html_text(t.name) + "</code> <span class=\"shape\">" + html_text(shape_string(shape)) + "</span>";
    if (!t.equation.empty()) out += " <span class=\"tensor-eq\">= " + equation_html(t.equation, &links).html + "</span>";
    out += "</h3>\n";
    if (t.measured) out += "<p class=\"note\">Measured on the machine that wrote this page: it differs from run to run.</p>\n";
    SvgOptions svg;
    svg.standalone = false;
    svg.ids = fmt::format("l{}-s{}-t{}", lesson, step_index, tensor_index);
    const std::string picture = tensor_svg(t, step.title + " · " + t.name, svg);
    if (!picture.empty())
        out += "<figure>\n" + scroll_box("scroll fig", "figure: " + name) +
               fmt::format("<div style=\"min-width: {}px\">\n", narrowest_width(picture)) + picture + "</div></div></figure>\n";
    const bool small = shape.size() <= 2 && (shape.empty() || shape[0] <= open_rows) &&
                       (shape.size() < 2 || shape[1] <= open_cols);
    if (t.value.size() == 0) {
        out += "<p class=\"muted\">empty: no numbers</p>\n";
    } else if (t.drawn && t.value.size() > 1) {
        out += "<details><summary>" + html_text(parameter_line(t)) + "; the numbers, " + html_text(shape_string(shape)) +
               "</summary>\n" + numbers_of(t, name, &links) + "</details>\n";
    } else if (small) {
        out += numbers_of(t, name, &links);
    } else {
        out += "<details><summary>the numbers, " + html_text(shape_string(shape)) +
               (t.value.size() > table_rows * table_cols ? " (the first and last rows and columns)" : "") +
               "</summary>\n" + numbers_of(t, name, &links) + "</details>\n";
    }
    return out + "</div>\n";
}

std::string check_item(const CheckRecord& c, const ProseLinks& links) {
    const char* relation = c.max_abs_error <= c.tolerance ? "≤" : c.max_abs_error > c.tolerance ? "&gt;" : "not ≤";
    return fmt::format(
        "<li class=\"check {}\"><span class=\"mark\">{}</span> {} <span class=\"numbers\">(max |error| {} {} tolerance "
        "{})</span></li>\n",
        c.holds ? "pass" : "fail", c.holds ? "✓" : "✗", prose_html(c.claim, &links), html_text(fmt::format("{:.3g}", c.max_abs_error)),
        relation, html_text(fmt::format("{:.3g}", c.tolerance)));
}


// Export-only tensors (what `attn export` writes, not what a reader reads: a trained model's weights) in
// one line: how many, how many numbers, the first names, and the command that writes them.
std::string export_only_line(const std::vector<const TensorRecord*>& data, int lesson) {
    std::size_t numbers = 0;
    std::vector<std::string> names;
    for (std::size_t k = 0; k < data.size(); ++k) {
        numbers += data[k]->value.size();
        if (data.size() <= 6 || k < 3 || k + 1 == data.size())
            names.push_back("<code>" + html_text(data[k]->name) + "</code> " + html_text(shape_string(data[k]->shape())));
        if (data.size() > 6 && k == 3) names.push_back("…");
    }
    return fmt::format("<p class=\"export-only\">Export-only data, not shown here: {} tensor{} of {} numbers in all "
                       "({}); <code>attn export {} --out DIR</code> writes them.</p>\n",
                       data.size(), data.size() == 1 ? "" : "s", numbers, fmt::join(names, ", "), lesson);
}

// The code a step calls, each function folded under its name and file, then the caller's notes.
std::string step_extras(const BookStepExtras& extras) {
    std::string out;
    for (const auto& c : extras.code)
        out += fmt::format("<details class=\"code\"><summary>Code: <code>nn::{}</code> <code class=\"file\">{}:{}</code>"
                           "</summary>\n<pre tabindex=\"0\" aria-label=\"{} in {}\"><code>{}</code></pre></details>\n",
                           html_text(c.name), html_text(c.file), c.line, html_text(c.name), html_text(c.file),
                           html_text(c.code));
    for (const auto& note : extras.notes_html) out += note + "\n";
    return out;
}

// A step's section: id "step-N" and, on its heading, the anchor of its id (step_anchors) that
// cross-references link to; then its equation, explanation in short paragraphs, diagrams, code and notes,
// tensors (export-only ones in one line) and checks.
std::string step_section(const Step& s, int lesson, std::size_t index, std::size_t count, const std::string& anchor,
                         const ProseLinks& links, const BookStepExtras* extras, const std::string& diagrams) {
    std::string out = fmt::format("<section class=\"step\" id=\"step-{}\">\n", index);
    out += fmt::format("<h2 id=\"{}\"><span class=\"muted\">Step {}/{}</span> {} <span class=\"step-id\">[{}]</span></h2>\n",
                       html_text(anchor), index, count, prose_html(s.title), html_text(s.id));
    if (!s.equation.empty())
        out += scroll_box("equation", fmt::format("the equation of step {}", index)) +
               equation_html(s.equation, &links).html + "</div>\n";
    if (!s.explanation.empty()) {
        // short paragraphs of a few sentences each (prose_paragraphs)
        out += "<div class=\"explanation\">\n";
        for (const auto& paragraph : prose_paragraphs(s.explanation)) out += "<p>" + prose_html(paragraph, &links) + "</p>\n";
        out += "</div>\n";
    }
    out += diagrams;
    if (extras) out += step_extras(*extras);
    std::vector<const TensorRecord*> export_only;
    for (std::size_t k = 0; k < s.tensors.size(); ++k) {
        if (s.tensors[k].export_only) export_only.push_back(&s.tensors[k]);
        else out += tensor_block(s.tensors[k], s, lesson, index, k + 1, links);
    }
    if (!export_only.empty()) out += export_only_line(export_only, lesson);
    if (!s.checks.empty()) {
        out += "<ul class=\"checks\">\n";
        for (const auto& c : s.checks) out += check_item(c, links);
        out += "</ul>\n";
    }
    return out + "</section>\n";
}

// The lesson's data-flow diagrams (core/diagram.hpp) as figures, keyed by the step they belong in ("":
// after the header). A lesson that stopped early draws those its trace holds the tensors of.
std::map<std::string, std::string> diagram_figures(const BookLesson& l, const ProseLinks& links) {
    std::map<std::string, std::string> out;
    if (!l.trace) return out;
    for (const Diagram& d : lesson_diagrams(l.slug)) {
        std::string svg;
        try {
            svg = diagram_svg(d, *l.trace, fmt::format("l{}-{}", l.number, d.id));
        } catch (const DiagramError&) {
            if (l.stopped.empty()) throw;
            continue;
        }
        out[d.step] += "<figure class=\"diagram\">\n" + svg + "<figcaption>" + prose_html(d.caption, &links) + "</figcaption>\n</figure>\n";
    }
    return out;
}

std::string page_links(const std::vector<BookLesson>& lessons, std::size_t index, const char* name) {
    std::string out = fmt::format("<nav class=\"pages\" aria-label=\"{}\"><a href=\"index.html\">Contents</a>", name);
    if (index > 0) {
        const BookLesson& p = lessons[index - 1];
        out += fmt::format("<a href=\"{}\" rel=\"prev\">← {}</a>", html_text(book_page_name(p.number, p.slug)), html_text(lesson_name(p)));
    }
    if (index + 1 < lessons.size()) {
        const BookLesson& n = lessons[index + 1];
        out += fmt::format("<a href=\"{}\" rel=\"next\">{} →</a>", html_text(book_page_name(n.number, n.slug)), html_text(lesson_name(n)));
    }
    return out + "</nav>\n";
}

}  // namespace

ProseLinks book_links(const std::vector<BookLesson>& lessons, int current) {
    ProseLinks links;
    links.current = current;
    for (const auto& l : lessons) {
        ProseLinks::Lesson lesson;
        lesson.number = l.number;
        lesson.page = book_page_name(l.number, l.slug);
        if (l.trace)
            for (const auto& s : l.trace->steps()) lesson.step_ids.push_back(s.id);
        lesson.anchors = step_anchors(lesson.step_ids);
        links.lessons.push_back(std::move(lesson));
    }
    return links;
}

std::string book_page_name(int number, const std::string& slug) {
    std::string safe;
    for (const char32_t cp : code_points(slug)) {
        const bool kept = cp < 0x80 && (std::isalnum(static_cast<int>(cp)) || cp == '_' || cp == '.' || cp == '-');
        safe += kept ? static_cast<char>(cp) : '_';
    }
    return fmt::format("{:02d}-{}.html", number, safe);
}

std::string lesson_page(const std::vector<BookLesson>& lessons, std::size_t index, const BookInfo& info) {
    const BookLesson& l = lessons.at(index);
    std::string out = page_start(lesson_name(l) + " · " + info.title);
    out += page_links(lessons, index, "Lessons, top of the page");
    out += "<header>\n<h1>" + html_text(lesson_name(l)) + "</h1>\n";
    if (!l.sources.empty()) out += "<p class=\"sources\">after " + html_text(l.sources) + "</p>\n";
    out += "<p><code>" + html_text(l.reproducibility) + "</code></p>\n";
    const ProseLinks links = book_links(lessons, l.number);
    if (!l.note.empty()) out += "<p class=\"note\">" + prose_html(l.note, &links) + "</p>\n";
    out += "<p>" + check_summary(l) + "</p>\n</header>\n";
    std::map<std::string, std::string> diagrams = diagram_figures(l, links);
    const std::vector<Step> none;
    const std::vector<Step>& steps = l.trace ? l.trace->steps() : none;
    out += "<nav class=\"toc\" aria-label=\"Steps\"><strong>Steps</strong>\n<ol>\n";
    for (std::size_t i = 0; i < steps.size(); ++i) {
        std::size_t failed = 0;
        for (const auto& c : steps[i].checks) failed += c.holds ? 0 : 1;
        out += fmt::format("<li><a href=\"#step-{}\">{}</a>{}</li>\n", i + 1, prose_html(steps[i].title),
                           failed ? fmt::format(" <span class=\"failed\">✗ {} failed</span>", failed) : "");
    }
    out += "</ol>\n</nav>\n<main>\n" + diagrams[""];
    const ProseLinks::Lesson& own = links.lessons.at(index);
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const auto extras = l.extras.find(steps[i].id);
        out += step_section(steps[i], l.number, i + 1, steps.size(), own.anchors.at(i), links,
                            extras == l.extras.end() ? nullptr : &extras->second, diagrams[steps[i].id]);
    }
    if (!l.stopped.empty())
        out += "<p class=\"stopped\"><strong>The lesson stopped here.</strong> " + prose_html(l.stopped, &links) + "</p>\n";
    out += "</main>\n<footer>\n" + page_links(lessons, index, "Lessons, end of the page");
    out += "<p class=\"muted\">Written by " + html_text(info.made_by) + ".</p>\n</footer>\n</body>\n</html>\n";
    return out;
}

std::string book_index(const std::vector<BookLesson>& lessons, const BookInfo& info) {
    std::string out = page_start(info.title);
    out += "<header>\n<h1>" + html_text(info.title) + "</h1>\n";
    out += "<p>Every lesson derives an attention mechanism step by step: each step's equation, its tensors and "
           "pictures, and the checks that its claims hold numerically.</p>\n";
    if (!info.remark.empty()) out += "<p class=\"note\">" + html_text(info.remark) + "</p>\n";
    out += "</header>\n<main>\n" + scroll_box("scroll", "the lessons") + "<table class=\"lessons\">\n"
           "<thead><tr><th class=\"n\">#</th><th>Lesson</th><th class=\"n\">Steps</th><th class=\"n\">Checks</th>"
           "<th>After</th></tr></thead>\n<tbody>\n";
    for (const auto& l : lessons)
        out += fmt::format("<tr><td class=\"n\">{}</td><td><a href=\"{}\">{}</a></td><td class=\"n\">{}</td>"
                           "<td class=\"n\">{}</td><td>{}</td></tr>\n",
                           l.number, html_text(book_page_name(l.number, l.slug)), html_text(l.title),
                           l.trace ? l.trace->steps().size() : 0, check_summary(l), html_text(l.sources));
    out += "</tbody></table></div>\n";
    if (!info.index_note_html.empty()) out += info.index_note_html + "\n";
    out += "<h2>Reproducing these pages</h2>\n<p>Each lesson ran as:</p>\n<ul>\n";
    const ProseLinks links = book_links(lessons, 0);
    for (const auto& l : lessons) {
        out += "<li><code>" + html_text(l.reproducibility) + "</code>";
        if (!l.note.empty()) out += " <span class=\"note\">" + prose_html(l.note, &links) + "</span>";
        out += "</li>\n";
    }
    out += "</ul>\n</main>\n<footer>\n<p class=\"muted\">Written by " + html_text(info.made_by) + ".</p>\n</footer>\n</body>\n</html>\n";
    return out;
}

std::string extra_page(const BookPage& page, const BookInfo& info) {
    std::string out = page_start(page.title + " · " + info.title);
    out += "<nav class=\"pages\" aria-label=\"Pages\"><a href=\"index.html\">Contents</a></nav>\n";
    out += page.body_html;
    out += "<footer>\n<p class=\"muted\">Written by " + html_text(info.made_by) + ".</p>\n</footer>\n</body>\n</html>\n";
    return out;
}

std::vector<std::filesystem::path> write_book(const std::filesystem::path& dir, const std::vector<BookLesson>& lessons,
                                              const BookInfo& info) {
    std::error_code ec;
    if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
        throw std::runtime_error(
            printable_utf8(fmt::format("cannot write the book into {}: it exists and is not a directory", dir.string())));
    std::filesystem::create_directories(dir, ec);
    if (ec)
        throw std::runtime_error(
            printable_utf8(fmt::format("cannot create the directory {}: {}", dir.string(), ec.message())));
    std::vector<std::filesystem::path> written{dir / "index.html"};
    write_file_atomic(written.back(), book_index(lessons, info));
    for (const auto& page : info.pages) {
        written.push_back(dir / page.file);
        write_file_atomic(written.back(), extra_page(page, info));
    }
    for (std::size_t i = 0; i < lessons.size(); ++i) {
        written.push_back(dir / book_page_name(lessons[i].number, lessons[i].slug));
        write_file_atomic(written.back(), lesson_page(lessons, i, info));
    }
    return written;
}

}  // namespace attn
