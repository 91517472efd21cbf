#pragma once
// The pass criteria of ../shared/fixtures/README.md: against llama.cpp's logits or the exact float64
// pass, the median per-row relative RMS error and the top-1 agreement where the reference is sure.
#include <filesystem>
#include <string>
#include <vector>

namespace vkllm::test {

std::vector<int32_t> read_tokens(const std::filesystem::path& path);
std::vector<float> read_f32(const std::filesystem::path& path);

struct LogitsComparison {
    double median_rel_rms = 0;
    double top1_agreement = 0;  // over rows where the reference's top-1 margin is at least 0.5
    size_t rows_compared = 0;
    std::string summary() const;
};

LogitsComparison compare_logits(const std::vector<float>& got, const std::vector<float>& reference, size_t n_vocab);

// True when `got` meets the criteria against the logits in `reference`; `detail` says how it went.
bool meets_criteria(const std::vector<float>& got, const std::filesystem::path& reference, size_t n_vocab,
                    bool quantized, std::string& detail);

// True when `got` meets the criteria against either reference; `detail` says how each went.
bool meets_fixture_criteria(const std::vector<float>& got, const std::filesystem::path& fixture, size_t n_vocab,
                            bool quantized, std::string& detail);

// ../shared/fixtures/NAME, or empty when it is missing (test_main.h shared_path: said, and a failure under CI).
std::filesystem::path fixture_dir(const std::string& name);

}  // namespace vkllm::test
