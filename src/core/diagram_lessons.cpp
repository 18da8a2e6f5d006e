// The data-flow diagrams of the lessons (core/diagram.hpp). A box that names a tensor shows
// the shape the lesson's trace records; the tensor names are the lessons' own (lessons/*.cpp), and a
// test draws every diagram from each lesson's trace, so a renamed tensor fails there by name.
#include "diagram.hpp"

#include <map>

namespace attn {
namespace diagram_impl {

using Kind = DiagramNode::Kind;

// A box for a tensor of the trace: "<text or name> [shape]".
DiagramNode tensor(std::string id, std::string name, int row, double col, std::string text = "", std::string step = "",
                   std::string sub = "") {
    return DiagramNode{std::move(id), std::move(text), std::move(name), std::move(step), row, col, Kind::data, std::move(sub)};
}
// A box for a value the trace does not hold as a tensor of its own.
DiagramNode value(std::string id, std::string text, int row, double col, std::string sub = "") {
    return DiagramNode{std::move(id), std::move(text), "", "", row, col, Kind::data, std::move(sub)};
}
// An operation.
DiagramNode op(std::string id, std::string text, int row, double col, std::string sub = "") {
    return DiagramNode{std::move(id), std::move(text), "", "", row, col, Kind::op, std::move(sub)};
}
DiagramEdge to(std::string from, std::string to) { return DiagramEdge{std::move(from), std::move(to), false}; }
DiagramEdge back(std::string from, std::string to) { return DiagramEdge{std::move(from), std::move(to), true}; }
// A residual connection: around the boxes between, on their left or right.
DiagramEdge around(std::string from, std::string to, bool right) {
    return DiagramEdge{std::move(from), std::move(to), false, right ? DiagramEdge::Route::right : DiagramEdge::Route::left};
}

Diagram bottleneck() {
    Diagram d{"flow", "Lesson 1: the encoder reads the sentence into one vector c; the decoder starts from c",
              "The encoder GRU reads x₁ … xₙ one token at a time; its last state is the context c, the decoder's "
              "first state and its input at every step. Everything the decoder knows of the source passes through "
              "c, whatever the sentence's length. Shapes from this run.",
              "", 3, {}, {}, {}};
    d.nodes = {tensor("X", "X", 0, 1, "", "embeddings", "x₁ … xₙ, one row per token"),
               op("enc", "encoder GRU", 1, 1, "hₜ = GRU(xₜ, hₜ₋₁)"),
               tensor("H", "H", 2, 1, "", "encoder", "states h₁ … hₙ"),
               tensor("c", "c", 3, 1, "", "context", "c = hₙ: the bottleneck"),
               tensor("Din", "D_in", 4, 0.45, "", "decoder", "[yᵢ₋₁; c]"),
               op("dec", "decoder GRU", 5, 1, "s₀ = c"),
               tensor("S", "S", 6, 1, "", "decoder", "states s₁ …"),
               tensor("P", "P", 7, 1, "", "decoder", "softmax(Wₒ sᵢ)")};
    d.edges = {to("X", "enc"), to("enc", "H"), to("H", "c"), to("c", "dec"), to("c", "Din"), to("Din", "dec"),
               to("dec", "S"), to("S", "P")};
    d.groups = {{"encoder", {"X", "enc", "H"}}, {"decoder", {"Din", "dec", "S", "P"}}};
    return d;
}

Diagram additive() {
    Diagram d{"flow", "Lesson 2: additive attention, from the decoder state and the annotations to the context",
              "For each target word i the decoder's previous state sᵢ₋₁ is scored against every annotation hⱼ; "
              "a softmax turns the scores into weights α, and the context cᵢ is the weighted sum of the "
              "annotations. The same H serves as keys (in the score) and values (in the sum). Shapes from this run.",
              "", 3, {}, {}, {}};
    d.nodes = {tensor("X", "X", 0, 0, "", "embeddings"),
               op("birnn", "bidirectional GRU", 1, 0),
               tensor("H", "H", 2, 0, "", "encoder", "annotations hⱼ"),
               tensor("Sprev", "S_prev", 2, 2, "", "scores", "queries sᵢ₋₁"),
               op("score", "eᵢⱼ = vᵀ tanh(W s + U h)", 3, 1.1),
               tensor("E", "E", 4, 1.1, "", "scores"),
               op("softmax", "softmax of each row", 5, 1.1),
               tensor("alpha", "alpha", 6, 1.1, "α", "weights"),
               op("sum", "C = α H", 7, 0.6),
               tensor("C", "C", 8, 0.6, "", "context", "context vectors cᵢ"),
               op("gru", "decoder GRU", 9, 0.6, "sᵢ = GRU([yᵢ₋₁; cᵢ], sᵢ₋₁)")};
    d.edges = {to("X", "birnn"), to("birnn", "H"), to("H", "score"), to("Sprev", "score"), to("score", "E"),
               to("E", "softmax"), to("softmax", "alpha"), to("alpha", "sum"), to("H", "sum"), to("sum", "C"),
               to("C", "gru")};
    return d;
}

Diagram scores() {
    Diagram d{"flow", "Lesson 3: one query and key pair, four score functions, one softmax",
              "Every score function takes a query qₜ and a key kₛ and gives one number eₜ(s); the lesson computes "
              "all four on the same Q and K. Whatever the score, a softmax over s gives the weights and the context "
              "is their weighted sum of the keys. Shapes from this run (the dot score's).",
              "", 4, {}, {}, {}};
    d.nodes = {tensor("Q", "Q", 0, 0.5, "", "inputs", "queries qₜ"),
               tensor("K", "K", 0, 2.5, "", "inputs", "keys kₛ"),
               value("pair", "(qₜ, kₛ)", 1, 1.5),
               op("dot", "qᵀk", 2, 0, "dot"),
               op("general", "qᵀW k", 2, 1, "general"),
               op("concat", "vᵀtanh(·)", 2, 2, "concat"),
               op("scaled", "qᵀk / √d", 2, 3, "scaled"),
               tensor("e", "e_dot", 3, 1.5, "e", "dot", "one score per (s, t)"),
               op("softmax", "softmax over s", 4, 1.5),
               tensor("a", "a_dot", 5, 1.5, "a", "dot"),
               op("sum", "cₜ = Σₛ aₜ(s) kₛ", 6, 1.5),
               tensor("c", "c_dot", 7, 1.5, "c", "dot")};
    d.edges = {to("Q", "pair"), to("K", "pair"), to("pair", "dot"), to("pair", "general"), to("pair", "concat"),
               to("pair", "scaled"), to("dot", "e"), to("general", "e"), to("concat", "e"), to("scaled", "e"),
               to("e", "softmax"), to("softmax", "a"), to("a", "sum"), to("sum", "c")};
    return d;
}

Diagram self_attention() {
    Diagram d{"flow", "Lesson 4: scaled dot-product self-attention, from X to O",
              "One sentence X gives the queries, keys and values through three projections; every query is scored "
              "against every key, each row of scores becomes weights by a softmax, and each output row is its "
              "weights' mix of the values. Shapes from this run.",
              "qkv", 3, {}, {}, {}};
    d.nodes = {tensor("X", "X", 0, 1, "", "sentence", "one row per word"),
               tensor("Q", "Q", 1, 0, "", "", "X W_Q"),
               tensor("K", "K", 1, 1, "", "", "X W_K"),
               tensor("V", "V", 1, 2, "", "", "X W_V"),
               tensor("S", "S", 2, 0.5, "", "attention", "Q Kᵀ / √dₖ"),
               op("softmax", "softmax of each row", 3, 0.5),
               tensor("A", "A_self", 4, 0.5, "A", "attention"),
               op("mix", "A V", 5, 1.2),
               tensor("O", "O", 6, 1.2, "", "attention")};
    d.edges = {to("X", "Q"), to("X", "K"), to("X", "V"), to("Q", "S"), to("K", "S"), to("S", "softmax"),
               to("softmax", "A"), to("A", "mix"), to("V", "mix"), to("mix", "O")};
    return d;
}

Diagram gru_to_attention() {
    Diagram d{"flow", "Lesson 5: the GRU's recurrence unrolled into causal weights",
              "Left, the GRU: each state waits for the one before, hₜ = uₜ hₜ₋₁ + (1 − uₜ) h̃ₜ. Unrolled, "
              "hₜ is a weighted sum of h₀ and the candidates h̃₁ … h̃ₜ with weights that depend on the gates. "
              "Right, the lesson's end point: weights αₜ,ᵢ computed freely for i ≤ t, from queries and keys, "
              "all at once. Shapes from this run.",
              "", 2, {}, {}, {}};
    d.nodes = {tensor("X", "X", 0, 0.5, "", "tokens", "x₁ … x_T"),
               tensor("Hc", "H_cand", 1, 0, "", "no-reset", "candidates h̃ₜ"),
               op("rec", "hₜ = uₜ hₜ₋₁ + (1−uₜ) h̃ₜ", 2, 0, "one step after another"),
               tensor("H", "H", 3, 0, "", "no-reset"),
               tensor("A1", "A_1", 4, 0, "", "unroll", "unrolled weights aₜ,ᵢ"),
               tensor("QKV", "Q", 1, 1, "Q, K, V", "qkv", "from f(xᵢ)"),
               op("causal", "softmax(QKᵀ/√d + M)", 2, 1, "all t at once"),
               tensor("alpha", "alpha_4", 3, 1, "α", "qkv", "0 for i > t"),
               tensor("H4", "H_4", 4, 1, "", "qkv", "hₜ = Σᵢ αₜ,ᵢ vᵢ")};
    d.edges = {to("X", "Hc"), to("Hc", "rec"), to("rec", "H"), to("H", "A1"), to("X", "QKV"),
               to("QKV", "causal"), to("causal", "alpha"), to("alpha", "H4")};
    d.groups = {{"stage 0", {"Hc", "rec", "H", "A1"}}, {"stage 4", {"QKV", "causal", "alpha", "H4"}}};
    return d;
}

Diagram multi_head() {
    Diagram d{"flow", "Lesson 6: multi-head attention, split into heads, attended, joined and mixed by Wᴼ",
              "One projection gives every head's queries (and keys and values) side by side; they are split into h "
              "heads of width dₖ, each head attends on its own, and the heads' outputs are joined and mixed by "
              "Wᴼ. Shapes from this run (head 1 shown; the others have the same).",
              "", 3, {}, {}, {}};
    d.nodes = {tensor("X", "X", 0, 1, "", "inputs"),
               tensor("Q", "Q", 1, 1, "", "batched", "X W_Q (and K, V)"),
               op("split", "split into heads", 2, 1),
               tensor("Q1", "Q_1", 3, 0, "", "head-1"),
               tensor("K1", "K_1", 3, 1, "", "head-1"),
               tensor("V1", "V_1", 3, 2, "", "head-1"),
               tensor("A1", "A_1", 4, 0.5, "", "head-1", "softmax(Q₁K₁ᵀ/√dₖ)"),
               tensor("h1", "head_1", 5, 1.2, "", "head-1", "A₁ V₁"),
               value("others", "heads 2 … h", 6, 2.5, "same recipe"),
               tensor("cat", "Concat", 7, 1.2, "", "concat"),
               tensor("Y", "Y", 8, 1.2, "", "concat", "Concat Wᴼ")};
    d.edges = {to("X", "Q"), to("Q", "split"), to("split", "Q1"), to("split", "K1"), to("split", "V1"), to("Q1", "A1"),
               to("K1", "A1"), to("A1", "h1"), to("V1", "h1"), to("h1", "cat"), to("others", "cat"), to("cat", "Y")};
    d.groups = {{"head 1", {"Q1", "K1", "V1", "A1", "h1"}}};
    return d;
}

Diagram scaling() {
    Diagram d{"flow", "Lesson 7: what grows with T, for a GRU and for self-attention",
              "The GRU must take T steps one after another, each costing about d² per token; self-attention takes "
              "three steps whatever T is, but its scores S and weights are T × T: work grows like T² d and memory "
              "like T². The lengths measured are those of this run.",
              "", 2, {}, {}, {}};
    d.nodes = {tensor("T", "T", 0, 0.5, "lengths T", "layers", "each twice the last"),
               value("x", "x₁ … x_T", 1, 0),
               op("g1", "h₁ = GRU(x₁, h₀)", 2, 0),
               op("g2", "h₂ = GRU(x₂, h₁)", 3, 0),
               op("gT", "h_T = GRU(x_T, …)", 4, 0, "T steps in a row"),
               value("gcost", "work 6 T d²", 5, 0, "memory T d"),
               value("X", "X  (T × d)", 1, 1),
               op("qkv", "Q, K, V = X W", 2, 1, "step 1"),
               op("s", "S = QKᵀ/√d", 3, 1, "step 2: T × T"),
               op("o", "O = softmax(S) V", 4, 1, "step 3"),
               value("acost", "work 2 T² d", 5, 1, "memory T²")};
    d.edges = {to("T", "x"), to("T", "X"), to("x", "g1"), to("g1", "g2"), to("g2", "gT"), to("gT", "gcost"),
               to("X", "qkv"), to("qkv", "s"), to("s", "o"), to("o", "acost")};
    d.groups = {{"GRU", {"x", "g1", "g2", "gT", "gcost"}}, {"attention", {"X", "qkv", "s", "o", "acost"}}};
    return d;
}

Diagram backprop() {
    Diagram d{"flow", "Lesson 8: the forward graph of attention and the gradients flowing back",
              "Solid arrows: the forward pass from X to the loss L. Dashed arrows, below it: the backward pass, "
              "from dO = O − Y back through the product P V, the softmax (dS) and the scores to dQ, dK and dX, each "
              "gradient the shape of the tensor it belongs to. Shapes "
              "from this run.",
              "", 3, {}, {}, {}};
    d.nodes = {tensor("X", "X", 0, 0.5, "", "loss"),
               tensor("Q", "Q", 1, 0, "", "loss"),
               tensor("K", "K", 1, 1, "", "loss"),
               tensor("V", "V", 1, 2, "", "loss"),
               tensor("S", "S", 2, 0.5, "", "loss", "QKᵀ/√d + M"),
               tensor("P", "P", 3, 0.5, "", "loss", "softmax"),
               tensor("O", "O", 4, 1.2, "", "loss", "P V"),
               tensor("L", "L", 5, 1.2, "", "loss", "½ Σ |oᵢ − yᵢ|²"),
               tensor("dO", "dO", 6, 1.2, "", "attention-backward", "O − Y"),
               tensor("dV", "dV", 7, 2, "", "attention-backward", "Pᵀ dO"),
               tensor("dP", "dP", 7, 0.5, "", "softmax-backward", "dO Vᵀ"),
               tensor("dS", "dS", 8, 0.5, "", "softmax-backward", "P ∗ (dP − D)"),
               tensor("dQ", "dQ", 9, 0, "", "attention-backward", "dS K / √d"),
               tensor("dK", "dK", 9, 1, "", "attention-backward", "dSᵀ Q / √d"),
               tensor("dX", "dX", 10, 0.5, "", "attention-backward")};
    d.edges = {to("X", "Q"), to("X", "K"), to("X", "V"), to("Q", "S"), to("K", "S"), to("S", "P"), to("P", "O"),
               to("V", "O"), to("O", "L"), back("L", "dO"), back("dO", "dV"), back("dO", "dP"), back("dP", "dS"),
               back("dS", "dQ"), back("dS", "dK"), back("dQ", "dX"), back("dK", "dX")};
    return d;
}

Diagram learning_to_align() {
    Diagram d{"flow", "Lesson 9: the encoder-decoder with attention, trained by its loss",
              "The model of lesson 2 with every weight learned: the bidirectional encoder's states H, the "
              "alignment α for each target word, the context, the decoder, the next word's probabilities and "
              "their cross-entropy against the true word. Its gradient (dashed) reaches every weight; Adam steps "
              "them. The model without attention is the same with c = h_T. Sizes from this run.",
              "", 3, {}, {}, {}};
    d.nodes = {tensor("pair", "first_pair", 0, 0, "a training pair", "corpus", "source and target ids"),
               op("enc", "bidirectional GRU", 1, 0, "H = [h→; h←]"),
               op("att", "α = softmax(score)", 2, 1, "cᵢ = Σⱼ αᵢⱼ hⱼ"),
               op("dec", "decoder GRU", 3, 1, "sᵢ from yᵢ₋₁, cᵢ"),
               op("out", "softmax(Wₒ sᵢ + bₒ)", 4, 1),
               op("loss", "cross-entropy", 5, 1, "teacher-forced"),
               value("losses", "loss curves", 6, 0.6, "per epoch"),
               op("adam", "Adam", 6, 2, "clip, then step")};
    d.edges = {to("pair", "enc"), to("enc", "att"), to("att", "dec"), to("dec", "out"), to("out", "loss"),
               to("loss", "losses"), back("loss", "adam")};
    d.groups = {{"model with attention", {"enc", "att", "dec", "out"}}};
    return d;
}

Diagram online_softmax() {
    Diagram d{"flow", "Lesson 10: attention one tile at a time, with a running maximum m and sum l",
              "The keys and values are streamed in blocks. For each block the scores of a block of queries are "
              "computed, the running maximum m and sum l updated, and the output so far rescaled by exp(mₒ − m) "
              "(mₒ: the maximum before the block) before the block's weighted values are added. No T × T matrix "
              "is ever held; at the end O is divided by l. Shapes from this run.",
              "tiles", 3, {}, {}, {}};
    d.nodes = {tensor("Q", "Q", 0, 0.3), tensor("K", "K", 0, 1.3),
               op("s", "S = Qᵢ Kⱼᵀ / √dₖ", 1, 0.6, "one tile"),
               op("m", "m ← max(m, rowmax S)", 2, 0.6),
               op("l", "l ← l exp(mₒ−m) + Σ exp(S−m)", 3, 0.6, "mₒ: m before the block"),
               op("o", "O ← O exp(mₒ−m) + exp(S−m) Vⱼ", 4, 0.6),
               tensor("mt", "m_after_block", 2, 2.5, "m", "", "per block"),
               tensor("lt", "l", 3, 2.5),
               tensor("V", "V", 4, 2.5),
               tensor("O", "O_tiled", 5, 0.6, "", "", "O / l")};
    d.edges = {to("Q", "s"), to("K", "s"), to("s", "m"), to("m", "l"), to("l", "o"), to("V", "o"), to("m", "mt"),
               to("l", "lt"), to("o", "O")};
    d.groups = {{"each key block", {"s", "m", "l", "o"}}};
    return d;
}

Diagram transformer_block() {
    Diagram d{"flow", "Lesson 11: the Transformer block, post-LN and pre-LN",
              "Left, post-LN (Vaswani et al. 2017): each sub-layer's output is added to its input, then normalised. "
              "Right, pre-LN: each sub-layer reads a normalised copy and its output is added to the untouched "
              "stream, so the residual path from X to Y passes through no layer norm. Tensor names and shapes "
              "from this run.",
              "block", 2, {}, {}, {}};
    d.nodes = {tensor("Xp", "X", 0, 0, "X", "inputs"),
               tensor("pA", "post.A", 1, 0, "", "", "MHA(X)"),
               tensor("pR1", "post.R_1", 2, 0, "", "", "X + A"),
               tensor("pH", "post.H", 3, 0, "", "", "LN₁"),
               tensor("pF", "post.F", 4, 0, "", "", "FFN(H)"),
               tensor("pR2", "post.R_2", 5, 0, "", "", "H + F"),
               tensor("pY", "post.Y", 6, 0, "", "", "LN₂"),
               tensor("Xq", "X", 0, 1, "X", "inputs"),
               tensor("qN1", "pre.N_1", 1, 1, "", "", "LN₁(X)"),
               tensor("qA", "pre.A", 2, 1, "", "", "MHA"),
               tensor("qH", "pre.H", 3, 1, "", "", "X + A"),
               tensor("qN2", "pre.N_2", 4, 1, "", "", "LN₂(H)"),
               tensor("qF", "pre.F", 5, 1, "", "", "FFN"),
               tensor("qY", "pre.Y", 6, 1, "", "", "H + F")};
    d.edges = {to("Xp", "pA"), to("pA", "pR1"), to("pR1", "pH"), to("pH", "pF"), to("pF", "pR2"), to("pR2", "pY"),
               to("Xq", "qN1"), to("qN1", "qA"), to("qA", "qH"), to("qH", "qN2"), to("qN2", "qF"), to("qF", "qY"),
               around("Xp", "pR1", false), around("pH", "pR2", false), around("Xq", "qH", true),
               around("qH", "qY", true)};
    d.groups = {{"post-LN", {"pA", "pR1", "pH", "pF", "pR2", "pY"}}, {"pre-LN", {"qN1", "qA", "qH", "qN2", "qF", "qY"}}};
    return d;
}

Diagram transformer() {
    Diagram d{"flow", "Lesson 12: the Transformer, encoder stack, decoder stack and cross-attention",
              "The encoder's layers read the whole source; its output H gives the keys and values of every "
              "decoder layer's cross-attention, whose queries come from the target words so far (masked "
              "self-attention). Shapes from this run (one pair of the cross-attention step).",
              "", 2, {}, {}, {}};
    d.nodes = {value("src", "source words", 0, 0), value("tgt", "target words so far", 0, 1),
               op("e_emb", "embed + positions", 1, 0), op("d_emb", "embed + positions", 1, 1),
               op("e_att", "self-attention", 2, 0), op("d_att", "masked self-attention", 2, 1),
               op("e_ffn", "feed-forward", 3, 0),
               tensor("H", "H", 4, 0, "", "cross-attention", "keys and values"),
               op("cross", "cross-attention", 5, 1, "queries from the decoder"),
               tensor("A", "weights_head1", 6, 0, "weights", "cross-attention", "head 1"),
               tensor("out", "output", 6, 1, "", "cross-attention"),
               op("d_ffn", "feed-forward", 7, 1),
               op("logits", "linear + softmax", 8, 1, "the next word")};
    d.edges = {to("src", "e_emb"), to("e_emb", "e_att"), to("e_att", "e_ffn"), to("e_ffn", "H"), to("tgt", "d_emb"),
               to("d_emb", "d_att"), to("d_att", "cross"), to("H", "cross"), to("cross", "A"), to("cross", "out"),
               to("out", "d_ffn"), to("d_ffn", "logits")};
    d.groups = {{"encoder × L", {"e_att", "e_ffn"}}, {"decoder × L", {"d_att", "cross", "out", "d_ffn"}}};
    return d;
}

Diagram decoding_cache() {
    Diagram d{"cache", "Lesson 13: decoding with a key-value cache, one new row per word",
              "At each step only the newest word is projected: its key and value are appended to the cache (one row "
              "each per layer), and its query attends to every row cached so far. The work per step grows by one "
              "row, not by the whole prefix again. Numbers from this run.",
              "cache", 3, {}, {}, {}};
    d.nodes = {value("y", "newest word yₜ", 0, 1),
               op("proj", "project", 1, 1, "qₜ, kₜ, vₜ"),
               value("Kc", "K cache", 2, 0, "k₁ … kₜ₋₁ + kₜ"),
               value("q", "qₜ", 2, 1),
               value("Vc", "V cache", 2, 2, "v₁ … vₜ₋₁ + vₜ"),
               op("att", "softmax(qₜ Kᵀ/√d) V", 3, 1, "1 × t weights"),
               value("next", "next word yₜ₊₁", 4, 1, "fed in at the next step"),
               tensor("work", "work", 5, 1, "work per step", "cache", "multiply-adds")};
    d.edges = {to("y", "proj"), to("proj", "Kc"), to("proj", "q"), to("proj", "Vc"), to("Kc", "att"), to("q", "att"),
               to("Vc", "att"), to("att", "next"), to("next", "work")};
    return d;
}

Diagram decoding_beam() {
    Diagram d{"beam", "Lesson 13: beam search keeps the k most likely beginnings",
              "Each of the k beginnings kept is extended by every word; the k extensions with the highest total "
              "log-probability (length-normalised at the end) are kept for the next step, until every beam has "
              "ended with <eos>. Numbers from this run.",
              "beam", 2, {}, {}, {}};
    d.nodes = {value("b1", "beam 1: y₁ … yₜ", 0, 0), value("b2", "beam k: y₁ … yₜ", 0, 1),
               op("x1", "+ every word", 1, 0, "log p added"), op("x2", "+ every word", 1, 1, "log p added"),
               op("keep", "keep the k best", 2, 0.5, "of k × V extensions"),
               value("next", "k beams of length t + 1", 3, 0.5),
               tensor("table", "beam", 4, 0.5, "results", "beam", "exact matches, log p")};
    d.edges = {to("b1", "x1"), to("b2", "x2"), to("x1", "keep"), to("x2", "keep"), to("keep", "next"),
               to("next", "table")};
    return d;
}

Diagram real_translation() {
    Diagram d{"flow", "Lesson 14: from Bible verses to BLEU",
              "Verses of two translations are paired by their reference and split by whole books; SentencePiece "
              "learns the pieces both languages are cut into; three models are trained on the pairs and their "
              "greedy translations of the test verses scored by BLEU. Counts from this run.",
              "", 3, {}, {}, {}};
    d.nodes = {tensor("verses", "verses", 0, 1, "verses", "data", "English and Spanish"),
               op("align", "pair by reference", 1, 1, "split by whole books"),
               tensor("split", "split", 2, 1, "pairs", "data", "train, validation, test"),
               op("spm", "SentencePiece", 3, 1, "the pieces"),
               tensor("vocab", "vocabulary", 4, 1, "", "tokenizer"),
               tensor("models", "weights", 5, 1, "three models", "models", "GRU, + attention, Transformer"),
               op("decode", "greedy translation", 6, 1, "of the test verses"),
               tensor("bleu", "bleu", 7, 1, "BLEU", "length", "by source length")};
    d.edges = {to("verses", "align"), to("align", "split"), to("split", "spm"), to("spm", "vocab"),
               to("vocab", "models"), to("models", "decode"), to("decode", "bleu")};
    return d;
}

Diagram positions() {
    Diagram d{"flow", "Lesson 15: where RoPE and ALiBi put the positions",
              "RoPE turns each query by its position m and each key by its position n, pair by pair, so that their "
              "dot product depends on m − n only; the values are not turned. ALiBi turns nothing: it adds −mₖ (i − j) "
              "to each head's scores before the softmax, a penalty growing with the distance. Shapes from this run.",
              "", 2, {}, {}, {}};
    d.nodes = {tensor("X", "X", 0, 0.5, "", "layouts", "T tokens"),
               value("Q", "Q = X W_Q", 1, 0), value("K", "K = X W_K", 1, 1),
               op("rq", "turn qₘ by m θ", 2, 0), op("rk", "turn kₙ by n θ", 2, 1),
               tensor("S", "S_interleaved", 3, 0.5, "S", "layouts", "a function of m − n"),
               tensor("Sa", "S_alibi", 4, 0, "S", "alibi-bias", "no turn"),
               tensor("B", "B_causal", 4, 1, "B", "alibi-bias", "−m (i − j)"),
               op("soft", "softmax(S + B)", 5, 0.5),
               tensor("A", "A_alibi", 6, 0.5, "A", "alibi-bias")};
    d.edges = {to("X", "Q"), to("X", "K"), to("Q", "rq"), to("K", "rk"), to("rq", "S"), to("rk", "S"), to("Sa", "soft"),
               to("B", "soft"), to("soft", "A")};
    d.groups = {{"RoPE", {"X", "Q", "K", "rq", "rk", "S"}}, {"ALiBi", {"Sa", "B", "soft", "A"}}};
    return d;
}

}  // namespace diagram_impl

std::vector<Diagram> lesson_diagrams(const std::string& slug) {
    using namespace diagram_impl;
    static const std::map<std::string, std::vector<Diagram> (*)()> by_slug{
        {"bottleneck", [] { return std::vector<Diagram>{bottleneck()}; }},
        {"additive", [] { return std::vector<Diagram>{additive()}; }},
        {"scores", [] { return std::vector<Diagram>{scores()}; }},
        {"self-attention", [] { return std::vector<Diagram>{self_attention()}; }},
        {"gru-to-attention", [] { return std::vector<Diagram>{gru_to_attention()}; }},
        {"multi-head", [] { return std::vector<Diagram>{multi_head()}; }},
        {"scaling", [] { return std::vector<Diagram>{scaling()}; }},
        {"backprop", [] { return std::vector<Diagram>{backprop()}; }},
        {"learning-to-align", [] { return std::vector<Diagram>{learning_to_align()}; }},
        {"online-softmax", [] { return std::vector<Diagram>{online_softmax()}; }},
        {"transformer-block", [] { return std::vector<Diagram>{transformer_block()}; }},
        {"transformer", [] { return std::vector<Diagram>{transformer()}; }},
        {"decoding", [] { return std::vector<Diagram>{decoding_cache(), decoding_beam()}; }},
        {"real-translation", [] { return std::vector<Diagram>{real_translation()}; }},
        {"positions", [] { return std::vector<Diagram>{positions()}; }},
    };
    const auto it = by_slug.find(slug);
    return it == by_slug.end() ? std::vector<Diagram>{} : it->second();
}

}  // namespace attn
