#version 450
// Embedding lookup: out[t] = dequantized row ids[t] of the weight, for any weight type (TYPE_<T>
// picks the dequant_<t>.glsl weight_type.glsl includes). One invocation per 32-element unit of one
// token's row.
// A weight larger than one binding is split by rows: one dispatch per segment, each writing the
// tokens whose id falls in it; the segment at row 0 also writes zeros for ids outside the weight.
#extension GL_GOOGLE_include_directive : require
#include "weight_type.glsl"
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"


layout(std430, binding = 1) readonly buffer Ids { int ids[]; };
layout(std430, binding = 2) writeonly buffer Out { vec4 out4[]; };  // [n_tokens][n_cols]
layout(push_constant) uniform Push { GetRowsParams p; };

void main() {
    const uint units = (p.n_cols + UNIT_ELEMS - 1) / UNIT_ELEMS;
    const uint index = flat_invocation();
    if (index >= p.n_tokens * units) return;
    const uint token = index / units, unit = index % units;
    const uint first_run = (token * p.n_cols + unit * UNIT_ELEMS) / 4;
    const uint runs = min(UNIT_RUNS, (p.n_cols - unit * UNIT_ELEMS) / 4);
    const int id = ids[token];
    if (id < int(p.row_offset) || id >= int(p.row_offset + p.row_count)) {
        if (p.row_offset == 0u && (id < 0 || id >= int(p.n_rows)))
            for (uint r = 0; r < runs; ++r) out4[first_run + r] = vec4(0.0);
        return;
    }
    const uint units_per_block = BLOCK_ELEMS / UNIT_ELEMS;
    const uint block = unit / units_per_block, unit_in_block = unit % units_per_block;
    const uint block_byte = uint(id - int(p.row_offset)) * weight_row_bytes(p.n_cols) + block * BLOCK_BYTES;
    QVEC4 q[UNIT_RUNS];
    vec2 scale_bias[SCALE_GROUPS];
    decode_unit(block_byte, unit_in_block, runs, q, scale_bias);
    const uint block_first_run = (token * p.n_cols + block * BLOCK_ELEMS) / 4;
    [[unroll]] for (uint r = 0; r < UNIT_RUNS; ++r) {
        if (r >= runs) break;
        const vec2 sb = scale_bias[r / (UNIT_RUNS / SCALE_GROUPS)];
        out4[block_first_run + run_element(unit_in_block, r) / 4] = vec4(q[r]) * run_scale(r) * sb.x + sb.y;
    }
}
