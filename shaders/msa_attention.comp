#version 450
// MiniMax sparse attention, the attention step (model-notes.md C.6): the query heads of KV group g
// of token t attend to the cells of the top_k blocks selected for (t, g) only, causally inside them.
// Workgroup (head group, token) takes HEADS query heads of one group, so each K/V row read serves
// them all, and walks the selected blocks in tiles of CHUNK keys with an online softmax: per tile,
// each invocation forms one key's logits, then sums probs * v over a slice of the tile for 4 output
// dims. Invocations loop over top_k * ceil(block_size / CHUNK) tiles, whatever the cache length. With
// p.seq_cells != 0 token t's cells start at cell t * seq_cells (a decode step over several sequences).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "params.h"
layout(local_size_x_id = 0) in;  // = CHUNK: one key per invocation for the logits
#include "subgroup_ops.glsl"
#include "ops_common.glsl"
#define K_BINDING 1
#define V_BINDING 2
#include "kv_cache.glsl"

layout(constant_id = 3) const uint HEAD_DIM_K = 128;
layout(constant_id = 4) const uint HEAD_DIM_V = 128;
layout(constant_id = 5) const uint HEADS = 1;  // query heads per workgroup, of one KV group

const uint CHUNK = gl_WorkGroupSize.x;
const uint DIM_THREADS = HEAD_DIM_V / 4;      // each owns 4 output dims of every head
const uint KEY_SLICES = CHUNK / DIM_THREADS;  // and sums every KEY_SLICES-th key of a tile

layout(std430, binding = 0) readonly buffer Q { vec4 q4[]; };
layout(std430, binding = 3) readonly buffer Positions { int positions[]; };
layout(std430, binding = 4) readonly buffer BlockScores { float block_scores[]; };  // [n_tokens][n_head_kv][top_k]
layout(std430, binding = 5) readonly buffer Blocks { uint blocks[]; };              // the same layout
layout(std430, binding = 6) writeonly buffer Out { vec4 out4[]; };                  // [n_tokens][n_head][HEAD_DIM_V]
layout(push_constant) uniform Push { MsaAttentionParams p; };

shared vec4 q_tile[HEADS * HEAD_DIM_K / 4];
shared float probs[HEADS * CHUNK];
shared vec4 slice_sums[KEY_SLICES * HEADS * DIM_THREADS];
shared float head_partials[HEADS * CHUNK / 4];  // per head and subgroup (subgroups of 4 or more lanes)

// The tile's logits folded into each head's running max and sum: rescale = e^(old max - new max)
// for what came before, prob = e^(logit - new max) for this tile. Every head is reduced at once, so
// the workgroup meets at 3 barriers per tile rather than 4 per head.
void tile_softmax(float logit[HEADS], inout float run_max[HEADS], inout float run_sum[HEADS], out float prob[HEADS],
                  out float rescale[HEADS]) {
    const uint subgroups = gl_NumSubgroups;
    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        const float m = subgroupMax(logit[g]);
        if (subgroupElect()) head_partials[g * subgroups + gl_SubgroupID] = m;
    }
    barrier();
    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        float tile_max = head_partials[g * subgroups];
        for (uint i = 1; i < subgroups; ++i) tile_max = max(tile_max, head_partials[g * subgroups + i]);
        const float new_max = max(run_max[g], tile_max);  // finite: the tile holds a visible key
        rescale[g] = exp(run_max[g] - new_max);
        run_max[g] = new_max;
        prob[g] = exp(logit[g] - new_max);
    }
    barrier();
    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        const float sum = subgroupAdd(prob[g]);
        if (subgroupElect()) head_partials[g * subgroups + gl_SubgroupID] = sum;
    }
    barrier();
    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        float tile_sum = 0.0;
        for (uint i = 0; i < subgroups; ++i) tile_sum += head_partials[g * subgroups + i];
        run_sum[g] = run_sum[g] * rescale[g] + tile_sum;
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x, head0 = gl_WorkGroupID.x * HEADS, token = gl_WorkGroupID.y;
    const uint kv_head = head0 / (p.n_head / p.n_head_kv);
    const int pos = positions[token];
    const uint k_row = p.n_head_kv * HEAD_DIM_K, v_row = p.n_head_kv * HEAD_DIM_V;
    const uint dim4 = tid % DIM_THREADS, slice = tid / DIM_THREADS, seq_base = token * p.seq_cells;
    for (uint i = tid; i < HEADS * HEAD_DIM_K / 4; i += CHUNK) q_tile[i] = q4[(token * p.q_stride + head0 * HEAD_DIM_K) / 4 + i];
    barrier();

    float run_max[HEADS], run_sum[HEADS];
    vec4 acc[HEADS];
    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        run_max[g] = -1.0 / 0.0;
        run_sum[g] = 0.0;
        acc[g] = vec4(0.0);
    }
    const uint selection = (token * p.n_head_kv + kv_head) * p.top_k;
    for (uint s = 0; s < p.top_k; ++s) {
        if (block_scores[selection + s] == -1.0 / 0.0) continue;  // uniform: no visible key (fewer blocks than top_k)
        const int first = int(blocks[selection + s] * p.block_size);
        const int last = min(min(pos, first + int(p.block_size) - 1), int(p.n_cells) - 1);
        for (int key0 = first; key0 <= last; key0 += int(CHUNK)) {
            const int key = key0 + int(tid);
            const bool visible = key <= last;
            float logit[HEADS], prob[HEADS], rescale[HEADS];
            [[unroll]] for (uint g = 0; g < HEADS; ++g) logit[g] = -1.0 / 0.0;
            if (visible) {
                const uint k_base = (seq_base + uint(key)) * k_row + kv_head * HEAD_DIM_K;
                float qk[HEADS];
                [[unroll]] for (uint g = 0; g < HEADS; ++g) qk[g] = 0.0;
                for (uint d = 0; d < HEAD_DIM_K / 4; ++d) {
                    const vec4 k = k_load4(k_base + 4 * d, p.n_cells, k_row);
                    [[unroll]] for (uint g = 0; g < HEADS; ++g) qk[g] += dot(q_tile[g * HEAD_DIM_K / 4 + d], k);
                }
                [[unroll]] for (uint g = 0; g < HEADS; ++g) logit[g] = qk[g] * p.scale;
            }
            tile_softmax(logit, run_max, run_sum, prob, rescale);
            [[unroll]] for (uint g = 0; g < HEADS; ++g) probs[g * CHUNK + tid] = prob[g];
            barrier();
            [[unroll]] for (uint g = 0; g < HEADS; ++g) acc[g] *= rescale[g];
            for (uint j = slice; j < CHUNK && key0 + int(j) <= last; j += KEY_SLICES) {
                const vec4 v = v_load4((seq_base + uint(key0 + int(j))) * v_row + kv_head * HEAD_DIM_V + 4 * dim4, p.n_cells, v_row);
                [[unroll]] for (uint g = 0; g < HEADS; ++g) acc[g] += probs[g * CHUNK + j] * v;
            }
            // The next tile rewrites probs only after tile_softmax's first barrier, when every
            // invocation is done reading them.
        }
    }
    [[unroll]] for (uint g = 0; g < HEADS; ++g) slice_sums[(slice * HEADS + g) * DIM_THREADS + dim4] = acc[g];
    barrier();
    if (slice != 0) return;
    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        vec4 total = vec4(0.0);
        for (uint s = 0; s < KEY_SLICES; ++s) total += slice_sums[(s * HEADS + g) * DIM_THREADS + dim4];
        out4[((token * p.n_head + head0 + g) * HEAD_DIM_V) / 4 + dim4] = run_sum[g] > 0.0 ? total / run_sum[g] : vec4(0.0);
    }
}
