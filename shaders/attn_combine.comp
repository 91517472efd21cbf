#version 450
// Merges attn_decode's per-chunk partial results of one (token, head): with M the largest chunk max,
// out = sum_c e^(m_c - M) o_c / sum_c e^(m_c - M) l_c over the chunks holding keys the query sees.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"
#include "attn_keys.glsl"

layout(constant_id = 3) const uint HEAD_DIM_V = 128;
layout(constant_id = 4) const uint CHUNK = 128;  // keys per attn_decode workgroup

layout(std430, binding = 0) readonly buffer PartialOut { float partial_out[]; };
layout(std430, binding = 1) readonly buffer PartialStats { vec2 partial_stats[]; };
layout(std430, binding = 2) readonly buffer Positions { int positions[]; };
layout(std430, binding = 3) writeonly buffer Out { float out_values[]; };  // [token][head][HEAD_DIM_V]
layout(push_constant) uniform Push { AttentionParams p; };

void main() {
    const uint head = gl_WorkGroupID.x, token = gl_WorkGroupID.y;
    const int last_pos = positions[p.n_tokens - 1];
    const ivec2 keys = visible_keys(cache_keys(last_pos, p.n_cells), positions[token], last_pos, p.n_swa, p.n_cells,
                                    p.causal != 0u);
    const int first = keys.x, last = keys.y;
    const uint base = token * p.n_head + head;
    if (last < first) {  // no key at all (a negative position): an all-zero output, never NaN
        for (uint d = gl_LocalInvocationID.x; d < HEAD_DIM_V; d += gl_WorkGroupSize.x)
            out_values[base * HEAD_DIM_V + d] = 0.0;
        return;
    }
    const uint chunk_first = uint(first) / CHUNK, chunk_last = uint(last) / CHUNK;
    float max_all = -1.0 / 0.0;
    for (uint c = chunk_first; c <= chunk_last; ++c) max_all = max(max_all, partial_stats[base * p.n_chunks + c].x);
    float sum = 0.0;
    for (uint c = chunk_first; c <= chunk_last; ++c) {
        const vec2 stats = partial_stats[base * p.n_chunks + c];
        sum += exp(stats.x - max_all) * stats.y;
    }
    for (uint d = gl_LocalInvocationID.x; d < HEAD_DIM_V; d += gl_WorkGroupSize.x) {
        float acc = 0.0;
        for (uint c = chunk_first; c <= chunk_last; ++c)
            acc += exp(partial_stats[base * p.n_chunks + c].x - max_all) * partial_out[(base * p.n_chunks + c) * HEAD_DIM_V + d];
        out_values[base * HEAD_DIM_V + d] = acc / sum;
    }
}
