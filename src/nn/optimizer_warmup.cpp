// The Transformer's learning-rate schedule (see nn/optimizer.hpp). The classroom exercise
// warmup-schedule; the student's version is lessons/exercises/warmup_schedule.cpp.
#include "nn/optimizer.hpp"

#include <cmath>
#include <stdexcept>

namespace attn::nn {

double warmup_learning_rate(std::size_t step, std::size_t d_model, std::size_t warmup) {
    if (step == 0 || d_model == 0 || warmup == 0)
        throw std::invalid_argument("warmup_learning_rate: step, d_model and warmup start at 1");
    const double s = static_cast<double>(step), w = static_cast<double>(warmup);
    // s^-0.5 and s w^-1.5 from sqrt alone (exact in IEEE 754), no pow()
    const double decay = 1.0 / std::sqrt(s), rise = s / (w * std::sqrt(w));
    return (decay < rise ? decay : rise) / std::sqrt(static_cast<double>(d_model));
}

}  // namespace attn::nn
