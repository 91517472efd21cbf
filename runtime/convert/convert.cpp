#include "convert/convert.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <exception>
#include <thread>

#include "convert/architectures.h"
#include "core/error.h"
#include "gguf/quants.h"

namespace vkllm::convert {

namespace {

// Rows are produced and encoded this many f32 values at a time (16 MiB), bounding memory.
constexpr uint64_t chunk_values = uint64_t(1) << 22;

uint32_t count_layers(const Plan& plan) {
    uint32_t n_layer = 0;
    for (const PlannedTensor& t : plan.tensors) {
        std::string_view name = t.name;
        const size_t at = name.find("blk.");
        if (at == std::string_view::npos) continue;
        uint32_t layer = 0;
        auto [end, error] = std::from_chars(name.data() + at + 4, name.data() + name.size(), layer);
        if (error == std::errc()) n_layer = std::max(n_layer, layer + 1);
    }
    return n_layer;
}

std::string shape_string(const std::vector<uint64_t>& ne) {
    std::string text;
    for (uint64_t n : ne) text += (text.empty() ? "" : " x ") + std::to_string(n);
    return text;
}

// Produces rows [first, first + count) of t and encodes them as `type` into out, on all cores:
// each thread takes a contiguous run of rows (row sources only read the mapping).
void encode_rows(const PlannedTensor& t, gguf::GgmlType type, uint64_t first, uint64_t count, std::span<float> values,
                 std::span<std::byte> out) {
    const uint64_t row = t.ne[0], row_bytes = gguf::row_bytes(type, row);
    const uint64_t n_threads = std::clamp<uint64_t>(std::thread::hardware_concurrency(), 1, count);
    const uint64_t per_thread = (count + n_threads - 1) / n_threads;
    std::vector<std::exception_ptr> errors(n_threads);
    std::vector<std::thread> threads;
    for (uint64_t i = 0; i < n_threads; ++i) {
        const uint64_t begin = std::min(count, i * per_thread), n = std::min(count, begin + per_thread) - begin;
        threads.emplace_back([&, i, begin, n] {
            try {
                const std::span<float> part = values.subspan(begin * row, n * row);
                t.rows(first + begin, part);
                if (gguf::block_size(type) > 1)  // the quantizers need finite inputs
                    for (float v : part)
                        if (!std::isfinite(v))
                            fail("tensor '{}': a value in rows {} to {} is not finite", t.name, first, first + count);
                gguf::quantize(type, part, out.subspan(begin * row_bytes, n * row_bytes));
            } catch (...) {
                errors[i] = std::current_exception();
            }
        });
    }
    for (std::thread& thread : threads) thread.join();
    for (const std::exception_ptr& error : errors)
        if (error) std::rethrow_exception(error);
}

// Produces tensor t chunk by chunk, encodes it as `type` and hands the bytes on.
void stream_tensor(const PlannedTensor& t, gguf::GgmlType type, const gguf::Writer::TensorSink& sink) {
    const uint64_t row = t.ne[0], n_rows = t.n_rows();
    const uint64_t rows_per_chunk = std::max<uint64_t>(1, chunk_values / row);
    std::vector<float> values;
    std::vector<std::byte> encoded;
    for (uint64_t first = 0; first < n_rows; first += rows_per_chunk) {
        const uint64_t count = std::min(rows_per_chunk, n_rows - first);
        values.resize(count * row);
        encoded.resize(gguf::row_bytes(type, row) * count);
        encode_rows(t, type, first, count, values, encoded);
        sink(encoded);
    }
}

}  // namespace

std::string size_label(uint64_t n_params) {
    const double n = double(n_params);
    const auto [scaled, suffix] = n > 1e12 ? std::pair{n * 1e-12, 'T'}
                                : n > 1e9  ? std::pair{n * 1e-9, 'B'}
                                : n > 1e6  ? std::pair{n * 1e-6, 'M'}
                                           : std::pair{n * 1e-3, 'K'};
    // at least two significant digits before the suffix
    const std::string whole = std::to_string(int64_t(std::nearbyint(scaled)));
    const int digits = int(whole.size() - std::min(whole.find_first_not_of('0'), whole.size()));
    return fmt::format("{:.{}f}{}", scaled, std::max(2 - digits, 0), suffix);
}

std::string name_from_folder(const std::filesystem::path& dir) {
    std::string name = std::filesystem::weakly_canonical(dir).filename().string();
    bool after_letter = false;  // Python's str.title()
    for (char& c : name) {
        const bool letter = std::isalpha(uint8_t(c)) != 0;
        if (letter) c = char(after_letter ? std::tolower(uint8_t(c)) : std::toupper(uint8_t(c)));
        after_letter = letter;
    }
    return name;
}

void write_plan(const Plan& plan, const std::filesystem::path& output, OutputType type, const Progress& progress,
                const std::function<void()>& after_tensor) {
    gguf::Writer writer = plan.metadata;
    writer.add_u32("general.file_type", file_type(type));

    const uint32_t n_layer = count_layers(plan);
    const bool tied_output = std::none_of(plan.tensors.begin(), plan.tensors.end(),
                                          [](const PlannedTensor& t) { return t.name == "output.weight"; });
    std::vector<gguf::GgmlType> types;
    for (const PlannedTensor& t : plan.tensors) {
        types.push_back(t.forced_type.value_or(tensor_type(type, t.name, t.ne, n_layer, tied_output)));
        writer.declare_tensor(t.name, types.back(), t.ne);
    }

    uint64_t n_params = 0, written = 0;
    for (const PlannedTensor& t : plan.tensors) n_params += t.n_elements();
    std::filesystem::path partial = output;
    partial += ".part";
    try {
        writer.write_streaming(partial, [&](size_t i, const gguf::Writer::TensorSink& sink) {
            const PlannedTensor& t = plan.tensors[i];
            if (progress)
                progress(written, n_params, fmt::format("[{}/{}] {} {} {}", i + 1, plan.tensors.size(), t.name,
                                                        shape_string(t.ne), gguf::type_name(types[i])));
            written += t.n_elements();
            if (t.stored_type == types[i]) sink(t.stored_data);
            else stream_tensor(t, types[i], sink);
            if (after_tensor) after_tensor();
        });
        std::filesystem::rename(partial, output);
    } catch (...) {
        std::error_code ignored;
        std::filesystem::remove(partial, ignored);
        throw;
    }
}

void convert(const ConvertOptions& options) {
    Source source{options.hf_dir, HfConfig::open(options.hf_dir), Checkpoint::open(options.hf_dir)};
    const auto write = [&](Plan plan, const std::filesystem::path& output) {
        uint64_t n_params = 0;
        for (const PlannedTensor& t : plan.tensors) n_params += t.n_elements();
        plan.metadata.add_string("general.type", plan.type);
        plan.metadata.add_string("general.name", name_from_folder(options.hf_dir));
        plan.metadata.add_string("general.size_label", size_label(n_params));
        plan.metadata.add_u32("general.quantization_version", 2);
        write_plan(plan, output, options.type, options.progress, [&] { source.checkpoint.release_pages(); });
    };
    if (!options.output.empty()) write(plan_model(source), options.output);
    if (!options.mmproj.empty()) write(plan_mmproj(source), options.mmproj);
}

}  // namespace vkllm::convert
