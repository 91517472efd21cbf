// The memory plan (model/memory_plan.h): weights beyond device-local memory run from host memory with
// the same logits, the default context fits beside device-local weights, an impossible -c is refused.
#include <doctest/doctest.h>

#include <string>

#include "core/error.h"
#include "fixture_check.h"
#include "gpu_fixture.h"
#include "model/memory_plan.h"
#include "model/session.h"

using namespace vkllm;

namespace {

model::MemoryBudget device_budget() {
    return model::MemoryBudget::of(test::device().caps(), test::device().allocator().max_binding_range());
}

std::vector<float> logits_of(const gguf::File& file, const model::MemoryPlan& plan, std::span<const int32_t> tokens) {
    model::LoadOptions options;
    options.placement.in_host_memory = [&plan](std::string_view tensor) { return plan.in_host_memory(tensor); };
    auto model = model::load_model(test::device(), file, options);
    model::Session session(test::device(), *model, {.n_ctx = plan.n_ctx});
    std::vector<float> logits;
    session.eval(tokens, &logits);
    return logits;
}

std::string error_of(const auto& action) {
    try {
        action();
    } catch (const Error& error) {
        return error.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("weights past a device-local budget run from host memory, token_embd first, with the same logits") {
    const auto dir = test::fixture_dir("llama_q4k_q6k");  // Q and K fused, V apart: a group split by type
    if (dir.empty()) return;
    const gguf::File file = gguf::File::open(dir / "model.gguf");
    const std::vector<int32_t> tokens = test::read_tokens(dir / "tokens.txt");
    const model::KvLayout layout = model::kv_layout_from_metadata(file).value();
    const model::MemoryRequest request{.n_ctx = uint32_t(tokens.size())};
    model::MemoryBudget budget = device_budget();
    const model::MemoryPlan whole = model::plan_memory(file, layout, request, budget);
    REQUIRE(whole.weights_host == 0);
    // A device with room for all but half of the weights.
    budget.device_local = whole.total() - whole.weights / 2;
    const model::MemoryPlan capped = model::plan_memory(file, layout, request, budget);
    CAPTURE(capped.host_units);
    CHECK(capped.weights_host >= whole.weights / 2);
    CHECK(capped.device_local() <= budget.device_local);
    REQUIRE(!capped.host_tensors.empty());
    CHECK(capped.host_tensors.front() == "token_embd.weight");
    CHECK(capped.host_units.starts_with("token_embd, FFN of layer"));
    CHECK(capped.describe().find("in host memory: token_embd") != std::string::npos);
    CHECK(logits_of(file, capped, tokens) == logits_of(file, whole, tokens));
}

TEST_CASE("the default context is the largest beside device-local weights; an impossible -c names the largest that fits") {
    const auto dir = test::fixture_dir("llama_q4k_q6k");  // trained for 2048 tokens
    if (dir.empty()) return;
    const gguf::File file = gguf::File::open(dir / "model.gguf");
    const model::KvLayout layout = model::kv_layout_from_metadata(file).value();
    model::MemoryBudget budget = device_budget();
    CHECK(model::plan_memory(file, layout, {}, budget).n_ctx == 2048);
    const model::MemoryPlan at_600 = model::plan_memory(file, layout, {.n_ctx = 600}, budget);
    budget.device_local = at_600.total();
    const model::MemoryPlan chosen = model::plan_memory(file, layout, {}, budget);
    CHECK(chosen.n_ctx == 600);
    CHECK(chosen.weights_host == 0);

    // Room for the KV cache and compute buffers of 600 tokens and nothing else: the norms must stay,
    // so even with every matrix in host memory a little less than 600 fits.
    budget.device_local = at_600.kv + at_600.compute;
    const std::string refusal = error_of([&] { model::plan_memory(file, layout, {.n_ctx = 2048}, budget); });
    CAPTURE(refusal);
    const size_t at = refusal.find("lower -c to at most ");
    REQUIRE(at != std::string::npos);
    CHECK(refusal.find("a context of 2048 tokens needs") == 0);
    const uint32_t largest = uint32_t(std::stoul(refusal.substr(at + 20)));
    CHECK(largest < 600);
    CHECK(largest > 500);
    CHECK(model::plan_memory(file, layout, {.n_ctx = largest}, budget).weights_host > 0);
    CHECK(error_of([&] { model::plan_memory(file, layout, {.n_ctx = largest + 1}, budget); }) != "no error");
    budget.device_local = 1024;
    CHECK(error_of([&] { model::plan_memory(file, layout, {}, budget); }).find("does not fit on") != std::string::npos);
}
