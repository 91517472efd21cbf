#pragma once
// A chat through the engine's template that never outgrows the context. Each user turn renders the
// whole conversation, keeps the KV cache of the prefix already computed and runs the rest. When the
// prompt and room for a reply do not fit, the oldest turns are left out (never the system prompt);
// a turn that does not fit even alone is refused before anything runs. Images go with the first user
// turn: a conversation with images runs whole each turn (the encoder keeps each image's embeddings)
// and loses them when that turn is left out.
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "vision/image.h"
#include "vision/prompt.h"

namespace vkllm::engine {

struct TurnPrompt {
    bool accepted = false;          // false: the turn does not fit even alone; nothing ran, it is not kept
    uint32_t n_positions = 0;       // of the rendered prompt, image positions included
    uint32_t dropped_turns = 0;     // earlier user turns left out (each with its reply) to make room
    std::span<const float> logits;  // after the prompt; valid until the session runs again
};

class Conversation {
public:
    Conversation(Engine& engine, std::string system_prompt, std::vector<vision::Image> images = {});

    // Adds the user's turn and runs the prompt, leaving `reply_room` positions free for the reply
    // (at most a quarter of the context) by leaving out the oldest turns where needed.
    TurnPrompt add_user_turn(const std::string& text, uint32_t reply_room);
    void add_reply(const std::string& text);
    void clear();  // back to the system prompt (and the images, for the next first turn)

    const nlohmann::ordered_json& messages() const { return messages_; }

private:
    struct Prompt {
        std::vector<tokenizer::TokenId> tokens;     // without images
        std::vector<vision::PromptChunk> chunks;    // with images
        uint32_t n_positions = 0;
    };
    Prompt render();
    bool drop_oldest_turn();  // false when only the newest user turn is left

    Engine& engine_;
    std::string system_prompt_;
    std::vector<vision::Image> all_images_, images_;  // images_: while the first user turn is kept
    nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
    std::vector<float> media_logits_;
};

}  // namespace vkllm::engine
