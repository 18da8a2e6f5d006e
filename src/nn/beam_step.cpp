// One step of beam search (see nn/beam_search.hpp).
// The classroom exercise beam-step; the student's version is lessons/exercises/beam_step.cpp.
// k = beam width, V = target vocabulary.
#include "nn/beam_search.hpp"

#include <algorithm>
#include <string>

namespace attn::nn {

std::vector<Hypothesis> beam_step(const std::vector<Hypothesis>& beams, const Mat& log_probs, std::size_t eos,
                                  std::size_t width) {
    if (log_probs.shape(0) != beams.size())
        throw ShapeError("beam step: log_probs has " + std::to_string(log_probs.shape(0)) + " rows for " +
                         std::to_string(beams.size()) + " hypotheses");
    // 1. every candidate, in order: a finished hypothesis as it is, an unfinished one extended by every word
    struct Candidate {
        std::size_t beam, word;  // word == V: kept as it is
        double score;
    };
    const std::size_t V = log_probs.shape(1);
    std::vector<Candidate> candidates;
    for (std::size_t b = 0; b < beams.size(); ++b) {
        if (beams[b].finished) {
            candidates.push_back({b, V, beams[b].log_prob});
            continue;
        }
        for (std::size_t w = 0; w < V; ++w) candidates.push_back({b, w, beams[b].log_prob + log_probs(b, w)});
    }
    // 2. the highest scores first, ties in that order
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
    // 3. the best `width`
    std::vector<Hypothesis> out;
    for (std::size_t k = 0; k < std::min(width, candidates.size()); ++k) {
        const Candidate& c = candidates[k];
        Hypothesis h = beams[c.beam];
        if (c.word < V) {
            h.words.push_back(c.word);
            h.log_prob = c.score;
            h.finished = c.word == eos;
        }
        out.push_back(std::move(h));
    }
    return out;
}

}  // namespace attn::nn
