#pragma once
// Internal to vkllm_chat: Jinja2's filters and tests, Python methods of strings and dicts,
// attribute/item lookup, iteration and ordering, each reporting errors at a template line.
#include <string>
#include <string_view>

#include "chat/jinja_value.h"

namespace vkllm::chat::jinja {

struct Where {
    const std::string& name;  // the template
    int line;
    [[noreturn]] void fail(std::string_view message) const;
};

Value apply_filter(const std::string& filter, const Value& input, CallArgs& args, const Where& where);
bool apply_test(const std::string& test, const Value& input, CallArgs& args, const Where& where);

Value get_attribute(const Value& object, const std::string& name, const Where& where);  // a.b
Value get_item(const Value& object, const Value& key, const Where& where);              // a[b]
Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step, const Where& where);

List iterate(const Value& value, const Where& where);  // for-loops and list(): dicts give keys
bool contains(const Value& container, const Value& item, const Where& where);
int compare(const Value& a, const Value& b, const Where& where);  // <0, 0, >0; numbers or strings
size_t length(const Value& value, const Where& where);

std::string string_strip(std::string_view text, const Value& chars);  // str.strip(chars)
// A str method on `self` (undefined reads as ""); fails for other types.
Value call_string_method(const Value& self, const std::string& method, CallArgs& args, const Where& where);

}  // namespace vkllm::chat::jinja
