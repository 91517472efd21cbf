#pragma once
// A tokenizer's vocabulary as grammars see it (token_table.h): each token's bytes as the detokenizer
// writes them, end-of-generation tokens as End, control, unknown and unused tokens as Special. Its
// own library (vkllm_sampling_vocab), so that the grammar code links without the tokenizer.
#include <memory>

#include "sampling/token_table.h"
#include "tokenizer/tokenizer.h"

namespace vkllm::sampling {

std::shared_ptr<const TokenTable> vocab_token_table(const tokenizer::Tokenizer& tokenizer);

}  // namespace vkllm::sampling
