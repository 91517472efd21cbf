#version 450
// RoPE on q and k and the KV-cache write in one pass (model-notes.md B; cache layout
// runtime/ops/attention_config.h). Each token's row of qkv (token_stride floats) holds q (n_head
// heads of head_dim), k (n_head_kv heads of head_dim) and v (n_head_kv heads of head_dim_v).
// Invocations fall in three ranges:
//   q pairs  rotate one pair of one q head in place, as shaders/rope.comp does, then with the Llama-4
//            attention temperature (p.temperature_beta != 0; model-notes.md B.5) scale it, the pairs
//            past n_dims too;
//   k units  rotate UNIT values of k from the row (which this pass never writes) and store them
//            into cell slots[t] of the K cache: a pair for an F16 cache, a Q8_0 block of 32;
//   v units  store UNIT values of v into the V cache.
// Pairing from a spec constant: adjacent (x[2i], x[2i+1]) or NeoX (x[i], x[i + n_dims/2]); dims past
// n_dims are not rotated. A slot outside the cache is skipped.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"
#include "half_rte.glsl"
#include "kv_quant.glsl"
#include "rope_turn.glsl"

layout(constant_id = 3) const bool NEOX = false;

layout(std430, binding = 0) readonly buffer Phases { uvec2 phase_per_position[]; };  // (low, high) words
layout(std430, binding = 1) readonly buffer Positions { int positions[]; };
layout(std430, binding = 2) readonly buffer Slots { int slots[]; };
layout(std430, binding = 3) buffer Qkv { float qkv[]; };
layout(std430, binding = 4) buffer KCache { uint k_cache[]; };
layout(std430, binding = 5) buffer VCache { uint v_cache[]; };
layout(push_constant) uniform Push { RopeKvParams p; };

#ifdef KV_Q8_0
const uint UNIT = 32;
#else
const uint UNIT = 2;
#endif

// The pair holding element j (< n_dims) of a head: its index and its first and second elements.
uvec3 rope_pair(uint j) {
    const uint half_dims = p.n_dims / 2;
    if (NEOX) {
        const uint i = j % half_dims;
        return uvec3(i, i, i + half_dims);
    }
    return uvec3(j / 2, j & ~1u, j | 1u);
}

// Pairs of q per head this pass handles: the rotated ones, or with the temperature every one.
uint q_head_pairs() { return p.temperature_beta != 0.0 ? p.head_dim / 2 : p.n_dims / 2; }

void rotate_q_pair(uint pair) {
    const uint half_dims = p.n_dims / 2, head_pairs = q_head_pairs();
    const uint i = pair % head_pairs, head = pair / head_pairs % p.n_head, token = pair / head_pairs / p.n_head;
    const uint base = token * p.token_stride + head * p.head_dim;
    const int pos = positions[token];
    // Pairs past n_dims (with the temperature only) are scaled as they are.
    const uvec3 ends = i < half_dims ? rope_pair(NEOX ? i : 2 * i) : uvec3(i, 2 * i, 2 * i + 1);
    float a = qkv[base + ends.y], b = qkv[base + ends.z];
    if (i < half_dims) {
        const vec2 cs = rope_cos_sin(uint(pos), phase_per_position[i], p.mscale);
        const float rotated_a = a * cs.x - b * cs.y;
        b = a * cs.y + b * cs.x;
        a = rotated_a;
    }
    if (p.temperature_beta != 0.0) {
        const float temperature = 1.0 + p.temperature_beta * log(float(uint(max(pos, 0)) / p.temperature_length + 1u));
        a *= temperature;
        b *= temperature;
    }
    qkv[base + ends.y] = a;
    qkv[base + ends.z] = b;
}

// Element `e` of token t's k row after RoPE.
float rotated_k(uint token, uint e) {
    const uint base = token * p.token_stride + p.n_head * p.head_dim + e / p.head_dim * p.head_dim;
    const uint j = e % p.head_dim;
    if (j >= p.n_dims) return qkv[base + j];
    const uvec3 pair = rope_pair(j);
    const vec2 cs = rope_cos_sin(uint(positions[token]), phase_per_position[pair.x], p.mscale);
    const float a = qkv[base + pair.y], b = qkv[base + pair.z];
    return j == pair.y ? a * cs.x - b * cs.y : a * cs.y + b * cs.x;
}

void store_word(bool to_v, uint word, uint value) {
    if (to_v) v_cache[word] = value;
    else k_cache[word] = value;
}

// Stores values into a cache row of row_size values at cell `slot`, starting at element `first`.
void store_unit(bool to_v, uint slot, uint row_size, uint first, float values[UNIT]) {
#ifdef KV_Q8_0
    float amax = 0.0;
    [[unroll]] for (uint i = 0; i < UNIT; ++i) amax = max(amax, abs(values[i]));
    const float d = amax / 127.0;
    const float inverse = d != 0.0 ? 1.0 / d : 0.0;
    const uint quant_word = (slot * row_size + first) / 4;
    [[unroll]] for (uint w = 0; w < UNIT / 4; ++w)
        store_word(to_v, quant_word + w,
                   q8_0_pack4(vec4(values[4 * w], values[4 * w + 1], values[4 * w + 2], values[4 * w + 3]), inverse));
    // Two blocks' scales share a word: merge this one in.
    const uint scale_index = slot * (row_size / UNIT) + first / UNIT;
    const uint scale_word = p.n_cells * row_size / 4 + scale_index / 2, shift = 16 * (scale_index & 1u);
    const uint keep = ~(0xFFFFu << shift), bits = half_bits_rte(d) << shift;
    if (to_v) {
        atomicAnd(v_cache[scale_word], keep);
        atomicOr(v_cache[scale_word], bits);
    } else {
        atomicAnd(k_cache[scale_word], keep);
        atomicOr(k_cache[scale_word], bits);
    }
#else
    store_word(to_v, (slot * row_size + first) / 2, half_bits_rte(values[0]) | half_bits_rte(values[1]) << 16);
#endif
}

void main() {
    const uint q_pairs = p.n_tokens * p.n_head * q_head_pairs();
    const uint k_row = p.n_head_kv * p.head_dim, v_row = p.n_head_kv * p.head_dim_v;
    const uint k_units = p.n_tokens * (k_row / UNIT), v_units = p.n_tokens * (v_row / UNIT);
    uint index = flat_invocation();
    if (index < q_pairs) {
        rotate_q_pair(index);
        return;
    }
    index -= q_pairs;
    const bool to_v = index >= k_units;
    if (to_v) index -= k_units;
    if (to_v && index >= v_units) return;
    const uint row = to_v ? v_row : k_row;
    const uint token = index / (row / UNIT), first = index % (row / UNIT) * UNIT;
    const uint slot = uint(slots[token]);
    if (slot >= p.n_cells) return;
    const uint v_start = token * p.token_stride + p.n_head * p.head_dim + k_row;
    float values[UNIT];
    [[unroll]] for (uint i = 0; i < UNIT; ++i) values[i] = to_v ? qkv[v_start + first + i] : rotated_k(token, first + i);
    store_unit(to_v, slot, row, first, values);
}
