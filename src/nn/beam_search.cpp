// Beam search with the key-value cache, and the length penalty (see nn/beam_search.hpp).
// k = beam width, V = target vocabulary.
#include "nn/beam_search.hpp"

#include "core/portable_math.hpp"
#include "nn/kv_cache.hpp"

#include <algorithm>

namespace attn::nn {

double length_penalty(std::size_t length, double alpha) {
    if (alpha == 0.0) return 1.0;
    return portable::exp(alpha * portable::log((5.0 + static_cast<double>(length)) / 6.0));
}

std::vector<Hypothesis> beam_search(const EncoderDecoder& m, const Mat& H, std::size_t sos, std::size_t eos,
                                    std::size_t width, std::size_t max_words, double alpha) {
    DecodingWork work;
    std::vector<Hypothesis> beams = {Hypothesis{}};
    std::vector<DecoderCache> caches = {start_decoder_cache(m, H, work)};
    const std::size_t V = m.W_o.shape(0);
    // max_words steps at most: an unfinished hypothesis then has max_words words and stops as it is
    for (std::size_t step = 0; step < max_words; ++step) {
        // the next word's log-probabilities of every unfinished hypothesis, each with its own cache
        Mat log_probs = xt::zeros<double>({beams.size(), V});
        for (std::size_t b = 0; b < beams.size(); ++b) {
            if (beams[b].finished) continue;
            const std::size_t last = beams[b].words.empty() ? sos : beams[b].words.back();
            const Vec p = cached_decoder_step(m, caches[b], last, work);
            for (std::size_t w = 0; w < V; ++w) log_probs(b, w) = portable::log(p(w));
        }
        std::vector<Hypothesis> next = beam_step(beams, log_probs, eos, width);
        // each kept hypothesis takes the cache of the one it extends (its words but the last, or all of
        // them when it was kept as it is)
        std::vector<DecoderCache> next_caches;
        for (const Hypothesis& h : next) {
            std::size_t from = 0;
            for (std::size_t b = 0; b < beams.size(); ++b) {
                const bool kept = beams[b].finished && h.words == beams[b].words;
                const bool extends = !beams[b].finished && h.words.size() == beams[b].words.size() + 1 &&
                                     std::equal(beams[b].words.begin(), beams[b].words.end(), h.words.begin());
                if (kept || extends) {
                    from = b;
                    break;
                }
            }
            next_caches.push_back(caches[from]);
        }
        beams = std::move(next);
        caches = std::move(next_caches);
        const bool done = std::all_of(beams.begin(), beams.end(), [](const Hypothesis& h) { return h.finished; });
        if (done) break;
    }
    std::stable_sort(beams.begin(), beams.end(), [&](const Hypothesis& a, const Hypothesis& b) {
        return a.log_prob / length_penalty(a.words.size(), alpha) > b.log_prob / length_penalty(b.words.size(), alpha);
    });
    return beams;
}

}  // namespace attn::nn
