// Exercise rope: rotary position embeddings, RoPE (Su et al. 2021, RoFormer, sections 3.2.2 and 3.4.2).
// Checked by lesson 15 (positions), steps [rope], [relative], [layouts] and [rope-cache]: the
// frequencies theta, every turned query and key, and the scores and cached decoding built from them
// must match the golden file.
//
// Task: write both functions (declared in src/nn/rotary.hpp).
//
//   rotary_frequencies(d):  theta_i = 10000^(-2i/d) = 1 / 10000^(2i/d),  i = 0 .. d/2 - 1
//
//   rotary_rotation(X, positions, layout): row t of X (T x d) is a query or key at position
//   p = positions[t]; turn each of its d/2 pairs (x, y) by the angle a = p theta_i:
//
//     (x, y) -> (x cos a - y sin a,  x sin a + y cos a)
//
//   Pair i is the columns (2i, 2i + 1) for RotaryLayout::interleaved (Su et al., GPT-J) and the
//   columns (i, i + d/2) for RotaryLayout::halves (GPT-NeoX, LLaMA). i counts the pairs, not the
//   columns, and position 0 is no turn at all.
//
// Throw ShapeError (core/tensor.hpp) in both when d is 0 or odd, and in rotary_rotation when
// positions does not hold one position per row. T = 0 rows give a 0 x d matrix.
// Available: portable::sin, portable::cos and portable::pow10000(x) = 10000^x (core/portable_math.hpp:
// attn's own, the reference's; std::sin, std::cos and std::pow pass too, within the tolerance),
// xt::empty<double>({T, d}), element access M(t, c). The overload rotary_rotation(X, first, layout)
// is attn's: it calls yours with the positions first, first + 1, ...
//
// Then: meson compile -C build attn-student && build/attn-student check rope
#include "nn/rotary.hpp"

#include "exercises/not_done.hpp"
#include "core/portable_math.hpp"

#include <cmath>
#include <string>

namespace attn::nn {

Vec rotary_frequencies([[maybe_unused]] std::size_t d) {
    throw ExerciseNotDone("rope");
}

Mat rotary_rotation([[maybe_unused]] const Mat& X, [[maybe_unused]] const std::vector<std::size_t>& positions,
                    [[maybe_unused]] RotaryLayout layout) {
    throw ExerciseNotDone("rope");
}

}  // namespace attn::nn
