// Sinusoidal positional encoding.  T = positions, d = model width (even).
#pragma once

#include "core/tensor.hpp"

namespace attn::nn {

// PE(pos, 2i) = sin(pos / 10000^(2i/d)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d))
// — Vaswani et al. 2017, section 3.5. Positions count from 0. Throws for an odd d.
Mat sinusoidal_encoding(std::size_t T, std::size_t d);

}  // namespace attn::nn
