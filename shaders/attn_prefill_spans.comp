#version 450
// The group counts of prefill attention's passes (runtime/ops/attention.cpp): pass s covers key
// indices s * span_keys .. (s + 1) * span_keys - 1 and gets its workgroups only if some query of the
// batch sees a key there, so that a batch's passes cost what the keys in use call for, whatever the
// cache's size. One VkDispatchIndirectCommand per pass.
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x = 64) in;
#include "attn_keys.glsl"

layout(std430, binding = 0) readonly buffer Positions { int positions[]; };
layout(std430, binding = 1) writeonly buffer Commands { uint commands[]; };  // [n_spans][3]
layout(push_constant) uniform Push { AttentionSpanParams p; };

shared ivec2 lane_keys[64];

void main() {
    const uint lane = gl_LocalInvocationID.x;
    const int last_pos = positions[p.n_tokens - 1];
    const CacheKeys held = cache_keys(last_pos, p.n_cells);
    ivec2 seen = ivec2(0x7FFFFFFF, -1);  // the first and last key index any of this lane's queries sees
    for (uint t = lane; t < p.n_tokens; t += 64) {
        const ivec2 keys = visible_keys(held, positions[t], last_pos, p.n_swa, p.n_cells, p.causal != 0u);
        if (keys.x <= keys.y) seen = ivec2(min(seen.x, keys.x), max(seen.y, keys.y));
    }
    lane_keys[lane] = seen;
    barrier();
    for (uint i = 0; i < 64; ++i) seen = ivec2(min(seen.x, lane_keys[i].x), max(seen.y, lane_keys[i].y));
    for (uint s = lane; s < p.n_spans; s += 64) {
        const int begin = int(s * p.span_keys), last = int(min((s + 1) * p.span_keys, p.key_end)) - 1;
        const bool used = begin <= seen.y && last >= seen.x;
        commands[3 * s] = used ? p.groups_x : 0u;
        commands[3 * s + 1] = p.groups_y;
        commands[3 * s + 2] = 1u;
    }
}
