// One Adam step — Kingma & Ba 2015, Algorithm 1 (the equations are in nn/optimizer.hpp).
// The classroom exercise adam-step; the student's version is lessons/exercises/adam_step.cpp.
// n = numbers in the block.
#include "nn/optimizer.hpp"

#include <cmath>

namespace attn::nn {

void adam_step(double* theta, const double* g, double* m, double* v, std::size_t n, const AdamSettings& settings,
               double beta1_power, double beta2_power) {
    // the moments start at 0, so early averages are too small by the factor 1 - beta^t: undo it
    const double correction1 = 1.0 - beta1_power, correction2 = 1.0 - beta2_power;
    for (std::size_t k = 0; k < n; ++k) {
        m[k] = settings.beta1 * m[k] + (1.0 - settings.beta1) * g[k];
        v[k] = settings.beta2 * v[k] + (1.0 - settings.beta2) * g[k] * g[k];
        const double m_hat = m[k] / correction1, v_hat = v[k] / correction2;
        theta[k] -= settings.learning_rate * m_hat / (std::sqrt(v_hat) + settings.epsilon);
    }
}

}  // namespace attn::nn
