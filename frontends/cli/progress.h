#pragma once
// Progress of a long step (loading, a long prompt, convert, quantize) on stderr: on a terminal a bar
// rewritten in place; when stderr is a file or a pipe, a line every few seconds, so a log shows the
// step is alive without a line per tensor, and a quick step prints nothing.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace vkllm::cli {

class ProgressReport {
public:
    explicit ProgressReport(std::string what);
    ~ProgressReport();  // clears the bar; a step of a second or more then says how long it took
    ProgressReport(const ProgressReport&) = delete;

    void update(uint64_t done, uint64_t total, std::string_view detail = {});

private:
    using Clock = std::chrono::steady_clock;
    std::string what_;
    bool terminal_;
    Clock::time_point started_, last_shown_;
    int last_percent_ = -1;
    bool shown_ = false;
};

}  // namespace vkllm::cli
