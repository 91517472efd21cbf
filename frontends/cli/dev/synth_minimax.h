#pragma once
// vkllm synth's command line, parsed once by synth.cpp for every architecture; --arch minimax-m3 is
// written by synth_minimax.cpp.
#include <cstdint>
#include <string>

namespace vkllm::cli {

struct SynthSettings {
    std::string arch, preset, type, out, vocab = VKLLM_BUNDLED_VOCAB;
    uint64_t seed = 1;
    uint32_t experts = 0, experts_used = 0;  // 0: dense FFN layers
    bool dense = false;                      // minimax-m3: no indexer
    std::string pooling;                     // bert: the pooling_type written (mean, cls, last); empty: mean
};

int synth_minimax_m3(const SynthSettings& settings);

}  // namespace vkllm::cli
