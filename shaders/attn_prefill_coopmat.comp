#version 450
// Prefill attention on cooperative matrices (runtime/ops/attention.h): attn_prefill.comp's flash
// attention, its passes, masks, running (max, sum) and `out` and `stats` bindings alike, with q.k and
// p.v as matrix products on the device's matrix units (f16 operands, f32 sums). GQA: a workgroup
// takes ROWS rows of one KV head's queries, the group's query heads of each token in turn (row g is
// token g / group, head kv_head * group + g % group), so each key and value tile serves them all.
//
// The workgroup is ROWS / TM subgroups (whole subgroups of a size the host fixes), each owning TM
// rows: per tile of TILE_KEYS keys it forms its rows' logits S = Q K^T into `scores`, its lanes turn
// them into probabilities (online softmax, one lane per row) in `probs`, rescale the rows' outputs in
// `o_tile` and add P V to them. Only the key and value tiles are shared between subgroups.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "params.h"
layout(local_size_x_id = 0) in;  // = ROWS / TM subgroups
#define K_BINDING 1
#define V_BINDING 2
#include "kv_cache.glsl"
#include "attn_keys.glsl"

layout(constant_id = 3) const uint HEAD_DIM_K = 128;  // multiples of 8 and of TK
layout(constant_id = 4) const uint HEAD_DIM_V = 128;  // a multiple of TN
layout(constant_id = 5) const uint ROWS = 32;         // query rows per workgroup, a multiple of TM
layout(constant_id = 6) const uint TILE_KEYS = 32;    // keys per tile, a multiple of 8, TN and TK
layout(constant_id = 7) const uint TM = 16;
layout(constant_id = 8) const uint TN = 16;
layout(constant_id = 9) const uint TK = 16;
#include "coopmat.glsl"

// Shared lines, in f16vec4s (8 bytes) or floats, padded by 16 bytes: 16-byte aligned as the matrix
// loads ask, and consecutive lines on different banks.
const uint Q_STRIDE = HEAD_DIM_K / 4 + 2;
const uint KV_STRIDE = (HEAD_DIM_K > HEAD_DIM_V ? HEAD_DIM_K : HEAD_DIM_V) / 4 + 2;
const uint SCORE_STRIDE = TILE_KEYS + 4;
const uint PROB_STRIDE = TILE_KEYS / 4 + 2;
const uint O_STRIDE = HEAD_DIM_V + 4;

layout(std430, binding = 0) readonly buffer Q { vec4 q4[]; };
layout(std430, binding = 3) readonly buffer Positions { int positions[]; };
layout(std430, binding = 4) buffer Out { vec4 out4[]; };      // [token][head][HEAD_DIM_V]
layout(std430, binding = 5) buffer Stats { vec2 stats[]; };   // [token][head] (max, sum)
layout(push_constant) uniform Push { AttentionParams p; };

shared f16vec4 q_tile[ROWS * Q_STRIDE];
shared f16vec4 kv_tile[TILE_KEYS * KV_STRIDE];  // keys, then values
shared float scores[ROWS * SCORE_STRIDE];        // q.k
shared f16vec4 probs[ROWS * PROB_STRIDE];
shared float o_tile[ROWS * O_STRIDE];            // unnormalized outputs
shared ivec2 row_keys[ROWS];                     // visible keys of each row within this pass
shared bool row_resumes[ROWS];                   // the row continues earlier passes
shared float row_max[ROWS], row_sum[ROWS], row_rescale[ROWS];

CacheKeys held;  // the positions the cache holds for this batch

// Row r of the workgroup's rows: its query's element in q (0 past the batch: q4 index), in out and in stats.
uint row_group() { return p.n_head / p.n_head_kv; }
uint row_token(uint r) { return (gl_WorkGroupID.x * ROWS + r) / row_group(); }
uint row_head(uint r) { return gl_WorkGroupID.y * row_group() + (gl_WorkGroupID.x * ROWS + r) % row_group(); }
uint row_query(uint r) { return row_token(r) * p.n_head + row_head(r); }

// Each row's visible keys within this pass, and its state from the previous passes (or a fresh one).
void load_rows() {
    const uint r = gl_LocalInvocationID.x;
    if (r >= ROWS) return;
    ivec2 keys = ivec2(0, -1);
    const int last_pos = positions[p.n_tokens - 1];
    if (row_token(r) < p.n_tokens)
        keys = visible_keys(held, positions[row_token(r)], last_pos, p.n_swa, p.n_cells, p.causal != 0u);
    const ivec2 in_pass = ivec2(max(keys.x, int(p.key_begin)), min(keys.y, int(p.key_end) - 1));
    row_keys[r] = in_pass;
    row_resumes[r] = in_pass.x <= in_pass.y && keys.x < int(p.key_begin);
    const vec2 previous = row_resumes[r] ? stats[row_query(r)] : vec2(-1.0 / 0.0, 0.0);
    row_max[r] = previous.x;
    row_sum[r] = previous.y;
}

bool row_active(uint r) { return row_keys[r].x <= row_keys[r].y; }

// The rows' queries into q_tile, and their outputs so far (unnormalized) into o_tile.
void load_queries() {
    for (uint i = gl_LocalInvocationID.x; i < ROWS * HEAD_DIM_K / 4; i += gl_WorkGroupSize.x) {
        const uint r = i / (HEAD_DIM_K / 4), d4 = i % (HEAD_DIM_K / 4);
        vec4 q = vec4(0.0);
        if (row_token(r) < p.n_tokens) q = q4[(row_token(r) * p.q_stride + row_head(r) * HEAD_DIM_K) / 4 + d4];
        q_tile[r * Q_STRIDE + d4] = f16vec4(q);
    }
    for (uint i = gl_LocalInvocationID.x; i < ROWS * HEAD_DIM_V / 4; i += gl_WorkGroupSize.x) {
        const uint r = i / (HEAD_DIM_V / 4), d4 = i % (HEAD_DIM_V / 4);
        const vec4 o = row_resumes[r] ? out4[row_query(r) * (HEAD_DIM_V / 4) + d4] * row_sum[r] : vec4(0.0);
        [[unroll]] for (uint c = 0; c < 4; ++c) o_tile[r * O_STRIDE + 4 * d4 + c] = o[c];
    }
}

// Keys (or values) tile .. tile + TILE_KEYS - 1 of the KV head into kv_tile as f16; zeros past end_key.
void load_tile(int tile, int end_key, bool values) {
    const uint dim4s = (values ? HEAD_DIM_V : HEAD_DIM_K) / 4;
    const uint row_size = values ? p.v_row : p.n_head_kv * HEAD_DIM_K;
    for (uint i = gl_LocalInvocationID.x; i < TILE_KEYS * dim4s; i += gl_WorkGroupSize.x) {
        const int key = tile + int(i / dim4s);
        const uint element = key_cell(held, key, p.n_cells) * row_size + gl_WorkGroupID.y * dim4s * 4 + 4 * (i % dim4s);
        vec4 v = vec4(0.0);
        if (key < end_key) v = values ? v_load4(element, p.n_cells, row_size) : k_load4(element, p.n_cells, row_size);
        kv_tile[i / dim4s * KV_STRIDE + i % dim4s] = f16vec4(v);
    }
}

// This subgroup's rows' q.k for the tile's keys into `scores`.
void tile_scores(uint row0) {
    MatrixAcc s[TILE_KEYS / TN];
    [[unroll]] for (uint n = 0; n < TILE_KEYS / TN; ++n) matrix_zero(s[n]);
    for (uint d = 0; d < HEAD_DIM_K; d += TK) {
        MatrixA q;
        matrix_load_a(q, q_tile, row0 * Q_STRIDE + d / 4, Q_STRIDE, ROW_MAJOR);
        [[unroll]] for (uint n = 0; n < TILE_KEYS / TN; ++n) {
            MatrixB k;  // K^T: column `key` is the key's row of the tile
            matrix_load_b(k, kv_tile, n * TN * KV_STRIDE + d / 4, KV_STRIDE, COLUMN_MAJOR);
            matrix_mul_add(q, k, s[n]);
        }
    }
    [[unroll]] for (uint n = 0; n < TILE_KEYS / TN; ++n)
        matrix_store(s[n], scores, row0 * SCORE_STRIDE + n * TN, SCORE_STRIDE, ROW_MAJOR);
}

// Online softmax of this subgroup's rows, a lane per row: logits (scaled, capped, -inf where the row
// does not see the key) become probabilities against the new running max, in f16; the row's sum
// counts them as rounded. Then the rows' outputs so far are rescaled to the new max.
void tile_softmax(uint row0, int tile) {
    for (uint r = row0 + gl_SubgroupInvocationID; r < row0 + TM; r += gl_SubgroupSize) {
        float tile_max = -1.0 / 0.0;
        for (uint j = 0; j < TILE_KEYS; ++j) {
            const int key = tile + int(j);
            float s = -1.0 / 0.0;
            if (key >= row_keys[r].x && key <= row_keys[r].y)
                s = attention_logit(scores[r * SCORE_STRIDE + j], p.scale, p.softcap);
            scores[r * SCORE_STRIDE + j] = s;
            tile_max = max(tile_max, s);
        }
        const float new_max = max(row_max[r], tile_max);
        const bool any_key = new_max != -1.0 / 0.0;  // else nothing to add and nothing to rescale
        float tile_sum = 0.0;
        for (uint j = 0; j < TILE_KEYS; j += 4) {
            const vec4 s = vec4(scores[r * SCORE_STRIDE + j], scores[r * SCORE_STRIDE + j + 1],
                                scores[r * SCORE_STRIDE + j + 2], scores[r * SCORE_STRIDE + j + 3]);
            const f16vec4 prob = f16vec4(any_key ? exp(s - new_max) : vec4(0.0));
            probs[r * PROB_STRIDE + j / 4] = prob;
            tile_sum += dot(vec4(prob), vec4(1.0));
        }
        const float rescale = any_key ? exp(row_max[r] - new_max) : 1.0;
        row_max[r] = new_max;
        row_sum[r] = row_sum[r] * rescale + tile_sum;
        row_rescale[r] = rescale;
    }
    subgroupBarrier();
    for (uint i = gl_SubgroupInvocationID; i < TM * HEAD_DIM_V; i += gl_SubgroupSize) {
        const uint r = row0 + i / HEAD_DIM_V;
        if (row_rescale[r] != 1.0) o_tile[r * O_STRIDE + i % HEAD_DIM_V] *= row_rescale[r];
    }
}

// This subgroup's rows' outputs += P V for the tile's values.
void tile_outputs(uint row0) {
    MatrixA prob[TILE_KEYS / TK];
    [[unroll]] for (uint k = 0; k < TILE_KEYS / TK; ++k)
        matrix_load_a(prob[k], probs, row0 * PROB_STRIDE + k * TK / 4, PROB_STRIDE, ROW_MAJOR);
    for (uint n = 0; n < HEAD_DIM_V; n += TN) {
        MatrixAcc o;
        matrix_load_acc(o, o_tile, row0 * O_STRIDE + n, O_STRIDE, ROW_MAJOR);
        [[unroll]] for (uint k = 0; k < TILE_KEYS / TK; ++k) {
            MatrixB v;
            matrix_load_b(v, kv_tile, k * TK * KV_STRIDE + n / 4, KV_STRIDE, ROW_MAJOR);
            matrix_mul_add(prob[k], v, o);
        }
        matrix_store(o, o_tile, row0 * O_STRIDE + n, O_STRIDE, ROW_MAJOR);
    }
}

void main() {
    held = cache_keys(positions[p.n_tokens - 1], p.n_cells);
    load_rows();
    barrier();
    int first_key = 0x7FFFFFFF, end_key = 0;
    for (uint r = 0; r < ROWS; ++r) {
        if (!row_active(r)) continue;
        first_key = min(first_key, row_keys[r].x);
        end_key = max(end_key, row_keys[r].y + 1);
    }
    if (first_key >= end_key) return;  // no row sees a key in this pass

    load_queries();
    const uint row0 = gl_SubgroupID * TM;
    for (int tile = first_key; tile < end_key; tile += int(TILE_KEYS)) {
        barrier();  // the previous tile's values are consumed
        load_tile(tile, end_key, false);
        barrier();
        tile_scores(row0);
        subgroupBarrier();
        tile_softmax(row0, tile);
        barrier();  // every subgroup is done with the keys
        load_tile(tile, end_key, true);
        barrier();
        tile_outputs(row0);
    }
    barrier();
    for (uint i = gl_LocalInvocationID.x; i < ROWS * HEAD_DIM_V / 4; i += gl_WorkGroupSize.x) {
        const uint r = i / (HEAD_DIM_V / 4), d4 = i % (HEAD_DIM_V / 4);
        if (!row_active(r)) continue;
        const vec4 o = vec4(o_tile[r * O_STRIDE + 4 * d4], o_tile[r * O_STRIDE + 4 * d4 + 1],
                            o_tile[r * O_STRIDE + 4 * d4 + 2], o_tile[r * O_STRIDE + 4 * d4 + 3]);
        out4[row_query(r) * (HEAD_DIM_V / 4) + d4] = o / row_sum[r];
        if (d4 == 0) stats[row_query(r)] = vec2(row_max[r], row_sum[r]);
    }
}
