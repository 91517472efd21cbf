#include <doctest/doctest.h>

#include <cstring>

#include "gpu/timing.h"
#include "gpu_fixture.h"

using namespace vkllm;

namespace {

std::vector<std::byte> random_bytes(size_t count, uint64_t seed) {
    std::vector<float> values = test::random_floats((count + 3) / 4, seed, -1e30f, 1e30f);
    std::vector<std::byte> bytes(count);
    std::memcpy(bytes.data(), values.data(), count);
    return bytes;
}

// Uploads then reads back odd-sized pieces at odd offsets through a ring smaller than the data.
void round_trip(gpu::Device& device, gpu::MemoryDomain domain) {
    gpu::Transfer transfer(device, 4096);  // tiny ring: many flushes and wrap-arounds
    const size_t size = 3 * 4096 + 1236;
    gpu::Buffer buffer = device.allocator().create(size, domain);
    std::vector<std::byte> data = random_bytes(size, 11);
    size_t at = 0;
    for (size_t piece : {1ul, 3ul, 5000ul, 4093ul, 12ul, 17ul}) {
        piece = std::min(piece, size - at);
        transfer.upload(buffer, at, std::span(data).subspan(at, piece));
        at += piece;
    }
    transfer.upload(buffer, at, std::span(data).subspan(at));
    std::vector<std::byte> back(size);
    transfer.readback(buffer, 0, std::span(back).subspan(0, 7));
    transfer.readback(buffer, 7, std::span(back).subspan(7));
    CHECK(std::memcmp(back.data(), data.data(), size) == 0);
}

}  // namespace

TEST_CASE("uploads and readbacks of sizes that are multiples of nothing, direct and through the staging ring") {
    round_trip(test::device(), gpu::MemoryDomain::Device);
    round_trip(test::device(), gpu::MemoryDomain::DeviceMapped);
    setenv("VKLLM_FORCE_STAGING", "1", 1);  // read when a device is created
    gpu::Device staging(test::instance());
    unsetenv("VKLLM_FORCE_STAGING");
    round_trip(staging, gpu::MemoryDomain::Device);
    round_trip(staging, gpu::MemoryDomain::DeviceMapped);
}

TEST_CASE("staged uploads cross the segments of a split buffer") {
    setenv("VKLLM_MAX_BUFFER_RANGE", "1024", 1);
    setenv("VKLLM_FORCE_STAGING", "1", 1);
    gpu::Device device(test::instance());
    gpu::Transfer transfer(device, 1000);
    unsetenv("VKLLM_MAX_BUFFER_RANGE");
    unsetenv("VKLLM_FORCE_STAGING");
    const size_t size = 10 * 1000 + 3;
    gpu::Buffer buffer = device.allocator().create(size, gpu::MemoryDomain::Device, 100);
    CHECK(buffer.segments().size() == 11);
    std::vector<std::byte> data = random_bytes(size, 5), back(size);
    transfer.upload(buffer, 1, std::span(data).subspan(1));
    transfer.upload(buffer, 0, std::span(data).subspan(0, 1));
    transfer.readback(buffer, 0, std::span(back));
    CHECK(std::memcmp(back.data(), data.data(), size) == 0);
    CHECK(transfer.submits() > 10);
}

TEST_CASE("GPU timestamps measure a region") {
    gpu::Device& device = test::device();
    if (!device.caps().compute_timestamps) return;
    gpu::Buffer buffer = device.allocator().create(1 << 20, gpu::MemoryDomain::Device);
    gpu::Timestamps timestamps(device, 2);
    gpu::Commands commands(device);
    timestamps.reset(commands.handle());
    timestamps.begin(commands.handle(), "fill 1 MiB");
    commands.fill(buffer.range(), 7);
    timestamps.end(commands.handle());
    commands.submit_and_wait();
    auto regions = timestamps.read();
    REQUIRE(regions.size() == 1);
    CHECK(regions[0].label == "fill 1 MiB");
    CHECK(regions[0].milliseconds >= 0);
    CHECK(regions[0].milliseconds < 10000);
}
