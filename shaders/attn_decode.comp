#version 450
// Attention for a few query tokens (decode), split over the keys (flash decoding) in one dispatch: a
// chunk is CHUNK keys for HEADS query heads that share one KV head; its unnormalized output, softmax
// max and sum go to a partial result. Workgroup (w, head group, token) takes the query's visible
// chunks w, w + W, ... (W workgroups along x): the host dispatches one per chunk of the whole cache on
// GPUs (most exit at once), and fewer, looping, on CPU devices, where each workgroup has a sizable
// fixed cost. The last of a (head group, token)'s workgroups to finish merges their partial results
// (the threadfence-reduction pattern: coherent writes, a buffer barrier, then an atomic arrival count)
// and sets the count back to 0, so the recorded command buffer serves every position. Each
// invocation loops over one key and a slice of a chunk per chunk, and over the chunks once to merge,
// far below lavapipe's loop cap.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "params.h"
layout(local_size_x_id = 0) in;  // = CHUNK: one key per invocation for the scores
#include "subgroup_ops.glsl"
#include "ops_common.glsl"
#define K_BINDING 1
#define V_BINDING 2
#include "kv_cache.glsl"
#include "attn_keys.glsl"

layout(constant_id = 3) const uint HEAD_DIM_K = 128;
layout(constant_id = 4) const uint HEAD_DIM_V = 128;
layout(constant_id = 5) const uint HEADS = 1;  // query heads per workgroup, of one KV group

const uint CHUNK = gl_WorkGroupSize.x;
const uint DIM_THREADS = HEAD_DIM_V / 4;         // each owns 4 output dims of every head
const uint KEY_SLICES = CHUNK / DIM_THREADS;     // and sums every KEY_SLICES-th key of the chunk

layout(std430, binding = 0) readonly buffer Q { vec4 q4[]; };
layout(std430, binding = 3) readonly buffer Positions { int positions[]; };
layout(std430, binding = 4) coherent buffer PartialOut { vec4 partial_out4[]; };  // [token][head][chunk][HEAD_DIM_V]
layout(std430, binding = 5) coherent buffer PartialStats { vec2 partial_stats[]; };  // [token][head][chunk] (max, sum)
// [token][head group]: workgroups done so far; 0 between dispatches.
layout(std430, binding = 6) buffer Arrivals { uint arrivals[]; };
layout(std430, binding = 7) writeonly buffer Out { vec4 out4[]; };  // [token][head][HEAD_DIM_V]
layout(push_constant) uniform Push { AttentionParams p; };

shared vec4 q_tile[HEADS * HEAD_DIM_K / 4];
shared float probs[HEADS * CHUNK];
shared vec4 slice_sums[KEY_SLICES * HEADS * DIM_THREADS];
// Per head and subgroup (subgroups of 4 or more lanes: lavapipe on 128-bit SIMD such as arm64 has 4),
// for the chunk's softmax statistics.
shared float head_partials[HEADS * CHUNK / 4];
shared bool last_arrival;

CacheKeys held;  // the positions the cache holds for this batch

// The chunk's max of each head's logits, then its sum of e^(logit - max): all heads reduced together,
// so the workgroup meets at 2 barriers rather than 4 per head (barriers are costly on CPU devices).
void chunk_softmax(float logit[HEADS], out float chunk_max[HEADS], out float prob[HEADS], out float chunk_sum[HEADS]) {
    const uint subgroups = gl_NumSubgroups;
    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        const float m = subgroupMax(logit[g]);
        if (subgroupElect()) head_partials[g * subgroups + gl_SubgroupID] = m;
    }
    barrier();
    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        chunk_max[g] = head_partials[g * subgroups];
        for (uint i = 1; i < subgroups; ++i) chunk_max[g] = max(chunk_max[g], head_partials[g * subgroups + i]);
        prob[g] = exp(logit[g] - chunk_max[g]);  // the max is finite: the chunk holds a visible key
    }
    barrier();
    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        const float sum = subgroupAdd(prob[g]);
        if (subgroupElect()) head_partials[g * subgroups + gl_SubgroupID] = sum;
    }
    barrier();
    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        chunk_sum[g] = 0.0;
        for (uint i = 0; i < subgroups; ++i) chunk_sum[g] += head_partials[g * subgroups + i];
    }
}

// Logits of key key0 + tid (the invocation's key) for every head of the group; -inf where unseen.
void key_logits(int key0, ivec2 keys, uint kv_head, out float logit[HEADS]) {
    const int key = key0 + int(gl_LocalInvocationID.x);
    const bool visible = key >= keys.x && key <= keys.y;
    float qk[HEADS];
    [[unroll]] for (uint g = 0; g < HEADS; ++g) qk[g] = 0.0;
    if (visible) {
        const uint k_row = p.n_head_kv * HEAD_DIM_K;
        const uint k_base = key_cell(held, key, p.n_cells) * k_row + kv_head * HEAD_DIM_K;
        for (uint d = 0; d < HEAD_DIM_K / 4; ++d) {
            const vec4 k = k_load4(k_base + 4 * d, p.n_cells, k_row);
            [[unroll]] for (uint g = 0; g < HEADS; ++g) qk[g] += dot(q_tile[g * HEAD_DIM_K / 4 + d], k);
        }
    }
    [[unroll]] for (uint g = 0; g < HEADS; ++g)
        logit[g] = visible ? attention_logit(qk[g], p.scale, p.softcap) : -1.0 / 0.0;
}

// sum_j probs[g][j] * v_j over keys slice, slice + KEY_SLICES, ... of the chunk, for 4 dims.
void weighted_values(int key0, ivec2 keys, uint kv_head, uint slice, uint dim4, out vec4 acc[HEADS]) {
    const uint v_row = p.v_row;
    [[unroll]] for (uint g = 0; g < HEADS; ++g) acc[g] = vec4(0.0);
    for (uint j = slice; j < CHUNK; j += KEY_SLICES) {
        const int key = key0 + int(j);
        if (key < keys.x || key > keys.y) continue;
        const uint element = key_cell(held, key, p.n_cells) * v_row + kv_head * HEAD_DIM_V + 4 * dim4;
        const vec4 v = v_load4(element, p.n_cells, v_row);
        [[unroll]] for (uint g = 0; g < HEADS; ++g) acc[g] += probs[g * CHUNK + j] * v;
    }
}

// One chunk: its keys' logits, softmax statistics and weighted values, written as a partial result.
void process_chunk(uint chunk, uint head0, uint token, uint kv_head, ivec2 keys) {
    const uint tid = gl_LocalInvocationID.x;
    const int key0 = int(chunk * CHUNK);
    float logit[HEADS], chunk_max[HEADS], prob[HEADS], chunk_sum[HEADS];
    key_logits(key0, keys, kv_head, logit);
    chunk_softmax(logit, chunk_max, prob, chunk_sum);
    [[unroll]] for (uint g = 0; g < HEADS; ++g) probs[g * CHUNK + tid] = prob[g];
    barrier();

    const uint dim4 = tid % DIM_THREADS, slice = tid / DIM_THREADS;
    vec4 acc[HEADS];
    weighted_values(key0, keys, kv_head, slice, dim4, acc);
    [[unroll]] for (uint g = 0; g < HEADS; ++g) slice_sums[(slice * HEADS + g) * DIM_THREADS + dim4] = acc[g];
    barrier();
    if (slice != 0) return;
    [[unroll]] for (uint g = 0; g < HEADS; ++g) {
        vec4 total = vec4(0.0);
        for (uint s = 0; s < KEY_SLICES; ++s) total += slice_sums[(s * HEADS + g) * DIM_THREADS + dim4];
        const uint partial = (token * p.n_head + head0 + g) * p.n_chunks + chunk;
        partial_out4[partial * DIM_THREADS + dim4] = total;
        if (dim4 == 0) partial_stats[partial] = vec2(chunk_max[g], chunk_sum[g]);
    }
}

// With M the largest chunk max of a head, out = sum_c e^(m_c - M) o_c / sum_c e^(m_c - M) l_c over
// the chunks first .. last, each invocation summing 4 output dims of one head in chunk order.
void merge_partials(uint head0, uint token, uint first_chunk, uint last_chunk) {
    for (uint i = gl_LocalInvocationID.x; i < HEADS * DIM_THREADS; i += CHUNK) {
        const uint head = head0 + i / DIM_THREADS, dim4 = i % DIM_THREADS;
        const uint base = (token * p.n_head + head) * p.n_chunks;
        float max_all = -1.0 / 0.0;
        for (uint c = first_chunk; c <= last_chunk; ++c) max_all = max(max_all, partial_stats[base + c].x);
        float sum = 0.0;
        vec4 acc = vec4(0.0);
        for (uint c = first_chunk; c <= last_chunk; ++c) {
            const vec2 stats = partial_stats[base + c];
            const float weight = exp(stats.x - max_all);
            sum += weight * stats.y;
            acc += weight * partial_out4[(base + c) * DIM_THREADS + dim4];
        }
        out4[(token * p.n_head + head) * DIM_THREADS + dim4] = acc / sum;
    }
}

void main() {
    const uint head0 = gl_WorkGroupID.y * HEADS, token = gl_WorkGroupID.z;
    const uint kv_head = head0 / (p.n_head / p.n_head_kv);
    const int last_pos = positions[p.n_tokens - 1];
    held = cache_keys(last_pos, p.n_cells);
    const ivec2 keys = visible_keys(held, positions[token], last_pos, p.n_swa, p.n_cells, p.causal != 0u);
    if (keys.y < keys.x) {  // no key at all (a negative position): an all-zero output, never NaN
        if (gl_WorkGroupID.x == 0u)
            for (uint i = gl_LocalInvocationID.x; i < HEADS * DIM_THREADS; i += CHUNK)
                out4[(token * p.n_head + head0) * DIM_THREADS + i] = vec4(0.0);
        return;
    }
    const uint first_chunk = uint(keys.x) / CHUNK, last_chunk = uint(keys.y) / CHUNK;
    const uint workers = min(gl_NumWorkGroups.x, last_chunk - first_chunk + 1u);  // the others have no chunk
    if (gl_WorkGroupID.x >= workers) return;  // uniform

    for (uint i = gl_LocalInvocationID.x; i < HEADS * HEAD_DIM_K / 4; i += CHUNK)
        q_tile[i] = q4[(token * p.q_stride + head0 * HEAD_DIM_K) / 4 + i];
    barrier();
    // Shared arrays are rewritten only after the barriers of the next chunk's softmax, by which time
    // every invocation has finished reading them.
    for (uint chunk = first_chunk + gl_WorkGroupID.x; chunk <= last_chunk; chunk += gl_NumWorkGroups.x)
        process_chunk(chunk, head0, token, kv_head, keys);

    // Every partial write of this workgroup is made visible before it counts itself in; the
    // workgroup that completes the count sees everyone's.
    memoryBarrierBuffer();
    barrier();
    if (gl_LocalInvocationID.x == 0u) {
        const uint counter = token * gl_NumWorkGroups.y + gl_WorkGroupID.y;
        last_arrival = atomicAdd(arrivals[counter], 1u) == workers - 1u;
        if (last_arrival) arrivals[counter] = 0u;  // every other worker has counted itself already
    }
    barrier();
    if (!last_arrival) return;
    memoryBarrierBuffer();
    merge_partials(head0, token, first_chunk, last_chunk);
}
