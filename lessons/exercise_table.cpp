#include "exercise_table.hpp"

#include <algorithm>

namespace attn {

const std::vector<Exercise>& all_exercises() {
    // Lesson 1 runs the GRU before the softmax, so gru-step comes first: a student working down
    // the list can see each exercise pass before starting the next.
    static const std::vector<Exercise> exercises = {
        {"gru-step", "One step of a gated recurrent unit", "bottleneck", {"encoder"}, {},
         {"Four equations, in order (Cho et al. 2014, eqs. 5-8; the starter lists\n"
          "them): the gates z_t and r_t from x_t and h_{t-1}, then the candidate\n"
          "h~_t, which needs r_t, then the new state h_t.",
          "Each gate is sigmoid(matvec(W, x) + matvec(U, h_prev) + b). The reset\n"
          "gate scales h_{t-1} before U_h sees it: U_h (r_t * h_{t-1}). PyTorch's\n"
          "nn.GRU computes r_t * (U_h h_{t-1}) instead, a different function.",
          "Which state does z_t weigh? Here the old one: h_t = z_t * h_{t-1} +\n"
          "(1 - z_t) * h~_t. Swapping z_t and 1 - z_t is the usual mistake. Row 0\n"
          "of Z and R starts from h_0 = 0; if it matches and later rows do not,\n"
          "the state update is where to look."}},
        {"softmax", "Numerically stable softmax", "bottleneck", {"decoder"}, {"gru-step"},
         {"alpha_i = exp(e_i - m) / sum_k exp(e_k - m) with m = max_k e_k: positive\n"
          "weights that sum to 1. softmax_rows does this to each row of a matrix\n"
          "on its own.",
          "In softmax_rows a row is one distribution: its max and its sum run along\n"
          "the row, over the columns, never down a column. Every row of P must sum\n"
          "to 1, and the lesson's identity check in step [decoder] says whether\n"
          "it does.",
          "Typical mistakes: normalising over the wrong axis (columns summing to 1);\n"
          "leaving out the max shift (harmless here, but exp(1000) = inf turns\n"
          "large logits into NaN weights); and with xtensor 0.24,\n"
          "e / xt::sum(e, {1}, xt::keep_dims) in one expression gives wrong\n"
          "numbers: evaluate the sum into a named tensor first."}},
        {"additive-score", "The additive (Bahdanau) score", "additive", {"scores"}, {"gru-step", "softmax"},
         {"e_ij = v^T tanh(W_q q_i + W_k k_j) (Bahdanau et al. 2015, eq. 6): one\n"
          "number for each pair of query i and key j, so E is T_q x T_k.",
          "Project once: P_q = Q W_q^T (row i is W_q q_i, T_q x d_a) and\n"
          "P_k = K W_k^T (T_k x d_a). Then\n"
          "e_ij = sum_a v_a tanh(P_q(i, a) + P_k(j, a)).",
          "The tanh goes on the sum, before v: v^T tanh(W_q q + W_k k), not\n"
          "v^T (tanh(W_q q) + tanh(W_k k)). And W_q maps a query to d_a features,\n"
          "so with the queries in rows the projection is Q W_q^T, not Q W_q."}},
        {"context", "Context vectors", "additive", {"context"}, {"gru-step", "softmax", "additive-score"},
         {"c_i = sum_j alpha_ij h_j (Bahdanau et al. 2015, eq. 5): row i of the\n"
          "result is the average of the rows of H weighted by row i of A.",
          "As matrices, C = A H: (T_q x T_k) times (T_k x d_v) is T_q x d_v, and\n"
          "nn::matmul(weights, values, \"A H\") computes it in one line.",
          "Typical mistakes: summing over i instead of j (some notes write h_i\n"
          "inside the sum) or using A^T. Each c_i must lie between the smallest\n"
          "and the largest h_j, coordinate by coordinate: the lesson checks that."}},
        {"dot-scores", "Dot, general and scaled dot scores", "scores", {"dot", "general", "scaled"},
         {"softmax", "additive-score", "context"},
         {"Three scores of q_t against k_s: q_t^T k_s, q_t^T W k_s and\n"
          "q_t^T k_s / sqrt(d) (Luong et al. 2015, eq. 8; Vaswani et al. 2017,\n"
          "eq. 1). With queries and keys in rows: Q K^T, Q W K^T, Q K^T / sqrt(d).",
          "Each is one or two matrix products: nn::matmul(Q,\n"
          "xt::eval(xt::transpose(K)), \"Q K^T\"); the general score is (Q W) K^T;\n"
          "the scaled one divides the dot score by the square root of the width of\n"
          "the keys, K.shape(1).",
          "Typical mistakes: K Q^T (the transpose of the answer), dividing by d\n"
          "instead of sqrt(d), or by the square root of the number of keys\n"
          "K.shape(0) or of the length |k| instead of the width d."}},
    };
    return exercises;
}

const Exercise* find_exercise(const std::string& id) {
    const auto& all = all_exercises();
    const auto found = std::find_if(all.begin(), all.end(), [&](const Exercise& e) { return e.id == id; });
    return found == all.end() ? nullptr : &*found;
}

std::string exercise_file(const Exercise& exercise) {
    std::string file = exercise.id;
    std::replace(file.begin(), file.end(), '-', '_');
    return file + ".cpp";
}

}  // namespace attn
