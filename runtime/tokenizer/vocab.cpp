#include "tokenizer/vocab.h"

#include <algorithm>
#include <array>
#include <span>

#include "core/error.h"
#include "tokenizer/pretokenize.h"

namespace vkllm::tokenizer {

uint32_t attr_of(TokenType type) {
    switch (type) {
        case TokenType::Normal: return attr_normal;
        case TokenType::Unknown: return attr_unknown;
        case TokenType::Control: return attr_control;
        case TokenType::UserDefined: return attr_user_defined;
        case TokenType::Unused: return attr_unused;
        case TokenType::Byte: return attr_byte;
        default: return attr_undefined;
    }
}

namespace {

bool is_one_of(std::string_view pre, std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), pre) != names.end();
}

// The flags llama.cpp's loader sets per BPE pre-type (`llama_vocab::impl::load`).
void apply_pre_type_flags(Vocab& vocab) {
    const std::string_view pre = vocab.pre;
    if (is_one_of(pre, {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                        "midm-2.0", "lfm2"})) {
        vocab.ignore_merges = true;
        vocab.add_bos = true;
    }
    if (pre == "tekken") {
        vocab.ignore_merges = true;
        vocab.add_bos = true;
        vocab.clean_spaces = false;
    }
    if (pre == "chameleon") {
        vocab.add_bos = true;
        vocab.clean_spaces = false;
    }
    if (is_one_of(pre, {"deepseek-llm", "deepseek-coder", "deepseek-v3", "command-r", "qwen2",
                        "deepseek-r1-qwen", "kormo", "poro-chat", "viking", "smollm", "gpt-4o",
                        "llama4", "minimax-m2", "hunyuan", "hunyuan-dense", "joyai-llm", "grok-2",
                        "solar-open"}))
        vocab.clean_spaces = false;
    if (is_one_of(pre, {"jina-v1-en", "jina-v2-code", "roberta-bpe"})) vocab.add_sep = true;
    if (is_one_of(pre, {"chatglm-bpe", "glm4"})) vocab.bos = no_token;
}

}  // namespace

Vocab default_vocab(Model model, std::string_view pre) {
    Vocab vocab;
    vocab.model = model;
    switch (model) {
        case Model::Spm:
            vocab.bos = 1, vocab.eos = 2, vocab.unk = 0;
            vocab.add_bos = true;
            vocab.add_space_prefix = true;
            break;
        case Model::Wpm:
            vocab.bos = 101, vocab.unk = 100, vocab.sep = 102, vocab.pad = 0, vocab.mask = 103;
            vocab.add_bos = true, vocab.add_sep = true;
            vocab.clean_spaces = true;
            vocab.lowercase = vocab.strip_accents = true;  // BERT uncased
            break;
        case Model::Bpe:
            vocab.pre = pre.empty() ? "default" : std::string(pre);
            if (PreTokenizer::regexes_for(vocab.pre).empty())
                fail("tokenizer.ggml.pre: unknown pre-tokenizer '{}'", vocab.pre);
            vocab.bos = vocab.eos = 11;  // llama.cpp's placeholders, usually overridden by keys
            vocab.clean_spaces = true;
            apply_pre_type_flags(vocab);
            break;
    }
    return vocab;
}

namespace {

// Token texts llama.cpp recognises as end-of-turn / end-of-generation (`load`, EOT and EOG lists).
constexpr std::array<std::string_view, 11> eot_texts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
constexpr std::array<std::string_view, 16> eog_texts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "</s>",
    "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>",
    "<eos>", "<｜end▁of▁sentence｜>", "[e~["};

bool is_listed(std::string_view text, std::span<const std::string_view> list) {
    return std::find(list.begin(), list.end(), text) != list.end();
}

}  // namespace

void detect_special_tokens(Vocab& vocab) {
    for (TokenId id = 0; id < TokenId(vocab.size()); ++id) {
        const std::string& text = vocab.tokens[size_t(id)];
        uint32_t& attr = vocab.attrs[size_t(id)];
        if (vocab.eot == no_token && is_listed(text, eot_texts)) {
            vocab.eot = id;
            attr |= attr_control;
        }
        if (vocab.eom == no_token && text == "<|eom_id|>") {
            vocab.eom = id;
            attr |= attr_control;
        }
        if ((attr & attr_control) && text.find("unused") != std::string::npos) attr |= attr_unused;
        if (is_listed(text, eog_texts)) {
            vocab.eog.push_back(id);
            attr |= attr_control;
        }
    }
    for (TokenId id : {vocab.eos, vocab.eot, vocab.eom})
        if (id != no_token) vocab.eog.push_back(id);
    std::sort(vocab.eog.begin(), vocab.eog.end());
    vocab.eog.erase(std::unique(vocab.eog.begin(), vocab.eog.end()), vocab.eog.end());
}

}  // namespace vkllm::tokenizer
