#include "convert/vocab_keys.h"

#include "convert/hf_config.h"
#include "core/error.h"
#include "tokenizer/tekken.h"

namespace vkllm::convert {

namespace {

// llama.cpp's names for the chat templates of Mistral's tokenizer versions (llama-chat.cpp).
std::optional<std::string> tekken_template_name(const nlohmann::json& tekken) {
    const auto config = tekken.find("config");
    if (config == tekken.end() || !config->contains("version") || !(*config)["version"].is_string())
        return std::nullopt;
    const std::string version = (*config)["version"].get<std::string>();
    if (version == "v3" || version == "v7") return "mistral-" + version + "-tekken";
    return std::nullopt;
}

void add_id(gguf::Writer& writer, std::string_view key, tokenizer::TokenId id) {
    if (id != tokenizer::no_token) writer.add_u32(key, uint32_t(id));
}

}  // namespace

size_t add_tekken_vocab(gguf::Writer& writer, const std::filesystem::path& tekken_json) {
    const tokenizer::Vocab vocab = tokenizer::vocab_from_tekken_json(tekken_json);
    writer.add_string("tokenizer.ggml.model", "gpt2");
    writer.add_string("tokenizer.ggml.pre", vocab.pre);
    writer.add_string_array("tokenizer.ggml.tokens", std::span<const std::string>(vocab.tokens));
    // mistral_common's vocabulary has no scores: the converter writes integer zeros
    const std::vector<int32_t> scores(vocab.size(), 0);
    writer.add_array("tokenizer.ggml.scores", std::span<const int32_t>(scores));
    std::vector<int32_t> types;
    for (tokenizer::TokenType type : vocab.types) types.push_back(int32_t(type));
    writer.add_array("tokenizer.ggml.token_type", std::span<const int32_t>(types));
    writer.add_string_array("tokenizer.ggml.merges", std::span<const std::string>(vocab.merges));
    add_id(writer, "tokenizer.ggml.bos_token_id", vocab.bos);
    add_id(writer, "tokenizer.ggml.eos_token_id", vocab.eos);
    add_id(writer, "tokenizer.ggml.unknown_token_id", vocab.unk);
    add_id(writer, "tokenizer.ggml.padding_token_id", vocab.pad);
    writer.add_bool("tokenizer.ggml.add_bos_token", true);
    writer.add_bool("tokenizer.ggml.add_eos_token", false);
    if (auto name = tekken_template_name(read_json_file(tekken_json))) writer.add_string("tokenizer.chat_template", *name);
    return vocab.size();
}

}  // namespace vkllm::convert
