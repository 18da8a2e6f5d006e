// Text with maths in it (see prose.hpp): cross-references and C++ names are marked first, then
// each run that holds a sure sign of maths (a script after a name, sqrt(, ||, <=, ->, a Greek
// letter's name, =) grows over its neighbouring words for as long as core/mathml's translator
// takes the run whole; what it never takes is shown as code.
#include "prose.hpp"

#include "mathml.hpp"
#include "xml_text.hpp"

#include <algorithm>
#include <array>
#include <optional>

namespace attn {
namespace prose_detail {

using Text = std::u32string;

bool is_letter(char32_t c) { return (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z'); }
bool is_digit(char32_t c) { return c >= U'0' && c <= U'9'; }
bool is_word_char(char32_t c) { return is_letter(c) || is_digit(c) || c == U'_'; }
bool is_greek(char32_t c) { return c >= 0x0391 && c <= 0x03C9; }
bool is_upper(char32_t c) { return c >= U'A' && c <= U'Z'; }
bool is_open(char32_t c) { return c == U'(' || c == U'[' || c == U'{'; }
bool is_close(char32_t c) { return c == U')' || c == U']' || c == U'}'; }

std::string utf8(std::u32string_view text) {
    std::string out;
    for (const char32_t c : text) append_utf8(out, c);
    return out;
}

Text lower(Text text) {
    for (char32_t& c : text)
        if (is_upper(c)) c = c - U'A' + U'a';
    return text;
}

const std::array<std::u32string_view, 20> greek_names = {
    U"alpha", U"beta", U"gamma", U"delta", U"Delta", U"epsilon", U"eps", U"theta", U"lambda", U"mu",
    U"sigma", U"Sigma", U"tau", U"phi", U"omega", U"eta", U"nu", U"rho", U"pi", U"inf"};

bool greek_name(std::u32string_view word) {
    return std::find(greek_names.begin(), greek_names.end(), word) != greek_names.end();
}

// Names that take a short subscript as maths (sum_j, max_k, softmax_j, head_i); with a longer one
// (max_words, softmax_rows) they are a C++ name.
const std::array<std::u32string_view, 15> operator_names = {
    U"sum", U"prod", U"max", U"min", U"argmax", U"argmin", U"mean", U"softmax", U"tanh", U"log", U"exp",
    U"head", U"logits", U"sigmoid", U"lr"};

bool all_capitals(std::u32string_view word) {
    return !word.empty() && word.size() <= 6 && std::all_of(word.begin(), word.end(), is_upper);
}

// ---------------------------------------------------------------- marks

struct Mark {
    std::size_t begin = 0, end = 0;
    enum Kind { code, link, formula } kind = code;
    std::string html;  // the link's href, or the formula's MathML
};

// [begin, end) of the word around `at` (a run without spaces).
struct Word {
    std::size_t begin, end;
};

std::vector<Word> words_of(const Text& s) {
    std::vector<Word> out;
    for (std::size_t i = 0; i < s.size();) {
        if (s[i] == U' ') {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < s.size() && s[j] != U' ') ++j;
        out.push_back({i, j});
        i = j;
    }
    return out;
}

// The word without the punctuation around it: leading ( [ " and trailing , . ; : ) ] " ? ! and 's.
Word core_of(const Text& s, Word w) {
    while (w.begin < w.end && (s[w.begin] == U'(' || s[w.begin] == U'"' || s[w.begin] == U'[')) ++w.begin;
    while (w.end > w.begin) {
        const char32_t c = s[w.end - 1];
        if (c == U',' || c == U'.' || c == U';' || c == U':' || c == U')' || c == U'"' || c == U'?' || c == U'!')
            --w.end;
        else if (c == U's' && w.end - w.begin >= 2 && s[w.end - 2] == U'\'')
            w.end -= 2;
        else
            break;
    }
    return w;
}

// ---------------------------------------------------------------- cross-references

const ProseLinks::Lesson* lesson_numbered(const ProseLinks& links, int number) {
    for (const auto& l : links.lessons)
        if (l.number == number) return &l;
    return nullptr;
}

std::optional<int> number_at(const Text& s, std::size_t at, std::size_t end, std::size_t& digits_end) {
    std::size_t k = at;
    while (k < end && k - at < 4 && is_digit(s[k])) ++k;
    if (k == at || (k < end && is_word_char(s[k]))) return std::nullopt;
    digits_end = k;
    int n = 0;
    for (std::size_t i = at; i < k; ++i) n = n * 10 + static_cast<int>(s[i] - U'0');
    return n;
}

// The href of step `id` as the sentence's lesson, the page's, or the only lesson that has it.
std::optional<std::string> step_href(const ProseLinks& links, int context, const Text& id) {
    const std::string name = utf8(id);
    const auto in = [&](const ProseLinks::Lesson& l) -> std::optional<std::string> {
        for (std::size_t i = 0; i < l.step_ids.size() && i < l.anchors.size(); ++i)
            if (l.step_ids[i] == name) return (l.number == links.current && links.on_its_page ? std::string() : l.page) + "#" + l.anchors[i];
        return std::nullopt;
    };
    if (context != 0) {
        if (const auto* l = lesson_numbered(links, context))
            if (auto href = in(*l)) return href;
    }
    if (const auto* l = lesson_numbered(links, links.current))
        if (auto href = in(*l)) return href;
    std::optional<std::string> only;
    for (const auto& l : links.lessons)
        if (auto href = in(l)) {
            if (only) return std::nullopt;  // two lessons have it: which one is meant is not said
            only = href;
        }
    return only;
}

void mark_links(const Text& s, const std::vector<Word>& words, const ProseLinks& links, std::vector<Mark>& marks) {
    int context = 0;  // the lesson the sentence last named
    for (std::size_t w = 0; w < words.size(); ++w) {
        const Word c = core_of(s, words[w]);
        const Text word = s.substr(c.begin, c.end - c.begin);
        const Text low = lower(word);
        if ((low == U"lesson" || low == U"lessons") && w + 1 < words.size() && c.end == words[w].end) {
            // lesson 4, lessons 9 and 12, lessons 9, 12 and 13
            std::size_t at = w + 1;
            bool first = true;
            while (at < words.size()) {
                std::size_t digits_end = 0;
                const auto n = number_at(s, words[at].begin, words[at].end, digits_end);
                if (!n) break;
                context = *n;
                if (const auto* l = lesson_numbered(links, *n))
                    // "lesson 4" whole; of "lessons 9 and 12", the numbers
                    marks.push_back({first && low == U"lesson" ? c.begin : words[at].begin, digits_end, Mark::link, l->page});
                first = false;
                const bool comma = digits_end < words[at].end && s[digits_end] == U',';
                if (comma && at + 1 < words.size() && is_digit(s[words[at + 1].begin])) {
                    ++at;
                } else if (low == U"lessons" && at + 2 < words.size() &&
                           (s.compare(words[at + 1].begin, 3, U"and") == 0 || s.compare(words[at + 1].begin, 2, U"or") == 0) &&
                           core_of(s, words[at + 1]).end - words[at + 1].begin <= 3 && digits_end == words[at].end) {
                    at += 2;
                } else {
                    break;
                }
            }
            w = at > w + 1 ? at - 1 : w;
            continue;
        }
        // [id], perhaps after "step"
        std::size_t open = words[w].begin;
        while (open < words[w].end && s[open] == U'(') ++open;
        if (open < words[w].end && s[open] == U'[') {
            std::size_t close = open + 1;
            while (close < words[w].end && (is_word_char(s[close]) || s[close] == U'-')) ++close;
            if (close > open + 1 && close < words[w].end && s[close] == U']') {
                const Text id = s.substr(open + 1, close - open - 1);
                if (const auto href = step_href(links, context, id)) {
                    std::size_t begin = open;
                    if (open == words[w].begin && w > 0 && words[w - 1].end + 1 == words[w].begin &&
                        (lower(s.substr(words[w - 1].begin, words[w - 1].end - words[w - 1].begin)) == U"step") &&
                        (marks.empty() || marks.back().end <= words[w - 1].begin))
                        begin = words[w - 1].begin;
                    marks.push_back({begin, close + 1, Mark::link, *href});
                }
            }
        }
        // a sentence ends: the next one names its own lesson
        if (words[w].end > words[w].begin && s[words[w].end - 1] == U'.' && word.size() > 2) context = 0;
    }
}

// ---------------------------------------------------------------- code

bool taken(const std::vector<char>& owned, std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i)
        if (owned[i]) return true;
    return false;
}

// A run of [A-Za-z0-9_] with one '_' or more: is it a C++ name rather than a script?
bool snake_code(const Text& run) {
    const std::size_t first = run.find(U'_');
    if (first == Text::npos || first == 0) return false;
    const Text base = run.substr(0, first);
    const std::size_t underscores = static_cast<std::size_t>(std::count(run.begin(), run.end(), U'_'));
    if (!std::all_of(base.begin(), base.end(), is_letter)) return false;  // b1_x, x2_t: leave to the translator
    if (base.size() == 1) return false;                                    // x_t, d_model
    if (greek_name(base) || all_capitals(base)) return false;              // alpha_ij, PE_p, LN_1
    if (base.size() == 2 && base[0] == U'd') return false;                 // dW_a, dS_ij
    if (base.size() == 2 && underscores == 1 && run.size() - first - 1 <= 2) return false;  // en_r, es_r
    if (base[0] == U'd' && greek_name(base.substr(1))) return false;       // dalpha_ij
    if (std::find(operator_names.begin(), operator_names.end(), base) != operator_names.end()) {
        const Text sub = run.substr(first + 1);
        return underscores > 1 || sub.size() > 2;  // max_k maths, max_words code
    }
    return true;  // max_words, gru_forward, fan_in, split_by_number
}

void mark_code(const Text& s, std::vector<char>& owned, std::vector<Mark>& marks) {
    const auto add = [&](std::size_t b, std::size_t e) {
        if (e <= b || taken(owned, b, e)) return;
        marks.push_back({b, e, Mark::code, {}});
        std::fill(owned.begin() + static_cast<std::ptrdiff_t>(b), owned.begin() + static_cast<std::ptrdiff_t>(e), 1);
    };
    const auto name_char = [](char32_t c) { return is_word_char(c) || c == U':' || c == U'.' || c == U'/' || c == U'*'; };
    for (std::size_t i = 0; i < s.size();) {
        if (!is_word_char(s[i]) && s[i] != U'-') {
            ++i;
            continue;
        }
        // --set, --max-words
        if (s[i] == U'-') {
            if (i + 2 < s.size() && s[i + 1] == U'-' && is_letter(s[i + 2]) && (i == 0 || s[i - 1] == U' ' || s[i - 1] == U'(' || s[i - 1] == U'`')) {
                std::size_t e = i + 2;
                while (e < s.size() && (is_word_char(s[e]) || s[e] == U'-')) ++e;
                // its setting with it: --set lr=0.1
                std::size_t v = e + 1, equals = 0;
                while (e < s.size() && s[e] == U' ' && v < s.size() &&
                       (is_word_char(s[v]) || s[v] == U'=' || s[v] == U'.' || s[v] == U'-' || s[v] == U','))
                    equals += s[v++] == U'=' ? 1 : 0;
                while (v > e + 1 && (s[v - 1] == U',' || s[v - 1] == U'.')) --v;
                if (equals > 0) e = v;
                add(i, e);
                i = e;
            } else {
                ++i;
            }
            continue;
        }
        if (i > 0 && (is_word_char(s[i - 1]))) {
            ++i;
            continue;
        }
        // a run of name characters: nn::gru_forward, corpus.train_*, nn/encoder_decoder.cpp
        std::size_t e = i;
        while (e < s.size() && name_char(s[e])) ++e;
        while (e > i && (s[e - 1] == U'.' || s[e - 1] == U':' || s[e - 1] == U'/')) --e;  // a sentence's end
        const Text run = s.substr(i, e - i);
        const bool scoped = run.find(U"::") != Text::npos;
        const bool path = run.find(U'/') != Text::npos && run.find(U'.') != Text::npos &&
                          std::all_of(run.begin(), run.end(), [](char32_t c) { return c != U':' && c != U'*'; }) &&
                          is_letter(run[0]);
        bool dotted = false;  // corpus.train_*: a member
        for (std::size_t k = 1; k + 1 < run.size(); ++k)
            if (run[k] == U'.' && is_letter(run[k - 1]) && is_letter(run[k + 1])) dotted = true;
        dotted = dotted && run.find(U'_') != Text::npos;
        if (scoped || path || dotted) {
            add(i, e);
            i = e;
            continue;
        }
        // a plain snake_case name
        std::size_t k = i;
        while (k < s.size() && is_word_char(s[k])) ++k;
        if (k < s.size() && (s[k] == U'^' || s[k] == U'\'' || s[k] == U'~')) {  // a script follows: maths
            i = k;
            continue;
        }
        std::size_t end = k;
        if (end + 1 < s.size() + 1 && end < s.size() && s[end] == U'*' && s[end - 1] == U'_') ++end;
        if (snake_code(s.substr(i, k - i))) add(i, end);
        i = k;
    }
}

// ---------------------------------------------------------------- maths

// A sure sign of maths inside [b, e): the same signs tests/book_check.py counts.
bool hard_sign(const Text& s, std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
        const char32_t c = s[i], next = i + 1 < e ? s[i + 1] : 0;
        if ((c == U'_' || c == U'^') && i > b && next != 0 && next != U' ' &&
            (is_letter(s[i - 1]) || is_greek(s[i - 1]) || is_digit(s[i - 1]) || (s[i - 1] >= 0x0300 && s[i - 1] <= 0x036F) || s[i - 1] == U'\'' || s[i - 1] == U'~' || is_close(s[i - 1]) ||
             s[i - 1] == U'→' || s[i - 1] == U'←'))
            return true;
        if ((c == U'|' && next == U'|') || (c == U'<' && next == U'=') || (c == U'>' && next == U'=') ||
            (c == U'!' && next == U'=') || (c == U'-' && next == U'>'))
            return true;
        if (s.compare(i, 5, U"sqrt(") == 0 && i + 5 <= e) return true;
        if (is_letter(c) && (i == 0 || !is_word_char(s[i - 1]))) {
            std::size_t k = i;
            while (k < e && is_letter(s[k])) ++k;
            if ((k == e || !is_word_char(s[k])) && greek_name(std::u32string_view(s).substr(i, k - i)) &&
                s.compare(i, 3, U"inf") != 0 && s.compare(i, 2, U"pi") != 0)
                return true;
            i = k - 1;
        }
    }
    return false;
}

bool soft_sign(const Text& s, std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i)
        if (s[i] == U'=' || s[i] == U'≈' || s[i] == U'≤' || s[i] == U'≥' || s[i] == U'≠') return true;
    return false;
}

bool operator_word(std::u32string_view w) {
    static const std::array<std::u32string_view, 18> ops = {U"=", U"+", U"-", U"*", U"/", U"->", U"<-", U"<=",
                                                           U">=", U"!=", U":=", U"~", U"≈", U"x", U"·", U"−", U".", U"|"};
    return std::find(ops.begin(), ops.end(), w) != ops.end();
}

// A run of words the translator may take: the text of [b, e) with the punctuation around it
// left out (a sentence's full stop, a bracket opened or closed outside it, a possessive).
struct Core {
    std::size_t begin, end;
};

Core trimmed(const Text& s, std::size_t b, std::size_t e) {
    const auto count = [&](char32_t c) { return std::count(s.begin() + static_cast<std::ptrdiff_t>(b), s.begin() + static_cast<std::ptrdiff_t>(e), c); };
    bool changed = true;
    while (changed && e > b) {
        changed = false;
        const char32_t last = s[e - 1], first = s[b];
        if (last == U',' || last == U';' || last == U':' || last == U'?' || last == U'!' || last == U'"' ||
            (last == U'.' && !(e - b >= 2 && s[e - 2] == U'.'))) {
            --e, changed = true;
        } else if (last == U's' && e - b >= 3 && s[e - 2] == U'\'') {
            e -= 2, changed = true;
        } else if ((last == U')' && count(U')') > count(U'(')) || (last == U']' && count(U']') > count(U'[')) ||
                   (last == U'}' && count(U'}') > count(U'{'))) {
            --e, changed = true;
        } else if ((first == U'(' && count(U'(') > count(U')')) || (first == U'[' && count(U'[') > count(U']')) ||
                   (first == U'{' && count(U'{') > count(U'}')) || first == U'"') {
            ++b, changed = true;
        }
    }
    return {b, e};
}

struct Piece {
    std::size_t begin, end;
};

class MathsFinder {
public:
    MathsFinder(const Text& s, const std::vector<Piece>& pieces, const std::vector<std::size_t>& run_of)
        : s_(s), pieces_(pieces), run_of_(run_of) {}

    // The longest run of pieces [i, j] around k (within k's run, after `floor`) that translates.
    std::optional<Mark> around(std::size_t k, std::size_t floor) const {
        std::size_t lo = k, hi = k;
        while (lo > floor && lo + 8 > k && run_of_[lo - 1] == run_of_[k]) --lo;
        while (hi + 1 < pieces_.size() && hi < k + 18 && run_of_[hi + 1] == run_of_[k]) ++hi;
        for (std::size_t length = hi - lo + 1; length >= 1; --length) {
            const std::size_t first = k + 1 >= length ? std::max(lo, k + 1 - length) : lo;
            for (std::size_t i = first; i <= k && i + length - 1 <= hi; ++i)
                if (auto m = tried(i, i + length - 1)) return m;
        }
        return std::nullopt;
    }

    // The longest beginning of piece k that holds its sign and translates ("d_a" of "d_a-wide").
    std::optional<Mark> beginning(std::size_t k) const {
        const Core c = trimmed(s_, pieces_[k].begin, pieces_[k].end);
        for (std::size_t at = c.end; at-- > c.begin + 1;) {
            if (is_word_char(s_[at]) || !(is_word_char(s_[at - 1]) || is_close(s_[at - 1]))) continue;
            if (!hard_sign(s_, c.begin, at) || hard_sign(s_, at, c.end)) continue;
            if (auto math = formula_mathml(utf8(std::u32string_view(s_).substr(c.begin, at - c.begin))))
                return Mark{c.begin, at, Mark::formula, *math};
        }
        return std::nullopt;
    }

private:
    const Text& s_;
    const std::vector<Piece>& pieces_;
    const std::vector<std::size_t>& run_of_;

    std::u32string_view word(std::size_t k) const {
        const Core c = trimmed(s_, pieces_[k].begin, pieces_[k].end);
        return std::u32string_view(s_).substr(c.begin, c.end - c.begin);
    }

    static bool loose_letter(std::u32string_view w) { return w == U"a" || w == U"A" || w == U"I" || w == U"x"; }

    std::optional<Mark> tried(std::size_t i, std::size_t j) const {
        if (i == j && operator_word(word(i))) return std::nullopt;  // "=" alone says nothing
        if (i != j) {
            // ends that say nothing alone: an operator, an article, a sum without its terms
            // (a lone x at an end is a variable, held by the article rule below)
            const auto end_operator = [&](std::size_t k) { return operator_word(word(k)) && word(k) != U"x"; };
            if (end_operator(i) || end_operator(j) || word(j) == U"sum" || word(j) == U"prod") return std::nullopt;
            // (inside brackets it is a variable: "(x, y_t)", "p(y_i | y_<i, x)")
            if (loose_letter(word(i)) && !operator_word(word(i + 1)) && !is_open(s_[pieces_[i].begin])) return std::nullopt;
            if (loose_letter(word(j)) && !operator_word(word(j - 1)) && !is_close(s_[pieces_[j].end - 1]) &&
                !(pieces_[j].end - pieces_[j].begin >= 2 && is_close(s_[pieces_[j].end - 2])))
                return std::nullopt;
            // no sentence ends inside: a full stop, colon or semicolon at depth 0 before the last piece
            int depth = 0;
            for (std::size_t k = i; k <= j; ++k) {
                for (std::size_t p = pieces_[k].begin; p < pieces_[k].end; ++p) {
                    if (is_open(s_[p])) ++depth;
                    if (is_close(s_[p])) depth = std::max(depth - 1, 0);
                }
                const char32_t last = s_[pieces_[k].end - 1];
                // (a "." alone is a dot product: a_i . a_j)
                const bool stop = (last == U'.' && pieces_[k].end - pieces_[k].begin >= 2 && s_[pieces_[k].end - 2] != U'.') ||
                                  last == U';' || last == U':';
                if (k < j && depth == 0 && stop) return std::nullopt;
            }
        }
        const Core c = trimmed(s_, pieces_[i].begin, pieces_[j].end);
        if (c.end <= c.begin || c.end - c.begin > 300) return std::nullopt;
        // e.g., i.e.: a full stop between letters is an abbreviation's
        for (std::size_t p = c.begin + 1; p + 1 < c.end; ++p)
            if (s_[p] == U'.' && is_letter(s_[p - 1]) && is_letter(s_[p + 1])) return std::nullopt;
        // "b_z = 2 (sigmoid(2) = 0.88)": a remark in brackets after a space is not a product
        for (std::size_t p = c.begin + 1; p < c.end; ++p) {
            if (s_[p] != U'(' || s_[p - 1] != U' ') continue;
            int depth = 0;
            for (std::size_t q = p; q < c.end; ++q) {
                depth += s_[q] == U'(' ? 1 : s_[q] == U')' ? -1 : 0;
                if (depth == 0) break;
                if (depth == 1 && s_[q] == U'=') return std::nullopt;
            }
        }
        const std::u32string_view text = std::u32string_view(s_).substr(c.begin, c.end - c.begin);
        if (text.find(U"  ") != std::u32string_view::npos) return std::nullopt;
        const std::size_t b = pieces_[i].begin, e = pieces_[j].end;
        if (!hard_sign(s_, b, e) && !soft_sign(s_, b, e) && i == j) return std::nullopt;
        // 24-31 is a range of numbers, not a difference
        for (std::size_t p = c.begin + 1; p + 1 < c.end; ++p)
            if (s_[p] == U'-' && is_digit(s_[p - 1]) && is_digit(s_[p + 1])) return std::nullopt;
        auto math = formula_mathml(utf8(text));
        if (!math) return std::nullopt;
        return Mark{c.begin, c.end, Mark::formula, *math};
    }
};

void mark_maths(const Text& s, const std::vector<char>& owned, std::vector<Mark>& marks, ProseCounts& counts) {
    // pieces: runs of non-space characters no mark holds; consecutive ones with only spaces
    // between them form one run
    std::vector<Piece> pieces;
    std::vector<std::size_t> run_of;
    std::size_t run = 0;
    for (std::size_t i = 0; i < s.size();) {
        if (owned[i]) {
            ++run;
            while (i < s.size() && owned[i]) ++i;
            continue;
        }
        if (s[i] == U' ') {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < s.size() && s[j] != U' ' && !owned[j]) ++j;
        pieces.push_back({i, j});
        run_of.push_back(run);
        i = j;
    }
    const MathsFinder finder(s, pieces, run_of);
    std::size_t floor = 0;  // pieces before it are taken
    for (std::size_t k = 0; k < pieces.size(); ++k) {
        if (k < floor) continue;
        const bool hard = hard_sign(s, pieces[k].begin, pieces[k].end);
        // "=" and the like, or a lone x between two pieces (T x d): maths if a run around them translates
        const bool times = pieces[k].end == pieces[k].begin + 1 && s[pieces[k].begin] == U'x' && k > 0 && k + 1 < pieces.size();
        if (!hard && !times && !soft_sign(s, pieces[k].begin, pieces[k].end)) continue;
        std::optional<Mark> m = finder.around(k, floor);
        if (m) {
            std::size_t last = k;
            while (last + 1 < pieces.size() && pieces[last + 1].begin < m->end) ++last;
            marks.push_back(*m);
            ++counts.formulas;
            floor = last + 1;
            // a piece only partly in the formula ("x_t)." of "(x_t).") keeps its rest as text
            continue;
        }
        if (!hard) continue;
        if ((m = finder.beginning(k))) {
            marks.push_back(*m);
            ++counts.formulas;
            floor = k + 1;
            continue;
        }
        // maths the translator will not say: shown as code, as written (a bracket it opens with the
        // words up to its close: sqrt(3.5 / pairs)); a relation or an arrow alone as its sign
        std::size_t last = k;
        const auto open_brackets = [&](std::size_t to) {
            long depth = 0;
            for (std::size_t p = pieces[k].begin; p < pieces[to].end; ++p) depth += is_open(s[p]) ? 1 : is_close(s[p]) ? -1 : 0;
            return depth;
        };
        while (open_brackets(last) > 0 && last + 1 < pieces.size() && last < k + 8 && run_of[last + 1] == run_of[k]) ++last;
        if (open_brackets(last) != 0) last = k;
        const Core c = trimmed(s, pieces[k].begin, pieces[last].end);
        static const std::array<std::pair<std::u32string_view, std::u32string_view>, 5> signs = {
            {{U"->", U"→"}, {U"<-", U"←"}, {U"<=", U"≤"}, {U">=", U"≥"}, {U"!=", U"≠"}}};
        const std::u32string_view core = std::u32string_view(s).substr(c.begin, c.end - c.begin);
        const auto sign = std::find_if(signs.begin(), signs.end(), [&](const auto& p) { return p.first == core; });
        if (sign != signs.end()) {
            marks.push_back({c.begin, c.end, Mark::formula, utf8(sign->second)});
        } else {
            marks.push_back({c.begin, c.end, Mark::code, {}});
            ++counts.code;
        }
        floor = last + 1;
    }
}

}  // namespace prose_detail

std::string prose_html(std::string_view text, const ProseLinks* links, ProseCounts* counts) {
    using namespace prose_detail;
    Text s = code_points(text);
    for (char32_t& c : s)
        if (c == U'\t' || c == U'\n' || c == U'\r') c = U' ';
    ProseCounts local;
    ProseCounts& n = counts ? *counts : local;
    std::vector<Mark> marks;
    const std::vector<Word> words = words_of(s);
    if (links) mark_links(s, words, *links, marks);
    std::vector<char> owned(s.size(), 0);
    for (const auto& m : marks)
        std::fill(owned.begin() + static_cast<std::ptrdiff_t>(m.begin), owned.begin() + static_cast<std::ptrdiff_t>(m.end), 1);
    n.links += marks.size();
    const std::size_t before_code = marks.size();
    mark_code(s, owned, marks);
    n.code += marks.size() - before_code;
    for (const auto& m : marks)
        std::fill(owned.begin() + static_cast<std::ptrdiff_t>(m.begin), owned.begin() + static_cast<std::ptrdiff_t>(m.end), 1);
    mark_maths(s, owned, marks, n);
    std::sort(marks.begin(), marks.end(), [](const Mark& a, const Mark& b) { return a.begin < b.begin; });
    std::string out;
    std::size_t at = 0;
    const std::u32string_view all(s);
    for (const auto& m : marks) {
        if (m.begin < at) continue;  // cannot happen: marks do not overlap
        out += xml_escaped(all.substr(at, m.begin - at));
        const std::u32string_view inside = all.substr(m.begin, m.end - m.begin);
        switch (m.kind) {
            case Mark::code: out += "<code>" + xml_escaped(inside) + "</code>"; break;
            case Mark::link: out += "<a href=\"" + xml_escaped(m.html) + "\">" + xml_escaped(inside) + "</a>"; break;
            case Mark::formula: out += m.html; break;
        }
        at = m.end;
    }
    out += xml_escaped(all.substr(at));
    return out;
}

std::vector<std::string> prose_paragraphs(std::string_view text) {
    using namespace prose_detail;
    const Text s = code_points(text);
    static const std::array<std::u32string_view, 16> abbreviations = {
        U"e.g", U"i.e", U"al", U"fig", U"figs", U"eq", U"eqs", U"cf", U"vs", U"approx", U"no", U"sec", U"ch", U"ref", U"etc", U"resp"};
    std::vector<std::string> out;
    std::size_t block = 0;
    while (block <= s.size()) {
        std::size_t block_end = s.find(U'\n', block);
        if (block_end == Text::npos) block_end = s.size();
        // sentences of the block
        std::vector<std::pair<std::size_t, std::size_t>> sentences;
        int depth = 0;
        std::size_t from = block;
        for (std::size_t i = block; i < block_end; ++i) {
            const char32_t c = s[i];
            if (is_open(c)) ++depth;
            if (is_close(c)) depth = std::max(depth - 1, 0);
            if (depth > 0 || !(c == U'.' || c == U'?' || c == U'!')) continue;
            if (i + 2 >= block_end || s[i + 1] != U' ') continue;
            const char32_t next = s[i + 2] == U'"' && i + 3 < block_end ? s[i + 3] : s[i + 2];
            if (!is_upper(next)) continue;
            if (c == U'.') {
                if (i > block && s[i - 1] == U'.') continue;  // an ellipsis
                std::size_t w = i;
                while (w > block && (is_letter(s[w - 1]) || s[w - 1] == U'.')) --w;
                const Text before = lower(s.substr(w, i - w));
                if (std::find(abbreviations.begin(), abbreviations.end(), before) != abbreviations.end()) continue;
                if (before.size() == 1 && is_upper(s[w])) continue;  // an initial
            }
            sentences.emplace_back(from, i + 1);
            from = i + 2;
        }
        if (from < block_end) sentences.emplace_back(from, block_end);
        // paragraphs of at most 3 sentences, closed once they hold 50 words
        std::vector<std::pair<std::size_t, std::size_t>> paragraphs;
        std::size_t words = 0, count = 0;
        for (const auto& [b, e] : sentences) {
            std::size_t n = 0;
            for (std::size_t i = b; i < e; ++i) n += s[i] != U' ' && (i == b || s[i - 1] == U' ') ? 1 : 0;
            if (paragraphs.empty() || count >= 3 || words >= 50) {
                paragraphs.emplace_back(b, e);
                words = count = 0;
            } else {
                paragraphs.back().second = e;
            }
            words += n;
            ++count;
        }
        // a short last sentence joins the paragraph before it
        if (paragraphs.size() >= 2 && words < 20 && count == 1) {
            const auto last = paragraphs.back();
            paragraphs.pop_back();
            paragraphs.back().second = last.second;
        }
        for (const auto& [b, e] : paragraphs) {
            std::size_t first = b, last = e;
            while (first < last && (s[first] == U' ' || s[first] == U'\r' || s[first] == U'\t')) ++first;
            while (last > first && (s[last - 1] == U' ' || s[last - 1] == U'\r' || s[last - 1] == U'\t')) --last;
            if (last > first) out.push_back(utf8(std::u32string_view(s).substr(first, last - first)));
        }
        block = block_end + 1;
    }
    return out;
}

std::vector<std::string> step_anchors(const std::vector<std::string>& step_ids) {
    std::vector<std::string> out;
    for (const auto& id : step_ids) {
        std::string safe = "s-";
        for (const char32_t c : code_points(id)) safe += c < 0x80 && (prose_detail::is_word_char(c) || c == U'-') ? static_cast<char>(c) : '_';
        std::string unique = safe;
        for (int k = 2; std::find(out.begin(), out.end(), unique) != out.end(); ++k) unique = safe + "-" + std::to_string(k);
        out.push_back(unique);
    }
    return out;
}

}  // namespace attn
