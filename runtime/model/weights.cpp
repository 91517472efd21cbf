#include "model/weights.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "ops/rope.h"

namespace vkllm::model {

uint64_t WeightGroup::bytes() const {
    uint64_t total = 0;
    for (const Weight& part : parts) total += part.bytes();
    return total;
}

WeightLoader::WeightLoader(gpu::Device& device, const gguf::File& file, Progress progress, WeightPlacement placement)
    : device_(device), file_(file), transfer_(device), progress_(std::move(progress)), placement_(std::move(placement)) {
    for (const gguf::Tensor& tensor : file.tensors()) bytes_total_ += tensor.nbytes;
}

void WeightLoader::lock_pages(const gpu::BufferRange& segment) {
    static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = uintptr_t(segment.mapped) / page * page;
    const uintptr_t end = (uintptr_t(segment.mapped) + segment.size + page - 1) / page * page;
    if (::mlock(reinterpret_cast<void*>(begin), end - begin) == 0) return;
    const int error = errno;
    struct rlimit limit {};
    ::getrlimit(RLIMIT_MEMLOCK, &limit);
    const std::string allowed =
        limit.rlim_cur == RLIM_INFINITY ? "no limit" : fmt::format("a limit of {} KiB", limit.rlim_cur >> 10);
    fail("--mlock: cannot lock {} KiB of weights in memory after {} MiB ({}; the process has {}): raise "
         "`ulimit -l` or leave out --mlock", (end - begin) >> 10, bytes_loaded_ >> 20, std::strerror(error), allowed);
}

const gguf::Tensor& WeightLoader::checked(std::string_view name, std::initializer_list<uint64_t> shape) const {
    const gguf::Tensor& tensor = file_.tensor(name);
    file_.require_supported(tensor);
    std::array<uint64_t, 4> expected = {1, 1, 1, 1};
    std::copy(shape.begin(), shape.end(), expected.begin());
    if (tensor.ne != expected) {
        std::string want;
        for (uint64_t dim : shape) want += (want.empty() ? "" : " x ") + std::to_string(dim);
        fail("{}: tensor '{}' has shape {}, expected {}", file_.name(), std::string(name), tensor.shape_string(), want);
    }
    return tensor;
}

Weight WeightLoader::upload(std::string name, std::span<const gguf::Tensor* const> tensors) {
    const gguf::Tensor& first = *tensors.front();
    Weight weight{std::move(name), first.type, 0, uint32_t(first.ne[0]), {}};
    uint64_t bytes = 0;
    for (const gguf::Tensor* tensor : tensors) {
        weight.rows += uint32_t(tensor->n_rows());
        bytes += tensor->nbytes;
    }
    const bool host = placement_.in_host_memory && std::ranges::any_of(tensors, [&](const gguf::Tensor* tensor) {
        return placement_.in_host_memory(tensor->name);
    });
    weight.buffer = device_.allocator().create(bytes, host ? gpu::MemoryDomain::Host : gpu::MemoryDomain::Device,
                                               first.row_bytes());
    uint64_t offset = 0;
    for (const gguf::Tensor* tensor : tensors) {
        // The bytes are in the buffer or the staging ring once upload() returns.
        transfer_.upload(weight.buffer, offset, tensor->data);
        file_.release(*tensor);
        offset += tensor->nbytes;
        bytes_loaded_ += tensor->nbytes;
        if (progress_) progress_(bytes_loaded_, bytes_total_);
    }
    if (placement_.lock && weight.buffer.host_visible())
        for (const gpu::BufferRange& segment : weight.buffer.segments()) lock_pages(segment);
    return weight;
}

Weight WeightLoader::load(std::string_view name, std::initializer_list<uint64_t> shape) {
    const gguf::Tensor* tensor = &checked(name, shape);
    return upload(std::string(name), std::span(&tensor, 1));
}

std::optional<Weight> WeightLoader::load_optional(std::string_view name, std::initializer_list<uint64_t> shape) {
    if (!has(name)) return std::nullopt;
    return load(name, shape);
}

WeightGroup WeightLoader::load_group(std::span<const std::pair<std::string, uint32_t>> members, uint32_t cols) {
    WeightGroup group;
    std::vector<const gguf::Tensor*> tensors;
    for (const auto& [name, rows] : members) {
        tensors.push_back(&checked(name, {cols, rows}));
    }
    // Consecutive members of one type share a weight: a Q4_K_M file fuses Q and K, keeps V apart.
    for (size_t first = 0; first < tensors.size();) {
        size_t last = first + 1;
        while (last < tensors.size() && tensors[last]->type == tensors[first]->type) ++last;
        std::string name;
        for (size_t i = first; i < last; ++i) name += (name.empty() ? "" : "+") + members[i].first;
        group.parts.push_back(upload(name, std::span(tensors).subspan(first, last - first)));
        first = last;
    }
    return group;
}

EmbeddingWeights WeightLoader::load_embeddings(uint32_t n_embd, uint32_t n_vocab) {
    return {.token_embd = load("token_embd.weight", {n_embd, n_vocab}),
            .output_norm = load("output_norm.weight", {n_embd}),
            .output = load_optional("output.weight", {n_embd, n_vocab})};
}

gpu::Buffer WeightLoader::rope_phases(const ops::RopeConfig& rope) {
    const std::vector<uint32_t> phases = ops::rope_phase_table(rope);
    gpu::Buffer buffer = device_.allocator().create(phases.size() * 4, gpu::MemoryDomain::Device);
    transfer_.upload(buffer, std::span<const uint32_t>(phases));
    return buffer;
}

void WeightLoader::finish() { transfer_.flush(); }

}  // namespace vkllm::model
