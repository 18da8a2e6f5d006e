// Exercise warmup-schedule: the Transformer's learning rate (Vaswani et al. 2017, section 5.3).
// Checked by lesson 12 (transformer), step [schedule] (every Adam step of the Transformer takes its
// rate from it, but training amplifies a last-bit difference, so it is checked before training).
//
// Task: write warmup_learning_rate (declared in src/nn/optimizer.hpp):
//
//   lr(step) = d_model^-0.5 min(step^-0.5, step warmup^-1.5)
//
// `step` counts Adam's steps from 1 (the first step is step 1, and its rate is not 0). The rate
// grows linearly up to step = warmup, where both branches meet at d_model^-0.5 warmup^-0.5, then
// falls like 1 / sqrt(step). Throw std::invalid_argument when step, d_model or warmup is 0.
// Use std::sqrt and divisions only (x^-0.5 = 1 / sqrt(x), x^-1.5 = 1 / (x sqrt(x))), in the
// order the reference uses: 1 / sqrt(step), step / (warmup sqrt(warmup)), the smaller one, then
// divided by sqrt(d_model): training compares the weights bit for bit.
//
// Then: meson compile -C build attn-student && build/attn-student check warmup-schedule
#include "nn/optimizer.hpp"

#include "exercises/not_done.hpp"

namespace attn::nn {

double warmup_learning_rate([[maybe_unused]] std::size_t step, [[maybe_unused]] std::size_t d_model,
                            [[maybe_unused]] std::size_t warmup) {
    throw ExerciseNotDone("warmup-schedule");
}

}  // namespace attn::nn
