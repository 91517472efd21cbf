#include "fixture_check.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "test_main.h"

namespace vkllm::test {

std::vector<int32_t> read_tokens(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::vector<int32_t> tokens;
    for (int32_t id; in >> id;) tokens.push_back(id);
    return tokens;
}

std::vector<float> read_f32(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<float> values(std::filesystem::file_size(path) / sizeof(float));
    in.read(reinterpret_cast<char*>(values.data()), std::streamsize(values.size() * sizeof(float)));
    return values;
}

std::string LogitsComparison::summary() const {
    return fmt::format("median rel RMS {:.3g}, top-1 agreement {:.1f}% of {} confident rows", median_rel_rms,
                       100 * top1_agreement, rows_compared);
}

LogitsComparison compare_logits(const std::vector<float>& got, const std::vector<float>& reference, size_t n_vocab) {
    size_t rows = std::min(got.size(), reference.size()) / n_vocab;
    std::vector<double> errors;
    size_t confident = 0, agree = 0;
    for (size_t r = 0; r < rows; ++r) {
        const float* g = got.data() + r * n_vocab;
        const float* ref = reference.data() + r * n_vocab;
        double error = 0, norm = 0;
        for (size_t i = 0; i < n_vocab; ++i) {
            double d = std::isfinite(g[i]) ? double(g[i]) - ref[i] : INFINITY;
            error += d * d;
            norm += double(ref[i]) * ref[i];
        }
        errors.push_back(std::sqrt(error / std::max(norm, 1e-30)));
        size_t best = std::max_element(ref, ref + n_vocab) - ref;
        float second = -INFINITY;
        for (size_t i = 0; i < n_vocab; ++i)
            if (i != best) second = std::max(second, ref[i]);
        if (ref[best] - second >= 0.5f) {
            ++confident;
            agree += size_t(std::max_element(g, g + n_vocab) - g) == best;
        }
    }
    LogitsComparison result;
    if (rows == 0 || got.size() != reference.size()) {
        result.median_rel_rms = INFINITY;
        return result;
    }
    std::nth_element(errors.begin(), errors.begin() + errors.size() / 2, errors.end());
    result.median_rel_rms = errors[errors.size() / 2];
    result.rows_compared = confident;
    result.top1_agreement = confident ? double(agree) / confident : 1.0;
    return result;
}

bool meets_criteria(const std::vector<float>& got, const std::filesystem::path& reference, size_t n_vocab,
                    bool quantized, std::string& detail) {
    const double max_error = quantized ? 2.5e-2 : 1e-3, min_agreement = quantized ? 0.97 : 1.0;
    LogitsComparison c = compare_logits(got, read_f32(reference), n_vocab);
    bool ok = c.median_rel_rms <= max_error && c.top1_agreement >= min_agreement;
    detail += fmt::format("{}: {} ({}); ", reference.filename().string(), c.summary(), ok ? "pass" : "fail");
    return ok;
}

bool meets_fixture_criteria(const std::vector<float>& got, const std::filesystem::path& fixture, size_t n_vocab,
                            bool quantized, std::string& detail) {
    bool passed = false;
    for (const char* reference : {"logits.f32", "logits_ref64.f32"})
        passed |= meets_criteria(got, fixture / reference, n_vocab, quantized, detail);
    return passed;
}

std::filesystem::path fixture_dir(const std::string& name) {
    return shared_path("fixtures/" + name).value_or(std::filesystem::path());
}

}  // namespace vkllm::test
