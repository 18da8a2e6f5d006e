#include "exercises/table.hpp"

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
          "the state update is where to look."},
         {"nn::gru_step", "nn::check_gru_params"}},
        {"softmax", "Numerically stable softmax", "bottleneck", {"decoder"}, {"gru-step"},
         {"alpha_i = exp(e_i - m) / sum_k exp(e_k - m) with m = max_k e_k: positive\n"
          "weights that sum to 1. softmax_rows does this to each row of a matrix\n"
          "on its own.",
          "In softmax_rows a row is one distribution: its max and its sum run along\n"
          "the row, over the columns, never down a column. Every row of P must sum\n"
          "to 1, and the lesson's identity check in step [decoder] says whether\n"
          "it does.",
          "Typical mistakes: normalising over the wrong axis (columns summing to 1);\n"
          "leaving out the max shift (exp(1000) = inf turns large logits into NaN\n"
          "weights: the unit case 'logits of +-1e308' catches it); and with\n"
          "xtensor 0.24, e / xt::sum(e, {1}, xt::keep_dims) in one expression\n"
          "gives wrong numbers: evaluate the sum into a named tensor first."},
         {"nn::softmax", "nn::softmax_rows"}},
        {"additive-score", "The additive (Bahdanau) score", "additive", {"scores"}, {"gru-step", "softmax"},
         {"e_ij = v^T tanh(W_q q_i + W_k k_j) (Bahdanau et al. 2015, appendix\n"
          "A.1.2): one number for each pair of query i and key j, so E is T_q x T_k.",
          "Project once: P_q = Q W_q^T (row i is W_q q_i, T_q x d_a) and\n"
          "P_k = K W_k^T (T_k x d_a). Then additive_scores_projected gives\n"
          "e_ij = sum_a v_a tanh(P_q(i, a) + P_k(j, a)): write both functions.",
          "The tanh goes on the sum, before v: v^T tanh(W_q q + W_k k), not\n"
          "v^T (tanh(W_q q) + tanh(W_k k)). And W_q maps a query to d_a features,\n"
          "so with the queries in rows the projection is Q W_q^T, not Q W_q."},
         {"nn::additive_scores", "nn::additive_scores_projected"}},
        {"context", "Context vectors", "additive", {"context"}, {"gru-step", "softmax", "additive-score"},
         {"c_i = sum_j alpha_ij h_j (Bahdanau et al. 2015, eq. 5): row i of the\n"
          "result is the average of the rows of H weighted by row i of A.",
          "As matrices, C = A H: (T_q x T_k) times (T_k x d_v) is T_q x d_v, and\n"
          "nn::matmul(weights, values, \"A H\") computes it in one line.",
          "Typical mistakes: summing over i instead of j (some notes write h_i\n"
          "inside the sum) or using A^T. Each c_i must lie between the smallest\n"
          "and the largest h_j, coordinate by coordinate: the lesson checks that."},
         {"nn::context_vectors"}},
        {"dot-scores", "Dot, general and scaled dot scores", "scores", {"dot", "general", "scaled"},
         {"softmax", "additive-score", "context"},
         {"Three scores of q_t against k_s: q_t^T k_s, q_t^T W k_s and\n"
          "q_t^T k_s / sqrt(d) (Luong et al. 2015, section 3.1; Vaswani et\n"
          "al. 2017, eq. 1). With queries and keys in rows: Q K^T, Q W K^T and\n"
          "Q K^T / sqrt(d).",
          "Each is one or two matrix products: nn::matmul(Q,\n"
          "xt::eval(xt::transpose(K)), \"Q K^T\"); the general score is (Q W) K^T;\n"
          "the scaled one divides the dot score by the square root of the width of\n"
          "the keys, K.shape(1).",
          "Typical mistakes: K Q^T (the transpose of the answer), dividing by d\n"
          "instead of sqrt(d), or by the square root of the number of keys\n"
          "K.shape(0) or of the length |k| instead of the width d."},
         {"nn::dot_scores", "nn::general_scores", "nn::scaled_dot_scores"}},
        {"lin-penalty", "The Lin et al. penalty", "self-attention", {"penalty"}, {"gru-step", "softmax"},
         {"P = ||A A^T - I||_F^2 (Lin et al. 2017, eq. 8): the sum of the squares\n"
          "of all entries of A A^T - I. A is r x n, so A A^T is r x r.",
          "Entry (i, j) of A A^T is a_i . a_j: nn::matmul(A, nn::transposed(A),\n"
          "\"A A^T\"). Subtract 1 on the diagonal only, square every entry, sum.",
          "Typical mistakes: A^T A (n x n) instead of A A^T; subtracting 1 from\n"
          "every entry instead of the diagonal; the norm instead of its square\n"
          "(no sqrt). One-hot rows on distinct tokens must give exactly 0."},
         {"nn::redundancy_penalty"}},
        {"scaled-attention", "Scaled dot-product attention", "self-attention", {"attention", "causal"},
         {"gru-step", "softmax", "dot-scores", "lin-penalty", "causal-mask"},
         {"Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V (Vaswani et al. 2017,\n"
          "eq. 1): scores, then a softmax along each row, then A V. Keep all three\n"
          "in the AttentionResult.",
          "Three calls: nn::scaled_dot_scores(Q, K), nn::softmax_rows(S) and\n"
          "nn::matmul(A, V, \"A V\"). With a mask, S = scaled_dot_scores(Q, K)\n"
          "+ mask before the softmax (a named Mat, not an unevaluated sum).",
          "Typical mistakes: forgetting 1/sqrt(d_k), or dividing by sqrt(d_v) or\n"
          "by the number of keys; the softmax down the columns; applying the mask\n"
          "after the softmax (rows no longer sum to 1). If only M_causal differs,\n"
          "the mask itself is wrong: that is exercise causal-mask."},
         {"nn::scaled_dot_product_attention", "nn::softmax", "nn::softmax_rows", "nn::dot_scores", "nn::general_scores", "nn::scaled_dot_scores", "nn::causal_mask", "nn::padding_mask"}},
        {"causal-mask", "The causal and padding masks", "self-attention", {"causal", "padding"},
         {"gru-step", "softmax", "dot-scores", "lin-penalty", "scaled-attention"},
         {"A mask holds 0 where query i may look at key j and -inf where not\n"
          "(Vaswani et al. 2017, section 3.2.3). Causal: -inf for j > i.\n"
          "Padding: -inf for the padded keys j >= L_k (and rows i >= L_q).",
          "Start from xt::zeros<double>({T_q, T_k}) and set the forbidden entries\n"
          "to -std::numeric_limits<double>::infinity(). The four-argument\n"
          "padding_mask is the three-argument one plus whole rows of -inf.",
          "Typical mistakes: an off-by-one that also masks the diagonal (j >= i:\n"
          "the first row is then all -inf and its output 0); the transpose (-inf\n"
          "below the diagonal); a large negative number such as -1e9 instead of\n"
          "-inf, which the golden file tells apart."},
         {"nn::causal_mask", "nn::padding_mask"}},
        {"positional", "Sinusoidal positional encoding", "self-attention", {"positions"},
         {"gru-step", "softmax", "dot-scores", "lin-penalty", "scaled-attention", "causal-mask"},
         {"PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(the same\n"
          "angle) (Vaswani et al. 2017, section 3.5). Positions count from 0.",
          "Loop over pos and over i = 0 .. d/2 - 1: one angle per pair, its sine in\n"
          "column 2i and its cosine in column 2i + 1. Row 0 is [0, 1, 0, 1, ...].",
          "Typical mistakes: the exponent i/d instead of 2i/d (with i the pair);\n"
          "the exponent 2c/d with c the column, so the cosine gets its own angle;\n"
          "integer division in 2 * i / d (always 0); sin and cos swapped."},
         {"nn::sinusoidal_encoding"}},
        {"unrolled-weights", "The unrolled GRU weights", "gru-to-attention", {"unroll"}, {"gru-step"},
         {"h_t = u_t * h_{t-1} + (1 - u_t) * h~_t, unrolled down to h_0: h~_i enters\n"
          "once with 1 - u_i, then every later step multiplies it by its u_j.\n"
          "a_{t,0} = prod_{j=1..t} u_j, a_{t,i} = (1 - u_i) prod_{j=i+1..t} u_j.",
          "A product over an empty range is 1: a_{t,t} = 1 - u_t. Rows of gates\n"
          "count from 0, steps from 1: u_j is gates(j - 1, k). Entries with i > t\n"
          "stay 0, and each row a(k, t-1, .) must sum to 1.",
          "Typical mistakes: the product from j = i instead of i + 1 (the step's\n"
          "own gate counted twice); starting at j = 1 for every i, as a popular\n"
          "write-up does; forgetting h_0's column. Lesson 5's step [wrong-range]\n"
          "shows both wrong forms."},
         {"nn::unrolled_weights"}},
        {"masked-softmax", "Masked softmax", "gru-to-attention", {"free-weights"},
         {"gru-step", "softmax", "dot-scores", "scaled-attention", "causal-mask", "unrolled-weights"},
         {"A = softmax_j(S_ij + M_ij), row by row: the mask goes into the scores,\n"
          "before the softmax (Vaswani et al. 2017, section 3.2.3).",
          "Add the mask, but write -inf wherever M is -inf (a score of +inf plus\n"
          "-inf is NaN), then nn::softmax_rows: exp(-inf) = 0, so masked entries\n"
          "get weight exactly 0 and the others still sum to 1.",
          "Typical mistakes: the softmax first and the masked weights set to 0\n"
          "after (rows sum to less than 1; lesson 4's step [wrong-way] shows it);\n"
          "multiplying by the mask instead of adding it (0 * -inf is NaN)."},
         {"nn::masked_softmax", "nn::softmax", "nn::softmax_rows"}},
        {"heads", "Splitting and merging heads", "multi-head", {"batched", "concat"},
         {"softmax", "dot-scores", "scaled-attention", "multi-head"},
         {"split_heads: T x d_model -> h x T x d_k, head i gets columns\n"
          "[i d_k, (i+1) d_k) of X; merge_heads puts them back side by side\n"
          "(Vaswani et al. 2017, section 3.2.2). d_k = nn::head_width(d_model, h).",
          "out(i, t, a) = X(t, i * d_k + a) for split_heads, and\n"
          "out(t, i * d_v + a) = H(i, t, a) for merge_heads: one is the inverse of\n"
          "the other, and the lesson checks merge_heads(split_heads(Q)) = Q.",
          "Typical mistakes: splitting along the rows (tokens) instead of the\n"
          "columns (features); interleaving, column c to head c % h, as a plain\n"
          "reshape of the wrong axis order does; d_model / h mixed up with h."},
         {"nn::split_heads", "nn::merge_heads"}},
        {"multi-head", "Multi-head attention", "multi-head", {"concat", "one-head", "causal"},
         {"softmax", "dot-scores", "scaled-attention", "heads", "causal-mask"},
         {"MultiHead = Concat(head_1, ..., head_h) W^O, head_i = Attention(X_q\n"
          "W_i^Q, X_kv W_i^K, X_kv W_i^V) (Vaswani et al. 2017, section 3.2.2);\n"
          "W_i^Q is the i-th block of d_k columns of W_Q.",
          "Project once (X_q W_Q), split into heads, and per head: scores\n"
          "Q_i K_i^T / sqrt(d_k), plus the mask if there is one, softmax along\n"
          "each row, times V_i. Merge the heads, then multiply by W_O.",
          "Typical mistakes: dividing by sqrt(d_model) instead of sqrt(d_k) (the\n"
          "head's width); forgetting W^O; adding the mask after the softmax;\n"
          "not filling weights (h x T_q x T_k) when keep is HeadWeights::keep."},
         {"nn::multi_head_attention", "nn::split_heads", "nn::merge_heads", "nn::softmax", "nn::softmax_rows", "nn::dot_scores", "nn::scaled_dot_scores", "nn::scaled_dot_product_attention", "nn::causal_mask"}},
        {"softmax-backward", "The softmax backward, and its Jacobian", "backprop", {"softmax-backward"},
         {"softmax", "dot-scores", "scaled-attention", "causal-mask", "attention-backward"},
         {"p = softmax(s): J = diag(p) - p p^T, J_jk = dp_j / ds_k. For a loss\n"
          "with dP = dL/dP, row by row ds = J dp; as matrices\n"
          "dS = P * (dP - D 1^T) with D_i = sum_j P_ij dP_ij (* elementwise).",
          "softmax_jacobian(p) is T x T: p_j on the diagonal minus p_j p_k\n"
          "everywhere. softmax_rows_backward needs no Jacobian: one pass for D_i\n"
          "along row i, one for P_ij (dP_ij - D_i). Where P_ij = 0 (masked) write\n"
          "0: the lesson checks that masked scores get exactly no gradient.",
          "Typical mistakes: dropping the -p p^T term (dS = P * dP, which lesson\n"
          "8's step [finite-differences] shows missing by far); summing D down a\n"
          "column instead of along the row; -0 instead of 0 at masked entries\n"
          "(P * (dP - D) is -0 when dP - D < 0)."},
         {"nn::softmax_rows_backward", "nn::softmax_jacobian"}},
        {"attention-backward", "The backward of scaled dot-product attention", "backprop", {"attention-backward"},
         {"softmax", "dot-scores", "scaled-attention", "causal-mask", "softmax-backward"},
         {"With O = P V, P = softmax(S + M), S = Q K^T / sqrt(d_k): dV = P^T dO,\n"
          "dP = dO V^T, dS through the softmax (nn::softmax_rows_backward), then\n"
          "dQ = dS K / sqrt(d_k) and dK = dS^T Q / sqrt(d_k).",
          "Fill all five fields of AttentionGrads: dQ (T_q x d_k), dK (T_k x\n"
          "d_k), dV (T_k x d_v), and the intermediate dP and dS (T_q x T_k). The\n"
          "mask is a constant: its effect is already in P, so it needs nothing.",
          "Typical mistakes: P dO instead of P^T dO for dV; dividing by sqrt(d_v)\n"
          "(the lesson has d_v = 3, d_k = 4, so it shows); forgetting the scale\n"
          "on one of dQ, dK; dS Q instead of dS^T Q for the keys."},
         {"nn::scaled_dot_product_attention_backward", "nn::softmax_rows_backward", "nn::softmax_jacobian"}},
        {"gru-step-backward", "One GRU step backwards", "backprop", {"gru-backward"},
         {"gru-step", "softmax", "dot-scores", "scaled-attention", "causal-mask", "masked-softmax", "additive-score",
          "softmax-backward", "attention-backward"},
         {"Reverse the four equations of gru_step (Cho et al. 2014, eqs. 5-8):\n"
          "from dh, first through h = z * h_prev + (1 - z) * h~, then h~ = tanh(a)\n"
          "(da = dh~ (1 - h~^2)), then r and z = sigmoid(.) (sigmoid' = z (1 - z)).",
          "Add the weight gradients into `grads` (+=, never =): backpropagation\n"
          "through time calls the step once per time step with one GruGrads.\n"
          "dW_z += dz_pre x^T, dU_z += dz_pre h_prev^T, db_z += dz_pre; likewise\n"
          "r and h, where U_h multiplies r * h_prev.",
          "dh_prev collects four roads: z * dh directly, and through U_z, U_r\n"
          "and, scaled by r, U_h. Typical mistakes: forgetting the direct z * dh;\n"
          "h_prev instead of r * h_prev in dU_h; assigning instead of adding."},
         {"nn::gru_step_backward", "nn::gru_step", "nn::check_gru_params"}},
        {"adam-step", "One step of the Adam optimizer", "learning-to-align",
         {"adam"},
         {},
         {"Kingma & Ba 2015, Algorithm 1, for each weight: m = b1 m + (1 - b1) g,\n"
          "v = b2 v + (1 - b2) g^2, then theta -= lr m_hat / (sqrt(v_hat) + eps)\n"
          "with m_hat = m / (1 - b1^t) and v_hat = v / (1 - b2^t).",
          "beta1_power and beta2_power are b1^t and b2^t already: do not raise\n"
          "them to a power again. Update m[k] and v[k] in place (they carry over\n"
          "to the next step), and use the new m and v in the same step.",
          "Typical mistakes: g instead of g^2 in v; forgetting the bias\n"
          "correction (the first step is then about 3x too large: m/sqrt(v) =\n"
          "0.1 g / sqrt(0.001 g^2) = 3.16 instead of 1); eps inside the sqrt;\n"
          "adding the step instead of subtracting it (the loss rises)."},
         {"nn::adam_step"}},
        {"online-softmax", "The online softmax", "online-softmax", {"online", "edges"},
         {"softmax", "dot-scores", "scaled-attention"},
         {"m_j = max(m_{j-1}, x_j), l_j = l_{j-1} exp(m_{j-1} - m_j) + exp(x_j - m_j)\n"
          "from m_0 = -inf, l_0 = 0 (Milakov & Gimelshein 2018): one pass for m and\n"
          "l (online_normalizer_steps keeps each m_j, l_j as a row of its table),\n"
          "a second for the weights exp(x_i - m_n) / l_n.",
          "The factor exp(m_{j-1} - m_j) moves the terms already in l onto the new\n"
          "maximum; leave it out and a row whose maximum comes late gets weights\n"
          "far too small (lesson 10's step [online] shows the numbers).",
          "While every entry so far is -inf, m is -inf and exp(-inf - (-inf)) is\n"
          "NaN: add nothing until a finite entry arrives, and give a row that is\n"
          "-inf everywhere zeros. Use portable::exp as the reference does:\n"
          "std::exp passes within tolerance, but not always to the bit."},
         {"nn::online_normalizer_steps", "nn::online_softmax", "nn::online_softmax_rows"}},
        {"flash-backward-tile", "One tile of FlashAttention's backward pass", "online-softmax",
         {"backward-tiles", "backward-causal"},
         {"softmax", "dot-scores", "scaled-attention", "causal-mask", "softmax-backward", "attention-backward",
          "online-softmax"},
         {"Dao et al. 2022, algorithm 4: recompute the tile's weights from the\n"
          "saved log-sum-exp, P_ij = exp(q_i . k_j / sqrt(d_k) - L_i), then as in\n"
          "lesson 8: dV_j += P_ij dO_i, dS_ij = P_ij (dO_i . v_j - D_i), dQ_i +=\n"
          "dS_ij k_j / sqrt(d_k), dK_j += dS_ij q_i / sqrt(d_k).",
          "The tile is a part of a sum: add into dQ, dK and dV, never assign.\n"
          "exp(s - L_i) is already normalised (L_i = m_i + log l_i); exp(s - m_i)\n"
          "alone is off by the factor l_i. D_i = dO_i . o_i is given: the tile\n"
          "sees only some keys of row i, so sum_j P_ij dP_ij over it is not D_i.",
          "Typical mistakes: dP - D written D - dP (every gradient of Q and K\n"
          "flips sign); forgetting D (dS = P * dP); under the causal flag,\n"
          "comparing the tile's own indices (c <= a) instead of the positions\n"
          "first_key + c <= first_query + a, which is wrong off the diagonal."},
         {"nn::flash_backward_tile", "nn::softmax_rows_backward"}},
        {"layer-norm", "Layer normalisation", "transformer-block", {"layer-norm"}, {"layer-norm-backward"},
         {"Ba et al. 2016, eqs. 3-4, for each row t (one token) on its own:\n"
          "mu = (1/d) sum_j x_j, sigma^2 = (1/d) sum_j (x_j - mu)^2,\n"
          "x^ = (x - mu) / sqrt(sigma^2 + eps), y = g * x^ + b.",
          "Fill every field of LayerNormResult: mean, variance, inv_std =\n"
          "1 / sqrt(sigma^2 + eps), normalized and output. The sums run along the\n"
          "row, over the d features, never down a column (over the tokens).",
          "Typical mistakes: dividing the variance by d - 1 (the unbiased\n"
          "estimate; the normalised rows then have variance (d - 1) / d);\n"
          "eps outside the root, (x - mu) / (sigma + eps), which differs where\n"
          "sigma^2 is near eps (step [layer-norm]'s last row); columns for rows."},
         {"nn::layer_norm"}},
        {"layer-norm-backward", "The layer norm's backward pass", "transformer-block", {"layer-norm-backward"},
         {"layer-norm"},
         {"Through y = g * x^ + b first: dx^ = dy * g, dg = sum over rows of\n"
          "dy * x^, db = sum over rows of dy. Then through x^ = (x - mu) r, where\n"
          "mu and r = 1 / sqrt(sigma^2 + eps) depend on every x_k of the row.",
          "Per row: dx = r (dx^ - mean(dx^) - x^ mean(dx^ * x^)). Reuse the\n"
          "forward's normalized and inv_std; the means run over the d entries of\n"
          "the row.",
          "Typical mistakes: dropping the mean's path -mean(dx^) (each row of dx\n"
          "must sum to 0, and the lesson checks it); dropping the variance's path;\n"
          "forgetting the gain in dx^; assigning dg and db per row instead of\n"
          "summing them over the rows."},
         {"nn::layer_norm_backward", "nn::layer_norm"}},
        {"pre-ln-block", "One pre-LN Transformer block", "transformer-block", {"block"},
         {"layer-norm", "layer-norm-backward", "positional", "multi-head", "softmax-backward", "attention-backward"},
         {"Two sub-layers, each x + Sublayer(LN(x)) (Xiong et al. 2020): H = X +\n"
          "MHA(LN_1(X)), then Y = H + FFN(LN_2(H)). Call nn::layer_norm,\n"
          "nn::multi_head_attention(N, N, ...) and nn::position_wise_feed_forward.",
          "Fill every field of BlockForward: norm_1, attention, residual_1 (H),\n"
          "norm_2, feed_forward, residual_2 and output (= residual_2). Pass the\n"
          "mask on to the attention.",
          "Typical mistakes: post-LN wiring, LN(x + Sublayer(x)), which\n"
          "normalises the stream itself; adding the branch to LN(x) instead of\n"
          "to x; a missing residual (Y = FFN(...)). With W^O = 0 and W_2 = 0 the\n"
          "block must return X exactly."},
         {"nn::pre_ln_block", "nn::layer_norm", "nn::multi_head_attention", "nn::position_wise_feed_forward"}},
        {"cross-attention", "Cross-attention", "transformer",
         {"cross-attention", "gradients"},
         {"softmax", "causal-mask", "positional", "multi-head", "softmax-backward", "attention-backward",
          "gru-step-backward", "adam-step", "layer-norm", "layer-norm-backward", "pre-ln-block", "warmup-schedule"},
         {"Vaswani et al. 2017, section 3.2.3: the queries come from the decoder,\n"
          "the keys and values from the encoder's output. It is multi-head\n"
          "attention with its two inputs apart: X_q = Y, X_kv = H.",
          "Call nn::multi_head_attention(Y, H, p, heads, nullptr): the result has\n"
          "T_y rows (one per decoder position) and weights h x T_y x T_x, which\n"
          "are not square.",
          "Typical mistakes: Y and H swapped (the keys from the decoder: T_x rows\n"
          "come out); a causal mask, which hides the later source words from the\n"
          "early target words (the source is known whole: no mask here)."},
         {"nn::cross_attention", "nn::multi_head_attention"}},
        {"warmup-schedule", "The warm-up learning rate", "transformer",
         {"schedule"},
         {"cross-attention"},
         {"Vaswani et al. 2017, section 5.3: lr = d_model^-0.5 min(s^-0.5,\n"
          "s warmup^-1.5), linear up to s = warmup, then like 1 / sqrt(s).",
          "s counts Adam's steps from 1. Compute 1 / sqrt(s) and\n"
          "s / (warmup sqrt(warmup)), take the smaller, divide by sqrt(d_model);\n"
          "throw std::invalid_argument for a 0.",
          "Typical mistakes: counting the steps from 0 (the first rate is 0 and\n"
          "the peak moves); max instead of min; pow() where sqrt does (pow's\n"
          "last bit is the library's, and training amplifies it)."},
         {"nn::warmup_learning_rate"}},
        {"kv-cache-step", "Attention with a key-value cache", "decoding",
         {"cache", "mask"},
         {"gru-step", "softmax", "additive-score", "context", "causal-mask", "positional", "masked-softmax",
          "multi-head", "softmax-backward", "attention-backward", "gru-step-backward", "adam-step", "layer-norm",
          "layer-norm-backward", "pre-ln-block", "cross-attention", "warmup-schedule"},
         {"Append the new keys and values below the cached ones, then attend:\n"
          "S = Q K^T (the 1/sqrt(d_k) is already in Q), A = softmax(S + M),\n"
          "O = A V, with K and V the whole cache (T_k rows).",
          "Query i of the T_q new ones is position T_k - T_q + i: the mask is 0\n"
          "for j <= T_k - T_q + i and -inf after. For one query (a decoding\n"
          "step) that is no -inf at all. nn::masked_softmax(S, M) does the rest.",
          "Typical mistakes: the mask of T_q = T_k cut to T_q rows (aligned to\n"
          "the top left: a new query then reads only the first keys); dividing\n"
          "by sqrt(d_k) a second time; forgetting to keep K_new and V_new in\n"
          "the cache, or putting them above the old rows."},
         {"nn::kv_cache_step", "nn::masked_softmax", "nn::softmax", "nn::softmax_rows"}},
        {"beam-step", "One step of beam search", "decoding",
         {"beam"},
         {"gru-step", "softmax", "additive-score", "context", "causal-mask", "positional", "masked-softmax",
          "multi-head", "softmax-backward", "attention-backward", "gru-step-backward", "adam-step", "layer-norm",
          "layer-norm-backward", "pre-ln-block", "cross-attention", "warmup-schedule", "kv-cache-step"},
         {"Sutskever et al. 2014, section 3.1: keep the k most likely partial\n"
          "translations. Every unfinished one is extended by every word; the\n"
          "score of a candidate is the sum of the logs of its words' probabilities.",
          "Collect all candidates (a finished hypothesis as it is, the others\n"
          "with each word), std::stable_sort them by score, highest first, and\n"
          "keep the first k; a hypothesis extended by <eos> is finished.",
          "Typical mistakes: ranking by the new word's log-probability alone;\n"
          "keeping the best k of each hypothesis instead of all together;\n"
          "extending a finished hypothesis; multiplying probabilities (they\n"
          "underflow to 0 and every candidate ties)."},
         {"nn::beam_step"}},
        {"bleu", "Corpus-level BLEU", "decoding",
         {"bleu"},
         {"gru-step", "softmax", "additive-score", "context", "causal-mask", "positional", "masked-softmax",
          "multi-head", "softmax-backward", "attention-backward", "gru-step-backward", "adam-step", "layer-norm",
          "layer-norm-backward", "pre-ln-block", "cross-attention", "warmup-schedule", "kv-cache-step", "beam-step"},
         {"Papineni et al. 2002, section 2: for n = 1 .. 4 the share of the\n"
          "candidates' n-grams found in their references, clipped; a penalty for\n"
          "candidates shorter than the references; their geometric mean.",
          "Per pair and n, count the reference's n-grams in a std::map keyed by\n"
          "std::vector<std::size_t>, then add min(candidate count, reference count)\n"
          "for each distinct candidate n-gram to matches[n - 1], and every candidate\n"
          "n-gram to totals[n - 1]. Divide only after the last pair.",
          "Typical mistakes: unclipped counts (a word repeated matches every time);\n"
          "exp(1 - c/r) instead of exp(1 - r/c) (it rises above 1); the mean of\n"
          "the sentences' BLEU instead of the corpus's sums; (p_1 + .. + p_4) / 4\n"
          "instead of exp of the mean of the logs; log 0 when a p_n is 0 (BLEU 0)."},
         {"nn::bleu"}},
        {"rope", "Rotary position embeddings (RoPE)", "positions",
         {"rope", "relative", "layouts", "rope-cache"},
         {"softmax", "causal-mask", "positional", "masked-softmax", "kv-cache-step"},
         {"Su et al. 2021, sections 3.2.2 and 3.4.2: theta_i = 10000^(-2i/d) for\n"
          "the pairs i = 0 .. d/2 - 1, and the row at position p has each pair\n"
          "(x, y) turned by a = p theta_i: (x cos a - y sin a, x sin a + y cos a).",
          "Pair i is columns (2i, 2i + 1) when interleaved, (i, i + d/2) in\n"
          "halves; its frequency is theta_i either way. Row t's position is\n"
          "positions[t], not t. Position 0 must give the row back unchanged.",
          "Typical mistakes: the frequency of pair i + 1 (an index off by one:\n"
          "pair 0 must turn by p radians) or 2c/d with c the column; pairs of\n"
          "the wrong layout (halves taken as neighbours); the turn the other way,\n"
          "(x cos a + y sin a, -x sin a + y cos a); integer division in 2 * i / d."},
         {"nn::rotary_frequencies", "nn::rotary_rotation"}},
        {"alibi-bias", "ALiBi's slopes and biases", "positions",
         {"alibi-slopes", "alibi-bias", "alibi-decay"},
         {"softmax", "causal-mask", "positional", "masked-softmax", "kv-cache-step", "rope"},
         {"Press et al. 2022, section 3: head k of h gets the slope m_k =\n"
          "2^(-8k/h), k = 1 .. h, when h is a power of two; the bias of query i\n"
          "on key j is B_ij = -m (i - j), and -inf for j > i in its causal form.",
          "For h not a power of two, take n = the largest power of two below h:\n"
          "the n slopes of n heads, then the 1st, 3rd, 5th, ... slopes of 2n\n"
          "heads, h - n of them. 6 heads: 1/4, 1/16, 1/64, 1/256, 1/2, 1/8.",
          "Typical mistakes: 2^(-8k/h) for every h (6 heads then start at\n"
          "0.397, not 1/4); k counted from 0 (a slope of 1); m (i - j) without\n"
          "the minus, or B transposed; -inf on the diagonal, or a large negative\n"
          "number such as -1e9 instead of -inf above it."},
         {"nn::alibi_slopes", "nn::alibi_bias", "nn::causal_alibi_bias"}},
    };
    return exercises;
}

const std::vector<std::string>& helper_functions() {
    // No helper computes an exercise's answer: products, transposes, sums, maxima, rows and columns,
    // zeros and ones, concatenation, shapes (nn/linalg.hpp, nn/reductions.hpp, core/tensor.hpp), and
    // running a function on every row on the threads (nn/kernels.hpp).
    static const std::vector<std::string> helpers = {
        "nn::matmul", "nn::matvec", "nn::matvec_transposed", "nn::add_outer_product", "nn::transposed",
        "nn::head_width", "nn::gather_rows", "nn::ascending_indices", "nn::descending_indices", "nn::sum_of",
        "nn::row_sums", "nn::column_sums", "nn::last_axis_sums", "nn::dot", "nn::norm_of", "nn::max_of",
        "nn::min_of", "nn::max_abs_of", "nn::row_maxima", "nn::column_maxima", "nn::column_minima",
        "nn::row_max_abs_differences", "nn::row_of", "nn::column_of", "nn::entries_of", "nn::rows_of",
        "nn::columns_of", "nn::slice_of", "nn::set_row", "nn::set_column", "nn::set_entries", "nn::set_rows",
        "nn::set_columns", "nn::set_slice", "nn::add_to_row", "nn::add_scaled_to_row", "nn::zeros", "nn::ones",
        "nn::identity", "nn::concatenated", "nn::concatenated_rows", "shape_string", "expect_shape",
        "throw_shape_error",  // what expect_shape calls when the shapes differ (core/tensor.hpp)
        "max_abs_difference", "rows_are_distributions",
        // nn/kernels.hpp: rows dealt to the threads, and which copy of the row kernels runs
        "nn::for_each_row", "nn::kernel_path"};
    return helpers;
}

std::vector<std::string> forbidden_calls(const Exercise& x, const std::string& nm_output) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at < nm_output.size()) {
        const std::size_t end = std::min(nm_output.find('\n', at), nm_output.size());
        std::string line = nm_output.substr(at, end - at);
        at = end + 1;
        // "                 U attn::nn::fast_attention(...)": an undefined symbol of namespace attn (a type's
        // vtable or typeinfo, "vtable for attn::ShapeError", is no call)
        const std::size_t u = line.find(" U ");
        if (u == std::string::npos || line.compare(u + 3, 6, "attn::") != 0) continue;
        std::string name = line.substr(u + 9);
        std::size_t cut = name.size();  // the name alone: no parameters, template arguments or ABI tag
        for (const char c : {'(', '<', '['}) cut = std::min(cut, name.find(c));
        name = name.substr(0, cut);
        const auto listed = [&](const std::vector<std::string>& names) {
            return std::find(names.begin(), names.end(), name) != names.end();
        };
        if (name.empty() || listed(helper_functions()) || listed(x.may_call) || listed(out)) continue;
        out.push_back(name);
    }
    return out;
}

std::string forbidden_calls_message(const Exercise& x, const std::vector<std::string>& calls) {
    std::string names;
    for (std::size_t i = 0; i < calls.size(); ++i)
        names += (i == 0 ? "" : i + 1 == calls.size() ? " and " : ", ") + calls[i];
    std::string allowed;
    for (const auto& f : x.may_call) allowed += (allowed.empty() ? "" : ", ") + f;
    return exercise_file(x) + " calls " + names + ", which exercise " + x.id + " may not use: a function of attn that is not on its list could "
           "compute the exercise's own answer (it may call " + allowed +
           ", the helpers of nn/linalg.hpp and nn/reductions.hpp, std:: and xtensor)";
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
