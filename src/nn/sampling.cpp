// Temperature, top-k, top-p and one draw (see nn/sampling.hpp). V = vocabulary.
#include "nn/sampling.hpp"

#include "core/portable_math.hpp"

#include <algorithm>
#include <sstream>
#include <cmath>
#include <stdexcept>
#include <string>

namespace attn::nn {

namespace {

// x in a message, with 6 significant digits ("1e-300", "-0.5", "nan").
std::string shown(double x) {
    std::ostringstream out;
    out << x;
    return out.str();
}

void expect_distribution(const Vec& p, const char* who) {
    double sum = 0.0;
    for (std::size_t j = 0; j < p.size(); ++j) {
        if (!std::isfinite(p(j)) || p(j) < 0.0)
            throw std::invalid_argument(std::string(who) + ": entry " + std::to_string(j) +
                                        " is not a probability (negative, infinite or NaN)");
        sum += p(j);
    }
    if (p.size() == 0 || !(sum > 0.0))
        throw std::invalid_argument(std::string(who) + ": the distribution has no mass");
}

// p on the first `kept` indices of `order`, 0 elsewhere, divided by their sum in that order.
Vec kept_on(const Vec& p, const std::vector<std::size_t>& order, std::size_t kept) {
    double mass = 0.0;
    for (std::size_t r = 0; r < kept; ++r) mass += p(order[r]);
    Vec q = xt::zeros<double>({p.size()});
    for (std::size_t r = 0; r < kept; ++r) q(order[r]) = p(order[r]) / mass;
    return q;
}

}  // namespace

Vec with_temperature(const Vec& p, double temperature) {
    if (!(temperature > 0.0) || !std::isfinite(temperature))
        throw std::invalid_argument("temperature: T must be a finite number above 0, not " +
                                    shown(temperature));
    expect_distribution(p, "temperature");
    const double top = portable::log(p(ranked(p)[0]));
    Vec q = xt::empty<double>({p.size()});
    double sum = 0.0;
    for (std::size_t j = 0; j < p.size(); ++j) {
        q(j) = p(j) == 0.0 ? 0.0 : portable::exp((portable::log(p(j)) - top) / temperature);
        sum += q(j);
    }
    for (std::size_t j = 0; j < p.size(); ++j) q(j) = q(j) / sum;
    return q;
}

std::vector<std::size_t> ranked(const Vec& p) {
    std::vector<std::size_t> order(p.size());
    for (std::size_t j = 0; j < order.size(); ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p(a) > p(b); });
    return order;
}

Vec top_k(const Vec& p, std::size_t k) {
    expect_distribution(p, "top-k");
    if (k == 0 || k > p.size())
        throw std::invalid_argument("top-k: k = " + std::to_string(k) + " must be between 1 and the " +
                                    std::to_string(p.size()) + " entries");
    return kept_on(p, ranked(p), k);
}

Vec top_p(const Vec& p, double mass) {
    expect_distribution(p, "top-p");
    if (!(mass > 0.0 && mass <= 1.0))
        throw std::invalid_argument("top-p: the mass p = " + shown(mass) + " must be in (0, 1]");
    const std::vector<std::size_t> order = ranked(p);
    double cumulative = 0.0;
    std::size_t kept = 0;
    while (kept < order.size() && cumulative < mass) cumulative += p(order[kept++]);
    return kept_on(p, order, kept);
}

std::size_t sampled(const Vec& p, double u) {
    expect_distribution(p, "sampling");
    if (!(u >= 0.0 && u < 1.0)) throw std::invalid_argument("sampling: u = " + shown(u) + " must be in [0, 1)");
    double cumulative = 0.0;
    std::size_t last = 0;
    for (std::size_t j = 0; j < p.size(); ++j) {
        if (p(j) > 0.0) last = j;
        cumulative += p(j);
        if (cumulative > u && p(j) > 0.0) return j;
    }
    return last;
}

}  // namespace attn::nn
