#version 450
// Attention for many query tokens (prefill), flash style: workgroup (tile, head) owns ROWS query
// tokens of one head and streams the keys through shared memory in tiles of TILE_KEYS, keeping a
// running max, sum and output (online softmax, f32). One dispatch is one pass over keys
// key_begin .. key_end - 1; the host records passes over the whole cache so that no invocation loops
// past lavapipe's cap. Between passes the state lives in `out` (kept normalized, so it is the answer
// after any pass) and `stats` (max, sum); a row's first pass (the one holding its first visible key)
// starts it from scratch, and a pass a row sees no key in leaves it untouched.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "params.h"
layout(local_size_x_id = 0) in;  // = DIM_THREADS * (ROWS / ROWS_PER_THREAD)
#include "ops_common.glsl"
#define K_BINDING 1
#define V_BINDING 2
#include "kv_cache.glsl"

layout(constant_id = 3) const uint HEAD_DIM_K = 128;
layout(constant_id = 4) const uint HEAD_DIM_V = 128;
layout(constant_id = 5) const uint ROWS = 16;       // query tokens per workgroup
layout(constant_id = 6) const uint TILE_KEYS = 32;  // keys per shared-memory tile

const uint THREADS = gl_WorkGroupSize.x;
const uint DIM_THREADS = HEAD_DIM_V / 4;             // invocation owns 4 output dims ...
const uint ROW_THREADS = THREADS / DIM_THREADS;
const uint ROWS_PER_THREAD = ROWS / ROW_THREADS;     // ... of rows r, r + ROW_THREADS, ...
const uint TILE_DIM4 = (HEAD_DIM_K > HEAD_DIM_V ? HEAD_DIM_K : HEAD_DIM_V) / 4;

layout(std430, binding = 0) readonly buffer Q { vec4 q4[]; };
layout(std430, binding = 3) readonly buffer Positions { int positions[]; };
layout(std430, binding = 4) buffer Out { vec4 out4[]; };      // [token][head][HEAD_DIM_V]
layout(std430, binding = 5) buffer Stats { vec2 stats[]; };   // [token][head] (max, sum)
layout(push_constant) uniform Push { AttentionParams p; };

shared vec4 q_tile[ROWS * HEAD_DIM_K / 4];
shared vec4 kv_tile[TILE_KEYS * TILE_DIM4];
shared float scores[ROWS * TILE_KEYS];  // logits, then probabilities
shared ivec2 row_keys[ROWS];            // visible keys of each row within this pass
shared bool row_starts[ROWS];
shared float row_max[ROWS], row_sum[ROWS], row_rescale[ROWS];

void main() {
    const uint token0 = gl_WorkGroupID.x * ROWS, head = gl_WorkGroupID.y, tid = gl_LocalInvocationID.x;
    const uint kv_head = head / (p.n_head / p.n_head_kv);
    const uint k_row = p.n_head_kv * HEAD_DIM_K, v_row = p.n_head_kv * HEAD_DIM_V;

    if (tid < ROWS) {
        ivec2 keys = ivec2(0, -1);
        if (token0 + tid < p.n_tokens) keys = visible_keys(positions[token0 + tid], p.n_swa, p.n_cells);
        const ivec2 in_pass = ivec2(max(keys.x, int(p.key_begin)), min(keys.y, int(p.key_end) - 1));
        row_keys[tid] = in_pass;
        row_starts[tid] = keys.x >= int(p.key_begin);
        const vec2 previous = in_pass.x <= in_pass.y && keys.x < int(p.key_begin)
                                  ? stats[(token0 + tid) * p.n_head + head] : vec2(-1.0 / 0.0, 0.0);
        row_max[tid] = previous.x;
        row_sum[tid] = previous.y;
    }
    barrier();
    int first_key = 0x7FFFFFFF, end_key = 0;
    for (uint r = 0; r < ROWS; ++r) {
        if (row_keys[r].x > row_keys[r].y) continue;
        first_key = min(first_key, row_keys[r].x);
        end_key = max(end_key, row_keys[r].y + 1);
    }
    if (first_key >= end_key) return;  // no row sees a key in this pass

    for (uint i = tid; i < ROWS * HEAD_DIM_K / 4; i += THREADS) {
        const uint token = token0 + i / (HEAD_DIM_K / 4);
        q_tile[i] = token < p.n_tokens ? q4[(token * p.n_head + head) * (HEAD_DIM_K / 4) + i % (HEAD_DIM_K / 4)] : vec4(0.0);
    }
    const uint dim4 = tid % DIM_THREADS, row_thread = tid / DIM_THREADS;
    vec4 acc[ROWS_PER_THREAD];
    [[unroll]] for (uint i = 0; i < ROWS_PER_THREAD; ++i) {
        const uint r = row_thread + i * ROW_THREADS;
        const bool resume = row_keys[r].x <= row_keys[r].y && !row_starts[r];
        acc[i] = resume ? out4[((token0 + r) * p.n_head + head) * DIM_THREADS + dim4] * row_sum[r] : vec4(0.0);
    }

    for (int tile = first_key; tile < end_key; tile += int(TILE_KEYS)) {
        barrier();  // the previous tile's values are consumed
        for (uint i = tid; i < TILE_KEYS * HEAD_DIM_K / 4; i += THREADS) {
            const int key = tile + int(i / (HEAD_DIM_K / 4));
            kv_tile[i] = key < end_key ? k_load4(uint(key) * k_row + kv_head * HEAD_DIM_K + 4 * (i % (HEAD_DIM_K / 4)), p.n_cells, k_row) : vec4(0.0);
        }
        barrier();
        for (uint i = tid; i < ROWS * TILE_KEYS; i += THREADS) {
            const uint r = i / TILE_KEYS, j = i % TILE_KEYS;
            const int key = tile + int(j);
            float s = -1.0 / 0.0;
            if (key >= row_keys[r].x && key <= row_keys[r].y) {
                float qk = 0.0;
                [[unroll]] for (uint d = 0; d < HEAD_DIM_K / 4; ++d) qk += dot(q_tile[r * (HEAD_DIM_K / 4) + d], kv_tile[j * (HEAD_DIM_K / 4) + d]);
                s = attention_logit(qk, p.scale, p.softcap);
            }
            scores[i] = s;
        }
        barrier();
        if (tid < ROWS) {
            float tile_max = -1.0 / 0.0;
            for (uint j = 0; j < TILE_KEYS; ++j) tile_max = max(tile_max, scores[tid * TILE_KEYS + j]);
            const float new_max = max(row_max[tid], tile_max);
            float rescale = 1.0, tile_sum = 0.0;
            if (new_max != -1.0 / 0.0) {  // else no key yet: nothing to add, nothing to rescale
                rescale = exp(row_max[tid] - new_max);
                for (uint j = 0; j < TILE_KEYS; ++j) {
                    const float prob = exp(scores[tid * TILE_KEYS + j] - new_max);
                    scores[tid * TILE_KEYS + j] = prob;
                    tile_sum += prob;
                }
            } else {
                for (uint j = 0; j < TILE_KEYS; ++j) scores[tid * TILE_KEYS + j] = 0.0;
            }
            row_max[tid] = new_max;
            row_sum[tid] = row_sum[tid] * rescale + tile_sum;
            row_rescale[tid] = rescale;
        }
        for (uint i = tid; i < TILE_KEYS * HEAD_DIM_V / 4; i += THREADS) {
            const int key = tile + int(i / DIM_THREADS);
            kv_tile[i] = key < end_key ? v_load4(uint(key) * v_row + kv_head * HEAD_DIM_V + 4 * (i % DIM_THREADS), p.n_cells, v_row) : vec4(0.0);
        }
        barrier();
        [[unroll]] for (uint i = 0; i < ROWS_PER_THREAD; ++i) {
            const uint r = row_thread + i * ROW_THREADS;
            vec4 sum = acc[i] * row_rescale[r];
            [[unroll]] for (uint j = 0; j < TILE_KEYS; ++j) sum += scores[r * TILE_KEYS + j] * kv_tile[j * DIM_THREADS + dim4];
            acc[i] = sum;
        }
    }

    [[unroll]] for (uint i = 0; i < ROWS_PER_THREAD; ++i) {
        const uint r = row_thread + i * ROW_THREADS;
        if (row_keys[r].x > row_keys[r].y) continue;
        out4[((token0 + r) * p.n_head + head) * DIM_THREADS + dim4] = acc[i] / row_sum[r];
        if (dim4 == 0) stats[(token0 + r) * p.n_head + head] = vec2(row_max[r], row_sum[r]);
    }
}
