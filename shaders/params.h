// Push-constant structs, shared by GLSL and C++: one definition, 32-bit scalars only.
// In C++ each struct is also checked with static_assert on its size.
#ifndef VKLLM_SHADERS_PARAMS_H
#define VKLLM_SHADERS_PARAMS_H

#ifdef __cplusplus
#include <cstdint>
namespace vkllm::params {
using uint = uint32_t;
#define VKLLM_PARAMS_STRUCT(name) struct name
#define VKLLM_PARAMS_END(name, bytes) ; static_assert(sizeof(name) == (bytes), #name " layout")
#else
#define VKLLM_PARAMS_STRUCT(name) struct name
#define VKLLM_PARAMS_END(name, bytes)
#endif

// Foundation tests: y = a * x + y over n elements, with a spec-constant multiplier.
VKLLM_PARAMS_STRUCT(AxpyParams) {
    uint n;
    float a;
} VKLLM_PARAMS_END(AxpyParams, 8);

// ---- Ops (runtime/ops except matvec/matmul): embedding rows, norms, elementwise, RoPE, softmax,
// top-k, KV cache and attention. Per-step values (positions, slots) come from buffers, not from here.

// Embedding rows from one weight segment holding rows row_offset .. row_offset + row_count - 1.
VKLLM_PARAMS_STRUCT(GetRowsParams) {
    uint n_cols;      // elements per row, a multiple of the block size
    uint n_tokens;
    uint row_offset;  // first row of the bound segment
    uint row_count;   // rows in the bound segment
    uint n_rows;      // rows of the whole weight; the segment at row 0 zero-fills ids outside it
} VKLLM_PARAMS_END(GetRowsParams, 20);

VKLLM_PARAMS_STRUCT(RmsNormParams) {
    uint n;       // elements per row
    uint n_rows;
    float eps;
    uint rows_per_group;  // rmsnorm: rows come in groups of this many consecutive rows, 0: one group
    uint group_stride;    // floats from one group's first row to the next's
    uint first_weight_rows;  // TWO_WEIGHTS: a group's first rows take weight 0, the rest weight 1
} VKLLM_PARAMS_END(RmsNormParams, 24);

// add: y = a + b[i % b_n]; scale: y = x * factor; swiglu/geglu: y = act(gate) * up.
VKLLM_PARAMS_STRUCT(ElementwiseParams) {
    uint n;
    uint b_n;
    float factor;
} VKLLM_PARAMS_END(ElementwiseParams, 12);

// RoPE in place on x [n_tokens] rows of token_stride floats, each starting with n_head heads.
VKLLM_PARAMS_STRUCT(RopeParams) {
    uint n_tokens;
    uint n_head;
    uint head_dim;
    uint n_dims;        // rotated dims per head
    uint token_stride;  // floats between tokens
    float mscale;       // cos and sin multiplier (attn_factor, YaRN-corrected)
} VKLLM_PARAMS_END(RopeParams, 24);

// RoPE on q and k of fused qkv rows and their K/V cache writes (rope_kv_write.comp): each token row
// of token_stride floats holds q [n_head][head_dim], k [n_head_kv][head_dim], v [n_head_kv][head_dim_v].
VKLLM_PARAMS_STRUCT(RopeKvParams) {
    uint n_tokens;
    uint n_head;
    uint n_head_kv;
    uint head_dim;
    uint head_dim_v;
    uint n_dims;
    uint token_stride;
    uint n_cells;
    float mscale;
    float temperature_beta;  // q *= 1 + beta * ln(1 + floor(pos / temperature_length)); 0: off
    uint temperature_length;
} VKLLM_PARAMS_END(RopeKvParams, 44);

// x [n_tokens][row] *= 1 + beta * ln(1 + floor(pos / floor_length)).
VKLLM_PARAMS_STRUCT(AttnTempParams) {
    uint n_tokens;
    uint row;
    uint floor_length;
    float beta;
} VKLLM_PARAMS_END(AttnTempParams, 16);

VKLLM_PARAMS_STRUCT(SoftmaxParams) {
    uint n;       // elements per row
    uint n_rows;
    float scale;  // applied to x before the softmax
} VKLLM_PARAMS_END(SoftmaxParams, 12);

// Top-k pass over rows of n candidates, each workgroup taking `chunk` of them and writing its k best.
VKLLM_PARAMS_STRUCT(TopKParams) {
    uint n;
    uint n_rows;
    uint k;
    uint chunk;
} VKLLM_PARAMS_END(TopKParams, 16);

// Rows [n_tokens] of row_size values (src_stride floats apart) into cache cells given by a slot buffer.
VKLLM_PARAMS_STRUCT(KvWriteParams) {
    uint n_tokens;
    uint row_size;
    uint src_stride;
    uint n_cells;
} VKLLM_PARAMS_END(KvWriteParams, 16);

// Attention of q (n_tokens rows of q_stride floats, each starting with n_head heads of head_dim_k)
// over a cache of n_cells cells (key indices as shaders/attn_keys.glsl maps them to positions and
// cells). Decode splits each query's visible keys over workgroups of at least worker_keys keys;
// prefill runs passes over key indices key_begin .. key_end - 1.
VKLLM_PARAMS_STRUCT(AttentionParams) {
    uint n_tokens;
    uint q_stride;  // a multiple of 4
    uint n_head;
    uint n_head_kv;
    uint n_cells;
    uint worker_keys;
    uint key_begin;
    uint key_end;
    uint n_swa;  // 0: no sliding window
    float scale;
    float softcap;  // 0: off
    uint causal;    // 0: every query sees the keys up to the batch's last position
    uint v_row;     // values from one cell's V row to the next: n_head_kv * head_dim_v, or the K row
                    // when V is each K row's first head_dim_v values (MLA's latent)
    uint seq_cells;  // decode: 0, or query t is its own sequence's one token, over the n_cells cells
                     // from cell t * seq_cells
} VKLLM_PARAMS_END(AttentionParams, 56);

// Decode attention's merge (shaders/attn_decode_merge.comp): the partials of `workers` workgroups per
// query head, [token][head][worker], into each head's output.
VKLLM_PARAMS_STRUCT(AttentionMergeParams) {
    uint n_head;
    uint workers;
} VKLLM_PARAMS_END(AttentionMergeParams, 8);

// Prefill attention's pass arguments (shaders/attn_prefill_spans.comp): n_spans passes of span_keys key
// indices below key_end, each groups_x x groups_y workgroups where some query sees a key in it.
VKLLM_PARAMS_STRUCT(AttentionSpanParams) {
    uint n_tokens;
    uint n_cells;
    uint n_swa;
    uint causal;
    uint span_keys;
    uint n_spans;
    uint key_end;
    uint groups_x;
    uint groups_y;
} VKLLM_PARAMS_END(AttentionSpanParams, 36);

// MiniMax sparse attention (runtime/ops/sparse_attention.h). Block scores: for each token and index
// head, the max over each block of block_size cells of index query . index key (cells past the
// token's position excluded), the local_blocks blocks ending at the token's own forced to the top.
VKLLM_PARAMS_STRUCT(MsaScoreParams) {
    uint n_tokens;
    uint n_cells;
    uint n_blocks;
    uint block_size;
    uint local_blocks;
    uint q_stride;   // floats between tokens' index queries, a multiple of 4
    uint seq_cells;  // 0, or token t is its own sequence's, over the n_cells cells from cell t * seq_cells
} VKLLM_PARAMS_END(MsaScoreParams, 28);

// Attention of each KV group's query heads over the top_k blocks selected for the group (block ids
// with their scores: a block scored -inf holds no visible key and is skipped).
VKLLM_PARAMS_STRUCT(MsaAttentionParams) {
    uint n_tokens;
    uint q_stride;  // a multiple of 4
    uint n_head;
    uint n_head_kv;
    uint n_cells;
    uint block_size;
    uint top_k;
    float scale;
    uint seq_cells;  // 0, or token t is its own sequence's, over the n_cells cells from cell t * seq_cells
} VKLLM_PARAMS_END(MsaAttentionParams, 36);

// ---- matvec / matmul (engineer "matmul"): y = W x with W [rows][cols] in ggml order. ----
// A weight split into segments is one dispatch per segment; the segment holds rows
// row_offset .. row_offset + row_count - 1 of W and is bound as the weight binding.
// accumulate = 1: y += W x (the residual add fused in); a flag rather than a specialization, so one
// compiled pipeline serves both (lavapipe compiles each pipeline for up to a second).
// matvec: x [cols], y [rows]; the kernel's INPUT specialization may form its input from x first
// (an RMSNorm with eps, or a GLU of x = [gate | up]). With TOKENS vectors: x [TOKENS][cols], y
// [TOKENS][rows].
VKLLM_PARAMS_STRUCT(MatvecParams) {
    uint cols;
    uint rows;  // of the whole matrix: y's stride between tokens
    uint row_count;
    uint row_offset;
    uint accumulate;
    float eps;  // INPUT_RMS_NORM
} VKLLM_PARAMS_END(MatvecParams, 24);

// matmul: x [n_tokens][cols], y [n_tokens][rows] (each token's vector contiguous, as ggml_mul_mat);
// sums over the 32-column units unit_begin .. unit_end - 1 of k (long rows take several dispatches).
VKLLM_PARAMS_STRUCT(MatmulParams) {
    uint cols;
    uint rows;
    uint row_count;
    uint row_offset;
    uint n_tokens;
    uint unit_begin;
    uint unit_end;
    uint accumulate;
} VKLLM_PARAMS_END(MatmulParams, 32);

// quantize_q8: x [blocks][32] floats into blocks of 9 words (ops/matmul.h).
VKLLM_PARAMS_STRUCT(QuantizeQ8Params) {
    uint blocks;
} VKLLM_PARAMS_END(QuantizeQ8Params, 4);

// bench_read (vkllm bench-ops): reads `count` uvec4s, per_invocation each, interleaved or contiguous.
VKLLM_PARAMS_STRUCT(BenchReadParams) {
    uint count;
    uint per_invocation;
    uint contiguous;
} VKLLM_PARAMS_END(BenchReadParams, 12);

// bench_fma (vkllm bench-ops): `iterations` rounds of FMA chains per invocation (bench_dot_i8: of
// int8 dot-product chains on the bits of multiplier and addend).
VKLLM_PARAMS_STRUCT(BenchFmaParams) {
    uint iterations;
    float multiplier;
    float addend;
} VKLLM_PARAMS_END(BenchFmaParams, 12);

// copy_rows: a block of `width` columns of `rows` rows between row-major layouts (floats).
VKLLM_PARAMS_STRUCT(CopyRowsParams) {
    uint width;
    uint src_stride;
    uint src_offset;
    uint dst_stride;
    uint dst_offset;
} VKLLM_PARAMS_END(CopyRowsParams, 20);

// Render-graph tests: y = x * step[slot] + offset, with the step value from a buffer the host
// updates between replays.
VKLLM_PARAMS_STRUCT(GraphScaleParams) {
    uint n;
    uint slot;
    float offset;
} VKLLM_PARAMS_END(GraphScaleParams, 12);

// Render-graph tests: a VkDispatchIndirectCommand of ceil(step[slot] / group_size) groups.
VKLLM_PARAMS_STRUCT(GraphIndirectParams) {
    uint slot;
    uint group_size;
} VKLLM_PARAMS_END(GraphIndirectParams, 8);

// ---- Vision (runtime/ops/patch_grid.h): regroupings of an nx x ny grid of n_embd-float patches.
VKLLM_PARAMS_STRUCT(PatchGridParams) {
    uint n_embd;
    uint nx;
    uint ny;
    uint k;      // pooling kernel or merge size; 1 for row breaks
    uint n_out;  // floats written
} VKLLM_PARAMS_END(PatchGridParams, 20);

// ---- Mixture of experts (runtime/ops/moe_route.h, expert_matmul.h; engineer "moe"). ----
// Routing of n_tokens rows of n_expert router logits to n_expert_used experts (moe_route.comp).
VKLLM_PARAMS_STRUCT(MoeRouteParams) {
    uint n_expert;
    uint n_expert_used;
    uint n_tokens;
    uint scoring;       // ops::MoeScoring: 1 softmax, 2 sigmoid
    uint has_bias;      // selection bias bound and used
    uint norm_topk;     // weights /= max(sum, 6.103515625e-5)
    float routed_scale; // 1: none
    uint n_group;       // 1: no group limit
    uint n_group_used;
} VKLLM_PARAMS_END(MoeRouteParams, 36);

// Per-expert lists of a chunk's (token, slot) entries (moe_group.comp).
VKLLM_PARAMS_STRUCT(MoeGroupParams) {
    uint n_expert;
    uint n_expert_used;
    uint n_tokens;
} VKLLM_PARAMS_END(MoeGroupParams, 12);

// x[t] += sum_s weights[t][s] * y[t][s] (+ shared[t]) over n floats per token (moe_combine.comp).
VKLLM_PARAMS_STRUCT(MoeCombineParams) {
    uint n;
    uint n_expert_used;
    uint n_tokens;
    uint has_shared;
} VKLLM_PARAMS_END(MoeCombineParams, 16);

// matvec with EXPERT_IDS: rows row_begin .. row_begin + rows - 1 of expert ids[slot]'s expert_rows
// rows; the bound segment holds stack rows row_offset .. row_offset + row_count - 1; x of slot s
// starts at s * x_stride floats (0: one x for all slots); row r of slot s goes to y[s * y_stride +
// y_offset + r].
VKLLM_PARAMS_STRUCT(MatvecIdParams) {
    uint cols;
    uint row_count;
    uint row_offset;
    uint expert_rows;
    uint row_begin;
    uint rows;
    uint x_stride;
    uint y_stride;
    uint y_offset;
} VKLLM_PARAMS_END(MatvecIdParams, 36);

// matmul with EXPERT_IDS: as MatvecIdParams for the rows; entries lists n_tokens per expert, entry =
// token * n_slots + slot; x rows are entries with x_per_slot, else tokens; units as MatmulParams.
VKLLM_PARAMS_STRUCT(MatmulIdParams) {
    uint cols;
    uint row_count;
    uint row_offset;
    uint expert_rows;
    uint row_begin;
    uint rows;
    uint n_tokens;
    uint n_slots;
    uint x_per_slot;
    uint unit_begin;
    uint unit_end;
    uint accumulate;
    uint expert_begin;  // workgroup z is expert expert_begin + z: the experts the bound segment holds
} VKLLM_PARAMS_END(MatmulIdParams, 52);

// ---- Multi-head latent attention (engineer "mla"): per-head products with a 3-D weight
// {cols, rows, n_head} (runtime/ops/matvec_heads.h). Element i of head h of token t sits at
// t * stride + offset + h * head_stride + i in x and y (floats; x's a multiple of 4).
VKLLM_PARAMS_STRUCT(MatvecHeadsParams) {
    uint cols;
    uint rows;  // per head
    uint x_stride;
    uint x_offset;
    uint x_head_stride;
    uint y_stride;
    uint y_offset;
    uint y_head_stride;
} VKLLM_PARAMS_END(MatvecHeadsParams, 32);

#ifdef __cplusplus
}  // namespace vkllm::params
#undef VKLLM_PARAMS_STRUCT
#undef VKLLM_PARAMS_END
#endif

#endif
