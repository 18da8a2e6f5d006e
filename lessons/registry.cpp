#include "registry.hpp"

#include <algorithm>
#include <cctype>

namespace attn {

const std::vector<Lesson>& all_lessons() {
    static const std::vector<Lesson> lessons = {
        {1, "bottleneck", "The fixed-context bottleneck of seq2seq", "Sutskever et al. 2014; Cho et al. 2014",
         Config{7, {{"d", 6}, {"trials", 8}}}, lesson_bottleneck},
        {2, "additive", "Additive attention: a context for every word", "Bahdanau et al. 2015",
         Config{7, {{"d", 6}, {"n", 6}, {"u", 3}}}, lesson_additive},
        {3, "scores", "Score functions, scaling, local attention", "Luong et al. 2015; Vaswani et al. 2017",
         Config{7, {{"d", 6}, {"D", 2}, {"pairs", 2000}, {"queries", 400}, {"keys", 10}}}, lesson_scores},
        {4, "self-attention", "Self-attention: Q, K, V, masks and positions", "Lin et al. 2017; Vaswani et al. 2017",
         Config{7, {{"d", 6}, {"u", 3}, {"d_a", 4}, {"r", 3}, {"d_k", 4}}}, lesson_self_attention},
        {5, "gru-to-attention", "From a GRU to a self-attention layer",
         "Cho et al. 2014; Bahdanau et al. 2015; Vaswani et al. 2017", Config{7, {{"d", 4}, {"heads", 2}, {"d_ff", 8}}},
         lesson_gru_to_attention},
        {6, "multi-head", "Multi-head attention", "Vaswani et al. 2017",
         Config{7, {{"d_model", 6}, {"h", 2}}}, lesson_multi_head},
    };
    return lessons;
}

const Lesson* find_lesson(const std::string& name) {
    const bool numeric = !name.empty() && name.size() <= 3 &&
                         std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c); });
    for (const auto& lesson : all_lessons()) {
        if (numeric ? std::stoi(name) == lesson.number : name == lesson.slug) return &lesson;
    }
    return nullptr;
}

Trace run_lesson(const Lesson& lesson, const Config& config) {
    Trace trace(lesson.slug, config);
    lesson.fn(trace, config);
    return trace;
}

}  // namespace attn
