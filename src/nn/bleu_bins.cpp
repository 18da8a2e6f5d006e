// BLEU by bins of sentences (see nn/bleu_bins.hpp).
#include "nn/bleu_bins.hpp"

#include "nn/bleu.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

namespace attn::nn {

BleuByBins bleu_by_bins(const std::vector<std::vector<std::vector<std::size_t>>>& candidates,
                        const std::vector<std::vector<std::size_t>>& references, const std::vector<std::size_t>& bins,
                        std::size_t B) {
    if (bins.size() != references.size())
        throw ShapeError("bleu_by_bins: " + std::to_string(bins.size()) + " bins for " +
                         std::to_string(references.size()) + " sentences");
    BleuByBins out{xt::zeros<double>({B + 1, candidates.size()}), xt::zeros<double>({B}), 0.0};
    for (const std::size_t b : bins) {
        if (b >= B) throw ShapeError("bleu_by_bins: bin " + std::to_string(b) + " of " + std::to_string(B));
        out.counts(b) += 1.0;
    }
    for (std::size_t m = 0; m < candidates.size(); ++m) {
        std::vector<std::vector<std::vector<std::size_t>>> cand(B), ref(B);
        for (std::size_t k = 0; k < references.size(); ++k) {
            cand[bins[k]].push_back(candidates[m].at(k));
            ref[bins[k]].push_back(references[k]);
        }
        const BleuScore all = bleu(candidates[m], references);
        std::array<double, 4> matches{}, totals{};
        for (std::size_t b = 0; b < B; ++b) {
            if (cand[b].empty()) continue;
            const BleuScore s = bleu(cand[b], ref[b]);
            out.scores(b, m) = 100.0 * s.bleu;
            for (std::size_t n = 0; n < 4; ++n) {
                matches[n] += s.matches[n];
                totals[n] += s.totals[n];
            }
        }
        out.scores(B, m) = 100.0 * all.bleu;
        for (std::size_t n = 0; n < 4; ++n)
            out.pooling_gap = std::max({out.pooling_gap, std::abs(matches[n] - all.matches[n]),
                                        std::abs(totals[n] - all.totals[n])});
    }
    return out;
}

}  // namespace attn::nn
