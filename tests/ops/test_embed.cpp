// get_rows on the GPU against the reference, for every weight type vkllm runs.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "op_harness.h"
#include "ops/embed.h"
#include "ops/ref/embed_ref.h"

using namespace vkllm;

namespace {

// Looks up ids (some outside the weight) in a random rows x cols weight and compares with the reference.
void check_get_rows(gpu::Device& device, gpu::Transfer& transfer, gguf::GgmlType type, uint32_t rows, uint32_t cols,
                    uint32_t n_tokens, uint64_t seed) {
    const std::string type_name(gguf::type_name(type));
    CAPTURE(type_name);
    CAPTURE(rows);
    CAPTURE(cols);
    const test::HostWeights weights = test::random_weights(type, rows, cols, seed);
    std::vector<int32_t> ids = test::random_ints(n_tokens, seed + 1, 0, int32_t(rows) - 1);
    ids[0] = int32_t(rows) - 1;
    if (n_tokens > 2) ids[1] = -1, ids[2] = int32_t(rows) + 5;

    gpu::Buffer weight_buffer = test::upload_weights(device, transfer, weights);
    gpu::Buffer id_buffer = device.allocator().create(ids.size() * 4, gpu::MemoryDomain::Device);
    gpu::Buffer out = device.allocator().create(uint64_t(n_tokens) * cols * 4, gpu::MemoryDomain::Device);
    transfer.upload(id_buffer, std::span<const int32_t>(ids));
    std::vector<float> poison(size_t(n_tokens) * cols, NAN);  // every element must be written
    transfer.upload(out, std::span<const float>(poison));
    transfer.flush();
    test::OpGraph g(device);
    g.run(ops::get_rows(device, g.weights(type, rows, cols, weight_buffer), g(id_buffer), g(out), n_tokens));

    std::vector<float> got(size_t(n_tokens) * cols), want(got.size());
    transfer.readback(out, std::span(got));
    ref::get_rows(type, weights.blocks, cols, ids, want);
    test::check_close(got, want, test::f32_tolerance, seed, "get_rows");
}

}  // namespace

TEST_CASE("get_rows: every weight type, odd shapes, ids outside the weight give zeros") {
    const uint64_t seed = test::base_seed();
    for (gguf::GgmlType type : test::weight_types) {
        const uint32_t unit = test::column_granularity(type);
        check_get_rows(test::device(), test::transfer(), type, 37, unit * 3, 9, seed);
        check_get_rows(test::device(), test::transfer(), type, 5, unit == 4 ? 4 * 77 : unit, 3, seed + 7);
    }
}

TEST_CASE("get_rows: an embedding split over several bindings, one dispatch per segment") {
    setenv("VKLLM_MAX_BUFFER_RANGE", "4000", 1);
    gpu::Device device(test::instance());
    unsetenv("VKLLM_MAX_BUFFER_RANGE");
    gpu::Transfer transfer(device);
    const uint64_t seed = test::base_seed() + 11;
    // Outputs must fit one 4000-byte binding too.
    check_get_rows(device, transfer, gguf::GgmlType::Q8_0, 200, 96, 10, seed);  // 102-byte rows
    check_get_rows(device, transfer, gguf::GgmlType::Q6_K, 61, 256, 3, seed);
    check_get_rows(device, transfer, gguf::GgmlType::F16, 90, 100, 9, seed);
}
