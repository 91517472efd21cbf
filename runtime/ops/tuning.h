#pragma once
// Launch shapes measured on the device at hand (vkllm tune): per device and driver (vendorID, deviceID,
// driverVersion, pipelineCacheUUID), a JSON file in the cache directory (gpu::cache_directory(), beside
// the pipeline cache) holding the fastest matvec launch per weight type, row length and token count
// (one, or a batch of 2-8), and the fastest matmul tile per weight type and kernel. matvec_config and
// matmul_config take an entry where one exists for the device as probed (no VKLLM_DEVICE_PROFILE;
// VKLLM_TUNING=0 ignores them). A file that is not a tuning file, or an entry the device cannot run,
// is refused with a one-line message and never used; tuned shapes are launch shapes of the same
// kernels, so results stay within each kernel's tolerance.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/types.h"
#include "ops/matmul.h"
#include "ops/matvec.h"

namespace vkllm::gpu {
struct Capabilities;
}

namespace vkllm::ops {

struct TunedMatvec {
    gguf::GgmlType type = gguf::GgmlType::F32;
    uint32_t cols = 0;
    bool batch = false;  // 2-8 vectors (matvec_batch); one vector otherwise
    uint32_t workgroup_size = 0, threads_per_row = 0, rows_per_team = 0;
};

struct TunedMatmul {
    gguf::GgmlType type = gguf::GgmlType::F32;
    bool texel_reads = false;  // the register-tiled texel-read kernel; the shared-memory one otherwise
    uint32_t tile_rows = 0, tile_tokens = 0;
};

struct Tuning {
    std::vector<TunedMatvec> matvec;
    std::vector<TunedMatmul> matmul;
    bool empty() const { return matvec.empty() && matmul.empty(); }
};

// "10de-2335-580159040-<pipelineCacheUUID>": the device and driver a tuning was measured on.
std::string tuning_key(const gpu::Capabilities& caps);
// The tuning file of the device (empty where there is no cache directory).
std::filesystem::path tuning_path(const gpu::Capabilities& caps);

// The entries of a tuning file's text the device can run; each refusal, one sentence naming `source`,
// is appended to `refused` (a text that is not a tuning file refuses all of it).
Tuning parse_tuning(std::string_view text, const gpu::Capabilities& caps, std::string_view source,
                    std::vector<std::string>& refused);
std::string tuning_json(const Tuning& tuning, const gpu::Capabilities& caps);
// Writes the device's tuning file (replacing it); throws vkllm::Error where it cannot.
void save_tuning(const Tuning& tuning, const gpu::Capabilities& caps);

// The device's tuning, its file read once per process (refusals printed to stderr then); empty under
// a device profile, with VKLLM_TUNING=0, or without a file.
const Tuning& device_tuning(const gpu::Capabilities& caps);
// The tuned launch for a matvec of `cols` columns on n_tokens vectors, and the tuned tile of the
// kernel `config` names (its other fields kept); nullopt where none was measured.
std::optional<TunedMatvec> tuned_matvec(const gpu::Capabilities& caps, gguf::GgmlType type, uint32_t cols,
                                        uint32_t n_tokens);
std::optional<TunedMatmul> tuned_matmul(const gpu::Capabilities& caps, gguf::GgmlType type, bool texel_reads);
// "matvec q4_0 288 cols, 1 vector: wg 8 team 1 rows 8", "matmul q4_0 texel: 64 x 16"; and the
// entries the config functions have taken since the process started (vkllm bench names them).
std::string describe(const TunedMatvec& entry);
std::string describe(const TunedMatmul& entry);
std::vector<std::string> tuned_shapes_used();

}  // namespace vkllm::ops
