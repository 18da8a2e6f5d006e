// Training a model's weights from their gradients: Adam and gradient clipping, as plain functions
// over contiguous blocks of numbers (a model hands out its weights and gradients as such blocks,
// in one fixed order, so the same code trains any model).
// n = numbers in one block.
#pragma once

#include <cstddef>
#include <vector>

namespace attn::nn {

// One contiguous block of numbers of a model (a weight or its gradient).
struct Block {
    double* data;
    std::size_t size;
};

// Adam's settings — Kingma & Ba 2015, Algorithm 1 (their defaults but the learning rate).
struct AdamSettings {
    double learning_rate = 0.01;  // alpha
    double beta1 = 0.9;           // decay of the first moment (the mean of the gradients)
    double beta2 = 0.999;         // decay of the second moment (the mean of their squares)
    double epsilon = 1e-8;        // keeps the step finite where the second moment is 0
};

// One Adam step on n weights theta with gradient g — Kingma & Ba 2015, Algorithm 1:
//   m <- beta1 m + (1 - beta1) g,        v <- beta2 v + (1 - beta2) g^2,
//   theta <- theta - alpha (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + epsilon)
// entry by entry. beta1_power = beta1^t and beta2_power = beta2^t for the step t = 1, 2, ..: the
// caller keeps them by multiplying, so no pow() (whose last bit is the library's) is needed.
void adam_step(double* theta, const double* g, double* m, double* v, std::size_t n, const AdamSettings& settings,
               double beta1_power, double beta2_power);

// The norm of all gradients together, sqrt(sum of every g^2), summed block by block in order.
double global_norm(const std::vector<Block>& grads);

// Gradient clipping — Pascanu et al. 2013, section 3.2 (algorithm 1): when the norm of all
// gradients together exceeds `threshold`, scale every one by threshold / norm, so that a rare
// exploding gradient moves the weights no further than a typical one. Returns the norm before.
double clip_by_global_norm(const std::vector<Block>& grads, double threshold);

// lr = d_model^-0.5 min(step^-0.5, step warmup^-1.5)   — Vaswani et al. 2017, section 5.3, eq. 3:
// linear growth for the first `warmup` steps, then decay with the inverse square root of the step;
// the two branches meet at step = warmup, the peak d_model^-0.5 warmup^-0.5. `step` counts Adam's
// steps from 1 (the first step gets d_model^-0.5 warmup^-1.5, not 0); step, d_model and warmup >= 1,
// else std::invalid_argument. The classroom exercise warmup-schedule (src/nn/optimizer_warmup.cpp).
double warmup_learning_rate(std::size_t step, std::size_t d_model, std::size_t warmup);

}  // namespace attn::nn
