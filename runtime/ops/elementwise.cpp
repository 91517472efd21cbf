#include "ops/elementwise.h"

#include <initializer_list>

#include "core/error.h"
#include "gpu/device.h"
#include "ops/matvec.h"
#include "ops/workgroup.h"
#include "params.h"

namespace vkllm::ops {

namespace {

constexpr uint32_t preferred_workgroup_size = 256;

// One invocation per 4 elements (shaders/elementwise.comp); operands are (region, floats needed).
graph::Dispatch elementwise(gpu::Device& device, const char* name,
                            std::initializer_list<std::pair<graph::Region, uint64_t>> inputs, const graph::Region& y,
                            const params::ElementwiseParams& params) {
    graph::Dispatch dispatch;
    for (const auto& [region, floats] : inputs) {
        if (region.size < floats * 4) fail("{}: an operand of {} bytes, {} needed", name, region.size, floats * 4);
        dispatch.bindings.push_back({region, gpu::Access::Read});
    }
    if (params.n == 0 || y.size < uint64_t(params.n) * 4) fail("{}: {} elements into {} bytes", name, params.n, y.size);
    dispatch.bindings.push_back({y, gpu::Access::Write});
    const uint32_t workgroup_size = flat_workgroup_size(device.caps(), preferred_workgroup_size);
    dispatch.pipeline = &device.pipelines().get(name, {{0, workgroup_size}});
    dispatch.params(params);
    const uint64_t invocations = (uint64_t(params.n) + 3) / 4;
    dispatch.groups = group_grid((invocations + workgroup_size - 1) / workgroup_size, device.caps());
    return dispatch;
}

}  // namespace

graph::Dispatch add(gpu::Device& device, const graph::Region& a, const graph::Region& b, const graph::Region& y,
                    uint32_t n, uint32_t b_n) {
    if (b_n == 0 || b_n > n) fail("add: a second operand of {} elements for {}", b_n, n);
    return elementwise(device, "add", {{a, n}, {b, b_n}}, y, {.n = n, .b_n = b_n, .factor = 0.0f});
}

graph::Dispatch scale(gpu::Device& device, const graph::Region& x, const graph::Region& y, uint32_t n, float factor) {
    return elementwise(device, "scale", {{x, n}}, y, {.n = n, .b_n = 0, .factor = factor});
}

graph::Dispatch softcap(gpu::Device& device, const graph::Region& x, const graph::Region& y, uint32_t n, float cap) {
    if (!(cap > 0.0f)) fail("softcap: a cap of {} (must be positive)", cap);
    return elementwise(device, "softcap", {{x, n}}, y, {.n = n, .b_n = 0, .factor = cap});
}

graph::Dispatch glu(gpu::Device& device, Glu kind, const graph::Region& gate, const graph::Region& up,
                    const graph::Region& y, uint32_t n) {
    const char* name = kind == Glu::SwiGlu ? "swiglu" : kind == Glu::GeGlu ? "geglu" : "swiglu_oai";
    return elementwise(device, name, {{gate, n}, {up, n}}, y,
                       {.n = n, .b_n = 0, .factor = 0.0f});
}

}  // namespace vkllm::ops
