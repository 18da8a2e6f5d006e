// Plain-text equations to MathML Core: a recursive-descent reader over code points that throws
// Untranslatable at anything it does not know (see mathml.hpp for the notation).
#include "mathml.hpp"

#include "prose.hpp"
#include "xml_text.hpp"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

namespace attn {
namespace {

struct Untranslatable {};

bool ascii_letter(char32_t c) { return (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z'); }
bool digit(char32_t c) { return c >= U'0' && c <= U'9'; }
bool combining(char32_t c) { return c >= 0x0300 && c <= 0x036F; }
// Letters of identifiers: Latin (with its accented letters) and Greek.
bool latin_or_greek(char32_t c) {
    return ascii_letter(c) || (c >= 0x00C0 && c <= 0x024F && c != 0x00D7 && c != 0x00F7) ||
           (c >= 0x0391 && c <= 0x03C9);
}
// Another script's letters and signs (Devanagari, ...): a word of a lesson's example, as text.
bool other_script(char32_t c) { return c >= 0x0900 && c <= 0x0DFF; }

std::string esc(std::u32string_view text) { return xml_escaped(text); }

std::string mi(std::u32string_view text) { return "<mi>" + esc(text) + "</mi>"; }
std::string mn(std::u32string_view text) { return "<mn>" + esc(text) + "</mn>"; }
std::string mo(std::u32string_view text) { return "<mo>" + esc(text) + "</mo>"; }
std::string mrow(const std::string& inside) { return "<mrow>" + inside + "</mrow>"; }
std::string fence(std::u32string_view text) { return "<mo stretchy=\"false\">" + esc(text) + "</mo>"; }

const std::array<std::pair<std::u32string_view, std::u32string_view>, 19> greek = {{
    {U"alpha", U"α"}, {U"beta", U"β"}, {U"gamma", U"γ"}, {U"delta", U"δ"}, {U"Delta", U"Δ"},
    {U"epsilon", U"ε"}, {U"eps", U"ε"}, {U"theta", U"θ"}, {U"lambda", U"λ"}, {U"mu", U"μ"},
    {U"pi", U"π"}, {U"rho", U"ρ"}, {U"sigma", U"σ"}, {U"Sigma", U"Σ"}, {U"tau", U"τ"},
    {U"phi", U"φ"}, {U"omega", U"ω"}, {U"eta", U"η"}, {U"nu", U"ν"},
}};

// Names set upright as they are: functions, and a few variables the lessons name in words.
const std::array<std::u32string_view, 35> upright_names = {
    U"exp",       U"log",       U"ln",      U"tanh",    U"sigmoid",   U"softmax",     U"max",   U"min",
    U"argmax",    U"argmin",    U"sin",     U"cos",     U"diag",      U"mean",        U"var",   U"Var",
    U"Concat",    U"MultiHead", U"Attention", U"CrossAttention", U"Decoder", U"Encoder", U"nextafter",
    U"partner",   U"partners",  U"lr",      U"logits",  U"warmup",    U"time",        U"growth",
    U"head",      U"pos",       U"score",   U"lp",      U"count",
};

std::u32string_view greek_letter(std::u32string_view word) {
    for (const auto& [name, letter] : greek)
        if (name == word) return letter;
    return {};
}

bool upright_name(std::u32string_view word) {
    return std::find(upright_names.begin(), upright_names.end(), word) != upright_names.end();
}

bool all_capitals(std::u32string_view word) {
    return word.size() >= 2 && word.size() <= 6 &&
           std::all_of(word.begin(), word.end(), [](char32_t c) { return c >= U'A' && c <= U'Z'; });
}

class Reader {
public:
    explicit Reader(std::u32string text) : s_(std::move(text)) {}

    std::string formula() {
        std::string inside = sequence(0);
        if (i_ != s_.size()) throw Untranslatable{};
        if (inside.empty()) throw Untranslatable{};
        return "<math>" + mrow(inside) + "</math>";
    }

private:
    std::u32string s_;
    std::size_t i_ = 0;
    int script_ = 0;  // > 0 inside a sub- or superscript, where words are names of their own
    int depth_ = 0;   // groups and scripts open: past 64, no formula a lesson writes (and no deep recursion)

    struct Deeper {
        explicit Deeper(int& depth) : depth_(depth) {
            if (++depth_ > 64) throw Untranslatable{};
        }
        ~Deeper() { --depth_; }
        Deeper(const Deeper&) = delete;
        Deeper& operator=(const Deeper&) = delete;
        int& depth_;
    };

    char32_t peek(std::size_t k = 0) const { return i_ + k < s_.size() ? s_[i_ + k] : 0; }
    bool at_end() const { return i_ >= s_.size(); }

    // Elements up to `close` (not consumed) or, for close 0, to the end.
    std::string sequence(char32_t close) {
        std::string out;
        bool after_operand = false;
        while (true) {
            while (peek() == U' ') ++i_;
            if (at_end()) {
                if (close != 0) throw Untranslatable{};
                return out;
            }
            const char32_t c = peek();
            if (c == close) return out;
            if (c == U')' || c == U']' || c == U'}') throw Untranslatable{};
            if (times_here(after_operand)) {
                ++i_;
                out += mo(U"×");
                after_operand = false;
                continue;
            }
            bool operand = false;
            out += element(operand);
            after_operand = operand;
        }
    }

    // "x" between two operands, spaces on both sides: the dimensions of a matrix, d x d_k.
    bool times_here(bool after_operand) const {
        if (!after_operand || peek() != U'x' || script_ > 0) return false;
        if (i_ == 0 || s_[i_ - 1] != U' ' || peek(1) != U' ') return false;
        std::size_t k = i_ + 1;
        while (k < s_.size() && s_[k] == U' ') ++k;
        return k < s_.size() && (latin_or_greek(s_[k]) || digit(s_[k]) || s_[k] == U'(');
    }

    std::string element(bool& operand) {
        const char32_t c = peek();
        operand = true;
        if (c == U'(' || c == U'[' || c == U'{') return postfix(group());
        if (c == U'|') {
            const bool norm = peek(1) == U'|';
            i_ += norm ? 2 : 1;
            return postfix(mo(norm ? U"‖" : U"|"));
        }
        if (latin_or_greek(c)) return postfix(word());
        if (digit(c)) return postfix(number());
        if (other_script(c)) {
            std::u32string run;
            while (other_script(peek()) || combining(peek())) run += s_[i_++];
            return "<mtext>" + esc(run) + "</mtext>";
        }
        operand = false;
        return operator_here();
    }

    std::string operator_here() {
        const char32_t c = peek(), next = peek(1);
        const auto take = [&](std::size_t n, std::u32string_view shown) {
            i_ += n;
            return mo(shown);
        };
        switch (c) {
            case U'.':
                if (next == U'.') return take(peek(2) == U'.' ? 3 : 2, U"…");
                return take(1, U"·");
            case U'-': return next == U'>' ? take(2, U"→") : take(1, U"−");
            case U'<':
                if (next == U'-') return take(2, U"←");
                if (next == U'=') return take(2, U"≤");
                if (ascii_letter(next)) {  // a token such as <eos>
                    std::size_t k = i_ + 1;
                    while (k < s_.size() && ascii_letter(s_[k])) ++k;
                    if (k < s_.size() && s_[k] == U'>') {
                        const std::u32string token = s_.substr(i_, k + 1 - i_);
                        i_ = k + 1;
                        return "<mtext>" + esc(token) + "</mtext>";
                    }
                }
                return take(1, U"<");
            case U'>': return next == U'=' ? take(2, U"≥") : take(1, U">");
            case U'!':
                if (next == U'=') return take(2, U"≠");
                throw Untranslatable{};
            case U':': return next == U'=' ? take(2, U"≔") : take(1, U":");
            case U'=': return take(1, U"=");
            case U'+': return take(1, U"+");
            case U'*': return take(1, U"∗");
            case U'/': return take(1, U"/");
            case U',': return take(1, U",");
            case U';': return take(1, U";");
            case U'~': return take(1, U"∼");
            case U'≠': case U'≈': case U'∝': case U'→': case U'←': case U'≤': case U'≥': case U'∈': case U'×':
            case U'·': case U'−': case U'…': case U'∞': case U'±': case U'⊙':
                return take(1, std::u32string_view(&s_[i_], 1));
            default: throw Untranslatable{};
        }
    }

    // A bracketed group, its brackets shown; the scripts after it apply to all of it.
    std::string group() {
        const Deeper deeper(depth_);
        const char32_t open = s_[i_++];
        const char32_t close = open == U'(' ? U')' : open == U'[' ? U']' : U'}';
        std::string inside = sequence(close);
        ++i_;  // the close
        // brackets as tall as the text, not stretched over the scripts inside (as the terminal shows them)
        return mrow(fence(std::u32string_view(&open, 1)) + inside + fence(std::u32string_view(&close, 1)));
    }

    std::string number() {
        std::u32string text;
        while (digit(peek())) text += s_[i_++];
        if (peek() == U'.' && digit(peek(1))) {
            text += s_[i_++];
            while (digit(peek())) text += s_[i_++];
        }
        // 1e-6: an exponent only directly after the digits
        if (peek() == U'e' && (digit(peek(1)) || ((peek(1) == U'-' || peek(1) == U'+') && digit(peek(2))))) {
            text += s_[i_++];
            if (!digit(peek())) text += s_[i_++];
            while (digit(peek())) text += s_[i_++];
        }
        return mn(text);
    }

    std::u32string letters() {
        std::u32string w;
        while (latin_or_greek(peek()) || (!w.empty() && combining(peek()))) w += s_[i_++];
        return w;
    }

    std::string word() {
        const std::u32string w = letters();
        if (script_ > 0) return script_word(w);
        if (w == U"sqrt") {
            const Deeper deeper(depth_);
            if (peek() != U'(') throw Untranslatable{};
            ++i_;
            std::string inside = sequence(U')');
            ++i_;
            return "<msqrt>" + mrow(inside) + "</msqrt>";
        }
        if (w == U"sum") return "<mo largeop=\"false\">∑</mo>";
        if (w == U"prod") return "<mo largeop=\"false\">∏</mo>";
        if (w == U"inf") return mi(U"∞");
        if (const auto letter = greek_letter(w); !letter.empty()) return mi(letter);
        if (upright_name(w) || all_capitals(w)) return mi(w);
        std::size_t marks = 0;
        for (const char32_t c : w) marks += combining(c) ? 1 : 0;
        if (w.size() - marks == 1) {  // one letter, perhaps with an accent; b1: b with subscript 1
            if (!digit(peek())) return mi(w);
            std::u32string index;
            while (digit(peek())) index += s_[i_++];
            return "<msub>" + mi(w) + mn(index) + "</msub>";
        }
        // a differential: dL, dW, dalpha
        if (w[0] == U'd' && w.size() == 2 && latin_or_greek(w[1])) return mrow(mi(U"d") + mi(w.substr(1)));
        if (w[0] == U'd') {
            if (const auto letter = greek_letter(w.substr(1)); !letter.empty()) return mrow(mi(U"d") + mi(letter));
        }
        throw Untranslatable{};  // an English word: the text says it better than italics would
    }

    // In a script every word is a name: "src", "model", "causal" upright; "ij", "tj" as letters.
    std::string script_word(const std::u32string& w, bool spaced = true) {
        if (w == U"in" && spaced) return mo(U"∈");  // j in partners(i); W_in is W with "in" below
        if (const auto letter = greek_letter(w); !letter.empty()) return mi(letter);
        if (w.size() > 2) return mi(w);
        std::string out;
        for (const char32_t c : w) out += mi(std::u32string_view(&c, 1));
        return out;
    }

    // What follows _ or ^: {group} (braces not shown), (group) (shown), a signed number, a run
    // of letters and digits, < or > before one, or a star.
    std::string script_argument() {
        const Deeper deeper(depth_);
        ++script_;
        std::string out;
        const char32_t c = peek();
        if (c == U'{') {
            ++i_;
            out = sequence(U'}');
            ++i_;
        } else if (c == U'(') {
            out = group();
        } else if ((c == U'-' || c == U'+') && (digit(peek(1)) || latin_or_greek(peek(1)))) {
            ++i_;
            out = mo(c == U'-' ? U"−" : U"+") + (digit(peek()) ? number() : word());
        } else if (c == U'<' || c == U'>') {
            ++i_;
            if (!(latin_or_greek(peek()) || digit(peek()))) throw Untranslatable{};
            out = mo(std::u32string_view(&c, 1)) + run();
        } else if (c == U'*') {
            ++i_;
            out = mo(U"∗");
        } else if (latin_or_greek(c) || digit(c)) {
            out = run();
        } else {
            throw Untranslatable{};
        }
        --script_;
        return out;
    }

    // Letters and digits: "ij", "1j", "s1", "src", "T".
    std::string run() {
        std::string out;
        while (latin_or_greek(peek()) || digit(peek())) out += digit(peek()) ? number_run() : script_word(letters(), false);
        if (out.empty()) throw Untranslatable{};
        return out;
    }

    std::string number_run() {
        std::u32string text;
        while (digit(peek())) text += s_[i_++];
        return mn(text);
    }

    static std::string accent(const std::string& base, std::u32string_view mark) {
        return "<mover accent=\"true\">" + base + mo(mark) + "</mover>";
    }

    // Accents, primes, stars and scripts right after an atom.
    std::string postfix(std::string base) {
        std::string sub, sup;
        while (true) {
            const char32_t c = peek(), next = peek(1);
            if (c == U'~') {
                ++i_;
                base = accent(base, U"˜");
            } else if (c == U'→' || c == U'←') {
                ++i_;
                base = accent(base, std::u32string_view(&s_[i_ - 1], 1));
            } else if (c == U'^' && (next == 0 || next == U' ' || next == U')' || next == U',' || next == U'_' ||
                                     next == U']' || next == U';')) {
                ++i_;
                base = accent(base, U"^");
            } else if (c == U'\'') {
                ++i_;
                // w′: the prime on the base at full size (a superscript prime is drawn tiny); after a
                // script it stays in the superscript
                if (sub.empty() && sup.empty()) base = mrow(base + "<mo lspace=\"0\" rspace=\"0\">′</mo>");
                else sup += mo(U"′");
            } else if (c == U'*' && (next == 0 || next == U'_' || next == U')' || next == U',' || next == U']')) {
                ++i_;
                sup += mo(U"∗");
            } else if (c == U'_') {
                if (!sub.empty()) throw Untranslatable{};
                ++i_;
                if (s_.compare(i_, 3, U"hat") == 0 && !(latin_or_greek(peek(3)) || digit(peek(3)))) {
                    i_ += 3;
                    base = accent(base, U"^");
                    continue;
                }
                sub = script_argument();
            } else if (c == U'^') {
                if (!sup.empty()) throw Untranslatable{};
                ++i_;
                sup = script_argument();
            } else {
                break;
            }
        }
        if (!sub.empty() && !sup.empty()) return "<msubsup>" + base + mrow(sub) + mrow(sup) + "</msubsup>";
        if (!sub.empty()) return "<msub>" + base + mrow(sub) + "</msub>";
        if (!sup.empty()) return "<msup>" + base + mrow(sup) + "</msup>";
        return base;
    }
};

// Where `text` is cut into pieces: [begin, end) of each separator at bracket depth 0.
std::vector<std::pair<std::size_t, std::size_t>> separators(const std::u32string& text) {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    int depth = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char32_t c = text[i];
        if (c == U'(' || c == U'[' || c == U'{') ++depth;
        if (c == U')' || c == U']' || c == U'}') depth = std::max(depth - 1, 0);
        if (depth > 0) continue;
        std::size_t end = i;
        if ((c == U',' || c == U';' || c == U':') && i + 1 < text.size() && text[i + 1] == U' ') end = i + 1;
        else if (c == U' ' && i + 1 < text.size() && text[i + 1] == U' ') end = i;
        else continue;
        while (end < text.size() && text[end] == U' ') ++end;
        out.emplace_back(i, end);
        i = end - 1;
    }
    return out;
}

std::u32string spaces_trimmed(const std::u32string& text) {
    const auto first = text.find_first_not_of(U' ');
    if (first == std::u32string::npos) return {};
    return text.substr(first, text.find_last_not_of(U' ') - first + 1);
}

std::string utf8_of(std::u32string_view text) {
    std::string out;
    for (const char32_t c : text) append_utf8(out, c);
    return out;
}

// A piece that does not translate whole may be a formula followed by words ("alpha = softmax(E)
// along each row", "d x d_k (here d_v = d_k)"): the longest beginning that ends before a space
// at bracket depth 0, holds = _ ^ or a bracket, and translates, as MathML, the rest as text after
// it, in the order written. Pieces longer than 200 code points are not cut (each try reads the
// beginning again).
std::string piece_html(const std::u32string& piece, bool& translated, const ProseLinks* links) {
    translated = true;
    if (const auto whole = formula_mathml(utf8_of(piece))) return *whole;
    if (piece.size() <= 200) {
        std::vector<std::size_t> spaces;
        int depth = 0;
        for (std::size_t i = 0; i < piece.size(); ++i) {
            const char32_t c = piece[i];
            if (c == U'(' || c == U'[' || c == U'{') ++depth;
            if (c == U')' || c == U']' || c == U'}') depth = std::max(depth - 1, 0);
            if (c == U' ' && depth == 0) spaces.push_back(i);
        }
        for (auto at = spaces.rbegin(); at != spaces.rend(); ++at) {
            const std::u32string head = piece.substr(0, *at);
            if (head.find_first_of(U"=_^([") == std::u32string::npos) continue;
            // a head that ends in an operator or a sum wants the words after it as its operand
            // ("p_n = sum clipped n-gram matches"): not a formula of its own
            const std::size_t last_space = head.find_last_of(U' ');
            const std::u32string last = last_space == std::u32string::npos ? head : head.substr(last_space + 1);
            if (last == U"sum" || last == U"prod" || last == U"=" || last == U"+" || last == U"-" || last == U"*" ||
                last == U"/")
                continue;
            if (const auto math = formula_mathml(utf8_of(head)))
                return *math + " <span class=\"eq-text\">" + prose_html(utf8_of(spaces_trimmed(piece.substr(*at))), links) + "</span>";
        }
    }
    translated = false;
    // words with maths among them: the maths typeset inline (core/prose.hpp)
    return "<span class=\"eq-text\">" + prose_html(utf8_of(piece), links) + "</span>";
}

}  // namespace

std::optional<std::string> formula_mathml(std::string_view text) {
    std::u32string points = code_points(text);
    for (char32_t& c : points)
        if (c == U'\t' || c == U'\n' || c == U'\r') c = U' ';
    if (std::find(points.begin(), points.end(), char32_t{0xFFFD}) != points.end()) return std::nullopt;
    try {
        return Reader(spaces_trimmed(points)).formula();
    } catch (const Untranslatable&) {
        return std::nullopt;
    }
}

EquationHtml equation_html(std::string_view text, const ProseLinks* links) {
    std::u32string points = code_points(text);
    for (char32_t& c : points)
        if (c == U'\t' || c == U'\n' || c == U'\r') c = U' ';
    EquationHtml out;
    std::size_t from = 0;
    auto cuts = separators(points);
    cuts.emplace_back(points.size(), points.size());
    for (const auto& [begin, end] : cuts) {
        const std::u32string piece = spaces_trimmed(points.substr(from, begin - from));
        // the separator's mark, then one space (two or more spaces: a wider gap)
        const std::u32string mark = end > begin ? spaces_trimmed(points.substr(begin, end - begin)) : U"";
        const std::string gap = end == begin ? "" : end - begin - mark.size() >= 2 ? "\u2003" : " ";
        std::string html = xml_escaped(mark);
        if (!piece.empty()) {
            ++out.pieces;
            bool translated = false;
            const std::string shown = piece_html(piece, translated, links);
            out.translated += translated ? 1 : 0;
            // a formula keeps its comma: no line break between them
            const bool formula_last = shown.size() >= 7 && shown.compare(shown.size() - 7, 7, "</math>") == 0;
            html = formula_last && !mark.empty() ? "<span class=\"eq-piece\">" + shown + html + "</span>" : shown + html;
        }
        out.html += html + gap;
        from = end;
    }
    return out;
}

}  // namespace attn
