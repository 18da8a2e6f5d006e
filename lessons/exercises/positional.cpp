// Exercise positional: the sinusoidal positional encoding (Vaswani et al. 2017, section 3.5).
// Checked by lesson 4 (self-attention), step [positions]: the T x d matrix PE must match the
// golden file (later steps and lesson 5 add it to the tokens).
//
// Task: return the T x d matrix (declared in src/nn/positional.hpp)
//
//   PE(pos, 2i)   = sin(pos / 10000^(2i/d))
//   PE(pos, 2i+1) = cos(pos / 10000^(2i/d))
//
// for pos = 0 .. T-1 and i = 0 .. d/2 - 1: columns 2i and 2i+1 share one angle. Throw
// ShapeError (core/tensor.hpp) when d is 0 or odd.
// Available: portable::sin, portable::cos and portable::pow10000(x) = 10000^x (core/portable_math.hpp:
// attn's own, the reference's; std::sin, std::cos and std::pow pass too, within the tolerance),
// xt::empty<double>({T, d}), element access M(p, c).
//
// Then: meson compile -C build attn-student && build/attn-student check positional
#include "nn/positional.hpp"

#include "exercises/not_done.hpp"
#include "core/portable_math.hpp"

#include <cmath>
#include <string>

namespace attn::nn {

Mat sinusoidal_encoding([[maybe_unused]] std::size_t T, [[maybe_unused]] std::size_t d) {
    throw ExerciseNotDone("positional");
}

}  // namespace attn::nn
