#pragma once
// vkllm synth's command line, parsed once by synth.cpp for every architecture, and the vocabulary
// every architecture takes; --arch minimax-m3 is written by synth_minimax.cpp.
#include <cstdint>
#include <string>

#include "gguf/reader.h"
#include "gguf/writer.h"

namespace vkllm::cli {

struct SynthSettings {
    std::string arch, preset, type, out, vocab;  // vocab: none for the bundled one
    uint64_t seed = 1;
    uint32_t threads = 0;                    // 0: every core
    uint32_t experts = 0, experts_used = 0;  // 0: dense FFN layers
    bool dense = false;                      // minimax-m3: no indexer
    std::string pooling;                     // bert: the pooling_type written (mean, cls, last); empty: mean
};

// The tokenizer a synth model takes, the tokenizer.* keys of a GGUF: --vocab's file, or with none the
// bundled models/stories260K.gguf, whose bytes are built into vkllm (cmake/EmbedBytes.cmake), so an
// installed vkllm needs no source tree.
class SynthVocab {
public:
    explicit SynthVocab(const std::string& path);  // throws when the file has no tokenizer.ggml.tokens
    uint64_t n_tokens() const { return n_tokens_; }
    void add_to(gguf::Writer& writer) const;

private:
    gguf::File file_;
    uint64_t n_tokens_;
};

int synth_minimax_m3(const SynthSettings& settings);

}  // namespace vkllm::cli
