#include "text/bpe.hpp"

#include "text/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>

namespace attn::text {

namespace {

bool ascii_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// The runs of non-whitespace bytes of `text`. ASCII bytes never occur inside a multi-byte UTF-8
// sequence, so cutting bytes here never cuts a character.
std::vector<std::string_view> ascii_words(std::string_view text) {
    std::vector<std::string_view> words;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && ascii_space(text[i])) ++i;
        const std::size_t start = i;
        while (i < text.size() && !ascii_space(text[i])) ++i;
        if (i > start) words.push_back(text.substr(start, i - start));
    }
    return words;
}

// utf8_characters, its errors beginning with `where` ("sentences[3]: " or "").
std::vector<std::string> characters_of(std::string_view text, std::string_view where) {
    std::vector<std::string> characters;
    std::size_t i = 0;
    while (i < text.size()) {
        const std::size_t n = utf8_sequence_length(text, i);
        if (n == 0)
            throw BpeError(fmt::format("{}invalid UTF-8 at byte {} (0x{:02X})", where, i,
                                       static_cast<unsigned char>(text[i])));
        characters.emplace_back(text.substr(i, n));
        i += n;
    }
    return characters;
}

// split_words, its errors beginning with `where`.
std::vector<std::string> words_of(std::string_view sentence, std::string_view where) {
    characters_of(sentence, where);
    const std::size_t marker = sentence.find(word_start);
    if (marker != std::string_view::npos)
        throw BpeError(fmt::format("{}the meta symbol \u2581 (U+2581) at byte {}: it stands for a space, and "
                                   "decoding would turn it into one",
                                   where, marker));
    std::vector<std::string> words;
    for (const std::string_view w : ascii_words(sentence)) words.push_back(std::string(word_start) + std::string(w));
    return words;
}

std::size_t code_points(std::string_view utf8) {
    return static_cast<std::size_t>(
        std::count_if(utf8.begin(), utf8.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// How a1+a2 compares with b1+b2, byte by byte as unsigned values (-1, 0, 1), without joining them.
int compare_joined(std::string_view a1, std::string_view a2, std::string_view b1, std::string_view b2) {
    const std::size_t na = a1.size() + a2.size(), nb = b1.size() + b2.size();
    for (std::size_t i = 0; i < std::min(na, nb); ++i) {
        const auto ca = static_cast<unsigned char>(i < a1.size() ? a1[i] : a2[i - a1.size()]);
        const auto cb = static_cast<unsigned char>(i < b1.size() ? b1[i] : b2[i - b1.size()]);
        if (ca != cb) return ca < cb ? -1 : 1;
    }
    return na < nb ? -1 : na > nb ? 1 : 0;
}

// A pair as the tie rule sees it.
struct Ranked {
    std::size_t count;
    std::string_view left, right;
    std::size_t joined_code_points;
};

// The header's rules 1 to 4.
bool wins(const Ranked& a, const Ranked& b) {
    if (a.count != b.count) return a.count > b.count;
    if (a.joined_code_points != b.joined_code_points) return a.joined_code_points < b.joined_code_points;
    const int order = compare_joined(a.left, a.right, b.left, b.right);
    if (order != 0) return order < 0;
    return a.left.size() < b.left.size();
}

// The symbols met so far, by id; a string has one id however it was made.
struct Symbols {
    std::vector<std::string> text;
    std::vector<std::size_t> length;  // in code points
    std::unordered_map<std::string, int> id;

    int intern(const std::string& s) {
        const auto [it, added] = id.emplace(s, static_cast<int>(text.size()));
        if (added) {
            text.push_back(s);
            length.push_back(code_points(s));
        }
        return it->second;
    }
};

struct Word {
    std::vector<int> symbols;
    std::size_t count;
};

struct Candidate {
    int left, right;
    std::size_t count;
};

std::uint64_t pair_key(int left, int right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
}

// Replaces every (left, right) in `symbols` by `joined`, left to right (in "a a a" the first two);
// returns the replacements made.
template <typename Symbol>
std::size_t merge_pair(std::vector<Symbol>& symbols, const Symbol& left, const Symbol& right, const Symbol& joined) {
    std::size_t replaced = 0, out = 0;
    for (std::size_t i = 0; i < symbols.size(); ++out) {
        if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) {
            symbols[out] = joined;
            i += 2;
            ++replaced;
        } else {
            symbols[out] = symbols[i];
            ++i;
        }
    }
    symbols.resize(out);
    return replaced;
}

}  // namespace

std::vector<std::string> utf8_characters(std::string_view text) { return characters_of(text, ""); }

std::string normalize_spaces(std::string_view sentence) {
    std::string out;
    for (const std::string_view w : ascii_words(sentence)) {
        if (!out.empty()) out += ' ';
        out += w;
    }
    return out;
}

std::vector<std::string> split_words(std::string_view sentence) { return words_of(sentence, ""); }

std::vector<WordCount> count_words(const std::vector<std::string>& sentences) {
    std::map<std::string, std::size_t> counts;
    for (std::size_t s = 0; s < sentences.size(); ++s)
        for (std::string& w : words_of(sentences[s], fmt::format("sentences[{}]: ", s))) ++counts[std::move(w)];
    std::vector<WordCount> words;
    for (auto& [word, count] : counts) words.push_back({word, count});
    return words;
}

std::vector<CharacterCount> count_characters(const std::vector<WordCount>& words) {
    std::map<std::string, std::size_t> counts;
    for (const WordCount& w : words)
        for (std::string& c : characters_of(w.word, fmt::format("the word \"{}\": ", w.word)))
            counts[std::move(c)] += w.count;
    std::vector<CharacterCount> characters;
    for (auto& [character, count] : counts) characters.push_back({character, count});
    // std::string's < compares bytes as unsigned char, and UTF-8's byte order is code point order
    std::stable_sort(characters.begin(), characters.end(),
                     [](const CharacterCount& a, const CharacterCount& b) { return a.count > b.count; });
    return characters;
}

bool ranks_before(const PairCount& a, const PairCount& b) {
    return wins({a.count, a.left, a.right, code_points(a.left) + code_points(a.right)},
                {b.count, b.left, b.right, code_points(b.left) + code_points(b.right)});
}

BpeModel learn_bpe(const std::vector<std::string>& sentences, const BpeOptions& options) {
    if (options.merges == 0) throw BpeError("learn_bpe: 0 merges asked for (at least 1)");
    if (options.candidates == 0) throw BpeError("learn_bpe: 0 candidates per step asked for (at least 1)");
    const std::vector<WordCount> counted = count_words(sentences);
    if (counted.empty()) throw BpeError(fmt::format("learn_bpe: no word in the {} sentences", sentences.size()));

    BpeModel model;
    model.characters = count_characters(counted);
    Symbols symbols;
    std::vector<Word> words;
    for (const WordCount& w : counted) {
        Word word{{}, w.count};
        for (const std::string& c : characters_of(w.word, "")) word.symbols.push_back(symbols.intern(c));
        words.push_back(std::move(word));
    }

    const auto ranked = [&](const Candidate& c) {
        return Ranked{c.count, symbols.text[static_cast<std::size_t>(c.left)],
                      symbols.text[static_cast<std::size_t>(c.right)],
                      symbols.length[static_cast<std::size_t>(c.left)] +
                          symbols.length[static_cast<std::size_t>(c.right)]};
    };
    while (model.merges.size() < options.merges) {
        // 1. every adjacent pair of every word, weighted by the word's count (overlaps counted: get_stats)
        std::unordered_map<std::uint64_t, Candidate> pairs;
        for (const Word& w : words)
            for (std::size_t i = 0; i + 1 < w.symbols.size(); ++i) {
                const auto entry = pairs.try_emplace(pair_key(w.symbols[i], w.symbols[i + 1]),
                                                     Candidate{w.symbols[i], w.symbols[i + 1], 0});
                entry.first->second.count += w.count;
            }
        if (pairs.empty()) break;  // every word is one symbol

        // 2. the best few by the tie rule, which orders any two distinct pairs
        std::vector<Candidate> candidates;
        candidates.reserve(pairs.size());
        for (const auto& entry : pairs) candidates.push_back(entry.second);
        const std::size_t shown = std::min(options.candidates, candidates.size());
        std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(shown), candidates.end(),
                          [&](const Candidate& a, const Candidate& b) { return wins(ranked(a), ranked(b)); });

        // 3. the winner merged in every word
        const Candidate best = candidates.front();
        MergeStep step;
        for (std::size_t k = 0; k < shown; ++k) {
            const Candidate& c = candidates[k];
            step.candidates.push_back({symbols.text[static_cast<std::size_t>(c.left)],
                                       symbols.text[static_cast<std::size_t>(c.right)], c.count});
        }
        step.pair = step.candidates.front();
        const int joined = symbols.intern(step.pair.joined());
        for (Word& w : words) step.replaced += w.count * merge_pair(w.symbols, best.left, best.right, joined);
        model.merges.push_back(std::move(step));
    }
    return model;
}

std::vector<std::string> encode(const BpeModel& model, std::string_view sentence) {
    std::vector<std::string> pieces;
    for (const std::string& word : split_words(sentence)) {
        std::vector<std::string> symbols = characters_of(word, "");
        for (const MergeStep& m : model.merges) {
            if (symbols.size() == 1) break;
            merge_pair(symbols, m.pair.left, m.pair.right, m.pair.joined());
        }
        pieces.insert(pieces.end(), symbols.begin(), symbols.end());
    }
    return pieces;
}

std::string decode(const std::vector<std::string>& pieces) {
    std::string joined;
    for (const std::string& p : pieces) joined += p;
    std::string text;
    for (std::size_t i = 0; i < joined.size();) {
        const bool marker = joined.compare(i, word_start.size(), word_start) == 0;
        if (marker && i > 0) text += ' ';
        if (!marker) text += joined[i];
        i += marker ? word_start.size() : 1;
    }
    return text;
}

std::vector<std::string> sentencepiece_vocabulary(const BpeModel& model) {
    std::vector<std::string> vocabulary = {"<unk>", "<s>", "</s>"};
    std::set<std::string> merged;
    for (const MergeStep& m : model.merges)
        if (merged.insert(m.pair.joined()).second) vocabulary.push_back(m.pair.joined());
    for (const CharacterCount& c : model.characters) vocabulary.push_back(c.character);
    return vocabulary;
}

}  // namespace attn::text
