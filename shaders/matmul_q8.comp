#version 450
// Y = W X (or Y += W X) for Q4_0 and Q8_0 weights (TYPE_Q4_0, TYPE_Q8_0) and X in int8 blocks
// (quantize_q8.comp), as llama.cpp's MMQ kernels: each block's 32 products are summed exactly in
// integers by packed 4 x int8 dot products, then scaled by the weight's d times the activation's.
// For devices that run those dot products accelerated (ops/matmul.h). Bindings: 0 weights (one
// split segment), 1 xq [n_tokens][cols / 32][9 words], 2 y [n_tokens][rows]. With EXPERT_IDS, the
// products with the experts the router selected (ops/expert_matmul.h): bindings 0 the expert stack's
// segment, 1 xq, then matmul_tile.glsl's.
//
// A workgroup computes a TILE_ROWS x TILE_TOKENS tile of Y, each invocation TM x TN of it. Per block
// along k it stages the tile rows' and tokens' blocks (8 words and a scale each) in shared memory.
// A dispatch covers blocks unit_begin .. unit_end - 1 of k, as matmul_body.glsl's units.
#extension GL_GOOGLE_include_directive : require
#include "weight_type.glsl"
#include "integer_dot.glsl"

const uint TM = 4;  // rows per invocation
const uint TN = 4;  // tokens per invocation
const uint QUADS = 8;  // words of 4 int8 per block of 32
const uint ACTIVATION_WORDS = QUADS + 1;  // the scale, then the quads
const uint TILE_STRIDE = QUADS + 1;  // words per tile line, padded against shared-memory bank conflicts

// The workgroup size must be (TILE_ROWS / TM) * (TILE_TOKENS / TN).
layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint TILE_ROWS = 64;    // a multiple of TM
layout(constant_id = 4) const uint TILE_TOKENS = 64;  // a multiple of TN

layout(set = 0, binding = 1, std430) readonly buffer Activations { uint xq[]; };
#include "matmul_tile.glsl"

shared uint tile_wq[TILE_ROWS * TILE_STRIDE];
shared float tile_wd[TILE_ROWS];
shared uint tile_xq[TILE_TOKENS * TILE_STRIDE];
shared float tile_xd[TILE_TOKENS];

void main() {
    // Consecutive invocations take consecutive rows, so the stores of a token are contiguous.
    const uint row_lanes = TILE_ROWS / TM, token_lanes = TILE_TOKENS / TN;
    const uint lane_row = gl_LocalInvocationID.x % row_lanes, lane_token = gl_LocalInvocationID.x / row_lanes;
    const uint first_row = gl_WorkGroupID.x * TILE_ROWS, first_token = gl_WorkGroupID.y * TILE_TOKENS;
    const uint row_bytes = weight_row_bytes(p.cols), blocks_per_row = p.cols / BLOCK_ELEMS;
    if (!tile_begin(first_row, first_token)) return;

    float acc[TM][TN];
    [[unroll]] for (uint i = 0; i < TM; ++i)
        [[unroll]] for (uint j = 0; j < TN; ++j) acc[i][j] = 0.0;

    for (uint b = p.unit_begin; b < p.unit_end; ++b) {
        // Rows past the end repeat the last one (never stored), tokens past it are zeros.
        for (uint i = gl_LocalInvocationID.x; i < TILE_ROWS; i += gl_WorkGroupSize.x) {
            uint quads[QUADS];
            float d;
            decode_block_i8(segment_row(first_row + i) * row_bytes + b * BLOCK_BYTES, quads, d);
            [[unroll]] for (uint k = 0; k < QUADS; ++k) tile_wq[i * TILE_STRIDE + k] = quads[k];
            tile_wd[i] = d;
        }
        for (uint i = gl_LocalInvocationID.x; i < TILE_TOKENS * ACTIVATION_WORDS; i += gl_WorkGroupSize.x) {
            const uint n = i / ACTIVATION_WORDS, w = i % ACTIVATION_WORDS;
            uint x_row;
            const bool present = tile_input_row(first_token, n, x_row);
            const uint word = present ? xq[(x_row * blocks_per_row + b) * ACTIVATION_WORDS + w] : 0u;
            if (w == 0) tile_xd[n] = uintBitsToFloat(word);
            else tile_xq[n * TILE_STRIDE + w - 1] = word;
        }
        barrier();
        // Each output's block sum in integers, one word of the tile rows and tokens at a time.
        int sums[TM][TN];
        [[unroll]] for (uint i = 0; i < TM; ++i)
            [[unroll]] for (uint j = 0; j < TN; ++j) sums[i][j] = 0;
        [[unroll]] for (uint k = 0; k < QUADS; ++k) {
            uint w[TM], x[TN];
            [[unroll]] for (uint i = 0; i < TM; ++i) w[i] = tile_wq[(lane_row + i * row_lanes) * TILE_STRIDE + k];
            [[unroll]] for (uint j = 0; j < TN; ++j) x[j] = tile_xq[(lane_token + j * token_lanes) * TILE_STRIDE + k];
            [[unroll]] for (uint i = 0; i < TM; ++i)
                [[unroll]] for (uint j = 0; j < TN; ++j) sums[i][j] = dot4_i8(w[i], x[j], sums[i][j]);
        }
        [[unroll]] for (uint i = 0; i < TM; ++i) {
            const float wd = tile_wd[lane_row + i * row_lanes];
            [[unroll]] for (uint j = 0; j < TN; ++j)
                acc[i][j] = fma(wd * tile_xd[lane_token + j * token_lanes], float(sums[i][j]), acc[i][j]);
        }
        barrier();
    }

    store_tile(acc, first_row, first_token, lane_row, lane_token);
}
