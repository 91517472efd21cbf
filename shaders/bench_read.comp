#version 450
// The streaming-read ceiling for `vkllm bench-ops`: every invocation reads uvec4s in a grid-stride
// loop and folds them into one word, which is stored only if it hits a constant, so the loads cannot
// be dropped and nothing is written in practice.
#include "params.h"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0, std430) readonly buffer Source { uvec4 source[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Sink { uint sink[]; };
layout(push_constant) uniform Push { BenchReadParams p; };

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uvec4 folded = uvec4(0);
    for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) folded ^= source[i];
    const uint word = folded.x ^ folded.y ^ folded.z ^ folded.w;
    if (word == 0x9E3779B9u) sink[0] = word;
}
