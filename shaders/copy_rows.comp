#version 450
// dst[r][dst_offset + c] = src[r][src_offset + c] for rows r and columns c < width: moves a block of
// columns between row-major layouts of different strides (q out of a fused QKV output, gate and up
// out of a fused gate/up output, a part's rows into a fused output).
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push { CopyRowsParams p; };

void main() {
    const uint column = gl_GlobalInvocationID.x, row = gl_WorkGroupID.y;
    if (column >= p.width) return;
    dst[row * p.dst_stride + p.dst_offset + column] = src[row * p.src_stride + p.src_offset + column];
}
