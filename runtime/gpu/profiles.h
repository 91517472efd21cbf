#pragma once
// VKLLM_DEVICE_PROFILE=NAME: clamps a probed device's facts to those of a class of real devices
// before any kernel is chosen, so the kernels a phone or the Vulkan minimum would get run (and are
// checked) on lavapipe. A profile only lowers limits and removes features; the subgroup size a
// driver actually runs stays its own (lavapipe executes 8 lanes whatever a profile says).
#include <string>
#include <string_view>
#include <vector>

#include "gpu/capabilities.h"

namespace vkllm::gpu {

// Throws vkllm::Error naming the known profiles when `name` is none of them.
void apply_profile(Capabilities& caps, std::string_view name);

std::vector<std::string> profile_names();

}  // namespace vkllm::gpu
