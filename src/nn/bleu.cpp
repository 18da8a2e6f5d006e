// Corpus-level BLEU (see nn/bleu.hpp).
// The classroom exercise bleu; the student's version is lessons/exercises/bleu.cpp.
#include "nn/bleu.hpp"

#include "core/portable_math.hpp"
#include "core/tensor.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace attn::nn {

namespace {

using NgramCounts = std::map<std::vector<std::size_t>, double>;

// How often each n-gram of `words` occurs in it.
NgramCounts ngram_counts(const std::vector<std::size_t>& words, std::size_t n) {
    NgramCounts counts;
    for (std::size_t i = 0; i + n <= words.size(); ++i)
        counts[std::vector<std::size_t>(words.begin() + static_cast<std::ptrdiff_t>(i),
                                        words.begin() + static_cast<std::ptrdiff_t>(i + n))] += 1.0;
    return counts;
}

}  // namespace

BleuScore bleu(const std::vector<std::vector<std::size_t>>& candidates,
               const std::vector<std::vector<std::size_t>>& references) {
    if (candidates.size() != references.size())
        throw ShapeError("bleu: " + std::to_string(candidates.size()) + " candidates for " +
                         std::to_string(references.size()) + " references");
    BleuScore s;
    // 1. the counts, summed over the corpus: each candidate n-gram clipped to its reference's count
    for (std::size_t k = 0; k < candidates.size(); ++k) {
        s.candidate_length += static_cast<double>(candidates[k].size());
        s.reference_length += static_cast<double>(references[k].size());
        for (std::size_t n = 1; n <= 4; ++n) {
            const NgramCounts reference = ngram_counts(references[k], n);
            for (const auto& [gram, count] : ngram_counts(candidates[k], n)) {
                const auto found = reference.find(gram);
                s.matches[n - 1] += found == reference.end() ? 0.0 : std::min(count, found->second);
                s.totals[n - 1] += count;
            }
        }
    }
    // 2. the precisions and the brevity penalty of the corpus
    for (std::size_t n = 0; n < 4; ++n) s.precisions[n] = s.totals[n] > 0.0 ? s.matches[n] / s.totals[n] : 0.0;
    const double c = s.candidate_length, r = s.reference_length;
    s.brevity_penalty = c == 0.0 ? 0.0 : c > r ? 1.0 : portable::exp(1.0 - r / c);
    // 3. their geometric mean, 0 when one of them is 0
    if (*std::min_element(s.precisions.begin(), s.precisions.end()) == 0.0) return s;
    double log_sum = 0.0;
    for (std::size_t n = 0; n < 4; ++n) log_sum += portable::log(s.precisions[n]);
    s.bleu = s.brevity_penalty * portable::exp(log_sum / 4.0);
    return s;
}

}  // namespace attn::nn
