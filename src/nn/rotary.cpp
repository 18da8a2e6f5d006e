// Rotary position embeddings: the turn of a block of rows from a first position, and the column order
// between the two layouts (see nn/rotary.hpp). RoPE's frequencies and its turn at given positions are
// the exercise rope (nn/rotary_rotation.cpp), ALiBi's slopes and biases the exercise alibi-bias
// (nn/alibi_bias.cpp).
#include "nn/rotary.hpp"

#include <string>

namespace attn::nn {

namespace {

void expect_even_width(const char* what, std::size_t d) {
    if (d == 0 || d % 2 != 0)
        throw ShapeError(std::string(what) + ": RoPE turns coordinates in pairs, so the width d must be even and "
                                             "positive, got " +
                         std::to_string(d));
}

}  // namespace

Mat rotary_rotation(const Mat& X, std::size_t first, RotaryLayout layout) {
    std::vector<std::size_t> positions(X.shape(0));
    for (std::size_t t = 0; t < positions.size(); ++t) positions[t] = first + t;
    return rotary_rotation(X, positions, layout);
}

std::vector<std::size_t> halves_from_interleaved(std::size_t d) {
    expect_even_width("halves from interleaved", d);
    std::vector<std::size_t> order(d);
    for (std::size_t i = 0; i < d / 2; ++i) {
        order[i] = 2 * i;
        order[i + d / 2] = 2 * i + 1;
    }
    return order;
}

}  // namespace attn::nn
