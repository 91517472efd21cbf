#pragma once
// Attention over a single-sequence KV cache, f16 or q8_0, with GQA, a sliding window, a logit softcap,
// causal or not (model-notes.md C.0; ops/attention_config.h). The n_cells cells hold positions base ..
// base + n_cells - 1, base = max(0, P - n_cells + 1) with P the batch's last position (its last
// query's), position p in cell p mod n_cells: a full cache (P < n_cells) has position j in cell j; a
// circular one serves a sliding window of W for batches of n_tokens with W + n_tokens - 1 cells.
// Query positions come from the int32 positions buffer that RoPE reads, so recorded dispatches serve
// every step: they cover the whole cache and skip the keys no query sees.
//   decode:  few queries; each query's visible keys split over workgroups (as many as the keys in use
//            call for, up to the dispatch's) whose last to finish merges their partial results, in one
//            dispatch. GPUs with subgroup shuffles take shaders/attn_decode_split.comp (lanes of a
//            key group read a key's row together, workgroups enough for every compute unit); CPU
//            devices and those with basic subgroups shaders/attn_decode.comp (a lane per key, one
//            subgroup per workgroup). Scratch grows with n_tokens, not n_cells. A decode step over
//            several sequences is one dispatch too (AttentionShape::seq_cells).
//   prefill: many queries, flash style (shaders/attn_prefill.comp), one dispatch per span of keys,
//            indirect where there are several: a first pass (attn_prefill_spans.comp) gives workgroups
//            only to the spans some query sees; where caps.use_float16(), q.k is formed in f16 (f32
//            sums and softmax). Where the device's cooperative-matrix kernels are on (ops/coopmat.h),
//            attn_prefill_coopmat.comp instead: q.k and p.v on the matrix units, a KV head's query
//            heads together; heads it cannot hold (MLA's 576 and 512 dims in 48 KiB) keep the above.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/capabilities.h"
#include "graph/graph.h"
#include "ops/attention_config.h"
#include "ops/coopmat.h"

namespace vkllm::ops {

struct AttentionShape {
    uint32_t n_tokens = 0;  // queries
    uint32_t n_cells = 0;   // cells of the cache
    KvType kv_type = KvType::F16;
    uint32_t q_stride = 0;  // floats between tokens' queries, a multiple of 4 (0: n_head * head_dim_k),
                            // so q can be read in place from a fused QKV projection
    uint32_t v_stride = 0;  // values from one cell's V row to the next (0: n_head_kv * head_dim_v); MLA binds
                            // the K cache as V with the K row, so V is each key's first head_dim_v values
    // Decode only, f16 caches: 0, or query t is the one token of its own sequence, whose n_cells cells
    // start at cell t * seq_cells of the caches (which hold n_tokens such blocks) and whose last
    // position is its own.
    uint32_t seq_cells = 0;
};

// The buffers: q f32 [n_tokens] rows of q_stride floats, each starting with [n_head][head_dim_k]; caches as kv_write fills them; positions int32
// [n_tokens]; out f32 [n_tokens][n_head][head_dim_v]; scratch of the op's scratch_bytes, which holds
// nothing between runs.
struct AttentionBuffers {
    graph::Region q, k_cache, v_cache, positions, out, scratch;
};

// "attn_decode_q8_0_texel": the pipeline of a cache-reading kernel for the cache type, its fp16
// variant (float16) and the device's read path (gpu::Capabilities::texel_reads).
std::string kv_pipeline_name(std::string_view kernel, KvType type, bool float16, const gpu::Capabilities& caps);

uint64_t attention_decode_scratch_bytes(const AttentionConfig& config, const AttentionShape& shape);
// workers (0: the device's choice; tests set it) is how many workgroups per head group may share a
// query's keys: on GPUs enough workgroups for every compute unit (gpu::Capabilities::compute_units),
// a few on CPU devices; a test's count splits the keys as finely as it allows. Two dispatches: the
// workgroups' partial results, then their merge.
std::vector<graph::Dispatch> attention_decode(gpu::Device& device, const AttentionConfig& config,
                                              const AttentionShape& shape, const AttentionBuffers& buffers,
                                              uint32_t workers = 0);

// Whether the prefill kernel takes heads of this size on the device (head_dim_v of 16 or more, and
// tiles that fit its shared memory); the decode kernel serves many queries otherwise, more slowly.
bool attention_prefill_supports(const gpu::Capabilities& caps, const AttentionConfig& config);
// Whether many queries should take the prefill kernel: where it fits, on GPUs. CPU devices take the
// decode kernel, whose subgroups need no barrier: lavapipe runs the prefill kernel's shared tiles as
// a load per lane and its barriers as coroutine switches (the 1B llama's 512-token prompt: 10.95 s
// of attention against 1.55 s through the decode kernel).
bool attention_prefill_pays(const gpu::Capabilities& caps, const AttentionConfig& config);

uint64_t attention_prefill_scratch_bytes(const AttentionConfig& config, const AttentionShape& shape);
// key_limit (0: n_cells) bounds the keys the recorded passes cover, for a caller that knows no query
// of this batch sits past it. coopmat (tests) asks for the cooperative-matrix kernel with that shape.
std::vector<graph::Dispatch> attention_prefill(gpu::Device& device, const AttentionConfig& config,
                                               const AttentionShape& shape, const AttentionBuffers& buffers,
                                               uint32_t key_limit = 0,
                                               std::optional<CoopmatShape> coopmat = std::nullopt);

}  // namespace vkllm::ops
