// The output tile of a matmul workgroup (matmul_body.glsl, matmul_q8.comp, matmul_lanes.glsl): which
// rows of the bound weight segment and which tokens it covers, and how its outputs are stored.
// Included after TILE_ROWS and TILE_TOKENS (and, for the shared-memory kernels' store_tile, TM and TN,
// the outputs per invocation). Bindings: 2 y [n_tokens][rows].
//
// With EXPERT_IDS (ops/expert_matmul.h) W is a stack of expert matrices and workgroup z is an expert
// e (from expert_begin, the first the bound segment holds): its tile of tokens is entries
// first_token.. of e's list (ops::moe_group), entry = token * n_slots + slot, reading x row `entry`
// (x_per_slot) or `token`, writing y row `entry`. Bindings: 2 counts [n_expert], 3 entries
// [n_expert][n_tokens], 4 y [n_tokens * n_slots][rows].
#include "params.h"

#ifdef EXPERT_IDS
layout(set = 0, binding = 2, std430) readonly buffer Counts { uint expert_counts[]; };
layout(set = 0, binding = 3, std430) readonly buffer Entries { uint expert_entries[]; };
layout(set = 0, binding = 4, std430) buffer Output { float y[]; };
layout(push_constant) uniform Push { MatmulIdParams p; };

shared uint tile_entries[TILE_TOKENS];  // this tile's entries; 0xFFFFFFFF past the expert's count

uint expert_first_row() { return (p.expert_begin + gl_WorkGroupID.z) * p.expert_rows + p.row_begin; }
#else
layout(set = 0, binding = 2, std430) buffer Output { float y[]; };
layout(push_constant) uniform Push { MatmulParams p; };
#endif

// Whether the bound segment holds row `row` of the tile's rows.
bool segment_holds(uint row) {
#ifdef EXPERT_IDS
    const uint stack_row = expert_first_row() + row;
    return row < p.rows && stack_row >= p.row_offset && stack_row < p.row_offset + p.row_count;
#else
    return row < p.row_count;
#endif
}

// Row `row` as a row of the bound segment; rows outside it repeat the nearest one (never stored).
uint segment_row(uint row) {
#ifdef EXPERT_IDS
    return uint(clamp(int(expert_first_row() + row) - int(p.row_offset), 0, int(p.row_count) - 1));
#else
    return min(row, p.row_count - 1);
#endif
}

// Whether the workgroup has work, the same for all its invocations; with EXPERT_IDS it also lists the
// tile's entries (past the expert's tokens, or with no tile row in the bound segment, it has none).
bool tile_begin(uint first_row, uint first_token) {
#ifdef EXPERT_IDS
    const uint expert = p.expert_begin + gl_WorkGroupID.z, count = expert_counts[expert];
    const uint tile_end = min(first_row + TILE_ROWS, p.rows);
    if (first_token >= count || first_row >= tile_end || expert_first_row() + tile_end <= p.row_offset ||
        expert_first_row() + first_row >= p.row_offset + p.row_count)
        return false;
    for (uint n = gl_LocalInvocationID.x; n < TILE_TOKENS; n += gl_WorkGroupSize.x)
        tile_entries[n] = first_token + n < count ? expert_entries[expert * p.n_tokens + first_token + n] : 0xFFFFFFFFu;
    barrier();
#endif
    return true;
}

// The row of x that token n of the tile reads; false past the last token.
bool tile_input_row(uint first_token, uint n, out uint x_row) {
#ifdef EXPERT_IDS
    const uint entry = tile_entries[n];
    x_row = p.x_per_slot != 0u ? entry : entry / p.n_slots;
    return entry != 0xFFFFFFFFu;
#else
    x_row = first_token + n;
    return x_row < p.n_tokens;
#endif
}

// Where token n of the tile writes in y: out_base + its row of the tile's rows; false past the last token.
bool tile_output_row(uint first_token, uint n, out uint out_base) {
#ifdef EXPERT_IDS
    const uint entry = tile_entries[n];
    out_base = entry * p.rows;
    return entry != 0xFFFFFFFFu;
#else
    const uint token = first_token + n;
    out_base = token * p.rows + p.row_offset;
    return token < p.n_tokens;
#endif
}

// y[index] = value, or y[index] += value with p.accumulate.
void store_output(uint index, float value) {
    if (p.accumulate != 0u) value += y[index];
    y[index] = value;
}

#if !defined(TEXEL_READS) && !defined(MATMUL_COOPMAT)
// The shared-memory kernels' store: an invocation's acc[i][j] is tile row lane_row + i * TILE_ROWS / TM
// and tile token lane_token + j * TILE_TOKENS / TN.
void store_tile(float acc[TM][TN], uint first_row, uint first_token, uint lane_row, uint lane_token) {
    const uint row_lanes = TILE_ROWS / TM, token_lanes = TILE_TOKENS / TN;
    [[unroll]] for (uint j = 0; j < TN; ++j) {
        uint out_base;
        const bool present = tile_output_row(first_token, lane_token + j * token_lanes, out_base);
        [[unroll]] for (uint i = 0; i < TM; ++i) {
            const uint row = first_row + lane_row + i * row_lanes;
            if (present && segment_holds(row)) store_output(out_base + row, acc[i][j]);
        }
    }
}
#endif
