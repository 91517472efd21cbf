#pragma once
// Matrix-vector products for decode: y = W x, or y += W x with the residual add fused in, where x may
// first go through the RMSNorm or GLU activation before the projection (fused too). W stays in its
// GGUF blocks (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K) and is decoded in the
// kernel (shaders/matvec_<type>.comp, block decoding in shaders/dequant_<type>.glsl).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/types.h"
#include "graph/graph.h"
#include "ops/elementwise.h"

namespace vkllm::gpu {
struct Capabilities;
class Device;
}  // namespace vkllm::gpu

namespace vkllm::ops {

// A weight matrix in a graph, in ggml order (ne = {cols, rows}): `rows` rows of `cols` elements in
// the blocks of `type`. A buffer larger than one binding is split at row granularity
// (weight_row_bytes); each segment is a persistent region of the graph and becomes one dispatch.
struct WeightMatrix {
    gguf::GgmlType type = gguf::GgmlType::F32;
    uint32_t rows = 0, cols = 0;
    std::vector<graph::Region> segments;
};

// Bytes of one row of the matrix: the split granularity to create its buffer with.
uint64_t weight_row_bytes(gguf::GgmlType type, uint32_t cols);
// The matrix `buffer` holds, its segments declared in `graph` as persistent resources named after it;
// throws vkllm::Error naming it where the buffer cannot hold the rows or splits inside a row.
WeightMatrix weight_matrix(graph::Graph& graph, const std::string& name, gguf::GgmlType type, uint32_t rows,
                           uint32_t cols, const gpu::Buffer& buffer);
// Throws vkllm::Error naming `op` when the kernels cannot take a weight of this type and shape:
// the type must be one vkllm runs, cols a multiple of its block (of 4 for F32, F16 and BF16).
void check_weight_shape(gguf::GgmlType type, uint32_t rows, uint32_t cols, std::string_view op);

// Shared by matvec and matmul.
constexpr uint32_t weight_unit_elems = 32;  // UNIT_ELEMS in shaders/dequant_common.glsl
// One segment of a weight buffer as a dispatch binds it: rows row_offset .. row_offset + row_count - 1.
struct WeightSegment {
    graph::Region region;
    uint32_t row_offset = 0, row_count = 0;
};
// The segments holding the matrix's rows; throws vkllm::Error naming `op` for a bad shape.
std::vector<WeightSegment> weight_segments(const WeightMatrix& weights, std::string_view op);
bool has_f16_variant(gguf::GgmlType type);  // gguf/weight_types.def: fp16_kernels
// "matvec_q4_k", "matmul_f16_f16_texel": the op, the weight type, then _f16 for the fp16 variant and
// _texel for the one reading through texel buffers (gpu::Capabilities::texel_reads).
std::string weight_pipeline_name(std::string_view op, gguf::GgmlType type, bool float16, bool texel_reads);
// Workgroup counts covering `groups` along x, folded into y past the device's x limit.
std::array<uint32_t, 3> group_grid(uint64_t groups, const gpu::Capabilities& caps);

// Launch shape of the matvec kernel; matvec_config picks it per device and row length.
struct MatvecConfig {
    uint32_t workgroup_size = 128;
    uint32_t threads_per_row = 32;  // 1, or a multiple of the device's largest subgroup size
    uint32_t rows_per_team = 2;     // rows each team of threads_per_row computes, 1..matvec_max_rows_per_team
    bool float16 = false;           // the fp16-arithmetic variant (where the type and device have one)
    bool texel_reads = false;       // weights, x and the norm weight through texel buffers
};

// The device's launch (vkllm tune's where it measured one, ops/tuning.h) for rows of `cols` columns.
MatvecConfig matvec_config(const gpu::Capabilities& caps, gguf::GgmlType type, uint32_t cols, uint32_t n_tokens = 1);
// Refuses a launch the kernel or the device cannot run: a team that is not 1 thread or whole
// subgroups or does not divide the workgroup, rows per team out of range, an fp16 variant the device
// lacks, a workgroup past the device's limits.
void check_matvec_config(const MatvecConfig& config, const gpu::Capabilities& caps, gguf::GgmlType type);
// The pipeline name for a weight type and launch: matvec_q4_k, matvec_q4_k_f16, matvec_q4_k_texel...
std::string matvec_pipeline_name(gguf::GgmlType type, const MatvecConfig& config);

// The vector a matvec multiplies, formed from x as the kernel loads it, so that the pass which would
// otherwise write it (and its dispatch) disappears.
struct MatvecInput {
    enum class Kind : uint32_t { Plain, RmsNorm, SwiGlu, GeGlu, SwiGluOai };  // INPUT_* in shaders/matvec_body.glsl
    Kind kind = Kind::Plain;
    graph::Region x;  // Plain, RmsNorm: cols floats; SwiGlu, GeGlu: [gate | up], 2 * cols floats
    std::optional<graph::Region> norm_weight;     // RmsNorm: f32 [cols]
    float eps = 0;                                // RmsNorm

    static MatvecInput plain(const graph::Region& x) { return {.x = x}; }
    // x / sqrt(mean(x^2) + eps) * weight: the RMSNorm before a projection, applied as a scalar
    // epilogue (the rows dotted with x * weight, the results scaled by 1 / rms).
    static MatvecInput rms_norm(const graph::Region& x, const graph::Region& weight, float eps) {
        return {.kind = Kind::RmsNorm, .x = x, .norm_weight = weight, .eps = eps};
    }
    // act(gate) * up with gate_up = [gate | up]: the GLU before a down projection.
    static MatvecInput glu(Glu activation, const graph::Region& gate_up) {
        const Kind kind = activation == Glu::SwiGlu ? Kind::SwiGlu : activation == Glu::GeGlu ? Kind::GeGlu : Kind::SwiGluOai;
        return {.kind = kind, .x = gate_up};
    }
};

// One dispatch per weight segment computing y = W in (y += W in with accumulate) for the input
// formed from x; y holds rows floats. A config (for tests and benchmarks) replaces the device's
// default; its threads_per_row is still raised where a row would loop past lavapipe's cap.
std::vector<graph::Dispatch> matvec(gpu::Device& device, const WeightMatrix& weights, const MatvecInput& input,
                                    const graph::Region& y, bool accumulate,
                                    std::optional<MatvecConfig> config = std::nullopt);
// y = W x (y += W x with accumulate) for x of cols floats.
std::vector<graph::Dispatch> matvec(gpu::Device& device, const WeightMatrix& weights, const graph::Region& x,
                                    const graph::Region& y, bool accumulate,
                                    std::optional<MatvecConfig> config = std::nullopt);

// Y = W X (Y += W X with accumulate) for a small batch: x [n_tokens][cols], y [n_tokens][rows], n_tokens
// from 1 to matvec_max_tokens. Each unit of weights is decoded once for all the tokens, so the
// weights are read once per batch (the server's decode step, short prompts); matmul takes more.
constexpr uint32_t matvec_max_tokens = 8;  // MAX_TOKENS in shaders/matvec_body.glsl
constexpr uint32_t matvec_max_rows_per_team = 8;  // MAX_ROWS_PER_TEAM in shaders/matvec_body.glsl
std::vector<graph::Dispatch> matvec_batch(gpu::Device& device, const WeightMatrix& weights, const graph::Region& x,
                                          const graph::Region& y, uint32_t n_tokens, bool accumulate,
                                          std::optional<MatvecConfig> config = std::nullopt);

// hidden = act(gate in) * (up in) for gate_up = [gate | up] (2 n rows in one segment; hidden
// [n_tokens][n]), the input Plain or (one token) an RMSNorm: each team dots gate and up rows of the same
// outputs and applies the activation once per output, so the down projection multiplies a plain
// vector (no activation pass, no recomputation per row team). Where matvec_glu_supported says the
// device's launch allows it: one segment and an even number of rows per team.
bool matvec_glu_supported(const gpu::Capabilities& caps, const WeightMatrix& gate_up, uint32_t n_tokens);
std::vector<graph::Dispatch> matvec_glu(gpu::Device& device, const WeightMatrix& gate_up, Glu activation,
                                        const MatvecInput& input, const graph::Region& hidden, uint32_t n_tokens,
                                        std::optional<MatvecConfig> config = std::nullopt);
// Whether a GLU input, whose activations every row team recomputes, costs less than the activation
// pass it saves: on GPUs never (an exp per two weights); on CPU devices, where each lane recomputes all
// `cols` of them, only while that stays near one dispatch's fixed cost (tiny models).
bool glu_input_pays(const gpu::Capabilities& caps, const WeightMatrix& weights);

}  // namespace vkllm::ops
