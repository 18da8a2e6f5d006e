// Fuzz target: the equations as MathML (core/mathml.hpp). The input is an equation string.
//
// Properties held (an uncaught exception or abort() is a finding):
//   1. formula_mathml and equation_html never throw, and return in time on any bytes (deep
//      nesting is refused, not recursed into);
//   2. a formula is valid UTF-8, one <math> element whose tags nest and close, holding only the
//      elements of MathML Core the translator writes, every '&' the start of one of the five
//      escapes, and the input's digits in the input's order (no number lost or made up);
//   3. equation_html is valid UTF-8 whose tags nest and close, with no more pieces translated than
//      there are pieces, and no piece at all only for an input of spaces.
#include "core/mathml.hpp"
#include "fuzz_support.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

using namespace attn;

// The replay compiles every target as one file: this one's helpers keep to a namespace of its own.
namespace fuzz_mathml {
namespace {

[[noreturn]] void broken(const char* property, const std::string& detail) {
    std::fprintf(stderr, "fuzz_mathml: %s: %s\n", property, detail.c_str());
    std::abort();
}

// The tag names in order of nesting, or a description of what is wrong ("" when they nest).
std::string nesting_problem(const std::string& markup, const std::set<std::string>& allowed) {
    std::vector<std::string> open;
    for (std::size_t at = markup.find('<'); at != std::string::npos; at = markup.find('<', at + 1)) {
        const std::size_t end = markup.find('>', at);
        if (end == std::string::npos) return "an unfinished tag";
        const bool closing = markup[at + 1] == '/';
        const std::size_t start = at + (closing ? 2 : 1);
        const std::string name = markup.substr(start, markup.find_first_of(" >", start) - start);
        if (!allowed.count(name)) return "the element <" + name + ">";
        if (!closing) open.push_back(name);
        else if (open.empty() || open.back() != name) return "</" + name + "> out of order";
        else open.pop_back();
    }
    for (std::size_t at = markup.find('&'); at != std::string::npos; at = markup.find('&', at + 1)) {
        bool entity = false;
        for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
            entity = entity || markup.compare(at, std::string_view(e).size(), e) == 0;
        if (!entity) return "a bare '&'";
    }
    return open.empty() ? "" : "<" + open.back() + "> left open";
}

std::string digits(std::string_view text) {
    std::string out;
    for (const char c : text)
        if (c >= '0' && c <= '9') out += c;
    return out;
}

// The text of markup, tags removed (the escapes hold no digits).
std::string text_of(const std::string& markup) {
    std::string out;
    bool in_tag = false;
    for (const char c : markup) {
        if (c == '<') in_tag = true;
        else if (c == '>') in_tag = false;
        else if (!in_tag) out += c;
    }
    return out;
}

}  // namespace
}  // namespace fuzz_mathml

extern "C" int ATTN_FUZZ_ENTRY(mathml)(const std::uint8_t* data, std::size_t size) {
    static const std::set<std::string> mathml = {"math", "mrow", "mi", "mn", "mo", "msub", "msup", "msubsup",
                                                 "mover", "msqrt", "mtext"};
    static const std::set<std::string> html = {"math", "mrow", "mi", "mn", "mo", "msub", "msup", "msubsup",
                                               "mover", "msqrt", "mtext", "span", "code"};  // code: C++ names among the words (core/prose)
    using namespace fuzz_mathml;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    if (const auto formula = formula_mathml(text)) {
        if (!fuzz::is_utf8(*formula)) broken("formula", "not UTF-8");
        if (formula->rfind("<math>", 0) != 0 || formula->size() < 13 ||
            formula->compare(formula->size() - 7, 7, "</math>") != 0)
            broken("formula", "not one <math> element: " + *formula);
        if (const std::string problem = nesting_problem(*formula, mathml); !problem.empty())
            broken("formula", problem + ": " + *formula);
        if (digits(text_of(*formula)) != digits(text)) broken("formula", "digits lost or added: " + *formula);
    }
    const EquationHtml e = equation_html(text);
    if (!fuzz::is_utf8(e.html)) broken("equation_html", "not UTF-8");
    if (const std::string problem = nesting_problem(e.html, html); !problem.empty())
        broken("equation_html", problem + ": " + e.html);
    if (e.translated > e.pieces) broken("equation_html", "more pieces translated than there are");
    return 0;
}
