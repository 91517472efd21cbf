#include "progress.h"

#include <cstdio>
#include <unistd.h>

#include <fmt/format.h>

namespace vkllm::cli {
namespace {

constexpr int bar_width = 30;
constexpr size_t line_width = 100;
constexpr std::chrono::seconds piped_interval{5};

}  // namespace

ProgressReport::ProgressReport(std::string what)
    : what_(std::move(what)), terminal_(isatty(fileno(stderr)) != 0), started_(Clock::now()), last_shown_(started_) {}

ProgressReport::~ProgressReport() {
    if (!shown_) return;
    const double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    if (terminal_) std::fprintf(stderr, "\r%-*s\r", int(line_width), "");
    if (seconds >= 1) std::fprintf(stderr, "%s: done in %.1f s\n", what_.c_str(), seconds);
}

void ProgressReport::update(uint64_t done, uint64_t total, std::string_view detail) {
    const int percent = total ? int(100 * std::min(done, total) / total) : 100;
    const Clock::time_point now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - started_).count();
    if (terminal_) {
        if (percent == last_percent_ && now - last_shown_ < std::chrono::milliseconds(200)) return;
        const int filled = percent * bar_width / 100;
        std::string line = fmt::format("{} [{}{}] {:3}% {:.0f} s {}", what_, std::string(size_t(filled), '#'),
                                       std::string(size_t(bar_width - filled), '.'), percent, seconds, detail);
        line.resize(line_width, ' ');
        std::fprintf(stderr, "\r%s", line.c_str());
    } else {
        if (now - last_shown_ < piped_interval) return;
        std::fprintf(stderr, "%s: %d%% after %.0f s %.*s\n", what_.c_str(), percent, seconds, int(detail.size()),
                     detail.data());
    }
    std::fflush(stderr);
    last_percent_ = percent;
    last_shown_ = now;
    shown_ = true;
}

}  // namespace vkllm::cli
