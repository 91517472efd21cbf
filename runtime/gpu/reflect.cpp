#include "gpu/reflect.h"

#include <spirv/unified1/spirv.h>

#include <algorithm>
#include <map>
#include <optional>

#include "core/error.h"

namespace vkllm::gpu {
namespace {

struct Type {
    SpvOp op = SpvOpNop;
    std::vector<uint32_t> operands;  // the instruction's words after the result id
};

// The facts reflection needs, gathered in one pass over the module.
struct Module {
    std::map<uint32_t, Type> types;
    std::map<uint32_t, uint32_t> constants;  // id -> value of a 32-bit (spec) constant
    std::map<uint32_t, uint32_t> spec_ids;
    std::map<uint32_t, uint32_t> sets, bindings, array_strides;
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> member_offsets;
    std::map<uint32_t, std::vector<uint32_t>> composites;
    std::optional<uint32_t> workgroup_size_id;
    std::vector<std::pair<uint32_t, uint32_t>> variables;  // (pointer type, id)
    std::array<uint32_t, 3> local_size{1, 1, 1};
    std::optional<std::array<uint32_t, 3>> local_size_ids;
};

Module parse(std::string_view name, std::span<const uint32_t> words) {
    if (words.size() < 5 || words[0] != SpvMagicNumber) fail("shader '{}' is not SPIR-V", name);
    Module m;
    for (size_t at = 5; at < words.size();) {
        uint32_t count = words[at] >> 16;
        auto op = SpvOp(words[at] & 0xffff);
        if (count == 0 || at + count > words.size()) fail("shader '{}': truncated SPIR-V at word {}", name, at);
        std::span<const uint32_t> w = words.subspan(at + 1, count - 1);
        auto need = [&](size_t n) {
            if (w.size() < n) fail("shader '{}': short SPIR-V instruction {} at word {}", name, int(op), at);
        };
        switch (op) {
            case SpvOpDecorate:
                need(2);
                if (w[1] == SpvDecorationDescriptorSet && w.size() > 2) m.sets[w[0]] = w[2];
                if (w[1] == SpvDecorationBinding && w.size() > 2) m.bindings[w[0]] = w[2];
                if (w[1] == SpvDecorationSpecId && w.size() > 2) m.spec_ids[w[0]] = w[2];
                if (w[1] == SpvDecorationArrayStride && w.size() > 2) m.array_strides[w[0]] = w[2];
                if (w[1] == SpvDecorationBuiltIn && w.size() > 2 && w[2] == SpvBuiltInWorkgroupSize)
                    m.workgroup_size_id = w[0];
                break;
            case SpvOpMemberDecorate:
                need(3);
                if (w[2] == SpvDecorationOffset && w.size() > 3) m.member_offsets[{w[0], w[1]}] = w[3];
                break;
            case SpvOpExecutionMode:
            case SpvOpExecutionModeId:
                need(2);
                if (w[1] == SpvExecutionModeLocalSize && w.size() >= 5) m.local_size = {w[2], w[3], w[4]};
                if (w[1] == SpvExecutionModeLocalSizeId && w.size() >= 5)
                    m.local_size_ids = std::array<uint32_t, 3>{w[2], w[3], w[4]};
                break;
            case SpvOpTypeInt: case SpvOpTypeFloat: case SpvOpTypeVector: case SpvOpTypeArray:
            case SpvOpTypeRuntimeArray: case SpvOpTypeStruct: case SpvOpTypePointer: case SpvOpTypeBool:
            case SpvOpTypeImage: case SpvOpTypeSampledImage:
                need(1);
                m.types[w[0]] = {op, std::vector<uint32_t>(w.begin() + 1, w.end())};
                break;
            case SpvOpConstant: case SpvOpSpecConstant:
                need(3);
                m.constants[w[1]] = w[2];
                break;
            case SpvOpSpecConstantComposite: case SpvOpConstantComposite:
                need(2);
                m.composites[w[1]] = std::vector<uint32_t>(w.begin() + 2, w.end());
                break;
            case SpvOpVariable:
                need(3);
                m.variables.push_back({w[0], w[1]});
                break;
            default: break;
        }
        at += count;
    }
    return m;
}

uint32_t type_bytes(std::string_view name, const Module& m, uint32_t id, int depth = 0) {
    auto it = m.types.find(id);
    if (it == m.types.end() || depth > 8) fail("shader '{}': unsupported push-constant type", name);
    const Type& type = it->second;
    auto operand = [&](size_t i) {
        if (i >= type.operands.size()) fail("shader '{}': malformed type {}", name, id);
        return type.operands[i];
    };
    switch (type.op) {
        case SpvOpTypeInt: case SpvOpTypeFloat: return operand(0) / 8;
        case SpvOpTypeVector: return operand(1) * type_bytes(name, m, operand(0), depth + 1);
        case SpvOpTypeArray: {
            auto length = m.constants.find(operand(1));
            auto stride = m.array_strides.find(id);
            if (length == m.constants.end() || stride == m.array_strides.end())
                fail("shader '{}': push-constant array without a constant length or stride", name);
            return length->second * stride->second;
        }
        case SpvOpTypeStruct: {
            uint32_t end = 0;
            for (uint32_t member = 0; member < type.operands.size(); ++member) {
                auto offset = m.member_offsets.find({id, member});
                if (offset == m.member_offsets.end()) fail("shader '{}': struct member without an offset", name);
                end = std::max(end, offset->second + type_bytes(name, m, type.operands[member], depth + 1));
            }
            return end;
        }
        default: fail("shader '{}': unsupported push-constant member type", name);
    }
}

// A `uniform utextureBuffer`: the one image type vkllm binds, always as 32-bit uint texels. Not a
// usamplerBuffer: SPIR-V 1.6 forbids a sampled image of Dim Buffer, and Mesa 25 warns about it.
bool is_uint_texel_buffer(const Module& m, uint32_t type_id) {
    auto image = m.types.find(type_id);
    if (image == m.types.end() || image->second.op != SpvOpTypeImage || image->second.operands.size() < 6) return false;
    const std::vector<uint32_t>& o = image->second.operands;  // sampled type, dim, depth, arrayed, MS, sampled
    auto component = m.types.find(o[0]);
    bool uint32 = component != m.types.end() && component->second.op == SpvOpTypeInt &&
                  component->second.operands == std::vector<uint32_t>{32, 0};
    return uint32 && o[1] == SpvDimBuffer && o[5] == 1;
}

}  // namespace

std::array<uint32_t, 3> ShaderInfo::local_size_with(std::span<const SpecConstant> spec) const {
    std::array<uint32_t, 3> size = local_size;
    for (int axis = 0; axis < 3; ++axis)
        for (const SpecConstant& constant : spec)
            if (local_size_spec_id[axis] >= 0 && constant.id == uint32_t(local_size_spec_id[axis]))
                size[axis] = constant.value;
    return size;
}

ShaderInfo reflect(std::string_view name, std::span<const uint32_t> spirv) {
    Module m = parse(name, spirv);
    ShaderInfo info;
    std::map<uint32_t, VkDescriptorType> bindings;
    for (auto [pointer_type, id] : m.variables) {
        auto pointer = m.types.find(pointer_type);
        if (pointer == m.types.end() || pointer->second.operands.size() < 2) continue;
        auto storage = SpvStorageClass(pointer->second.operands[0]);
        if (storage == SpvStorageClassPushConstant) {
            info.push_constant_bytes = type_bytes(name, m, pointer->second.operands[1]);
            continue;
        }
        if (storage != SpvStorageClassStorageBuffer && storage != SpvStorageClassUniform &&
            storage != SpvStorageClassUniformConstant)
            continue;
        if (storage == SpvStorageClassUniformConstant && !is_uint_texel_buffer(m, pointer->second.operands[1]))
            fail("shader '{}' uses images or samplers other than a utextureBuffer", name);
        auto set = m.sets.find(id);
        auto binding = m.bindings.find(id);
        if (set == m.sets.end() || binding == m.bindings.end()) fail("shader '{}': a buffer without a binding", name);
        if (set->second != 0) fail("shader '{}' uses descriptor set {}; vkllm binds set 0 only", name, set->second);
        bindings[binding->second] = storage == SpvStorageClassUniform        ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                    : storage == SpvStorageClassUniformConstant ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                                                                : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    }
    for (auto [binding, type] : bindings) {
        if (binding != info.bindings.size()) fail("shader '{}': binding {} is not followed on from 0", name, binding);
        info.bindings.push_back(type);
    }

    std::optional<std::array<uint32_t, 3>> size_ids = m.local_size_ids;
    if (m.workgroup_size_id) {
        auto composite = m.composites.find(*m.workgroup_size_id);
        if (composite == m.composites.end() || composite->second.size() != 3)
            fail("shader '{}': malformed WorkgroupSize", name);
        size_ids = std::array<uint32_t, 3>{composite->second[0], composite->second[1], composite->second[2]};
    }
    info.local_size = m.local_size;
    if (size_ids) {
        for (int axis = 0; axis < 3; ++axis) {
            uint32_t id = (*size_ids)[axis];
            auto value = m.constants.find(id);
            if (value == m.constants.end()) fail("shader '{}': workgroup size is not a constant", name);
            info.local_size[axis] = value->second;
            if (auto spec = m.spec_ids.find(id); spec != m.spec_ids.end()) info.local_size_spec_id[axis] = int32_t(spec->second);
        }
    }
    return info;
}

}  // namespace vkllm::gpu
