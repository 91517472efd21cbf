#pragma once
// vkllm bench --parallel: the server's scheduler under B simultaneous requests (bench_parallel.cpp).
#include <string_view>
#include <vector>

#include "model_options.h"

namespace vkllm::cli {

// "1,2,4,8" to its batch sizes, each 1 to 64.
std::vector<uint32_t> parse_batch_sizes(std::string_view text);
int bench_parallel(ModelOptions options, const std::vector<uint32_t>& batches, uint32_t n_prompt, uint32_t n_gen,
                   bool json);

}  // namespace vkllm::cli
