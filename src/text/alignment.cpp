#include "text/alignment.hpp"

#include "text/corpus.hpp"
#include "text/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace attn::text {

namespace {

bool has_link(const std::vector<WordLink>& links, std::size_t en, std::size_t es) {
    return std::find(links.begin(), links.end(), WordLink{en, es}) != links.end();
}

std::string_view trimmed(std::string_view s) {
    const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
    while (!s.empty() && blank(s.front())) s.remove_prefix(1);
    while (!s.empty() && blank(s.back())) s.remove_suffix(1);
    return s;
}

// The space- or tab-separated fields of a value.
std::vector<std::string_view> fields(std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
        const std::size_t start = i;
        while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
        if (i > start) out.push_back(s.substr(start, i - start));
    }
    return out;
}

// A decimal index, the whole of `s`; false for anything else (a sign, a space, an overflow).
bool parse_index(std::string_view s, std::size_t& value) {
    if (s.empty() || s.front() < '0' || s.front() > '9') return false;
    const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
    return error == std::errc() && end == s.data() + s.size();
}

// The keywords of a verse, in their order.
constexpr const char* keywords[] = {"verse", "en", "es", "sure", "possible"};
constexpr std::size_t keyword_count = sizeof keywords / sizeof keywords[0];

class Parser {
public:
    Parser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

    std::vector<HandAlignment> run() {
        std::size_t start = 0;
        while (start <= text_.size()) {
            std::size_t end = text_.find('\n', start);
            if (end == std::string_view::npos) end = text_.size();
            ++line_;
            take(trimmed(text_.substr(start, end - start)));
            start = end + 1;
        }
        if (next_ != 0)
            throw AlignmentError(fmt::format("{}: the text ends inside the verse {} (line {}): its \"{}\" line is missing",
                                             source_, current_.ref, current_.line, keywords[next_]));
        return std::move(verses_);
    }

private:
    template <typename... Args>
    [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
        throw AlignmentError(fmt::format("{}, line {}: {}", source_, line_,
                                         fmt::format(format, std::forward<Args>(args)...)));
    }

    void take(std::string_view line) {
        if (line.empty() || line.front() == '#') return;
        std::size_t cut = 0;
        while (cut < line.size() && line[cut] != ' ' && line[cut] != '\t') ++cut;
        const std::string_view keyword = line.substr(0, cut);
        const std::string_view value = trimmed(line.substr(cut));
        std::size_t k = 0;
        while (k < keyword_count && keyword != keywords[k]) ++k;
        if (k == keyword_count)
            fail("unknown keyword \"{}\" (a line is a comment starting with '#', or one of verse, en, es, sure, "
                 "possible and its value)",
                 keyword);
        if (k != next_) {
            if (next_ == 0)
                fail("\"{}\" outside a verse: a verse starts with a \"verse\" line", keyword);
            fail("\"{}\" where the verse {} (line {}) needs its \"{}\" line (verse, en, es, sure, possible, in this "
                 "order)",
                 keyword, current_.ref, current_.line, keywords[next_]);
        }
        switch (k) {
            case 0: take_reference(value); break;
            case 1: current_.en = take_words(value, "English"); break;
            case 2: current_.es = take_words(value, "Spanish"); break;
            case 3:
                current_.sure = take_links(value, "sure");
                if (current_.sure.empty()) fail("the verse {} has no sure link", current_.ref);
                break;
            default:
                current_.possible = take_links(value, "possible");
                verses_.push_back(std::move(current_));
                current_ = HandAlignment{};
                break;
        }
        next_ = (k + 1) % keyword_count;
    }

    void take_reference(std::string_view value) {
        if (value.empty()) fail("\"verse\" with no reference (verse Book C:V)");
        const std::string ref(value);
        try {
            (void)book_of(ref);
        } catch (const BibleError&) {
            fail("\"{}\" is not a verse reference as SWORD names them (Book C:V, such as John 1:2)", ref);
        }
        const auto [it, added] = first_line_.emplace(ref, line_);
        if (!added) fail("the verse {} is given twice (first at line {})", ref, it->second);
        current_.ref = ref;
        current_.line = line_;
    }

    std::vector<std::string> take_words(std::string_view value, const char* language) {
        std::vector<std::string> words;
        for (const std::string_view w : fields(value)) {
            std::vector<std::string> as_read;
            try {
                as_read = words_of(w);
            } catch (const BibleError& e) {
                fail("{} word {} of {}: {}", language, words.size(), current_.ref, e.what());
            }
            if (as_read.size() != 1 || as_read.front() != w)
                fail("{} word {} of {}, \"{}\", is not a word as words_of gives them (lower-case letters and digits, "
                     "no punctuation)",
                     language, words.size(), current_.ref, w);
            words.emplace_back(w);
        }
        if (words.empty()) fail("the verse {} has no {} words", current_.ref, language);
        return words;
    }

    std::vector<WordLink> take_links(std::string_view value, const char* kind) {
        std::vector<WordLink> links;
        for (const std::string_view token : fields(value)) {
            const std::size_t dash = token.find('-');
            WordLink link;
            if (dash == std::string_view::npos || !parse_index(token.substr(0, dash), link.en) ||
                !parse_index(token.substr(dash + 1), link.es))
                fail("the {} link \"{}\" of {} is not \"e-s\" (an English and a Spanish word's index, from 0)", kind,
                     token, current_.ref);
            if (link.en >= current_.en.size())
                fail("the {} link {} of {}: English word {} is out of range (the verse has {} English words, 0 to {})",
                     kind, token, current_.ref, link.en, current_.en.size(), current_.en.size() - 1);
            if (link.es >= current_.es.size())
                fail("the {} link {} of {}: Spanish word {} is out of range (the verse has {} Spanish words, 0 to {})",
                     kind, token, current_.ref, link.es, current_.es.size(), current_.es.size() - 1);
            if (has_link(links, link.en, link.es)) fail("the {} link {} of {} is given twice", kind, token, current_.ref);
            if (has_link(current_.sure, link.en, link.es))
                fail("the possible link {} of {} is also sure (the possible line lists the links of P that are not "
                     "sure)",
                     token, current_.ref);
            links.push_back(link);
        }
        return links;
    }

    std::string_view text_;
    const std::string& source_;
    std::size_t line_ = 0;
    std::size_t next_ = 0;  // the keyword expected next
    HandAlignment current_;
    std::vector<HandAlignment> verses_;
    std::map<std::string, std::size_t> first_line_;
};

// The first difference between two word lists, for messages.
std::string first_difference(const std::vector<std::string>& expected, const std::vector<std::string>& got,
                             const char* expected_name, const char* got_name) {
    std::size_t k = 0;
    while (k < expected.size() && k < got.size() && expected[k] == got[k]) ++k;
    const auto word = [](const std::vector<std::string>& w, std::size_t i) {
        return i < w.size() ? "\"" + w[i] + "\"" : std::string("nothing");
    };
    return fmt::format("{}: {} words, {}: {} words; word {} is {} in {} and {} in {}", expected_name,
                       expected.size(), got_name, got.size(), k, word(expected, k), expected_name, word(got, k),
                       got_name);
}

bool is_special_piece(const std::string& piece) {
    static const std::set<std::string> special = {"<s>", "</s>", "<unk>", "<sos>", "<eos>", "<pad>"};
    return special.count(piece) != 0;
}

}  // namespace

bool HandAlignment::is_sure(std::size_t en_word, std::size_t es_word) const { return has_link(sure, en_word, es_word); }

bool HandAlignment::is_possible(std::size_t en_word, std::size_t es_word) const {
    return is_sure(en_word, es_word) || has_link(possible, en_word, es_word);
}

bool HandAlignment::has_sure_link(std::size_t es_word) const {
    return std::any_of(sure.begin(), sure.end(), [&](const WordLink& l) { return l.es == es_word; });
}

std::vector<HandAlignment> parse_hand_alignments(std::string_view text, const std::string& source) {
    return Parser(text, source).run();
}

std::vector<HandAlignment> read_hand_alignments(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw AlignmentError(fmt::format("cannot read the hand alignments {}", path));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw AlignmentError(fmt::format("cannot read the hand alignments {}", path));
    return parse_hand_alignments(text.str(), path);
}

std::vector<VersePair> hand_aligned_pairs(const std::vector<HandAlignment>& gold,
                                          const std::vector<VersePair>& pairs) {
    std::map<std::string, const VersePair*> by_ref;
    for (const VersePair& p : pairs) by_ref.emplace(p.ref, &p);
    std::vector<VersePair> out;
    for (const HandAlignment& g : gold) {
        const auto it = by_ref.find(g.ref);
        if (it == by_ref.end())
            throw AlignmentError(fmt::format("the hand-aligned verse {} (line {}) is not among the {} verse pairs read",
                                             g.ref, g.line, pairs.size()));
        const VersePair& p = *it->second;
        for (const bool english : {true, false}) {
            const std::vector<std::string> words = words_of(english ? p.en : p.es);
            const std::vector<std::string>& file = english ? g.en : g.es;
            if (words != file)
                throw AlignmentError(fmt::format(
                    "the hand-aligned verse {} (line {}): its {} words are no longer the modules': {}. The text "
                    "read: \"{}\"",
                    g.ref, g.line, english ? "English" : "Spanish",
                    first_difference(words, file, "the modules", "the file"), english ? p.en : p.es));
        }
        out.push_back(p);
    }
    return out;
}

std::vector<std::size_t> piece_words(const std::vector<std::string>& pieces, const std::vector<std::string>& words) {
    static const std::string meta = "\xe2\x96\x81";  // ▁ U+2581
    // the pieces' text, "▁" a space, each byte remembering its piece
    std::string text;
    std::vector<std::size_t> owner;
    for (std::size_t k = 0; k < pieces.size(); ++k) {
        if (is_special_piece(pieces[k])) continue;
        for (std::size_t i = 0; i < pieces[k].size();) {
            if (pieces[k].compare(i, meta.size(), meta) == 0) {
                text += ' ';
                owner.push_back(k);
                i += meta.size();
            } else {
                text += pieces[k][i];
                owner.push_back(k);
                ++i;
            }
        }
    }
    // words_of's rule over it, one character at a time (words_of itself says what a word character is)
    std::vector<std::size_t> out(pieces.size(), no_word);
    std::vector<std::string> spelt;
    bool in_word = false;
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t length = utf8_sequence_length(text, i);
        if (length == 0)
            throw AlignmentError(fmt::format("piece {} (\"{}\") is not valid UTF-8", owner[i], pieces[owner[i]]));
        const std::vector<std::string> character = words_of(std::string_view(text).substr(i, length));
        if (character.empty()) {
            in_word = false;
        } else {
            if (!in_word) spelt.emplace_back();
            in_word = true;
            spelt.back() += character.front();
            if (out[owner[i]] == no_word) out[owner[i]] = spelt.size() - 1;
        }
        i += length;
    }
    if (spelt != words)
        throw AlignmentError(fmt::format("the pieces do not spell the words they are mapped to: {}. The pieces: {}",
                                         first_difference(words, spelt, "the text", "the pieces"),
                                         fmt::join(pieces, " ")));
    return out;
}

WeightRows word_weights(const WeightRows& piece_weights, const std::vector<std::size_t>& es_piece_words,
                        const std::vector<std::size_t>& en_piece_words, std::size_t es_word_count,
                        std::size_t en_word_count) {
    if (piece_weights.size() != es_piece_words.size())
        throw AlignmentError(fmt::format("the attention map has {} target rows but the Spanish piece map {} entries",
                                         piece_weights.size(), es_piece_words.size()));
    for (std::size_t i = 0; i < piece_weights.size(); ++i)
        if (piece_weights[i].size() != en_piece_words.size())
            throw AlignmentError(fmt::format("row {} of the attention map has {} source columns but the English piece "
                                             "map {} entries",
                                             i, piece_weights[i].size(), en_piece_words.size()));
    const auto check = [](const std::vector<std::size_t>& map, std::size_t count, const char* language) {
        for (std::size_t k = 0; k < map.size(); ++k)
            if (map[k] != no_word && map[k] >= count)
                throw AlignmentError(fmt::format("{} piece {} is mapped to word {}, but there are {} {} words", language,
                                                 k, map[k], count, language));
    };
    check(es_piece_words, es_word_count, "Spanish");
    check(en_piece_words, en_word_count, "English");

    WeightRows w(es_word_count, std::vector<double>(en_word_count, 0.0));
    std::vector<std::size_t> pieces_of(es_word_count, 0);
    for (std::size_t i = 0; i < piece_weights.size(); ++i) {
        const std::size_t t = es_piece_words[i];
        if (t == no_word) continue;
        ++pieces_of[t];
        for (std::size_t j = 0; j < en_piece_words.size(); ++j)
            if (en_piece_words[j] != no_word) w[t][en_piece_words[j]] += piece_weights[i][j];
    }
    for (std::size_t t = 0; t < es_word_count; ++t)
        if (pieces_of[t] > 1)
            for (double& v : w[t]) v /= static_cast<double>(pieces_of[t]);
    return w;
}

std::vector<WordLink> argmax_alignment(const WeightRows& word_weights) {
    std::vector<WordLink> a;
    for (std::size_t t = 0; t < word_weights.size(); ++t) {
        const std::vector<double>& row = word_weights[t];
        std::size_t best = no_word;
        for (std::size_t e = 0; e < row.size(); ++e)
            if (row[e] > 0.0 && (best == no_word || row[e] > row[best])) best = e;
        if (best != no_word) a.push_back({best, t});
    }
    return a;
}

AlignmentScore& AlignmentScore::operator+=(const AlignmentScore& other) {
    aligned += other.aligned;
    hits += other.hits;
    links += other.links;
    sure += other.sure;
    a_and_s += other.a_and_s;
    a_and_p += other.a_and_p;
    return *this;
}

double AlignmentScore::accuracy() const {
    if (aligned == 0) throw AlignmentError("no aligned Spanish word was scored: the accuracy of nothing");
    return static_cast<double>(hits) / static_cast<double>(aligned);
}

double AlignmentScore::aer() const {
    if (links + sure == 0) throw AlignmentError("neither a link nor a sure link was scored: the AER of nothing");
    return 1.0 - static_cast<double>(a_and_s + a_and_p) / static_cast<double>(links + sure);
}

AlignmentScore score_word_weights(const WeightRows& word_weights, const HandAlignment& gold) {
    if (word_weights.size() != gold.es.size())
        throw AlignmentError(fmt::format("{}: the word weights have {} rows for its {} Spanish words", gold.ref,
                                         word_weights.size(), gold.es.size()));
    for (std::size_t t = 0; t < word_weights.size(); ++t)
        if (word_weights[t].size() != gold.en.size())
            throw AlignmentError(fmt::format("{}: row {} of the word weights has {} columns for its {} English words",
                                             gold.ref, t, word_weights[t].size(), gold.en.size()));
    AlignmentScore score;
    score.sure = gold.sure.size();
    const std::vector<WordLink> a = argmax_alignment(word_weights);
    score.links = a.size();
    for (const WordLink& l : a) {
        const bool sure = gold.is_sure(l.en, l.es), possible = gold.is_possible(l.en, l.es);
        score.a_and_s += sure ? 1 : 0;
        score.a_and_p += possible ? 1 : 0;
        score.hits += possible && gold.has_sure_link(l.es) ? 1 : 0;
    }
    for (std::size_t t = 0; t < gold.es.size(); ++t) score.aligned += gold.has_sure_link(t) ? 1 : 0;
    return score;
}

AlignmentScore best_argmax_score(const HandAlignment& gold) {
    WeightRows w(gold.es.size(), std::vector<double>(gold.en.size(), 0.0));
    for (std::size_t t = 0; t < gold.es.size(); ++t) {
        std::size_t pick = no_word;
        for (const std::vector<WordLink>* links : {&gold.sure, &gold.possible})
            for (const WordLink& l : *links)
                if (l.es == t && pick == no_word) pick = l.en;
        for (std::size_t e = 0; e < gold.en.size() && pick == no_word; ++e)
            if (!gold.is_possible(e, t)) pick = e;
        w[t][pick == no_word ? 0 : pick] = 1.0;
    }
    return score_word_weights(w, gold);
}

AlignmentScore score_attention(const WeightRows& piece_weights, const std::vector<std::size_t>& es_piece_words,
                               const std::vector<std::size_t>& en_piece_words, const HandAlignment& gold) {
    return score_word_weights(
        word_weights(piece_weights, es_piece_words, en_piece_words, gold.es.size(), gold.en.size()), gold);
}

}  // namespace attn::text
