// BLEU (Papineni et al. 2002): how many of a candidate translation's word n-grams (n = 1 .. 4) its
// reference holds, counted with clipping, over a whole corpus, times a penalty for candidates
// shorter than their references. One reference per candidate here. Sentences are word ids
// (without <sos> and <eos>); c / r = candidate / reference words summed over the corpus.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace attn::nn {

// A corpus's BLEU and what it is made of, every count summed over the corpus's sentence pairs.
struct BleuScore {
    // n = 1 .. 4 at [n - 1]: the candidates' n-grams found in their references, each counted at
    // most as often as its reference holds it (clipped), and the candidates' n-grams in all
    std::array<double, 4> matches{}, totals{};
    std::array<double, 4> precisions{};  // p_n = matches / totals; 0 when totals is 0
    double candidate_length = 0.0;       // c
    double reference_length = 0.0;       // r
    double brevity_penalty = 0.0;        // 1 if c > r, exp(1 - r / c) if 0 < c <= r, 0 if c = 0
    double bleu = 0.0;                   // BP exp(sum_n log(p_n) / 4); 0 when any p_n is 0
};

// Corpus-level BLEU of candidates[k] against references[k] (Papineni et al. 2002, section 2.3):
//   p_n  = sum_k sum_{g in n-grams(cand_k)} min(count(g, cand_k), count(g, ref_k))
//          / sum_k |n-grams(cand_k)|
//   BP   = 1 if c > r, else exp(1 - r / c)
//   BLEU = BP exp(sum_{n=1..4} (1/4) log p_n)
// The counts are summed over the corpus before any division: corpus BLEU is not the mean of the
// sentences' BLEU. A p_n of 0 (no n-gram matched, or no candidate as long as n words) makes BLEU 0,
// the limit of the geometric mean, instead of log 0; an empty candidate corpus (c = 0) has BP 0 and
// BLEU 0. exp and log are portable:: (the same bits everywhere). Throws ShapeError (core/tensor.hpp)
// when the two lists differ in length.
// The classroom exercise bleu (src/nn/bleu.cpp).
BleuScore bleu(const std::vector<std::vector<std::size_t>>& candidates,
               const std::vector<std::vector<std::size_t>>& references);

}  // namespace attn::nn
