// Images in prompts against llama.cpp's mtmd on the vision fixtures: the token layout, the image
// embeddings fed to the model, and the logits of every text position and of the greedy continuation.
#include <doctest/doctest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "fixture_check.h"
#include "gpu_fixture.h"
#include "model/session.h"
#include "tokenizer/tokenizer.h"
#include "vision/prompt.h"

using namespace vkllm;

namespace {

struct FixtureRun {
    vision::PromptRun prompt;
    std::vector<float> greedy_logits;  // the rows after each greedy token
    std::vector<int32_t> greedy_tokens;
};

// The fixture's prompt through vkllm, then as many greedy steps as the fixture records.
FixtureRun run_fixture(const std::filesystem::path& dir, const nlohmann::json& meta) {
    gguf::File file = gguf::File::open(dir / "model.gguf"), mmproj = gguf::File::open(dir / "mmproj.gguf");
    auto model = model::load_model(test::device(), file);
    const tokenizer::Tokenizer tokenizer(tokenizer::from_gguf(file));
    vision::Encoder encoder(test::device(), mmproj);
    model::Session session(test::device(), *model, {.n_ctx = meta["context"]["n_ctx"].get<uint32_t>()});
    const std::vector<vision::Image> images{vision::load_image(dir / meta["image"]["file"].get<std::string>())};
    const auto chunks = vision::tokenize_with_media(tokenizer, encoder.hparams().projector,
                                                    meta["prompt"].get<std::string>(), images.size());
    FixtureRun run{vision::run_prompt(session, encoder, chunks, images), {}, {}};
    const uint32_t n_vocab = model->info().n_vocab;
    std::vector<float> last(run.prompt.text_logits.end() - n_vocab, run.prompt.text_logits.end());
    for (const auto& row : meta["logits"]["rows"]) {
        if (row["kind"] != "greedy") continue;
        const auto next = int32_t(std::max_element(last.begin(), last.end()) - last.begin());
        run.greedy_tokens.push_back(next);
        std::span<const float> logits = session.eval(std::span(&next, 1));
        last.assign(logits.begin(), logits.end());
        run.greedy_logits.insert(run.greedy_logits.end(), last.begin(), last.end());
    }
    return run;
}

}  // namespace

TEST_CASE("Pixtral and Gemma 3 prompts with an image: layout, embeddings and logits match llama.cpp's") {
    for (auto [name, embd_tolerance] : {std::pair{"pixtral_vis", 1e-3}, std::pair{"gemma3_vis", 1e-2}}) {
        const std::string fixture = name;
        CAPTURE(fixture);
        auto dir = test::fixture_dir("vision/" + fixture);
        if (dir.empty()) continue;
        const nlohmann::json meta = nlohmann::json::parse(std::ifstream(dir / "meta.json"));
        const FixtureRun run = run_fixture(dir, meta);

        // Layout: one id per position, -1 for an image slot; the greedy tokens follow the prompt.
        std::vector<int32_t> layout;
        for (const vision::LayoutEntry& e : run.prompt.layout) layout.push_back(e.image ? -1 : e.token);
        layout.insert(layout.end(), run.greedy_tokens.begin(), run.greedy_tokens.end());
        CHECK(layout == test::read_tokens(dir / "tokens.txt"));
        CHECK(test::relative_error(run.prompt.image_embd, test::read_f32(dir / "image_embd.f32")) <= embd_tolerance);

        // Every row (teacher-forced text, then greedy) within 1e-2 relative RMS.
        const std::vector<float> want = test::read_f32(dir / "logits.f32");
        const size_t n_vocab = meta["logits"]["shape"][1].get<size_t>();
        std::vector<float> got = run.prompt.text_logits;
        got.insert(got.end(), run.greedy_logits.begin(), run.greedy_logits.end());
        REQUIRE(got.size() == want.size());
        double worst = 0;
        for (size_t row = 0; row < want.size() / n_vocab; ++row) {
            CAPTURE(row);
            const double error = test::relative_error(std::span(got).subspan(row * n_vocab, n_vocab),
                                                      std::span(want).subspan(row * n_vocab, n_vocab));
            worst = std::max(worst, error);
            CHECK(error <= 1e-2);
        }
        MESSAGE(fixture << ": worst logits row relative RMS " << worst);
    }
}
