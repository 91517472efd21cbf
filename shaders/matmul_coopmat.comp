#version 450
// Y = W X (or Y += W X) on cooperative matrices (runtime/ops/matmul.h): for each unit of 32 along k
// the workgroup decodes its tile rows' unit of weights into tile_w and copies its tokens' x values
// into tile_x, both as f16, and its subgroups multiply the two on the device's matrix units into f32
// accumulators. Bindings and push constants are matmul.comp's (matmul_tile.glsl), EXPERT_IDS too.
//
// The workgroup is SUBGROUPS_ROWS x SUBGROUPS_TOKENS subgroups (the host sizes it in whole subgroups
// of a size it fixes); each computes one block of the TILE_ROWS x TILE_TOKENS tile of Y, BLOCK_ROWS x
// BLOCK_TOKENS products of the TM x TN shape the device reports, summed over k in steps of TK.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define MATMUL_COOPMAT
#include "weight_type.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 3) const uint TILE_ROWS = 64;    // a multiple of SUBGROUPS_ROWS * TM
layout(constant_id = 4) const uint TILE_TOKENS = 64;  // a multiple of SUBGROUPS_TOKENS * TN
layout(constant_id = 5) const uint TM = 16;
layout(constant_id = 6) const uint TN = 16;
layout(constant_id = 7) const uint TK = 16;  // divides UNIT_ELEMS
layout(constant_id = 8) const uint SUBGROUPS_ROWS = 2;
layout(constant_id = 9) const uint SUBGROUPS_TOKENS = 2;
#include "coopmat.glsl"

const uint BLOCK_ROWS = TILE_ROWS / (SUBGROUPS_ROWS * TM);
const uint BLOCK_TOKENS = TILE_TOKENS / (SUBGROUPS_TOKENS * TN);
// f16vec4s per tile line: a unit and 16 bytes, so that lines start 16-byte aligned and 8 consecutive
// lines start on different shared-memory banks.
const uint TILE_STRIDE = UNIT_RUNS + 2;

layout(set = 0, binding = 1, std430) readonly buffer Input { vec4 x4[]; };
#include "matmul_tile.glsl"
#include "matmul_stage.glsl"

shared f16vec4 tile_w[TILE_ROWS * TILE_STRIDE];
shared f16vec4 tile_x[TILE_TOKENS * TILE_STRIDE];
shared float staged[SUBGROUPS_ROWS * SUBGROUPS_TOKENS * TM * TN];  // each subgroup's product on its way to y

// Unit u of the tile's weights and inputs into tile_w and tile_x.
void stage_unit(uint first_row, uint first_token, uint u) {
    const uint runs = DENSE ? min(UNIT_RUNS, (p.cols - u * UNIT_ELEMS) / 4) : UNIT_RUNS;
    for (uint i = gl_LocalInvocationID.x; i < TILE_ROWS; i += gl_WorkGroupSize.x) {
        vec4 values[UNIT_RUNS];
        decode_tile_row(first_row, i, u, runs, values);
        [[unroll]] for (uint r = 0; r < UNIT_RUNS; ++r) tile_w[i * TILE_STRIDE + r] = f16vec4(values[r]);
    }
    for (uint i = gl_LocalInvocationID.x; i < TILE_TOKENS * UNIT_RUNS; i += gl_WorkGroupSize.x) {
        const uint n = i / UNIT_RUNS, r = i % UNIT_RUNS;
        tile_x[n * TILE_STRIDE + r] = f16vec4(tile_input_run(first_token, n, u, r, runs));
    }
}

void main() {
    const uint first_row = gl_WorkGroupID.x * TILE_ROWS, first_token = gl_WorkGroupID.y * TILE_TOKENS;
    if (!tile_begin(first_row, first_token)) return;
    // This subgroup's block: tile rows block_row .., tile tokens block_token ..
    const uint block_row = gl_SubgroupID % SUBGROUPS_ROWS * BLOCK_ROWS * TM;
    const uint block_token = gl_SubgroupID / SUBGROUPS_ROWS * BLOCK_TOKENS * TN;

    MatrixAcc acc[BLOCK_ROWS * BLOCK_TOKENS];
    [[unroll]] for (uint b = 0; b < BLOCK_ROWS * BLOCK_TOKENS; ++b) matrix_zero(acc[b]);
    for (uint u = p.unit_begin; u < p.unit_end; ++u) {
        stage_unit(first_row, first_token, u);
        barrier();
        [[unroll]] for (uint k = 0; k < UNIT_ELEMS; k += TK) {
            MatrixB x[BLOCK_TOKENS];
            [[unroll]] for (uint j = 0; j < BLOCK_TOKENS; ++j)
                matrix_load_b(x[j], tile_x, (block_token + j * TN) * TILE_STRIDE + k / 4, TILE_STRIDE, COLUMN_MAJOR);
            [[unroll]] for (uint i = 0; i < BLOCK_ROWS; ++i) {
                MatrixA w;
                matrix_load_a(w, tile_w, (block_row + i * TM) * TILE_STRIDE + k / 4, TILE_STRIDE, ROW_MAJOR);
                [[unroll]] for (uint j = 0; j < BLOCK_TOKENS; ++j) matrix_mul_add(w, x[j], acc[i * BLOCK_TOKENS + j]);
            }
        }
        barrier();
    }

    // A product wholly inside the segment's rows and the batch goes straight to y, a token's rows
    // contiguous (column-major, its columns 16-byte aligned as the extension asks); the others, and
    // every expert tile (its tokens are scattered entries), through `staged`, element by element.
    const uint staged_at = gl_SubgroupID * TM * TN;
    [[unroll]] for (uint i = 0; i < BLOCK_ROWS; ++i) {
        [[unroll]] for (uint j = 0; j < BLOCK_TOKENS; ++j) {
            const uint row0 = first_row + block_row + i * TM, n0 = block_token + j * TN;
#ifndef EXPERT_IDS
            if (row0 + TM <= p.row_count && first_token + n0 + TN <= p.n_tokens && p.rows % 4 == 0 &&
                p.row_offset % 4 == 0) {
                const uint at = (first_token + n0) * p.rows + p.row_offset + row0;
                if (p.accumulate != 0u) {
                    MatrixAcc previous;
                    matrix_load_acc(previous, y, at, p.rows, COLUMN_MAJOR);
                    matrix_add(acc[i * BLOCK_TOKENS + j], previous);
                }
                matrix_store(acc[i * BLOCK_TOKENS + j], y, at, p.rows, COLUMN_MAJOR);
                continue;
            }
#endif
            matrix_store(acc[i * BLOCK_TOKENS + j], staged, staged_at, TM, COLUMN_MAJOR);
            subgroupBarrier();
            for (uint e = gl_SubgroupInvocationID; e < TM * TN; e += gl_SubgroupSize) {
                const uint row = row0 + e % TM;
                uint out_base;
                if (tile_output_row(first_token, n0 + e / TM, out_base) && segment_holds(row))
                    store_output(out_base + row, staged[staged_at + e]);
            }
            subgroupBarrier();
        }
    }
}
