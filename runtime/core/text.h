#pragma once
// Text helpers the streams share.
#include <algorithm>
#include <cstddef>
#include <string_view>

namespace vkllm {

// The length of the longest tail of `text` that begins `marker` without being all of it: what a stream
// holds back while the next bytes may still complete the marker (a stop string, a tool call's opening).
inline size_t marker_start_at_end(std::string_view text, std::string_view marker) {
    for (size_t n = std::min(text.size(), marker.empty() ? 0 : marker.size() - 1); n > 0; --n)
        if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
    return 0;
}

}  // namespace vkllm
