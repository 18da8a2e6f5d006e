#include "nn/multi_head.hpp"

#include <string>

namespace attn::nn {

std::size_t head_width(std::size_t d_model, std::size_t heads) {
    if (heads == 0 || d_model % heads != 0)
        throw ShapeError("multi-head attention: d_model = " + std::to_string(d_model) +
                         " is not divisible by h = " + std::to_string(heads) + " heads");
    return d_model / heads;
}

}  // namespace attn::nn
