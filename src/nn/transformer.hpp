// A Transformer block built from the course's parts: lesson 6's multi-head attention, lesson 5's
// position-wise network, layer norm (nn/layer_norm.hpp) and residual connections, in the two
// placements of the norm (post-LN as in Vaswani et al. 2017, pre-LN as in Xiong et al. 2020); its
// backward pass, stacks of blocks, the stack's inputs and dropout.
// T = tokens, d_model = model width, h = heads, d_ff = hidden width of the feed-forward network,
// L = blocks in a stack.
#pragma once

#include "core/tensor.hpp"
#include "nn/layer_norm.hpp"
#include "nn/multi_head.hpp"
#include "nn/unroll.hpp"

#include <string>
#include <utility>
#include <vector>

namespace attn::nn {

// Where the layer norm sits.
//   post_ln  Y = LN_2(H + FFN(H)),  H = LN_1(X + MHA(X))   — Vaswani et al. 2017, section 3.1
//   pre_ln   Y = H + FFN(LN_2(H)),  H = X + MHA(LN_1(X))   — Xiong et al. 2020, figure 1 (b)
enum class BlockKind { post_ln, pre_ln };

// "post-LN", "pre-LN"
const char* block_kind_name(BlockKind kind);

// The parameters of one block: LN_1, the attention's W^Q, W^K, W^V, W^O, LN_2, the network's
// W_1 (d_ff x d_model), b_1, W_2 (d_model x d_ff), b_2.
struct BlockParams {
    LayerNormParams norm_1;
    MultiHeadParams attention;
    LayerNormParams norm_2;
    FeedForward feed_forward;
};

// Every tensor one block computes, named after its place in the equations above.
struct BlockForward {
    LayerNormResult norm_1;    // pre: LN_1(X);  post: LN_1(residual_1)
    MultiHeadResult attention; // pre: MHA(LN_1(X));  post: MHA(X); its output is the first sub-layer's
    Mat residual_1;            // T x d_model, X + attention.output
    LayerNormResult norm_2;    // pre: LN_2(residual_1);  post: LN_2(residual_2)
    Mat feed_forward;          // T x d_model, pre: FFN(LN_2(residual_1));  post: FFN(LN_1(residual_1))
    Mat residual_2;            // T x d_model, pre: residual_1 + feed_forward;  post: LN_1(residual_1) + feed_forward
    Mat output;                // T x d_model, pre: residual_2;  post: LN_2(residual_2)
};

// x + MHA(LN_1(x)), then h + FFN(LN_2(h)): the pre-LN block (Xiong et al. 2020, figure 1 (b)),
// wired from nn::layer_norm, nn::multi_head_attention (self-attention: X_q = X_kv) and
// nn::position_wise_feed_forward. X: T x d_model; mask: T x T of 0 and -inf, or nullptr.
// The classroom exercise pre-ln-block (src/nn/transformer_pre_ln.cpp).
BlockForward pre_ln_block(const Mat& X, const BlockParams& p, std::size_t heads, const Mat* mask);

// LN_1(x + MHA(x)), then LN_2(h + FFN(h)): the post-LN block (Vaswani et al. 2017, section 3.1:
// "LayerNorm(x + Sublayer(x))").
BlockForward post_ln_block(const Mat& X, const BlockParams& p, std::size_t heads, const Mat* mask);

// The block of either kind.
BlockForward transformer_block(BlockKind kind, const Mat& X, const BlockParams& p, std::size_t heads,
                               const Mat* mask);

// The gradients of one block's input and parameters, laid out as BlockParams (dW_Q in
// attention.W_Q, dgain of LN_1 in norm_1.gain, ...).
struct BlockGrads {
    Mat dX;
    BlockParams params;
};

// The block's forward in reverse, each stage by its own backward: the residual sums copy their
// gradient to both summands, then layer_norm_backward, position_wise_feed_forward_backward and
// multi_head_self_attention_backward. `forward` is what transformer_block(kind, X, p, heads, mask)
// returned; dY: T x d_model.
BlockGrads transformer_block_backward(BlockKind kind, const Mat& X, const BlockParams& p, std::size_t heads,
                                      const Mat* mask, const BlockForward& forward, const Mat& dY);

// One parameter tensor of a block, by name, as a run of doubles (for sampling entries, norms).
struct NamedEntries {
    std::string name;  // "W_Q", "g_1", "b_ff1", ...
    double* data;
    std::size_t size;
    std::vector<std::size_t> shape{};  // the tensor's shape
};

// The entries of tensor t (a Mat or a Vec of one of the models) under `name`, with its shape.
template <class Tensor>
NamedEntries named_entries(std::string name, Tensor& t) {
    return NamedEntries{std::move(name), t.data(), t.size(), {t.shape().begin(), t.shape().end()}};
}

// The twelve parameter tensors of a block in a fixed order: g_1, b_1, W_Q, W_K, W_V, W_O, g_2, b_2,
// W_1, b_ff1, W_2, b_ff2.
std::vector<NamedEntries> block_tensors(BlockParams& p);

// A stack of L blocks of one kind. A pre-LN stack ends with a last layer norm (its residual
// stream is never normalised otherwise); a post-LN stack's last block already ends with one.
struct StackForward {
    std::vector<BlockForward> blocks;
    LayerNormResult final_norm;  // pre-LN only
    Mat output;                  // T x d_model
};

StackForward transformer_stack(BlockKind kind, const Mat& X, const std::vector<BlockParams>& blocks,
                               const LayerNormParams& final_norm, std::size_t heads, const Mat* mask);

struct StackGrads {
    Mat dX;
    std::vector<BlockParams> blocks;  // the gradients of each block's parameters
    LayerNormParams final_norm;       // pre-LN only: the gradients of the last norm's gain and bias
};

// The stack's backward: the last block first, each block's dX the dY of the one below.
StackGrads transformer_stack_backward(BlockKind kind, const Mat& X, const std::vector<BlockParams>& blocks,
                                      const LayerNormParams& final_norm, std::size_t heads, const Mat* mask,
                                      const StackForward& forward, const Mat& dY);

// E[ids] sqrt(d_model): the token embeddings scaled, a stack's input before any positions are added
// (Vaswani et al. 2017, section 3.4). table: V x d_model.
Mat scaled_embeddings(const Mat& table, const std::vector<std::size_t>& ids);

// X = E[ids] sqrt(d_model) + PE: token embeddings scaled by sqrt(d_model), plus the sinusoidal
// positions   — Vaswani et al. 2017, sections 3.4 and 3.5. table: V x d_model (d_model even).
Mat transformer_inputs(const Mat& table, const std::vector<std::size_t>& ids);

// y = x * m / (1 - p) entry by entry, m_ij = 1 where the unit is kept (probability 1 - p), else 0:
// inverted dropout (Srivastava et al. 2014, section 10, scaled at training time instead of at
// evaluation), so that E[y] = x and evaluation needs no change. keep: same shape as X, of 0 and 1;
// 0 <= p < 1.
Mat inverted_dropout(const Mat& X, const Mat& keep, double p);

}  // namespace attn::nn
