// Exercise bleu: corpus-level BLEU (Papineni et al. 2002).
// Checked by lesson 13 (decoding), step [bleu]: a small example worked by hand, then the BLEU of
// lesson 12's three models by source length, which must match the golden file.
//
// Task: for candidate translations and their references (word ids, one reference per candidate,
// the same number of each), fill a BleuScore (src/nn/bleu.hpp), every count summed over the corpus:
//
//   1. for n = 1 .. 4 and each pair k: every n-gram g of the candidate (each run of n words in a
//      row) counts min(count(g, candidate_k), count(g, reference_k)) matches (clipped: a word said
//      five times where the reference has it twice matches twice); totals[n - 1] counts the
//      candidate's n-grams, matched or not (a sentence of m words has m - n + 1, or none)
//   2. precisions[n - 1] = matches / totals over the whole corpus (0 when totals is 0)
//   3. c = candidate words, r = reference words, over the corpus;
//      brevity_penalty = 1 if c > r, exp(1 - r / c) if 0 < c <= r, 0 if c = 0
//   4. bleu = brevity_penalty * exp((log p_1 + log p_2 + log p_3 + log p_4) / 4), and 0 when any
//      p_n is 0 (log 0 is -inf)
//
// Sum the counts first, divide once per n: corpus BLEU is not the mean of the sentences' BLEU.
// Use portable::exp and portable::log (core/portable_math.hpp), which give the same bits on every
// machine. Throw ShapeError (core/tensor.hpp) when the two lists differ in length.
// Available: std::map<std::vector<std::size_t>, double> counts n-grams (a vector compares word by
// word), std::min.
//
// Then: meson compile -C build attn-student && build/attn-student check bleu
#include "nn/bleu.hpp"

#include "core/portable_math.hpp"
#include "core/tensor.hpp"
#include "exercises/not_done.hpp"

#include <algorithm>
#include <map>

namespace attn::nn {

BleuScore bleu([[maybe_unused]] const std::vector<std::vector<std::size_t>>& candidates,
               [[maybe_unused]] const std::vector<std::vector<std::size_t>>& references) {
    throw ExerciseNotDone("bleu");
}

}  // namespace attn::nn
