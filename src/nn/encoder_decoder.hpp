// The Transformer as an encoder-decoder (Vaswani et al. 2017, section 3.1 and figure 1), with lesson
// 11's pre-LN blocks (Xiong et al. 2020): cross-attention (queries from the decoder, keys and values
// from the encoder), the decoder block (causal self-attention, cross-attention, the position-wise
// network, each a pre-LN sub-layer with its residual), the whole model's forward, loss, backward
// and greedy decoding, trainable with nn/optimizer.hpp.
// T_y = decoder tokens (queries), T_x = encoder tokens (keys/values), d_model = model width,
// h = heads, L_enc / L_dec = blocks, V_src / V_tgt = vocabulary sizes.
#pragma once

#include "core/tensor.hpp"
#include "nn/layer_norm.hpp"
#include "nn/multi_head.hpp"
#include "nn/optimizer.hpp"
#include "nn/position_schemes.hpp"
#include "nn/transformer.hpp"
#include "nn/unroll.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace attn::nn {

// CrossAttention(Y, H) = MultiHead(Q = Y W^Q, K = H W^K, V = H W^V): "the queries come from the
// previous decoder layer, and the memory keys and values come from the output of the encoder"
// — Vaswani et al. 2017, section 3.2.3. Y: T_y x d_model (the decoder's normalised stream),
// H: T_x x d_model (the encoder's output); T_y and T_x differ. No mask: every target position may
// read every source position (the source is known whole; only the decoder's own future is hidden).
// Returns weights h x T_y x T_x and output T_y x d_model.
// The classroom exercise cross-attention (src/nn/cross_attention.cpp).
MultiHeadResult cross_attention(const Mat& Y, const Mat& H, const MultiHeadParams& p, std::size_t heads);

// The gradients of cross-attention, laid out as MultiHeadParams for the weights.
struct CrossAttentionGrads {
    Mat dY;  // T_y x d_model: through the queries only
    Mat dH;  // T_x x d_model: through the keys and the values
    MultiHeadParams params;
};

// dW^O = Concat^T dO, dConcat = dO W^O^T; head i's attention backward gives dQ_i, dK_i, dV_i, then
// dW^Q = Y^T dQ_i, dW^K = H^T dK_i, dW^V = H^T dV_i (head i's columns), dY = sum_i dQ_i W_i^Q^T,
// dH = sum_i dK_i W_i^K^T + dV_i W_i^V^T. `forward` is what cross_attention(Y, H, p, heads)
// returned; dO: T_y x d_model.
CrossAttentionGrads cross_attention_backward(const Mat& Y, const Mat& H, const MultiHeadParams& p, std::size_t heads,
                                             const MultiHeadResult& forward, const Mat& dO);

// One decoder block's parameters: LN_1 and masked self-attention, LN_2 and cross-attention, LN_3
// and the position-wise network.
struct DecoderBlockParams {
    LayerNormParams norm_1;
    MultiHeadParams self_attention;
    LayerNormParams norm_2;
    MultiHeadParams cross_attention;
    LayerNormParams norm_3;
    FeedForward feed_forward;
};

// Every tensor one decoder block computes.
struct DecoderBlockForward {
    LayerNormResult norm_1;          // LN_1(X)
    MultiHeadResult self_attention;  // MHA(LN_1(X)) under the causal mask
    Mat residual_1;                  // X + self_attention.output
    LayerNormResult norm_2;          // LN_2(residual_1)
    MultiHeadResult cross;           // CrossAttention(LN_2(residual_1), H)
    Mat residual_2;                  // residual_1 + cross.output
    LayerNormResult norm_3;          // LN_3(residual_2)
    Mat feed_forward;                // FFN(LN_3(residual_2))
    Mat output;                      // residual_2 + feed_forward
};

// The pre-LN decoder block (Vaswani et al. 2017, section 3.1, "a third sub-layer, which performs
// multi-head attention over the output of the encoder stack"; each sub-layer x + F(LN(x)) as in
// Xiong et al. 2020): R_1 = X + MHA(LN_1(X)) causal, R_2 = R_1 + CrossAttention(LN_2(R_1), H),
// Y = R_2 + FFN(LN_3(R_2)). X: T_y x d_model, H: T_x x d_model, causal: T_y x T_y of 0 and -inf.
// `scheme` (nn/position_schemes.hpp) says how the self-attention takes positions: under rope and alibi
// through nn::positioned_self_attention (causal), else nn::multi_head_attention with `causal`.
DecoderBlockForward decoder_block(const Mat& X, const Mat& H, const DecoderBlockParams& p, std::size_t heads,
                                  const Mat& causal, PositionScheme scheme = PositionScheme::added);

struct DecoderBlockGrads {
    Mat dX;  // T_y x d_model
    Mat dH;  // T_x x d_model, through the cross-attention's keys and values
    DecoderBlockParams params;
};

// The block in reverse, each stage by its own backward. `forward` is what decoder_block returned.
DecoderBlockGrads decoder_block_backward(const Mat& H, const DecoderBlockParams& p, std::size_t heads,
                                         const DecoderBlockForward& forward, const Mat& dY,
                                         PositionScheme scheme = PositionScheme::added);

// The 20 parameter tensors of a decoder block in a fixed order: g_1, b_1, the self-attention's
// W_Q, W_K, W_V, W_O, g_2, b_2, the cross-attention's X_Q, X_K, X_V, X_O, g_3, b_3, W_1, b_ff1,
// W_2, b_ff2.
std::vector<NamedEntries> decoder_block_tensors(DecoderBlockParams& p);

// The whole model: source and target embeddings (inputs E[ids] sqrt(d_model) + PE, as
// nn::transformer_inputs, or + P[0..T) with learned positions), a pre-LN encoder stack with its
// final norm, a pre-LN decoder stack with its final norm, and the output layer
// softmax(Z W_o^T + b_o).
struct EncoderDecoder {
    std::size_t heads = 1;
    Mat E_src;                                // V_src x d_model
    Mat E_tgt;                                // V_tgt x d_model
    // Learned absolute positions (Gehring et al. 2017; Vaswani et al. 2017, section 3.5, found them
    // as good as the sinusoids): row t is added to the input at position t. Both empty (0 x 0):
    // the sinusoidal encoding instead. A sentence longer than the table is refused.
    Mat P_src;                                // positions x d_model, or empty
    Mat P_tgt;                                // positions x d_model, or empty
    // Where the positions enter (nn/position_schemes.hpp): added to the inputs (P_src and P_tgt, or the
    // sinusoids), or in self-attention's scores (rope, alibi; no P tables), or nowhere in the decoder
    // (none). Lesson 15 trains each; the fast training (nn/encoder_decoder_batch.hpp), the key-value
    // cache and the model files take `added` only, and refuse the others by name.
    PositionScheme positions = PositionScheme::added;
    std::vector<BlockParams> encoder;         // L_enc blocks
    LayerNormParams encoder_norm;
    std::vector<DecoderBlockParams> decoder;  // L_dec blocks
    LayerNormParams decoder_norm;
    Mat W_o;                                  // V_tgt x d_model
    Vec b_o;                                  // V_tgt
};

// Every trained tensor of m with its name ("E_src", "enc1.W_Q", "dec1.X_K", "W_o", ...), always in
// the same order (P_src and P_tgt after E_tgt, when learned); blocks() is the same without the
// names. (The eps of each norm is not trained.)
std::vector<NamedEntries> named_tensors(EncoderDecoder& m);
std::vector<Block> blocks(EncoderDecoder& m);

// m with every trained number set to 0: where gradients accumulate.
EncoderDecoder zeros_like(const EncoderDecoder& m);

// The input of a stack: E[ids] sqrt(d_model) plus the sinusoidal encoding when `positions` is
// empty, else plus its rows 0 .. T-1 (ShapeError when T exceeds them). T x d_model.
Mat embedded_inputs(const Mat& table, const Mat& positions, const std::vector<std::size_t>& ids);

// The output layer Z W_o^T + b_o (T x V) of the normalised stream Z (T x d_model).
Mat output_logits(const Mat& Z, const Mat& W_o, const Vec& b_o);

// The backward of the loss -sum_i log P_{i, targets_i} through P = softmax(Z W_o^T + b_o): dlogits =
// P - onehot(targets), dW_o = dlogits^T Z, db_o = its column sums, dZ = dlogits W_o.
struct OutputLayerGrads {
    Mat dW_o;
    Vec db_o;
    Mat dZ;
};
OutputLayerGrads output_layer_backward(const Mat& P, const std::vector<std::size_t>& targets, const Mat& Z,
                                       const Mat& W_o);

// The inputs' backward: dE[ids_t] += sqrt(d_model) dX_t (the inputs are E[ids] sqrt(d_model) + PE);
// with learned positions (dP not empty) also dP[t] += dX_t.
void add_embedding_grads(Mat& dE, Mat& dP, const std::vector<std::size_t>& ids, const Mat& dX);

// One sentence pair with teacher forcing, as nn::seq2seq_forward: the decoder reads <sos>, y_1, ..,
// y_{T_y - 1} (dec_in) and predicts y_1, .., <eos> (dec_out), all positions at once.
struct EncoderDecoderPass {
    double loss = 0.0;                   // sum_i -log p(y_i | y_<i, x), natural log
    std::vector<std::size_t> predicted;  // argmax at each position
    std::vector<Heads> cross_weights;    // one per decoder block: h x T_y x T_x
};

EncoderDecoderPass encoder_decoder_forward(const EncoderDecoder& m, const std::vector<std::size_t>& src,
                                           const std::vector<std::size_t>& dec_in,
                                           const std::vector<std::size_t>& dec_out);

// The forward pass, then dL/d(every weight) added to `grads` (shaped like m); returns the forward.
EncoderDecoderPass encoder_decoder_backward(const EncoderDecoder& m, const std::vector<std::size_t>& src,
                                            const std::vector<std::size_t>& dec_in,
                                            const std::vector<std::size_t>& dec_out, EncoderDecoder& grads);

// Greedy decoding: encode once, then run the decoder on <sos> and the words so far and take the
// last position's most likely word, until <eos> or max_words words (the <eos> is not returned).
std::vector<std::size_t> encoder_decoder_greedy(const EncoderDecoder& m, const std::vector<std::size_t>& src,
                                                std::size_t sos, std::size_t eos, std::size_t max_words);

// The encoder's output for a source sentence (T_x x d_model), as the passes above compute it.
Mat encoder_output(const EncoderDecoder& m, const std::vector<std::size_t>& src);

// The decoder stack on all of dec_in at once over the encoder's output H, as greedy decoding runs
// it for every word: the next word's probabilities at every position (T_y x V_tgt).
Mat decoder_probabilities(const EncoderDecoder& m, const Mat& H, const std::vector<std::size_t>& dec_in);

}  // namespace attn::nn
