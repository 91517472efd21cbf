// Matrix-matrix product Y = W X (or Y += W X) for CPU devices: the TEXEL_READS variant of
// matmul_<type> and matmul_id_<type> (see matmul_body.glsl for the unit ranges, matmul_tile.glsl for
// the experts' tiles and the bindings after x). lavapipe runs shared
// memory at the cost of storage buffers (a scalar load per lane and word) and a barrier as a switch
// between coroutines, so this kernel has neither: each invocation keeps TM rows x TILE_TOKENS
// tokens of Y in registers, decodes each unit of its rows once for all its tokens, and fetches x
// through a texel buffer (the same texel in every lane of a workgroup: one vector gather for the TM
// rows; a subgroup broadcast of one lane's fetch instead ran twice as slow on lavapipe).
#define UNIT_DOT_ROWS 8  // TM
#include "unit_dot.glsl"

const uint TM = UNIT_DOT_ROWS;  // rows per invocation: each x fetch (a gather) serves 8 rows
const uint MAX_TOKENS = 16;  // tokens per invocation at most

// The workgroup size must be TILE_ROWS / TM.
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint TILE_ROWS = 64;   // a multiple of TM
layout(constant_id = 4) const uint TILE_TOKENS = 16; // 1..MAX_TOKENS

layout(set = 0, binding = 1) uniform utextureBuffer x_texels;
#include "matmul_tile.glsl"

vec4 x_at(uint i4) { return texel_vec4(x_texels, i4); }

void main() {
    const uint tile_first_row = gl_WorkGroupID.x * TILE_ROWS, first_row = tile_first_row + gl_LocalInvocationID.x * TM;
    const uint first_token = gl_WorkGroupID.y * TILE_TOKENS;
    const uint units_per_block = BLOCK_ELEMS / UNIT_ELEMS;
    const uint row_bytes = weight_row_bytes(p.cols);
    if (!tile_begin(tile_first_row, first_token)) return;

    // Rows past the end repeat the last one and tokens past it the tile's first (never stored), so
    // every lane runs the same loop.
    uint row_byte[TM];
    [[unroll]] for (uint i = 0; i < TM; ++i) row_byte[i] = segment_row(first_row + i) * row_bytes;
    uint x_base[MAX_TOKENS];
    float acc[MAX_TOKENS][TM];
    [[unroll]] for (uint t = 0; t < MAX_TOKENS; ++t) {
        uint x_row;
        if (t >= TILE_TOKENS || !tile_input_row(first_token, t, x_row)) tile_input_row(first_token, 0, x_row);
        x_base[t] = x_row * p.cols;
        [[unroll]] for (uint i = 0; i < TM; ++i) acc[t][i] = 0.0;
    }

    for (uint u = p.unit_begin; u < p.unit_end; ++u) {
        const uint block = u / units_per_block, unit = u % units_per_block;
        const uint runs = DENSE ? min(UNIT_RUNS, (p.cols - u * UNIT_ELEMS) / 4) : UNIT_RUNS;
        const uint col0 = block * BLOCK_ELEMS;
        QVEC4 q[TM][UNIT_RUNS];
        vec2 scale_bias[TM][SCALE_GROUPS];
        [[unroll]] for (uint i = 0; i < TM; ++i)
            decode_unit(row_byte[i] + block * BLOCK_BYTES, unit, runs, q[i], scale_bias[i]);
        [[unroll]] for (uint t = 0; t < MAX_TOKENS; ++t) {
            if (t < TILE_TOKENS) {
                QVEC4 xs[UNIT_RUNS];
                float xsum[SCALE_GROUPS];
                [[unroll]] for (uint g = 0; g < SCALE_GROUPS; ++g) xsum[g] = 0.0;
                [[unroll]] for (uint r = 0; r < UNIT_RUNS; ++r) {
                    vec4 x = vec4(0.0);
                    if (r < runs) x = x_at((x_base[t] + col0 + run_element(unit, r)) >> 2);
                    xs[r] = QVEC4(x * run_scale(r));
                    if (HAS_BIAS) xsum[r / (UNIT_RUNS / SCALE_GROUPS)] += dot(x, vec4(1.0));
                }
                unit_dots(q, scale_bias, xs, xsum, acc[t]);
            }
        }
    }

    [[unroll]] for (uint t = 0; t < MAX_TOKENS; ++t) {
        uint out_base;
        const bool present = t < TILE_TOKENS && tile_output_row(first_token, t, out_base);
        [[unroll]] for (uint i = 0; i < TM; ++i)
            if (present && segment_holds(first_row + i)) store_output(out_base + first_row + i, acc[t][i]);
    }
}
