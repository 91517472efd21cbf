// llama.cpp's hard-coded chat formats (model-notes.md E), and prompt tokenization that does not
// double a template's own BOS.
#include <doctest/doctest.h>

#include <filesystem>

#include "chat/prompt.h"
#include "tokenizer/tekken.h"
#include "test_main.h"

using namespace vkllm::chat;

namespace {

const std::vector<Message> conversation = {
    {"system", "You are X"}, {"user", "Hi"}, {"assistant", " Hello "}, {"user", "Again"}};

}  // namespace

TEST_CASE("built-in formats: Mistral v3-tekken, v7, v7-tekken, Gemma") {
    CHECK(render_builtin(BuiltinFormat::MistralV7Tekken, conversation, true) ==
          "[SYSTEM_PROMPT]You are X[/SYSTEM_PROMPT][INST]Hi[/INST] Hello </s>[INST]Again[/INST]");
    CHECK(render_builtin(BuiltinFormat::MistralV7, conversation, true) ==
          "[SYSTEM_PROMPT] You are X[/SYSTEM_PROMPT][INST] Hi[/INST]  Hello </s>[INST] Again[/INST]");
    CHECK(render_builtin(BuiltinFormat::MistralV3Tekken, conversation, true) ==
          "[INST]You are X\n\nHi[/INST] Hello </s>[INST]Again[/INST]");
    CHECK(render_builtin(BuiltinFormat::Gemma, conversation, true) ==
          "<start_of_turn>user\nYou are X\n\nHi<end_of_turn>\n<start_of_turn>model\nHello<end_of_turn>\n"
          "<start_of_turn>user\nAgain<end_of_turn>\n<start_of_turn>model\n");
    CHECK(render_builtin(BuiltinFormat::Gemma, conversation, false).ends_with("Again<end_of_turn>\n"));
}

TEST_CASE("built-in format detection follows llama.cpp") {
    CHECK(detect_builtin_format("mistral-v7-tekken") == BuiltinFormat::MistralV7Tekken);
    CHECK(detect_builtin_format("mistral-v3-tekken") == BuiltinFormat::MistralV3Tekken);
    CHECK(detect_builtin_format("{{ '[INST]' }}{{ '[SYSTEM_PROMPT]' }}") == BuiltinFormat::MistralV7);
    CHECK(detect_builtin_format("{{ '<start_of_turn>' }}") == BuiltinFormat::Gemma);
    CHECK_FALSE(detect_builtin_format("{{ messages }}").has_value());
}

TEST_CASE("a template that prints bos_token does not get a second BOS") {
    const auto tekken_file = vkllm::test::shared_path("fixtures/convert/mistral3_hf/hf/tekken.json");
    if (!tekken_file) return;
    const std::filesystem::path& tekken = *tekken_file;
    vkllm::tokenizer::Vocab vocab = vkllm::tokenizer::vocab_from_tekken_json(tekken);
    vocab.chat_template = "{{ bos_token }}{% for m in messages %}[INST]{{ m.content }}[/INST]{% endfor %}";
    const vkllm::tokenizer::Tokenizer tokenizer(vocab);
    const ChatTemplate chat(vocab, "test");
    const std::string rendered = chat.render(nlohmann::ordered_json::parse(R"([{"role":"user","content":"Hi"}])"), true);
    CHECK(rendered == "<s>[INST]Hi[/INST]");
    const auto ids = prompt_tokens(tokenizer, rendered);
    REQUIRE(ids.size() >= 3);
    CHECK(ids[0] == vocab.bos);
    CHECK(ids[1] == 3);  // [INST] parsed as a control token
    CHECK(ids.back() == 4);
    CHECK(std::count(ids.begin(), ids.end(), vocab.bos) == 1);
    // Without the template's BOS, the tokenizer adds it.
    CHECK(prompt_tokens(tokenizer, "[INST]Hi[/INST]") == ids);
}
