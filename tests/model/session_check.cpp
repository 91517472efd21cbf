#include "session_check.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "gpu_fixture.h"
#include "model/session.h"

namespace vkllm::test {

std::vector<float> session_logits(const model::Model& model, std::span<const int32_t> tokens, uint32_t n_ubatch) {
    model::Session session(device(), model, {.n_ctx = uint32_t(tokens.size()), .n_ubatch = n_ubatch});
    std::vector<float> logits;
    session.eval(tokens, &logits);
    return logits;
}

double agreement_tolerance(uint32_t n_ubatch) {
    constexpr uint32_t matvec_tokens = 8;  // the most tokens one matvec dispatch multiplies (matvec_body.glsl)
    return n_ubatch <= matvec_tokens && !device().caps().texel_reads() ? 3e-4 : 1e-4;
}

void check_runs_agree(const std::vector<float>& a, const std::vector<float>& b, size_t n_vocab, double tolerance) {
    REQUIRE(a.size() == b.size());
    double worst = 0;
    for (size_t row = 0; row < a.size() / n_vocab; ++row) {
        std::span<const float> x(a.data() + row * n_vocab, n_vocab), y(b.data() + row * n_vocab, n_vocab);
        CAPTURE(row);
        worst = std::max(worst, relative_error(x, y));
        CHECK(relative_error(x, y) <= tolerance);
        CHECK(std::max_element(x.begin(), x.end()) - x.begin() == std::max_element(y.begin(), y.end()) - y.begin());
    }
    MESSAGE("worst relative RMS over " << a.size() / n_vocab << " rows: " << worst);
}

}  // namespace vkllm::test
