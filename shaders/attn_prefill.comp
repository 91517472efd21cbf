#version 450
// Attention for many query tokens (prefill), flash style: workgroup (tile, head) owns ROWS query
// tokens of one head and streams the keys through shared memory in tiles of TILE_KEYS, keeping a
// running max, sum and output (online softmax, f32). One dispatch is one pass over keys
// key_begin .. key_end - 1; the host records passes over the whole cache so that no invocation loops
// past lavapipe's cap. Between passes the state lives in `out` (kept normalized, so it is the answer
// after any pass) and `stats` (max, sum); a row's first pass (the one holding its first visible key)
// starts it from scratch, and a pass a row sees no key in leaves it untouched.
// F16: queries and tiles held as f16 in shared memory (half the traffic) and q.k formed in f16 four
// products at a time, summed in f32; probabilities and outputs stay f32. The fp32 pipeline is the
// fallback.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifdef F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define TILE_VEC4 f16vec4
#else
#define TILE_VEC4 vec4
#endif
#include "params.h"
layout(local_size_x_id = 0) in;  // = DIM_THREADS * (ROWS / ROWS_PER_THREAD)
#include "ops_common.glsl"
#define K_BINDING 1
#define V_BINDING 2
#include "kv_cache.glsl"
#include "attn_keys.glsl"

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

shared TILE_VEC4 q_tile[ROWS * HEAD_DIM_K / 4];
shared TILE_VEC4 kv_tile[TILE_KEYS * TILE_DIM4];
shared float scores[ROWS * TILE_KEYS];  // logits, then probabilities
shared ivec2 row_keys[ROWS];            // visible keys of each row within this pass
shared bool row_resumes[ROWS];          // the row continues earlier passes
shared float row_max[ROWS], row_sum[ROWS], row_rescale[ROWS];

CacheKeys held;  // the positions the cache holds for this batch

// Each row's visible keys within this pass, and its state from the previous passes (or a fresh one).
void load_rows(uint token0, uint head) {
    const uint tid = gl_LocalInvocationID.x;
    if (tid >= ROWS) return;
    ivec2 keys = ivec2(0, -1);
    const int last_pos = positions[p.n_tokens - 1];
    if (token0 + tid < p.n_tokens)
        keys = visible_keys(held, positions[token0 + tid], last_pos, p.n_swa, p.n_cells, p.causal != 0u);
    const ivec2 in_pass = ivec2(max(keys.x, int(p.key_begin)), min(keys.y, int(p.key_end) - 1));
    row_keys[tid] = in_pass;
    row_resumes[tid] = in_pass.x <= in_pass.y && keys.x < int(p.key_begin);
    const vec2 previous = row_resumes[tid] ? stats[(token0 + tid) * p.n_head + head] : vec2(-1.0 / 0.0, 0.0);
    row_max[tid] = previous.x;
    row_sum[tid] = previous.y;
}

bool row_active(uint r) { return row_keys[r].x <= row_keys[r].y; }

void load_queries(uint token0, uint head) {
    for (uint i = gl_LocalInvocationID.x; i < ROWS * HEAD_DIM_K / 4; i += THREADS) {
        const uint token = token0 + i / (HEAD_DIM_K / 4);
        const vec4 q = token < p.n_tokens ? q4[(token * p.q_stride + head * HEAD_DIM_K) / 4 + i % (HEAD_DIM_K / 4)] : vec4(0.0);
        q_tile[i] = TILE_VEC4(q);
    }
}

// Keys (or values) tile .. tile + TILE_KEYS - 1 of the KV head into kv_tile; zeros past end_key.
void load_tile(int tile, int end_key, uint kv_head, bool values) {
    const uint dim4s = (values ? HEAD_DIM_V : HEAD_DIM_K) / 4;
    const uint row_size = values ? p.v_row : p.n_head_kv * HEAD_DIM_K;
    for (uint i = gl_LocalInvocationID.x; i < TILE_KEYS * dim4s; i += THREADS) {
        const int key = tile + int(i / dim4s);
        vec4 v = vec4(0.0);
        const uint element = key_cell(held, key, p.n_cells) * row_size + kv_head * dim4s * 4 + 4 * (i % dim4s);
        if (key < end_key) v = values ? v_load4(element, p.n_cells, row_size) : k_load4(element, p.n_cells, row_size);
        kv_tile[i] = TILE_VEC4(v);
    }
}

// The logits of every (row, key) pair of the tile; -inf where the row does not see the key.
void tile_logits(int tile) {
    for (uint i = gl_LocalInvocationID.x; i < ROWS * TILE_KEYS; i += THREADS) {
        const uint r = i / TILE_KEYS, j = i % TILE_KEYS;
        const int key = tile + int(j);
        float s = -1.0 / 0.0;
        if (key >= row_keys[r].x && key <= row_keys[r].y) {
            float qk = 0.0;
            [[unroll]] for (uint d = 0; d < HEAD_DIM_K / 4; ++d)
                qk += float(dot(q_tile[r * (HEAD_DIM_K / 4) + d], kv_tile[j * (HEAD_DIM_K / 4) + d]));
            s = attention_logit(qk, p.scale, p.softcap);
        }
        scores[i] = s;
    }
}

// Online softmax, one invocation per row: logits become probabilities against the new running max;
// row_rescale is what the row's earlier sums must be multiplied by.
void online_softmax() {
    const uint r = gl_LocalInvocationID.x;
    if (r >= ROWS) return;
    float tile_max = -1.0 / 0.0;
    for (uint j = 0; j < TILE_KEYS; ++j) tile_max = max(tile_max, scores[r * TILE_KEYS + j]);
    const float new_max = max(row_max[r], tile_max);
    const bool any_key = new_max != -1.0 / 0.0;  // else nothing to add and nothing to rescale
    float tile_sum = 0.0;
    for (uint j = 0; j < TILE_KEYS; ++j) {
        const float prob = any_key ? exp(scores[r * TILE_KEYS + j] - new_max) : 0.0;
        scores[r * TILE_KEYS + j] = prob;
        tile_sum += prob;
    }
    const float rescale = any_key ? exp(row_max[r] - new_max) : 1.0;
    row_max[r] = new_max;
    row_sum[r] = row_sum[r] * rescale + tile_sum;
    row_rescale[r] = rescale;
}

void main() {
    const uint token0 = gl_WorkGroupID.x * ROWS, head = gl_WorkGroupID.y;
    const uint kv_head = head / (p.n_head / p.n_head_kv);
    held = cache_keys(positions[p.n_tokens - 1], p.n_cells);
    load_rows(token0, head);
    barrier();
    int first_key = 0x7FFFFFFF, end_key = 0;
    for (uint r = 0; r < ROWS; ++r) {
        if (!row_active(r)) continue;
        first_key = min(first_key, row_keys[r].x);
        end_key = max(end_key, row_keys[r].y + 1);
    }
    if (first_key >= end_key) return;  // no row sees a key in this pass

    load_queries(token0, head);
    const uint dim4 = gl_LocalInvocationID.x % DIM_THREADS, row_thread = gl_LocalInvocationID.x / DIM_THREADS;
    vec4 acc[ROWS_PER_THREAD];  // unnormalized outputs of rows row_thread + i * ROW_THREADS, dims 4 * dim4 ..
    [[unroll]] for (uint i = 0; i < ROWS_PER_THREAD; ++i) {
        const uint r = row_thread + i * ROW_THREADS;
        acc[i] = row_resumes[r] ? out4[((token0 + r) * p.n_head + head) * DIM_THREADS + dim4] * row_sum[r] : vec4(0.0);
    }
    for (int tile = first_key; tile < end_key; tile += int(TILE_KEYS)) {
        barrier();  // the previous tile's values are consumed
        load_tile(tile, end_key, kv_head, false);
        barrier();
        tile_logits(tile);
        barrier();
        online_softmax();
        load_tile(tile, end_key, kv_head, true);
        barrier();
        [[unroll]] for (uint i = 0; i < ROWS_PER_THREAD; ++i) {
            const uint r = row_thread + i * ROW_THREADS;
            vec4 sum = acc[i] * row_rescale[r];
            // Not unrolled: ACO hoists all TILE_KEYS score and value loads and spilled 58 VGPRs on
            // gfx1100 (`vkllm shaders --stats`, docs/PERFORMANCE.md); looped it needs 48.
            [[dont_unroll]] for (uint j = 0; j < TILE_KEYS; ++j) sum += scores[r * TILE_KEYS + j] * vec4(kv_tile[j * DIM_THREADS + dim4]);
            acc[i] = sum;
        }
    }
    [[unroll]] for (uint i = 0; i < ROWS_PER_THREAD; ++i) {
        const uint r = row_thread + i * ROW_THREADS;
        if (!row_active(r)) continue;
        out4[((token0 + r) * p.n_head + head) * DIM_THREADS + dim4] = acc[i] / row_sum[r];
        if (dim4 == 0) stats[(token0 + r) * p.n_head + head] = vec2(row_max[r], row_sum[r]);
    }
}
