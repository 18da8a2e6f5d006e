// Gradient clipping (nn/optimizer.hpp); Adam is in optimizer_adam.cpp, the exercise adam-step.
#include "nn/optimizer.hpp"

#include <cmath>

namespace attn::nn {

double global_norm(const std::vector<Block>& grads) {
    double sum = 0.0;
    for (const Block& b : grads)
        for (std::size_t k = 0; k < b.size; ++k) sum += b.data[k] * b.data[k];
    return std::sqrt(sum);  // correctly rounded (IEEE 754): the same bits everywhere
}

double clip_by_global_norm(const std::vector<Block>& grads, double threshold) {
    const double norm = global_norm(grads);
    if (norm > threshold) {
        const double scale = threshold / norm;
        for (const Block& b : grads)
            for (std::size_t k = 0; k < b.size; ++k) b.data[k] *= scale;
    }
    return norm;
}

}  // namespace attn::nn
