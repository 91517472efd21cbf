// The `vkllm info` listing of a GGUF file.
#include "gguf/dump.h"

#include <fmt/format.h>

#include <map>

namespace vkllm::gguf {

namespace {

// A string as a quoted literal: escapes quotes and control bytes, cut after max_chars.
std::string quote(std::string_view s, size_t max_chars) {
    std::string out = "\"";
    for (size_t i = 0; i < s.size() && i < max_chars; ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c == '"' || c == '\\') out += fmt::format("\\{}", char(c));
        else if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7F) out += fmt::format("\\x{:02x}", c);
        else out += char(c);
    }
    out += "\"";
    if (s.size() > max_chars) out += fmt::format("... ({} bytes)", s.size());
    return out;
}

std::string format_scalar(const Value& v) {
    switch (v.type) {
        case ValueType::U8: case ValueType::U16: case ValueType::U32: case ValueType::U64:
            return fmt::format("{}", v.unsigned_value);
        case ValueType::I8: case ValueType::I16: case ValueType::I32: case ValueType::I64:
            return fmt::format("{}", v.signed_value);
        case ValueType::F32: return fmt::format("{}", float(v.float_value));
        case ValueType::F64: return fmt::format("{}", v.float_value);
        case ValueType::Bool: return v.unsigned_value ? "true" : "false";
        case ValueType::String: case ValueType::Array: break;
    }
    return {};
}

std::string type_label(const Value& v) {
    if (v.type != ValueType::Array) return std::string(value_type_name(v.type));
    const std::string element =
        v.element_type == ValueType::Array && !v.arrays.empty() ? type_label(v.arrays[0]) : std::string(value_type_name(v.element_type));
    return fmt::format("[{}; {}]", element, v.count);
}

}  // namespace

std::string format_value(const Value& value, const DumpOptions& options) {
    if (value.type == ValueType::String) return quote(value.string, options.string_chars);
    if (value.type != ValueType::Array) return format_scalar(value);
    std::string out = "[";
    const uint64_t shown = std::min<uint64_t>(value.count, options.array_items);
    for (uint64_t i = 0; i < shown; ++i) {
        if (i > 0) out += ", ";
        out += format_value(value.item(i), options);
    }
    if (value.count > shown) out += fmt::format(", ... {} more", value.count - shown);
    return out + "]";
}

std::string dump(const File& file, const DumpOptions& options) {
    uint64_t total_bytes = 0;
    for (size_t k = 0; k < file.n_parts(); ++k) total_bytes += file.part_size(k);
    std::string out = fmt::format("{}: GGUF v{}, alignment {}, {} metadata keys, {} tensors, {} bytes", file.name(),
                                  file.version(), file.alignment(), file.metadata().size(), file.tensors().size(),
                                  total_bytes);
    if (file.n_parts() > 1) out += fmt::format(" in {} parts", file.n_parts());
    out += "\n\nmetadata:\n";
    size_t index = 0;
    for (const KeyValue& kv : file.metadata())
        out += fmt::format("{:5}: {:<42} {:<16} = {}\n", ++index, printable(kv.key, 256), type_label(kv.value), format_value(kv.value, options));

    out += fmt::format("\ntensors:\n{:>5}  {:<36} {:<8} {:<24} {:>12} {:>12}\n", "#", "name", "type", "shape", "bytes",
                       file.n_parts() > 1 ? "part:offset" : "offset");
    std::map<std::string_view, uint64_t> count_by_type;
    uint64_t n_parameters = 0, n_bytes = 0;
    index = 0;
    for (const Tensor& t : file.tensors()) {
        const std::string where = file.n_parts() > 1 ? fmt::format("{}:{:#x}", t.part + 1, t.offset) : fmt::format("{:#x}", t.offset);
        out += fmt::format("{:5}: {:<36} {:<8} {:<24} {:>12} {:>12}\n", ++index, printable(t.name), type_name(t.type),
                           t.shape_string(), t.nbytes, where);
        ++count_by_type[type_name(t.type)];
        n_parameters += t.n_elements();
        n_bytes += t.nbytes;
    }
    std::string by_type;
    for (const auto& [name, count] : count_by_type) by_type += fmt::format("{}{}: {}", by_type.empty() ? "" : ", ", name, count);
    out += fmt::format("\ntotals: {} tensors ({}), {} parameters, {} bytes of tensor data\n", file.tensors().size(),
                       by_type.empty() ? "none" : by_type, n_parameters, n_bytes);
    return out;
}

}  // namespace vkllm::gguf
