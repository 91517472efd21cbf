#pragma once
// What GPU tests share: one device for the whole test binary with the Khronos validation layer and
// synchronization validation on (the run fails if it reports anything), seeded random data, and
// the error measure every op test uses.
#include <cstdint>
#include <span>
#include <vector>

#include "core/error.h"
#include "gpu/device.h"
#include "gpu/dispatch.h"
#include "gpu/memory.h"
#include "gpu/transfer.h"

namespace vkllm::test {

gpu::Instance& instance();
gpu::Device& device();
gpu::Transfer& transfer();

// Validation messages a test provokes on purpose (to show a check can fail): counted while the
// object lives, and not held against the run.
class ExpectValidationMessages {
public:
    ExpectValidationMessages();
    ~ExpectValidationMessages();
    uint64_t seen() const;

private:
    uint64_t before_;
};

// fp32 kernels only while the object lives (what VKLLM_DISABLE_F16=1 gives a whole run), then the
// shared device's choice again.
class Float32Kernels {
public:
    Float32Kernels();
    ~Float32Kernels();
    Float32Kernels(const Float32Kernels&) = delete;
    Float32Kernels& operator=(const Float32Kernels&) = delete;

private:
    bool before_;
};

std::vector<float> random_floats(size_t count, uint64_t seed, float low = -1.0f, float high = 1.0f);

// ||got - want|| / ||want||, or infinity when either holds a NaN or an infinity.
double relative_error(std::span<const float> got, std::span<const float> want);

// A device buffer holding `values`, and the values read back from one.
gpu::Buffer upload(std::span<const float> values, gpu::MemoryDomain domain = gpu::MemoryDomain::Device);
std::vector<float> download(const gpu::Buffer& buffer, size_t count);

}  // namespace vkllm::test
