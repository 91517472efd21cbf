#pragma once
// The one option parser of every command. A command declares its options (names, the variable they
// fill, a help line); the variable's value at declaration is the default --help shows. parse() fills
// them, fails with one sentence naming what the user typed, and answers -h/--help with the usage.
#include <charconv>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "core/error.h"

namespace vkllm::cli {

class Options {
public:
    // `synopsis` follows "usage: vkllm COMMAND "; `about` is printed under it.
    Options(std::string_view command, std::string_view synopsis, std::string_view about);
    Options(const Options&) = delete;  // the declared options point into this object

    // `names` is comma-separated ("-m,--model"); `placeholder` names the value in the usage ("FILE").
    Options& add(std::string_view names, std::string& target, std::string_view placeholder, std::string_view help);
    Options& add(std::string_view names, std::optional<std::string>& target, std::string_view placeholder,
                 std::string_view help);
    Options& add(std::string_view names, std::vector<std::string>& target, std::string_view placeholder,
                 std::string_view help);  // repeatable: each use appends
    Options& add(std::string_view names, uint32_t& target, std::string_view placeholder, std::string_view help);
    Options& add(std::string_view names, uint64_t& target, std::string_view placeholder, std::string_view help);
    Options& add(std::string_view names, int32_t& target, std::string_view placeholder, std::string_view help);
    Options& add(std::string_view names, int64_t& target, std::string_view placeholder, std::string_view help);
    Options& add(std::string_view names, float& target, std::string_view placeholder, std::string_view help);
    // An option whose value is parsed by `set` (an enumeration); `shown_default` is what --help shows.
    Options& add(std::string_view names, std::function<void(std::string_view)> set, std::string_view placeholder,
                 std::string_view help, std::string shown_default);
    // Sets `target` when present.
    Options& flag(std::string_view names, bool& target, std::string_view help);
    // A flag of another tool (llama.cpp's -ngl, -t) that means nothing here: accepted, and `note` is
    // printed on stderr once when used.
    Options& ignored(std::string_view names, bool takes_value, std::string_view note);
    // Arguments without a leading '-', in order; a required one missing is an error.
    Options& positional(std::string& target, std::string_view placeholder, std::string_view help, bool required);
    Options& positionals(std::vector<std::string>& target, std::string_view placeholder, std::string_view help);

    Options& required();  // the option declared last must be given
    Options& section(std::string_view title);  // a heading in --help for the options declared after it

    // false when the user asked for --help (printed on stdout): the command then returns 0.
    [[nodiscard]] bool parse(Args args);
    // Whether the option (any of its names) or the positional argument (its placeholder) was given.
    bool given(std::string_view name) const;
    std::string help() const;

private:
    struct Option {
        std::vector<std::string> names;
        std::string placeholder, help, shown_default, section;
        std::function<void(std::string_view name, std::string_view value)> set;  // value empty for flags
        bool takes_value = true, required = false, repeatable = false, seen = false;
        std::string note;  // ignored options
    };
    struct Positional {
        std::string placeholder, help;
        std::function<void(std::string_view)> set;
        bool required = false, repeatable = false, seen = false;
    };

    Options& add_option(std::string_view names, std::string_view placeholder, std::string_view help,
                        std::string shown_default, std::function<void(std::string_view, std::string_view)> set);
    Option* find(std::string_view name);
    const Option* find(std::string_view name) const;
    std::string see_help() const;

    std::string command_, synopsis_, about_, section_;
    bool help_requested_ = false;
    std::vector<Option> options_;
    std::vector<Positional> positionals_;
};

// `value` as a T, or one sentence naming `name` (the option or file it came from).
template <class T>
T parse_number(std::string_view name, std::string_view value) {
    T number{};
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (error == std::errc::result_out_of_range) fail("{} {} is out of range", name, value);
    if (error != std::errc() || end != value.data() + value.size() || value.empty()) {
        if constexpr (std::is_floating_point_v<T>) fail("{} expects a number, not '{}'", name, value);
        else if constexpr (std::is_signed_v<T>) fail("{} expects a whole number, not '{}'", name, value);
        else fail("{} expects a whole number of at least 0, not '{}'", name, value);
    }
    return number;
}

// Fails before any work when `path` (from `option`) could not be written: an existing file that is
// not writable, a directory, or a folder that does not exist or cannot be written.
void check_writable(std::string_view option, const std::string& path);

}  // namespace vkllm::cli
