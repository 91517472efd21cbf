// bake(): validate and order the passes, place transient memory, write descriptor sets, record.
#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "graph/baked.h"
#include "graph/state.h"

namespace vkllm::graph {
namespace {

// Where an access lands before transients are placed: a persistent region is a byte range of its
// VkBuffer (two names for the same memory still conflict); a transient is a range of itself.
struct Footprint {
    bool transient;
    uint64_t key;
    VkDeviceSize begin, end;
    bool write;

    bool conflicts(const Footprint& other) const {
        return (write || other.write) && transient == other.transient && key == other.key && begin < other.end &&
               other.begin < end;
    }
};

}  // namespace

BakedGraph Graph::bake(BakeOptions options) && {
    auto started = std::chrono::steady_clock::now();
    auto state = std::make_unique<BakedGraph::State>();
    state->device = device_;
    state->options = options;
    state->resources = std::move(resources_);
    state->passes = std::move(passes_);
    state->owned = std::move(owned_);
    BakedGraph baked(std::move(state));
    baked.stats_.bake_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    return baked;
}

BakedGraph::BakedGraph(std::unique_ptr<State> state) : state_(std::move(state)) {
    order_passes();    // dependency levels: a pass runs one level after the last pass it depends on
    place_transients();  // lifetimes in levels; disjoint lifetimes share memory
    bind_passes();     // physical ranges into dispatches; descriptor sets written once
    record();          // the command buffer every replay submits
}

BakedGraph::BakedGraph(BakedGraph&&) noexcept = default;

void State::check_bounds(const Region& region, const std::string& pass) const {
    if (region.resource >= resources.size()) fail("pass '{}' names a resource that does not exist", pass);
    const auto& resource = resources[region.resource];
    if (region.size == 0 || region.offset + region.size > resource.size)
        fail("pass '{}': region [{}, +{}) of '{}' lies outside its {} bytes", pass, region.offset, region.size,
             resource.name, resource.size);
}

void BakedGraph::order_passes() {
    State& s = *state_;
    // Every access as a footprint, the indirect-argument read included.
    std::vector<std::vector<Footprint>> footprints(s.passes.size());
    for (size_t p = 0; p < s.passes.size(); ++p) {
        Pass& pass = *s.passes[p];
        auto add = [&](const Region& r, bool write) {
            s.check_bounds(r, pass.name_);
            const auto& resource = s.resources[r.resource];
            if (resource.persistent)
                footprints[p].push_back({false, uint64_t(resource.persistent->buffer),
                                         resource.persistent->offset + r.offset,
                                         resource.persistent->offset + r.offset + r.size, write});
            else
                footprints[p].push_back({true, r.resource, r.offset, r.offset + r.size, write});
        };
        for (const Access& access : pass.declared_.bindings) add(access.region, access.access != gpu::Access::Read);
        if (pass.declared_.indirect) add(*pass.declared_.indirect, false);
    }

    s.level_of.assign(s.passes.size(), 0);
    for (size_t j = 0; j < s.passes.size(); ++j) {
        for (size_t i = 0; i < j; ++i) {
            bool depends = std::ranges::any_of(footprints[j], [&](const Footprint& later) {
                return std::ranges::any_of(footprints[i], [&](const Footprint& earlier) { return later.conflicts(earlier); });
            });
            if (depends) s.level_of[j] = std::max(s.level_of[j], s.level_of[i] + 1);
        }
        // A transient read before anything wrote it would read garbage (or another pass's data).
        for (const Footprint& read : footprints[j]) {
            if (!read.transient || read.write) continue;
            bool written = false;
            for (size_t i = 0; i < j && !written; ++i)
                for (const Footprint& earlier : footprints[i])
                    written |= earlier.write && earlier.conflicts(read);
            if (!written)
                fail("pass '{}' reads transient '{}' before any pass writes it", s.passes[j]->name_,
                     s.resources[read.key].name);
        }
    }
    int levels = s.passes.empty() ? 0 : *std::ranges::max_element(s.level_of) + 1;
    s.levels.assign(levels, {});
    for (size_t p = 0; p < s.passes.size(); ++p) s.levels[s.level_of[p]].push_back(p);

    stats_.passes = stats_.dispatches = s.passes.size();
    stats_.barriers = s.options.omit_barriers || levels == 0 ? 0 : levels - 1;
    for (const auto& pass : s.passes) stats_.weight_bytes += pass->bytes_;
}

void BakedGraph::place_transients() {
    State& s = *state_;
    s.placements.assign(s.resources.size(), {});
    for (size_t p = 0; p < s.passes.size(); ++p) {
        auto touch = [&](const Region& region) {
            Placement& placement = s.placements[region.resource];
            int level = s.level_of[p];
            if (placement.first_level < 0 || level < placement.first_level) placement.first_level = level;
            placement.last_level = std::max(placement.last_level, level);
        };
        const Dispatch& declared = s.passes[p]->declared_;
        for (const Access& access : declared.bindings) touch(access.region);
        if (declared.indirect) touch(*declared.indirect);
    }

    const gpu::Capabilities& caps = s.device->caps();
    VkDeviceSize alignment = std::max<VkDeviceSize>(caps.min_storage_buffer_offset_alignment, 256);
    VkDeviceSize capacity = s.device->allocator().max_binding_range();
    std::vector<uint32_t> order;
    for (uint32_t r = 0; r < s.resources.size(); ++r)
        if (!s.resources[r].persistent && s.placements[r].first_level >= 0) order.push_back(r);
    // Largest first packs tightest with first fit.
    std::ranges::stable_sort(order, [&](uint32_t a, uint32_t b) { return s.resources[a].size > s.resources[b].size; });

    std::vector<VkDeviceSize> arena_sizes;
    std::vector<uint32_t> placed;
    for (uint32_t r : order) {
        const VkDeviceSize size = (s.resources[r].size + alignment - 1) / alignment * alignment;
        if (size > capacity)
            fail("transient '{}' of {} bytes exceeds the {}-byte binding range", s.resources[r].name, size, capacity);
        stats_.transient_bytes += size;
        Placement& mine = s.placements[r];
        for (size_t arena = 0;; ++arena) {
            if (arena == arena_sizes.size()) arena_sizes.push_back(0);
            // Memory taken by transients alive at the same time, in this arena, by offset.
            std::vector<std::pair<VkDeviceSize, VkDeviceSize>> taken;
            for (uint32_t other : placed) {
                const Placement& theirs = s.placements[other];
                bool overlap = theirs.arena == arena && mine.first_level <= theirs.last_level &&
                               theirs.first_level <= mine.last_level;
                if (overlap) taken.push_back({theirs.offset, theirs.offset + s.resources[other].size});
            }
            std::ranges::sort(taken);
            VkDeviceSize offset = 0;
            for (auto [begin, end] : taken) {
                if (offset + size <= begin) break;
                offset = std::max(offset, (end + alignment - 1) / alignment * alignment);
            }
            if (offset + size > capacity) continue;
            mine.arena = arena;
            mine.offset = offset;
            arena_sizes[arena] = std::max(arena_sizes[arena], offset + size);
            placed.push_back(r);
            break;
        }
    }
    SharedArenas* shared = s.options.shared_arenas;
    for (size_t arena = 0; arena < arena_sizes.size(); ++arena) {
        const VkDeviceSize size = arena_sizes[arena];
        stats_.transient_bytes_aliased += size;
        if (shared && arena < shared->arenas.size() && shared->arenas[arena]->size() >= size) {
            s.arenas.push_back(shared->arenas[arena]);
            continue;
        }
        s.arenas.push_back(std::make_shared<gpu::Buffer>(s.device->allocator().create(size, gpu::MemoryDomain::Device)));
        if (!shared) continue;
        if (arena == shared->arenas.size()) shared->arenas.emplace_back();
        shared->arenas[arena] = s.arenas.back();
    }
}

gpu::BufferRange BakedGraph::physical(Region region) const {
    const State& s = *state_;
    s.check_bounds(region, "physical");
    const auto& resource = s.resources[region.resource];
    if (resource.persistent) return resource.persistent->sub(region.offset, region.size);
    const Placement& placement = s.placements[region.resource];
    if (placement.first_level < 0) fail("transient '{}' is used by no pass", resource.name);
    return s.arenas[placement.arena]->range().sub(placement.offset + region.offset, region.size);
}

void BakedGraph::bind_passes() {
    State& s = *state_;
    VkDeviceSize alignment = s.device->caps().min_storage_buffer_offset_alignment;
    s.descriptors = std::make_unique<gpu::DescriptorArena>(*s.device);
    for (auto& pass : s.passes) {
        const Dispatch& declared = pass->declared_;
        gpu::Dispatch& dispatch = pass->bound_;
        dispatch = {.pipeline = declared.pipeline, .push = declared.push, .groups = declared.groups};
        for (const Access& access : declared.bindings) {
            gpu::BufferRange range = physical(access.region);
            if (range.offset % alignment != 0)
                fail("pass '{}': '{}' is bound at offset {}, not a multiple of the device's {}-byte alignment",
                     pass->name_, s.resources[access.region.resource].name, range.offset, alignment);
            dispatch.bindings.push_back({range, access.access});
        }
        if (declared.indirect) dispatch.indirect = physical(*declared.indirect);
        gpu::validate(*s.device, dispatch);
        s.sets.push_back(s.descriptors->write(dispatch));
    }
}

}  // namespace vkllm::graph
