// Sinusoidal positional encoding.  T = positions, d = model width (even).
#pragma once

#include "core/tensor.hpp"

namespace attn::nn {

// PE(pos, 2i) = sin(pos / 10000^(2i/d)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d))
// — Vaswani et al. 2017, section 3.5. Positions count from 0. Throws for an odd d.
Mat sinusoidal_encoding(std::size_t T, std::size_t d);

// R_k, d x d: the block-diagonal rotation with PE(pos + k, .) = R_k PE(pos, .) for every pos, each
// pair (2i, 2i+1) turned by the angle k / 10000^(2i/d). Not an exercise (nn/positional_rotation.cpp):
// its entries are row k of sinusoidal_encoding, which it calls.
Mat offset_rotation(std::size_t d, std::size_t k);

}  // namespace attn::nn
