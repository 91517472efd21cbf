#pragma once
// Checks shared by the architecture tests: a session's logits for every position, and the agreement
// two vkllm runs that should compute the same thing must reach (../shared/fixtures/README.md).
#include <cstdint>
#include <span>
#include <vector>

#include "model/model.h"

namespace vkllm::test {

// The logits after every token, from a fresh session of exactly tokens.size() cells running the
// prompt in chunks of at most n_ubatch tokens.
std::vector<float> session_logits(const model::Model& model, std::span<const int32_t> tokens, uint32_t n_ubatch = 512);

// How close two runs of one model must come, per position (relative RMS): 1e-4 where both take the same
// kernels (../shared/fixtures/README.md). A chunk of at most 8 tokens (and decode) takes the matvec kernels
// and a longer one matmul; on devices whose matvecs read slices (GPUs, not lavapipe's texel kernels) the
// two sum in different orders, and a last-bit difference in a key can round to another f16 in the cache:
// 3e-4 there, as for token-by-token runs, far under what a wrong state gives.
double agreement_tolerance(uint32_t n_ubatch);

// Every row within `tolerance` relative RMS and the same argmax; reports the worst row's error.
void check_runs_agree(const std::vector<float>& a, const std::vector<float>& b, size_t n_vocab, double tolerance);

}  // namespace vkllm::test
