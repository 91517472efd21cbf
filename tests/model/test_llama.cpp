#include <doctest/doctest.h>

#include <fstream>

#include "fixture_check.h"
#include "gpu_fixture.h"
#include "model/session.h"
#include "tokenizer/tokenizer.h"

using namespace vkllm;

namespace {

std::vector<float> teacher_forced_logits(const std::filesystem::path& dir, model::SessionOptions options = {}) {
    gguf::File file = gguf::File::open(dir / "model.gguf");
    auto model = model::load_model(test::device(), file);
    std::vector<int32_t> tokens = test::read_tokens(dir / "tokens.txt");
    options.n_ctx = options.n_ctx ? options.n_ctx : uint32_t(tokens.size());
    model::Session session(test::device(), *model, options);
    std::vector<float> logits;
    session.eval(tokens, &logits);
    return logits;
}

}  // namespace

TEST_CASE("llama and mistral3 fixtures match llama.cpp's logits") {
    for (auto [fixture, quantized] : {std::pair{"llama_f32", false}, std::pair{"llama_q8_0", true},
                                   std::pair{"llama_q4_0", true}, std::pair{"llama_q4k_q6k", true},
                                   std::pair{"mistral3_f32", false}, std::pair{"mistral3_q8_0", true}}) {
        std::string name = fixture;
        auto dir = test::fixture_dir(name);
        if (dir.empty()) {
            MESSAGE("../shared/fixtures absent: skipping " << name);
            continue;
        }
        CAPTURE(name);
        std::string detail;
        bool passed = test::meets_fixture_criteria(teacher_forced_logits(dir), dir, 512, quantized, detail);
        INFO(detail);
        CHECK(passed);
    }
}
