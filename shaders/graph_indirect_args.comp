#version 450
// Writes a VkDispatchIndirectCommand covering step[slot] invocations: the GPU sizes a later
// dispatch without a readback, as MoE routing and sparse attention need.
#extension GL_GOOGLE_include_directive : require
#include "params.h"

layout(local_size_x = 1) in;

layout(std430, binding = 0) readonly buffer Step { uint step[]; };
layout(std430, binding = 1) writeonly buffer Arguments { uint groups[3]; };
layout(push_constant) uniform Push { GraphIndirectParams p; };

void main() {
    groups[0] = (step[p.slot] + p.group_size - 1) / p.group_size;
    groups[1] = 1;
    groups[2] = 1;
}
