// Matrix-matrix product Y = W X (prefill): y[t][row] = sum_k W[row][k] x[t][k] for n_tokens token
// vectors, or Y += W X with p.accumulate (the residual add fused in). Included after a
// dequant_<type>.glsl. Bindings: 0 weights (one split segment), 1 x [n_tokens][cols],
// 2 y [n_tokens][rows].
//
// A workgroup computes a TILE_ROWS x TILE_TOKENS tile of Y, each invocation TM x TN of it. Per step
// along k, the workgroup decodes one 32-element unit of each tile row into shared memory, stages the
// matching x values beside it, and every invocation accumulates its outputs from the two tiles.
// A dispatch covers units unit_begin .. unit_end - 1 of k: the host splits long rows over several
// dispatches (the later ones accumulating), as a step costs about 14 loop iterations and lavapipe
// silently stops loops that run too long.
//
// With EXPERT_IDS W is a stack of expert matrices and each workgroup an expert's tile of tokens
// (matmul_tile.glsl). Bindings: 0 weights, 1 x, then matmul_tile.glsl's.
// The TEXEL_READS variants are the CPU kernel of matmul_lanes.glsl instead.
#ifdef TEXEL_READS
#include "matmul_lanes.glsl"
#else
const uint TM = 4;  // rows per invocation
const uint TN = 4;  // tokens per invocation
const uint TILE_STRIDE = UNIT_RUNS + 1;  // vec4s per tile line, padded against shared-memory bank conflicts

// The workgroup size must be (TILE_ROWS / TM) * (TILE_TOKENS / TN).
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint TILE_ROWS = 64;    // a multiple of TM
layout(constant_id = 4) const uint TILE_TOKENS = 64;  // a multiple of TN

layout(set = 0, binding = 1, std430) readonly buffer Input { vec4 x4[]; };
#include "matmul_tile.glsl"

shared QVEC4 tile_w[TILE_ROWS * TILE_STRIDE];
shared QVEC4 tile_x[TILE_TOKENS * TILE_STRIDE];

#include "matmul_stage.glsl"

// Decodes unit `u` (along k) of each tile row into tile_w.
void stage_weights(uint first_row, uint u, uint runs) {
    for (uint i = gl_LocalInvocationID.x; i < TILE_ROWS; i += gl_WorkGroupSize.x) {
        QVEC4 values[UNIT_RUNS];
        decode_tile_row(first_row, i, u, runs, values);
        [[unroll]] for (uint r = 0; r < UNIT_RUNS; ++r) tile_w[i * TILE_STRIDE + r] = values[r];
    }
}

// Copies the x values matching unit `u` of the weights into tile_x.
void stage_inputs(uint first_token, uint u, uint runs) {
    for (uint i = gl_LocalInvocationID.x; i < TILE_TOKENS * UNIT_RUNS; i += gl_WorkGroupSize.x) {
        const uint n = i / UNIT_RUNS, r = i % UNIT_RUNS;
        tile_x[n * TILE_STRIDE + r] = QVEC4(tile_input_run(first_token, n, u, r, runs));
    }
}

void main() {
    // Consecutive invocations take consecutive rows, so the stores of a token are contiguous.
    const uint row_lanes = TILE_ROWS / TM, token_lanes = TILE_TOKENS / TN;
    const uint lane_row = gl_LocalInvocationID.x % row_lanes, lane_token = gl_LocalInvocationID.x / row_lanes;
    const uint first_row = gl_WorkGroupID.x * TILE_ROWS, first_token = gl_WorkGroupID.y * TILE_TOKENS;
    if (!tile_begin(first_row, first_token)) return;

    float acc[TM][TN];
    [[unroll]] for (uint i = 0; i < TM; ++i)
        [[unroll]] for (uint j = 0; j < TN; ++j) acc[i][j] = 0.0;

    for (uint u = p.unit_begin; u < p.unit_end; ++u) {
        const uint runs = DENSE ? min(UNIT_RUNS, (p.cols - u * UNIT_ELEMS) / 4) : UNIT_RUNS;
        stage_weights(first_row, u, runs);
        stage_inputs(first_token, u, runs);
        barrier();
        // Not unrolled: lavapipe compiles the unrolled loop 3x slower, and GPU compilers unroll it anyway.
        for (uint r = 0; r < UNIT_RUNS; ++r) {
            QVEC4 w[TM], x[TN];
            [[unroll]] for (uint i = 0; i < TM; ++i) w[i] = tile_w[(lane_row + i * row_lanes) * TILE_STRIDE + r];
            [[unroll]] for (uint j = 0; j < TN; ++j) x[j] = tile_x[(lane_token + j * token_lanes) * TILE_STRIDE + r];
            [[unroll]] for (uint i = 0; i < TM; ++i)
                [[unroll]] for (uint j = 0; j < TN; ++j) acc[i][j] += float(dot(w[i], x[j]));
        }
        barrier();
    }

    store_tile(acc, first_row, first_token, lane_row, lane_token);
}
#endif
