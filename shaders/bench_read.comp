#version 450
// The streaming-read ceiling for `vkllm bench-ops`: each invocation reads p.per_invocation uvec4s and
// folds them into one word, stored only if it hits a constant, so the loads cannot be dropped and
// nothing is written in practice. Two access patterns, as the two kinds of device prefer:
// interleaved (consecutive invocations read consecutive uvec4s: coalesced on GPUs) and contiguous
// (each invocation streams its own run: SIMD lanes of a CPU device each follow one stream).
// TEXEL_READS reads through a uniform texel buffer, as the weight kernels' _texel variants do.
#extension GL_EXT_control_flow_attributes : require
#include "params.h"

layout(local_size_x_id = 0) in;

#ifdef TEXEL_READS
layout(set = 0, binding = 0) uniform utextureBuffer source_texels;
uvec4 source_at(uint i) { return texelFetch(source_texels, int(i)); }
#else
layout(set = 0, binding = 0, std430) readonly buffer Source { uvec4 source[]; };
uvec4 source_at(uint i) { return source[i]; }
#endif
layout(set = 0, binding = 1, std430) writeonly buffer Sink { uint sink[]; };
layout(push_constant) uniform Push { BenchReadParams p; };

void main() {
    const uint invocation = gl_GlobalInvocationID.x, invocations = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    const uint first = p.contiguous != 0u ? invocation * p.per_invocation : invocation;
    const uint step = p.contiguous != 0u ? 1u : invocations;
    // IN_FLIGHT loads issued before the first is used: one at a time, an invocation's latency bounds the
    // rate once the buffer no longer fits the cache (1,875 against 3,256 GB/s on an H200).
    const uint IN_FLIGHT = 4;
    uvec4 folded = uvec4(0);
    for (uint k = 0; k < p.per_invocation; k += IN_FLIGHT) {
        uvec4 loaded[IN_FLIGHT];
        [[unroll]] for (uint j = 0; j < IN_FLIGHT; ++j) {
            const uint i = first + (k + j) * step;
            loaded[j] = uvec4(0);
            if (k + j < p.per_invocation && i < p.count) loaded[j] = source_at(i);
        }
        [[unroll]] for (uint j = 0; j < IN_FLIGHT; ++j) folded ^= loaded[j];
    }
    const uint word = folded.x ^ folded.y ^ folded.z ^ folded.w;
    if (word == 0x9E3779B9u) sink[0] = word;
}
