#include "convert/type_rules.h"

#include <array>
#include <charconv>
#include <string>
#include <utility>

namespace vkllm::convert {

namespace {

using gguf::GgmlType;

constexpr std::array<std::pair<std::string_view, OutputType>, 7> names = {{
    {"f32", OutputType::F32},
    {"f16", OutputType::F16},
    {"bf16", OutputType::BF16},
    {"q8_0", OutputType::Q8_0},
    {"q4_0", OutputType::Q4_0},
    {"q4_k", OutputType::Q4_K},
    {"q6_k", OutputType::Q6_K},
}};

bool ends_with_any(std::string_view name, std::initializer_list<std::string_view> suffixes) {
    for (std::string_view suffix : suffixes)
        if (name.ends_with(suffix)) return true;
    return false;
}

// Tensors llama.cpp never quantizes: vectors, norms, biases, MoE routers, position tables.
bool stays_f32(std::string_view name, std::span<const uint64_t> ne) {
    size_t n_dims = ne.size();
    while (n_dims > 1 && ne[n_dims - 1] == 1) --n_dims;
    return n_dims <= 1 || !name.ends_with(".weight") ||
           ends_with_any(name, {"_norm.weight", "ffn_gate_inp.weight", "position_embd.weight", "pos_embd.weight"});
}

// "blk.N." -> N.
std::optional<uint32_t> layer_of(std::string_view name) {
    if (!name.starts_with("blk.")) return std::nullopt;
    uint32_t layer = 0;
    auto [end, error] = std::from_chars(name.data() + 4, name.data() + name.size(), layer);
    if (error != std::errc() || end == name.data() + name.size() || *end != '.') return std::nullopt;
    return layer;
}

// llama-quant.cpp `use_more_bits`: the first and last eighth of the layers and every third between.
bool use_more_bits(uint32_t layer, uint32_t n_layer) {
    return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

GgmlType preferred_type(OutputType type, std::string_view name, uint32_t n_layer, bool tied_output) {
    // llama-quant.cpp quantizes tied token embeddings as the output (!qs.has_output)
    const bool is_output = name == "output.weight" || (tied_output && name == "token_embd.weight");
    switch (type) {
        case OutputType::F32: return GgmlType::F32;
        case OutputType::F16: return GgmlType::F16;
        case OutputType::BF16: return GgmlType::BF16;
        case OutputType::Q8_0: return GgmlType::Q8_0;
        case OutputType::Q6_K: return GgmlType::Q6_K;
        case OutputType::Q4_0: return is_output ? GgmlType::Q6_K : GgmlType::Q4_0;
        case OutputType::Q4_K: {
            if (is_output) return GgmlType::Q6_K;
            const auto layer = layer_of(name);
            if (layer && ends_with_any(name, {".attn_v.weight", ".ffn_down.weight"}) && use_more_bits(*layer, n_layer))
                return GgmlType::Q6_K;
            return GgmlType::Q4_K;
        }
    }
    return GgmlType::F32;
}

}  // namespace

std::optional<OutputType> parse_output_type(std::string_view name) {
    for (auto [text, type] : names)
        if (text == name) return type;
    return std::nullopt;
}

std::string_view output_type_name(OutputType type) {
    for (auto [text, t] : names)
        if (t == type) return text;
    return "?";
}

uint32_t file_type(OutputType type) {
    switch (type) {
        case OutputType::F32: return 0;
        case OutputType::F16: return 1;
        case OutputType::Q4_0: return 2;
        case OutputType::Q8_0: return 7;
        case OutputType::Q4_K: return 15;  // LLAMA_FTYPE_MOSTLY_Q4_K_M
        case OutputType::Q6_K: return 18;
        case OutputType::BF16: return 32;
    }
    return 0;
}

GgmlType tensor_type(OutputType type, std::string_view name, std::span<const uint64_t> ne, uint32_t n_layer,
                     bool tied_output) {
    if (stays_f32(name, ne)) return GgmlType::F32;
    GgmlType chosen = preferred_type(type, name, n_layer, tied_output);
    if (ne[0] % gguf::block_size(chosen) == 0) return chosen;
    // llama-quant.cpp's fallback for rows the block does not divide
    if (chosen == GgmlType::Q4_K) chosen = GgmlType::Q5_0;
    else if (chosen == GgmlType::Q6_K) chosen = GgmlType::Q8_0;
    else chosen = GgmlType::F16;
    return ne[0] % gguf::block_size(chosen) == 0 ? chosen : GgmlType::F16;
}

}  // namespace vkllm::convert
