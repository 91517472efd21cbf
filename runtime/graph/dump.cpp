// --dump-graph: the baked graph as text, level by level, with resources, placements and barriers.
#include <ostream>

#include <fmt/format.h>

#include "graph/state.h"

namespace vkllm::graph {
namespace {

const char* access_name(gpu::Access access) {
    switch (access) {
        case gpu::Access::Read: return "read";
        case gpu::Access::Write: return "write";
        case gpu::Access::ReadWrite: return "read-write";
    }
    return "?";
}

}  // namespace

void BakedGraph::dump(std::ostream& out) const {
    const State& s = *state_;
    out << fmt::format("graph: {} passes, {} dispatches, {} barriers, {} levels; transient {} bytes, {} after aliasing\n",
                       stats_.passes, stats_.dispatches, stats_.barriers, s.levels.size(), stats_.transient_bytes,
                       stats_.transient_bytes_aliased);
    out << "resources:\n";
    for (uint32_t r = 0; r < s.resources.size(); ++r) {
        const Resource& resource = s.resources[r];
        const Placement& placement = s.placements[r];
        if (resource.persistent)
            out << fmt::format("  persistent {:<28} {:>10} bytes\n", resource.name, resource.size);
        else if (placement.first_level < 0)
            out << fmt::format("  transient  {:<28} {:>10} bytes, unused\n", resource.name, resource.size);
        else
            out << fmt::format("  transient  {:<28} {:>10} bytes at arena {} + {}, levels {}-{}\n", resource.name,
                               resource.size, placement.arena, placement.offset, placement.first_level,
                               placement.last_level);
    }
    for (size_t level = 0; level < s.levels.size(); ++level) {
        if (level > 0) out << (s.options.omit_barriers ? "-- (barrier omitted)\n" : "-- barrier\n");
        out << fmt::format("level {}:\n", level);
        for (size_t p : s.levels[level]) {
            const Pass& pass = *s.passes[p];
            const Dispatch& dispatch = pass.declared_;
            out << fmt::format("  {} [{}]", pass.name_, dispatch.pipeline->name);
            if (dispatch.indirect)
                out << fmt::format(" indirect from {} [{}, +{})", s.resources[dispatch.indirect->resource].name,
                                   dispatch.indirect->offset, dispatch.indirect->size);
            else
                out << fmt::format(" {}x{}x{}", dispatch.groups[0], dispatch.groups[1], dispatch.groups[2]);
            if (pass.bytes_) out << fmt::format(", {} bytes", pass.bytes_);
            out << "\n";
            for (const Access& access : dispatch.bindings)
                out << fmt::format("      {:<10} {} [{}, +{})\n", access_name(access.access),
                                   s.resources[access.region.resource].name, access.region.offset, access.region.size);
        }
    }
}

}  // namespace vkllm::graph
