// Sampling the next word from a decoder's distribution instead of taking the most likely one: the
// temperature (Ackley et al. 1985's Boltzmann form, as language models use it), top-k sampling
// (Fan et al. 2018) and nucleus or top-p sampling (Holtzman et al. 2020), each a renormalised
// distribution, and one draw by the inverse of the cumulative distribution.
// V = vocabulary (entries of a distribution).
#pragma once

#include "core/tensor.hpp"

#include <cstddef>
#include <vector>

namespace attn::nn {

// q_j = p_j^(1/T) / sum_k p_k^(1/T) = softmax(log p / T)_j: T < 1 sharpens, T > 1 flattens, T = 1
// gives p back (to rounding). Computed as exp((log p_j - log p_max) / T) over their sum (the sum in
// the order of j), so that T -> 0 leaves weight only on the largest entries (split equally among
// equal ones). p_j = 0 stays 0. std::invalid_argument unless T > 0 and p is a non-empty
// distribution of finite entries >= 0 with some mass.
Vec with_temperature(const Vec& p, double temperature);

// The entries' indices by p descending, equal entries by index ascending: the order top-k and
// top-p keep from, the same on every machine.
std::vector<std::size_t> ranked(const Vec& p);

// p with every entry but the first k of ranked(p) set to 0, divided by the mass kept (summed in
// ranked order): top-k sampling (Fan et al. 2018). Exactly k entries are kept, ties decided by the
// index. std::invalid_argument unless 1 <= k <= V.
Vec top_k(const Vec& p, std::size_t k);

// p kept on the shortest prefix of ranked(p) whose mass (summed in ranked order) reaches `mass`,
// the rest set to 0, divided by that mass: nucleus sampling (Holtzman et al. 2020). Every entry is
// kept when rounding leaves the whole sum below `mass`. std::invalid_argument unless 0 < mass <= 1.
Vec top_p(const Vec& p, double mass);

// The word drawn from p by u in [0, 1): the first j with p_0 + .. + p_j > u (summed in the order
// of j), or the last entry above 0 when rounding leaves the whole sum at or below u. The caller
// draws u from its seeded generator (Rng::uniform), so the draws are the same everywhere.
std::size_t sampled(const Vec& p, double u);

}  // namespace attn::nn
