// BLEU by bins of sentences (Bahdanau et al. 2015, figure 2: BLEU by source length), from nn::bleu
// (nn/bleu.hpp) of each bin and of the whole corpus. Kept apart from nn/bleu.hpp, the bleu exercise's
// header, which needs no tensors.
#pragma once

#include "core/tensor.hpp"

#include <cstddef>
#include <vector>

namespace attn::nn {

// For several systems at once: candidates[m][k] is system m's translation of sentence k, bins[k] < B the
// bin of sentence k; throws ShapeError when a bin is B or more, or bins and references differ in length.
struct BleuByBins {
    Mat scores;  // (B + 1) x systems: BLEU x 100 of each system over bin b's sentences (0 for an empty
                 // bin); row B: over every sentence
    Vec counts;  // B: sentences in each bin
    // the largest difference between the bins' matched and total n-gram counts summed and the whole
    // corpus's (0: corpus BLEU pools the counts, and every sentence is in one bin)
    double pooling_gap = 0.0;
};
BleuByBins bleu_by_bins(const std::vector<std::vector<std::vector<std::size_t>>>& candidates,
                        const std::vector<std::vector<std::size_t>>& references, const std::vector<std::size_t>& bins,
                        std::size_t B);

}  // namespace attn::nn
