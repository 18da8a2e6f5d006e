// The book's pages. Everything is written top to bottom into one string per page; every text
// from a trace goes through xml_escaped (valid UTF-8, & < > " ' escaped, and the code points
// HTML's parser reports as errors replaced), so no label can open an element or break a page.
#include "html.hpp"

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
  --rule: #d8d8d8; --panel: #f4f5f7; --link: #0b57a4; --pass: #1a7f37; --fail: #c62828; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6e6e6; --bg: #16181c; --muted: #a6a6a6; --rule: #3a3d44; --panel: #22252b; --link: #8ab8ff;
    --pass: #5cc878; --fail: #ff7b72; }
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
.equation { background: var(--panel); padding: 0.5rem 0.8rem; border-radius: 6px; overflow-x: auto; margin: 0.6rem 0; }
math { font-size: 1.1em; }
.eq-piece { white-space: nowrap; }
.explanation p, ul.checks li, h2, h3, nav.toc li, p.note, p.muted, .stopped { overflow-x: auto; overflow-y: hidden; }
.explanation p, ul.checks li, nav.toc li, p.note, p.muted, .stopped { padding-block: 0.3em; }
.scroll { overflow-x: auto; max-width: 100%; }
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
ul.checks { list-style: none; padding-left: 0; }
ul.checks li { margin: 0.25rem 0; }
.pass .mark { color: var(--pass); font-weight: bold; }
.fail .mark, .failed { color: var(--fail); font-weight: bold; }
.numbers { color: var(--muted); font-size: 0.9rem; }
.stopped { border-left: 4px solid var(--fail); padding: 0.4rem 0.8rem; background: var(--panel); }
.measured { border-left: 3px solid var(--rule); padding-left: 0.6rem; }
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
        html_text(title), stylesheet);
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

// A matrix view as a table: column labels above, row labels on the left.
std::string matrix_table(const double* data, std::size_t rows, std::size_t cols, const std::vector<std::string>& row_labels,
                         const std::vector<std::string>& col_labels, const NumberStyle& style, bool show_cols = true,
                         const ProseLinks* links = nullptr) {
    std::string out = "<div class=\"scroll\"><table>\n";
    const auto shown_rows = shown(rows, table_rows), shown_cols = shown(cols, table_cols);
    if (show_cols) {
        out += "<thead><tr><th></th>";
        for (const auto& c : shown_cols) out += "<th>" + (c ? label_or_index(col_labels, *c, cols, links) : "…") + "</th>";
        out += "</tr></thead>\n";
    }
    out += "<tbody>\n";
    for (const auto& r : shown_rows) {
        out += "<tr><th>" + (r ? label_or_index(row_labels, *r, rows, links) : "…") + "</th>";
        for (const auto& c : shown_cols)
            out += "<td>" + (r && c ? html_text(format_in_style(data[*r * cols + *c], style)) : std::string("…")) + "</td>";
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

std::string numbers_of(const TensorRecord& t, const ProseLinks* links) {
    const NumberStyle style = number_style(t.value, 4);
    const Shape shape = t.shape();
    const double* data = t.value.data();
    switch (shape.size()) {
        case 0: return "<p class=\"scalar\"><code>" + html_text(format_in_style(*data, style)) + "</code></p>\n";
        case 1:  // labelled: one element per line, the labels readable; else one row
            if (t.rows.size() == shape[0]) return matrix_table(data, shape[0], 1, t.rows, {}, style, false, links);
            return matrix_table(data, 1, shape[0], {}, {}, style, true, links);
        case 2: return matrix_table(data, shape[0], shape[1], t.rows, t.cols, style, true, links);
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
                            {}, style, true, links);
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

std::string tensor_block(const TensorRecord& t, const Step& step, int lesson, std::size_t step_index,
                         std::size_t tensor_index, const ProseLinks& links) {
    const Shape shape = t.shape();
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
    if (!picture.empty()) out += "<figure>\n" + picture + "</figure>\n";
    const bool small = shape.size() <= 2 && (shape.empty() || shape[0] <= open_rows) &&
                       (shape.size() < 2 || shape[1] <= open_cols);
    if (t.value.size() == 0) {
        out += "<p class=\"muted\">empty: no numbers</p>\n";
    } else if (t.drawn && t.value.size() > 1) {
        out += "<details><summary>" + html_text(parameter_line(t)) + "; the numbers, " + html_text(shape_string(shape)) +
               "</summary>\n" + numbers_of(t, &links) + "</details>\n";
    } else if (small) {
        out += numbers_of(t, &links);
    } else {
        out += "<details><summary>the numbers, " + html_text(shape_string(shape)) +
               (t.value.size() > table_rows * table_cols ? " (the first and last rows and columns)" : "") +
               "</summary>\n" + numbers_of(t, &links) + "</details>\n";
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

// The lessons a page's "lesson N" and "step [id]" can link to: those of the book being written.
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

// A step's section: id "step-N" and, on its heading, the anchor of its id (step_anchors) that
// cross-references link to.
std::string step_section(const Step& s, int lesson, std::size_t index, std::size_t count, const std::string& anchor,
                         const ProseLinks& links) {
    std::string out = fmt::format("<section class=\"step\" id=\"step-{}\">\n", index);
    out += fmt::format("<h2 id=\"{}\"><span class=\"muted\">Step {}/{}</span> {} <span class=\"step-id\">[{}]</span></h2>\n",
                       html_text(anchor), index, count, prose_html(s.title), html_text(s.id));
    if (!s.equation.empty()) out += "<div class=\"equation\">" + equation_html(s.equation, &links).html + "</div>\n";
    if (!s.explanation.empty()) {
        // short paragraphs of a few sentences each (prose_paragraphs)
        out += "<div class=\"explanation\">\n";
        for (const auto& paragraph : prose_paragraphs(s.explanation)) out += "<p>" + prose_html(paragraph, &links) + "</p>\n";
        out += "</div>\n";
    }
    for (std::size_t k = 0; k < s.tensors.size(); ++k) out += tensor_block(s.tensors[k], s, lesson, index, k + 1, links);
    if (!s.checks.empty()) {
        out += "<ul class=\"checks\">\n";
        for (const auto& c : s.checks) out += check_item(c, links);
        out += "</ul>\n";
    }
    return out + "</section>\n";
}

std::string page_links(const std::vector<BookLesson>& lessons, std::size_t index) {
    std::string out = "<nav class=\"pages\"><a href=\"index.html\">Contents</a>";
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
    out += page_links(lessons, index);
    out += "<header>\n<h1>" + html_text(lesson_name(l)) + "</h1>\n";
    if (!l.sources.empty()) out += "<p class=\"sources\">after " + html_text(l.sources) + "</p>\n";
    out += "<p><code>" + html_text(l.reproducibility) + "</code></p>\n";
    const ProseLinks links = book_links(lessons, l.number);
    if (!l.note.empty()) out += "<p class=\"note\">" + prose_html(l.note, &links) + "</p>\n";
    out += "<p>" + check_summary(l) + "</p>\n</header>\n";
    const std::vector<Step> none;
    const std::vector<Step>& steps = l.trace ? l.trace->steps() : none;
    out += "<nav class=\"toc\" aria-label=\"Steps\"><strong>Steps</strong>\n<ol>\n";
    for (std::size_t i = 0; i < steps.size(); ++i) {
        std::size_t failed = 0;
        for (const auto& c : steps[i].checks) failed += c.holds ? 0 : 1;
        out += fmt::format("<li><a href=\"#step-{}\">{}</a>{}</li>\n", i + 1, prose_html(steps[i].title),
                           failed ? fmt::format(" <span class=\"failed\">✗ {} failed</span>", failed) : "");
    }
    out += "</ol>\n</nav>\n<main>\n";
    const ProseLinks::Lesson& own = links.lessons.at(index);
    for (std::size_t i = 0; i < steps.size(); ++i)
        out += step_section(steps[i], l.number, i + 1, steps.size(), own.anchors.at(i), links);
    if (!l.stopped.empty())
        out += "<p class=\"stopped\"><strong>The lesson stopped here.</strong> " + prose_html(l.stopped, &links) + "</p>\n";
    out += "</main>\n<footer>\n" + page_links(lessons, index);
    out += "<p class=\"muted\">Written by " + html_text(info.made_by) + ".</p>\n</footer>\n</body>\n</html>\n";
    return out;
}

std::string book_index(const std::vector<BookLesson>& lessons, const BookInfo& info) {
    std::string out = page_start(info.title);
    out += "<header>\n<h1>" + html_text(info.title) + "</h1>\n";
    out += "<p>Every lesson derives an attention mechanism step by step: each step's equation, its tensors and "
           "pictures, and the checks that its claims hold numerically.</p>\n";
    if (!info.remark.empty()) out += "<p class=\"note\">" + html_text(info.remark) + "</p>\n";
    out += "</header>\n<main>\n<div class=\"scroll\"><table class=\"lessons\">\n"
           "<thead><tr><th class=\"n\">#</th><th>Lesson</th><th class=\"n\">Steps</th><th class=\"n\">Checks</th>"
           "<th>After</th></tr></thead>\n<tbody>\n";
    for (const auto& l : lessons)
        out += fmt::format("<tr><td class=\"n\">{}</td><td><a href=\"{}\">{}</a></td><td class=\"n\">{}</td>"
                           "<td class=\"n\">{}</td><td>{}</td></tr>\n",
                           l.number, html_text(book_page_name(l.number, l.slug)), html_text(l.title),
                           l.trace ? l.trace->steps().size() : 0, check_summary(l), html_text(l.sources));
    out += "</tbody></table></div>\n<h2>Reproducing these pages</h2>\n<p>Each lesson ran as:</p>\n<ul>\n";
    const ProseLinks links = book_links(lessons, 0);
    for (const auto& l : lessons) {
        out += "<li><code>" + html_text(l.reproducibility) + "</code>";
        if (!l.note.empty()) out += " <span class=\"note\">" + prose_html(l.note, &links) + "</span>";
        out += "</li>\n";
    }
    out += "</ul>\n</main>\n<footer>\n<p class=\"muted\">Written by " + html_text(info.made_by) + ".</p>\n</footer>\n</body>\n</html>\n";
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
    for (std::size_t i = 0; i < lessons.size(); ++i) {
        written.push_back(dir / book_page_name(lessons[i].number, lessons[i].slug));
        write_file_atomic(written.back(), lesson_page(lessons, i, info));
    }
    return written;
}

}  // namespace attn
