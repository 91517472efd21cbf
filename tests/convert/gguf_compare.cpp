#include "gguf_compare.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace vkllm::test {

bool same_value(const gguf::Value& a, const gguf::Value& b) {
    if (a.type != b.type) return false;
    switch (a.type) {
        case gguf::ValueType::String: return a.string == b.string;
        case gguf::ValueType::F32:
        case gguf::ValueType::F64: return std::memcmp(&a.float_value, &b.float_value, sizeof(double)) == 0;
        case gguf::ValueType::Array:
            if (a.element_type != b.element_type || a.count != b.count || a.strings != b.strings ||
                !std::equal(a.scalars.begin(), a.scalars.end(), b.scalars.begin(), b.scalars.end()) ||
                a.arrays.size() != b.arrays.size())
                return false;
            for (size_t i = 0; i < a.arrays.size(); ++i)
                if (!same_value(a.arrays[i], b.arrays[i])) return false;
            return true;
        default: return a.unsigned_value == b.unsigned_value && a.signed_value == b.signed_value;
    }
}

void check_same_keys(const gguf::File& got, const gguf::File& want, std::initializer_list<std::string_view> skipped) {
    for (const gguf::KeyValue& kv : want.metadata()) {
        if (std::find(skipped.begin(), skipped.end(), kv.key) != skipped.end()) continue;
        CAPTURE(std::string(kv.key));
        const gguf::Value* value = got.find(kv.key);
        REQUIRE(value);
        CHECK(same_value(*value, kv.value));
    }
}

void check_same_tensors(const gguf::File& got, const gguf::File& want) {
    CHECK(got.tensors().size() == want.tensors().size());
    for (const gguf::Tensor& t : want.tensors()) {
        CAPTURE(std::string(t.name));
        const gguf::Tensor* mine = got.find_tensor(t.name);
        REQUIRE(mine);
        CHECK(mine->type == t.type);
        CHECK(mine->ne == t.ne);
        CHECK(std::equal(mine->data.begin(), mine->data.end(), t.data.begin(), t.data.end()));
    }
}

}  // namespace vkllm::test
