#include "text/corpus.hpp"

#include "text/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace attn::text {

namespace {

// The code point at s[i] and its length in bytes; throws BibleError on invalid UTF-8.
char32_t decode_at(std::string_view s, std::size_t i, std::size_t& length) {
    length = utf8_sequence_length(s, i);
    if (length == 0)
        throw BibleError(fmt::format("invalid UTF-8 at byte {} (0x{:02X}), after \"{}\"", i,
                                     static_cast<unsigned char>(s[i]), s.substr(i > 60 ? i - 60 : 0, std::min<std::size_t>(i, 60))));
    return utf8_code_point(s, i, length);
}

bool is_word_code_point(char32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    return c >= 0xC0 && c != 0xD7 && c != 0xF7;
}

// Calls on_word(word) for each word of `text` in turn, as words_of cuts them, in `word` (reused: no
// string per word).
template <typename OnWord>
void each_word(std::string_view text, std::string& word, OnWord on_word) {
    word.clear();
    for (std::size_t i = 0; i < text.size();) {
        std::size_t length = 0;
        const char32_t c = decode_at(text, i, length);
        if (is_word_code_point(c)) {
            for (std::size_t k = 0; k < length; ++k) {
                const char b = text[i + k];
                word += length == 1 && b >= 'A' && b <= 'Z' ? static_cast<char>(b - 'A' + 'a') : b;
            }
        } else if (!word.empty()) {
            on_word(word);
            word.clear();
        }
        i += length;
    }
    if (!word.empty()) on_word(word);
}

// Four words as their numbers in a vocabulary built on the way (unordered_map keys, hashed below). A
// verse of fewer than four words is compared whole (see the header): its words, then a marker of its
// length in the last slot, which no word's number reaches.
using Gram = std::array<std::uint32_t, 4>;

struct GramHash {
    std::size_t operator()(const Gram& g) const noexcept {
        std::uint64_t h = 0x9E3779B97F4A7C15ULL;
        for (const std::uint32_t v : g) h = (h ^ v) * 0x100000001B3ULL;
        return static_cast<std::size_t>(h ^ (h >> 29));
    }
};

class GramMaker {
public:
    // the distinct 4-grams of a text, sorted; words as words_of cuts them, numbered without a string per word
    std::vector<Gram> grams(std::string_view text) {
        ids_.clear();
        each_word(text, word_, [&](const std::string& w) {
            auto it = numbers_.find(w);
            if (it == numbers_.end()) it = numbers_.emplace(w, static_cast<std::uint32_t>(numbers_.size())).first;
            ids_.push_back(it->second);
        });
        std::vector<Gram> out;
        if (ids_.size() < 4) {
            Gram whole{0, 0, 0, 0xFFFFFFF0u + static_cast<std::uint32_t>(ids_.size())};
            for (std::size_t k = 0; k < ids_.size(); ++k) whole[k] = ids_[k];
            out.push_back(whole);
            return out;
        }
        for (std::size_t k = 0; k + 4 <= ids_.size(); ++k) out.push_back({ids_[k], ids_[k + 1], ids_[k + 2], ids_[k + 3]});
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        return out;
    }

private:
    std::unordered_map<std::string, std::uint32_t> numbers_;
    std::vector<std::uint32_t> ids_;
    std::string word_;
};

}  // namespace

std::vector<std::string> words_of(std::string_view text) {
    std::vector<std::string> words;
    std::string word;
    each_word(text, word, [&](const std::string& w) { words.push_back(w); });
    return words;
}

std::size_t word_count(std::string_view text) {
    std::size_t n = 0;
    std::string word;
    each_word(text, word, [&](const std::string&) { ++n; });
    return n;
}

const BookSplit& book_split() {
    static const BookSplit split{{"Ruth", "Esther", "Daniel"}, {"John"}};
    return split;
}

CorpusSplit split_by_books(const std::vector<VersePair>& pairs, const BookSplit& rule) {
    std::map<std::string, int> where;  // 1 validation, 2 test
    for (const std::string& b : rule.validation) where[b] = 1;
    for (const std::string& b : rule.test) {
        if (where.count(b)) throw BibleError(fmt::format("the book {} is both a validation and a test book", b));
        where[b] = 2;
    }
    std::set<std::string> seen;
    CorpusSplit out;
    for (const VersePair& p : pairs) {
        const std::string book = book_of(p.ref);
        const auto it = where.find(book);
        if (it == where.end()) {
            out.train.push_back(p);
            continue;
        }
        seen.insert(book);
        (it->second == 1 ? out.validation : out.test).push_back(p);
    }
    for (const auto& [book, set] : where)
        if (!seen.count(book))
            throw BibleError(fmt::format("no verse of the {} book {} was read: is the name spelt as SWORD spells it?",
                                         set == 1 ? "validation" : "test", book));
    return out;
}

std::vector<std::size_t> near_duplicates(const std::vector<VersePair>& candidates,
                                         const std::vector<VersePair>& reference) {
    // every 4-gram of the reference, with the verses that hold it; then for each candidate, the
    // reference verses it shares a 4-gram with, and how many
    // the candidates' 4-grams (the smaller set: a test book) in a table, then every reference verse
    // counted against them, each (candidate, reference) pair's shared 4-grams once
    GramMaker maker;
    std::vector<std::size_t> sizes(candidates.size());
    std::unordered_map<Gram, std::vector<std::uint32_t>, GramHash> holders;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const std::vector<Gram> grams = maker.grams(candidates[i].en);
        sizes[i] = grams.size();
        for (const Gram& g : grams) holders[g].push_back(static_cast<std::uint32_t>(i));
    }
    std::vector<bool> near(candidates.size(), false);
    std::vector<std::size_t> shared(candidates.size(), 0);
    std::vector<std::uint32_t> touched;
    for (const VersePair& r : reference) {
        const std::vector<Gram> grams = maker.grams(r.en);
        touched.clear();
        for (const Gram& g : grams) {
            const auto it = holders.find(g);
            if (it != holders.end())
                for (const std::uint32_t i : it->second)
                    if (shared[i]++ == 0) touched.push_back(i);
        }
        // |A ∩ B| / |A ∪ B| >= 1/2  <=>  2 |A ∩ B| >= |A| + |B| - |A ∩ B|
        for (const std::uint32_t i : touched) {
            if (3 * shared[i] >= sizes[i] + grams.size()) near[i] = true;
            shared[i] = 0;
        }
    }
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < candidates.size(); ++i)
        if (near[i]) out.push_back(i);
    return out;
}

std::string alphabet(const std::vector<VersePair>& pairs) {
    // a character seen is not looked up again
    std::set<std::string> characters;
    std::vector<unsigned char> seen(0x110000, 0);
    for (const VersePair& p : pairs)
        for (const std::string* side : {&p.en, &p.es})
            for (std::size_t i = 0; i < side->size();) {
                std::size_t length = 0;
                const char32_t c = decode_at(*side, i, length);
                if (c != U' ' && !seen[c]) {
                    seen[c] = 1;
                    characters.insert(side->substr(i, length));
                }
                i += length;
            }
    std::string out;
    for (const std::string& ch : characters) out += ch;
    return out;
}

std::vector<std::size_t> length_histogram(const std::vector<VersePair>& pairs, bool english, std::size_t width,
                                          std::size_t bins) {
    if (width == 0 || bins == 0) throw std::invalid_argument("length_histogram: the width and the bins must be at least 1");
    std::vector<std::size_t> counts(bins, 0);
    for (const VersePair& p : pairs) {
        const std::size_t n = word_count(english ? p.en : p.es);
        ++counts[std::min(n / width, bins - 1)];
    }
    return counts;
}

}  // namespace attn::text
