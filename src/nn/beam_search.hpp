// Beam search (Sutskever et al. 2014, section 3.1; Graves 2012): the k most likely partial
// translations kept at every step instead of the one greedy choice, with Wu et al. 2016's length
// penalty for choosing among the finished ones. k = beam width, V = target vocabulary.
#pragma once

#include "core/tensor.hpp"
#include "nn/encoder_decoder.hpp"

#include <cstddef>
#include <vector>

namespace attn::nn {

// One partial translation.
struct Hypothesis {
    std::vector<std::size_t> words;  // its words after <sos>; the last is <eos> when finished
    double log_prob = 0.0;           // sum of the natural logs of its words' probabilities
    bool finished = false;           // it ended with <eos>: it is kept as it is
};

// One step of beam search: every unfinished hypothesis b is extended by every word w, scored
// log_prob_b + log_probs(b, w) (a sum of logs: a product of probabilities underflows to 0 after a
// few hundred words); a finished one is a candidate as it is; the `width` candidates of the highest
// scores are returned, highest first. Ties go to the earlier candidate in the order: hypothesis by
// hypothesis, words by id. A hypothesis extended by `eos` is finished. log_probs: one row per
// hypothesis (rows of finished ones are not read), V columns.
// The classroom exercise beam-step (src/nn/beam_step.cpp).
std::vector<Hypothesis> beam_step(const std::vector<Hypothesis>& beams, const Mat& log_probs, std::size_t eos,
                                  std::size_t width);

// Wu et al. 2016, eq. 14: lp(Y) = ((5 + |Y|) / 6)^alpha; a hypothesis is ranked by log p(Y) / lp(Y)
// (alpha = 0: by log p(Y) itself). |Y| counts its words and <eos>.
double length_penalty(std::size_t length, double alpha);

// Beam search with the decoder's key-value cache (nn/kv_cache.hpp), one cache per hypothesis: from
// <sos>, beam_step until the `width` best are all finished or max_words words are reached (then the
// unfinished ones count as they are). Returns the hypotheses of the last step, best first by
// log p / lp(alpha); the first one's words, without <eos>, are the translation.
std::vector<Hypothesis> beam_search(const EncoderDecoder& m, const Mat& H, std::size_t sos, std::size_t eos,
                                    std::size_t width, std::size_t max_words, double alpha);

}  // namespace attn::nn
