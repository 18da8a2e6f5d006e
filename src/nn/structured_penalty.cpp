// The penalty of Lin et al. 2017, P = ||A A^T - I||_F^2 (section 2.2, eq. 8; see nn/structured.hpp).
// The classroom exercise lin-penalty; the student's version is lessons/exercises/lin_penalty.cpp.
// r = hops (rows of A), n = tokens.
#include "nn/structured.hpp"

#include "nn/linalg.hpp"

#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>

namespace attn::nn {

double redundancy_penalty(const Mat& A) {
    const Mat gram = matmul(A, xt::eval(xt::transpose(A)), "A A^T");
    const Mat off_identity = gram - xt::eye<double>(A.shape(0));
    return xt::sum(off_identity * off_identity)();
}

}  // namespace attn::nn
