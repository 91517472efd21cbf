#include <doctest/doctest.h>

#include <cstring>
#include <numeric>

#include "gpu_fixture.h"
#include "params.h"

using namespace vkllm;

TEST_CASE("sub-allocation respects alignment, reuses freed space and returns empty blocks") {
    gpu::Allocator& allocator = test::device().allocator();
    gpu::MemoryStats before = allocator.stats();
    {
        std::vector<gpu::Buffer> buffers;
        for (VkDeviceSize size : {1u, 3u, 4096u, 1000001u, 17u})
            buffers.push_back(allocator.create(size, gpu::MemoryDomain::Device));
        for (const gpu::Buffer& buffer : buffers) {
            CHECK(buffer.segments().size() == 1);
            CHECK(buffer.range().offset % test::device().caps().min_storage_buffer_offset_alignment == 0);
        }
        // No two live buffers overlap.
        for (size_t i = 0; i < buffers.size(); ++i)
            for (size_t j = i + 1; j < buffers.size(); ++j) {
                const gpu::BufferRange &a = buffers[i].range(), &b = buffers[j].range();
                if (a.buffer == b.buffer) CHECK((a.offset + a.size <= b.offset || b.offset + b.size <= a.offset));
            }
        CHECK(allocator.stats().used_bytes > before.used_bytes);
    }
    CHECK(allocator.stats().used_bytes == before.used_bytes);
    CHECK(allocator.stats().block_bytes == before.block_bytes);
}

TEST_CASE("texel views: one per range, kept while the block lives; misaligned or foreign ranges refused") {
    gpu::Allocator& allocator = test::device().allocator();
    gpu::Buffer buffer = allocator.create(4096, gpu::MemoryDomain::Device);
    const gpu::BufferRange whole = buffer.range();
    const VkBufferView view = allocator.texel_view(whole);
    CHECK(view != VK_NULL_HANDLE);
    CHECK(allocator.texel_view(whole) == view);
    CHECK(allocator.texel_view(whole.sub(64, 100)) != view);  // 100 bytes: rounded up to 7 texels
    const VkDeviceSize alignment = test::device().caps().min_texel_buffer_offset_alignment;
    if (alignment > 1)
        CHECK_THROWS_WITH_AS(allocator.texel_view(whole.sub(alignment / 2, 64)), doctest::Contains("texel buffer limits"),
                             Error);
    gpu::BufferRange foreign = whole;
    foreign.buffer = VK_NULL_HANDLE;
    CHECK_THROWS_WITH_AS(allocator.texel_view(foreign), doctest::Contains("does not own"), Error);
}

TEST_CASE("a buffer over the binding range needs a split granularity") {
    gpu::Allocator& allocator = test::device().allocator();
    VkDeviceSize too_big = allocator.max_binding_range() + 4;
    CHECK_THROWS_WITH_AS(allocator.create(too_big, gpu::MemoryDomain::Device), doctest::Contains("binding range"), Error);
    CHECK_THROWS_AS(allocator.create(0, gpu::MemoryDomain::Device), Error);
}

TEST_CASE("VKLLM_MAX_BUFFER_RANGE splits a logical buffer at row boundaries, and a kernel reads every segment") {
    setenv("VKLLM_MAX_BUFFER_RANGE", "4000", 1);
    gpu::Device device(test::instance());
    unsetenv("VKLLM_MAX_BUFFER_RANGE");
    gpu::Allocator& allocator = device.allocator();
    CHECK(allocator.max_binding_range() == 4000);

    const VkDeviceSize row_bytes = 7 * sizeof(float);  // rows of 7 floats: segments hold 142 rows
    const size_t rows = 1001, count = rows * 7;
    gpu::Buffer buffer = allocator.create(count * sizeof(float), gpu::MemoryDomain::DeviceMapped, row_bytes);
    CHECK(buffer.segments().size() == (rows + 141) / 142);
    CHECK(buffer.segment_size() == 142 * row_bytes);
    for (const gpu::BufferRange& segment : buffer.segments()) CHECK(segment.size <= 4000);

    std::vector<float> values(count);
    std::iota(values.begin(), values.end(), 0.0f);
    gpu::Transfer transfer(device);
    transfer.upload(buffer, std::span<const float>(values));
    transfer.flush();

    // axpy over each segment separately, as ops do for split weights: y += 2 * x.
    gpu::Buffer out = allocator.create(count * sizeof(float), gpu::MemoryDomain::Device, row_bytes);
    const gpu::Pipeline& axpy = device.pipelines().get("axpy_f32", {{0, 64}});
    gpu::Commands commands(device);
    for (size_t s = 0; s < buffer.segments().size(); ++s) {
        const gpu::BufferRange& in = buffer.segments()[s];
        commands.fill(out.segments()[s], 0);
        gpu::Dispatch dispatch{.pipeline = &axpy};
        dispatch.bindings = {{in, gpu::Access::Read}, {out.segments()[s], gpu::Access::ReadWrite}};
        uint32_t n = uint32_t(in.size / sizeof(float));
        dispatch.params(params::AxpyParams{n, 2.0f});
        dispatch.groups = {axpy.groups_x(n), 1, 1};
        commands.record(dispatch);
    }
    commands.submit_and_wait();
    std::vector<float> result(count);
    transfer.readback(out, std::span(result));
    for (size_t i = 0; i < count; ++i) REQUIRE(result[i] == 2.0f * values[i]);
}
