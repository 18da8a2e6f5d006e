// The masked softmax, softmax_j(S_ij + M_ij) row by row (see nn/self_attention.hpp).
// The classroom exercise masked-softmax; the student's version is lessons/exercises/masked_softmax.cpp.
#include "nn/self_attention.hpp"

#include "nn/softmax.hpp"

namespace attn::nn {

Mat masked_softmax(const Mat& scores, const Mat& mask) { return softmax_rows(masked_scores(scores, mask)); }

}  // namespace attn::nn
