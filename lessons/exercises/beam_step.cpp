// Exercise beam-step: one step of beam search (Sutskever et al. 2014, section 3.1).
// Checked by lesson 13 (decoding), step [beam]: with width 1 beam search must give greedy decoding
// exactly, and its translations of the test set must match the golden file.
//
// Task: for the hypotheses kept so far (declared in src/nn/beam_search.hpp: words, log_prob,
// finished), their next word's log-probabilities log_probs (one row per hypothesis, V columns;
// rows of finished hypotheses are not to be read), the id of <eos> and the beam width k, return the
// k best candidates, best first:
//
//   - an unfinished hypothesis b extended by word w, for every w: words + [w], score
//     log_prob_b + log_probs(b, w), finished when w is <eos>
//   - a finished hypothesis as it is, with its own score (it is never extended)
//
// ranked by score over all candidates together (not the best few of each hypothesis), ties to the
// earlier candidate in the order hypothesis by hypothesis, words by id (std::stable_sort keeps it).
// Scores are sums of logs: multiplying probabilities instead underflows to 0 after a few hundred
// words, and then every candidate ties. Throw ShapeError (core/tensor.hpp) when log_probs does not
// have one row per hypothesis.
//
// Then: meson compile -C build attn-student && build/attn-student check beam-step
#include "nn/beam_search.hpp"

#include "exercises/not_done.hpp"

#include <algorithm>

namespace attn::nn {

std::vector<Hypothesis> beam_step([[maybe_unused]] const std::vector<Hypothesis>& beams,
                                  [[maybe_unused]] const Mat& log_probs, [[maybe_unused]] std::size_t eos,
                                  [[maybe_unused]] std::size_t width) {
    throw ExerciseNotDone("beam-step");
}

}  // namespace attn::nn
