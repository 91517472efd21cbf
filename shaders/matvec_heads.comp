#version 450
// Per-head products: y_h = W_h x_h for every query head h and token, where a 3-D weight
// {cols, rows, n_head} stacks one rows x cols matrix per head (MLA's attn_k_b and attn_v_b, model-notes
// C.4). TYPE_<T> picks the dequant_<t>.glsl weight_type.glsl includes. Workgroup (row block, head, token); one invocation
// per row, which loops over the row's 32-element units (cols / 32: a few dozen at most, far below
// lavapipe's loop cap). x and y are strided: element i of head h of token t sits at
// t * stride + offset + h * head_stride + i.
#extension GL_GOOGLE_include_directive : require
#include "weight_type.glsl"
#include "params.h"

layout(local_size_x_id = 0) in;

layout(set = 0, binding = 1, std430) readonly buffer Input { vec4 x4[]; };
layout(set = 0, binding = 2, std430) writeonly buffer Output { float y[]; };
layout(push_constant) uniform Push { MatvecHeadsParams p; };

void main() {
    const uint row = gl_GlobalInvocationID.x, head = gl_WorkGroupID.y, token = gl_WorkGroupID.z;
    if (row >= p.rows) return;
    const uint units = (p.cols + UNIT_ELEMS - 1) / UNIT_ELEMS;
    const uint units_per_block = BLOCK_ELEMS / UNIT_ELEMS;
    const uint row_byte = (head * p.rows + row) * weight_row_bytes(p.cols);
    const uint x0 = token * p.x_stride + p.x_offset + head * p.x_head_stride;  // a multiple of 4

    float acc = 0.0;
    for (uint u = 0; u < units; ++u) {
        const uint block = u / units_per_block, unit = u % units_per_block;
        const uint runs = DENSE ? min(UNIT_RUNS, (p.cols - u * UNIT_ELEMS) / 4) : UNIT_RUNS;
        QVEC4 q[UNIT_RUNS];
        vec2 scale_bias[SCALE_GROUPS];
        decode_unit(row_byte + block * BLOCK_BYTES, unit, runs, q, scale_bias);
        const uint runs_per_group = UNIT_RUNS / SCALE_GROUPS;
        [[unroll]] for (uint g = 0; g < SCALE_GROUPS; ++g) {
            float group_dot = 0.0, group_sum = 0.0;
            [[unroll]] for (uint k = 0; k < runs_per_group; ++k) {
                const uint i = g * runs_per_group + k;
                vec4 x = vec4(0.0);
                if (i < runs) x = x4[(x0 + block * BLOCK_ELEMS + run_element(unit, i)) >> 2];
                group_dot += dot(vec4(q[i]), x * run_scale(i));
                group_sum += dot(x, vec4(1.0));
            }
            acc += scale_bias[g].x * group_dot;
            if (HAS_BIAS) acc += scale_bias[g].y * group_sum;
        }
    }
    y[token * p.y_stride + p.y_offset + head * p.y_head_stride + row] = acc;
}
