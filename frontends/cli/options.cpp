#include "options.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace vkllm::cli {
namespace {

constexpr size_t help_column = 30, help_width = 100;

std::vector<std::string> split_names(std::string_view names) {
    std::vector<std::string> out;
    while (!names.empty()) {
        const size_t comma = names.find(',');
        out.emplace_back(names.substr(0, comma));
        names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 1);
    }
    return out;
}

// `text` word-wrapped into lines of help_width, each after the first indented to `indent` (the text
// starts there).
std::string wrapped(std::string_view text, size_t indent) {
    std::string out;
    size_t column = indent;
    while (!text.empty()) {
        const size_t space = text.find(' ');
        const std::string_view word = text.substr(0, space);
        text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
        if (column > indent && column + 1 + word.size() > help_width) {
            out += '\n';
            out.append(indent, ' ');
            column = indent;
        } else if (column > indent) {
            out += ' ';
            ++column;
        }
        out += word;
        column += word.size();
    }
    return out;
}

}  // namespace

Options::Options(std::string_view command, std::string_view synopsis, std::string_view about)
    : command_(command), synopsis_(synopsis), about_(about) {
    flag("-h,--help", help_requested_, "print this help and exit");
}

Options& Options::add_option(std::string_view names, std::string_view placeholder, std::string_view help,
                             std::string shown_default, std::function<void(std::string_view, std::string_view)> set) {
    options_.push_back({.names = split_names(names), .placeholder = std::string(placeholder), .help = std::string(help),
                        .shown_default = std::move(shown_default), .section = section_, .set = std::move(set)});
    return *this;
}

Options& Options::add(std::string_view names, std::string& target, std::string_view placeholder, std::string_view help) {
    return add_option(names, placeholder, help, target, [&target](auto, std::string_view value) { target = value; });
}

Options& Options::add(std::string_view names, std::optional<std::string>& target, std::string_view placeholder,
                      std::string_view help) {
    return add_option(names, placeholder, help, target.value_or(""),
                      [&target](auto, std::string_view value) { target = std::string(value); });
}

Options& Options::add(std::string_view names, std::vector<std::string>& target, std::string_view placeholder,
                      std::string_view help) {
    add_option(names, placeholder, help, "", [&target](auto, std::string_view value) { target.emplace_back(value); });
    options_.back().repeatable = true;
    return *this;
}

#define VKLLM_NUMBER_OPTION(T)                                                                                      \
    Options& Options::add(std::string_view names, T& target, std::string_view placeholder, std::string_view help) { \
        return add_option(names, placeholder, help, fmt::format("{}", target),                                    \
                          [&target](std::string_view name, std::string_view value) {                               \
                              target = parse_number<T>(name, value);                                               \
                          });                                                                                      \
    }
VKLLM_NUMBER_OPTION(uint32_t)
VKLLM_NUMBER_OPTION(uint64_t)
VKLLM_NUMBER_OPTION(int32_t)
VKLLM_NUMBER_OPTION(int64_t)
VKLLM_NUMBER_OPTION(float)
#undef VKLLM_NUMBER_OPTION

Options& Options::add(std::string_view names, std::function<void(std::string_view)> set, std::string_view placeholder,
                      std::string_view help, std::string shown_default) {
    return add_option(names, placeholder, help, std::move(shown_default),
                      [set = std::move(set)](auto, std::string_view value) { set(value); });
}

Options& Options::flag(std::string_view names, bool& target, std::string_view help) {
    add_option(names, "", help, "", [&target](auto, auto) { target = true; });
    options_.back().takes_value = false;
    return *this;
}

Options& Options::ignored(std::string_view names, bool takes_value, std::string_view note) {
    add_option(names, takes_value ? "N" : "", fmt::format("accepted and ignored: {}", note), "", [](auto, auto) {});
    options_.back().takes_value = takes_value;
    options_.back().note = note;
    return *this;
}

Options& Options::positional(std::string& target, std::string_view placeholder, std::string_view help, bool required) {
    positionals_.push_back({.placeholder = std::string(placeholder), .help = std::string(help),
                            .set = [&target](std::string_view value) { target = value; }, .required = required});
    return *this;
}

Options& Options::positionals(std::vector<std::string>& target, std::string_view placeholder, std::string_view help) {
    positionals_.push_back({.placeholder = std::string(placeholder), .help = std::string(help),
                            .set = [&target](std::string_view value) { target.emplace_back(value); },
                            .repeatable = true});
    return *this;
}

Options& Options::required() {
    options_.back().required = true;
    return *this;
}

Options& Options::section(std::string_view title) {
    section_ = title;
    return *this;
}

Options::Option* Options::find(std::string_view name) {
    for (Option& option : options_)
        for (const std::string& candidate : option.names)
            if (candidate == name) return &option;
    return nullptr;
}

const Options::Option* Options::find(std::string_view name) const { return const_cast<Options*>(this)->find(name); }

bool Options::given(std::string_view name) const {
    if (const Option* option = find(name)) return option->seen;
    return std::ranges::any_of(positionals_, [&](const Positional& p) { return p.placeholder == name && p.seen; });
}

std::string Options::see_help() const { return fmt::format("see 'vkllm {} --help'", command_); }

bool Options::parse(Args args) {
    for (size_t i = 0; i < args.size(); ++i) {
        std::string_view arg = args[i];
        if (arg.size() > 1 && arg.starts_with('-')) {
            std::optional<std::string_view> inline_value;
            if (const size_t equals = arg.find('='); arg.starts_with("--") && equals != std::string_view::npos) {
                inline_value = arg.substr(equals + 1);
                arg = arg.substr(0, equals);
            }
            Option* option = find(arg);
            if (!option) fail("unknown option '{}'; {}", arg, see_help());
            std::string_view value;
            if (option->takes_value) {
                if (!inline_value && i + 1 == args.size()) fail("{} needs a value ({}); {}", arg, option->placeholder, see_help());
                value = inline_value ? *inline_value : args[++i];
            } else if (inline_value) {
                fail("{} takes no value; {}", arg, see_help());
            }
            if (!option->note.empty() && !option->seen)
                std::fprintf(stderr, "vkllm %s: %.*s ignored: %s\n", command_.c_str(), int(arg.size()), arg.data(),
                             option->note.c_str());
            option->seen = true;
            option->set(arg, value);
            if (help_requested_) {
                const std::string text = help();
                std::fwrite(text.data(), 1, text.size(), stdout);
                return false;
            }
            continue;
        }
        auto positional = std::ranges::find_if(positionals_, [](const Positional& p) { return p.repeatable || !p.seen; });
        if (positional == positionals_.end()) fail("unexpected argument '{}'; {}", arg, see_help());
        positional->seen = true;
        positional->set(arg);
    }
    for (const Option& option : options_)
        if (option.required && !option.seen)
            fail("{} {} is required; {}", option.names.back(), option.placeholder, see_help());
    for (const Positional& positional : positionals_)
        if (positional.required && !positional.seen) fail("{} is required; {}", positional.placeholder, see_help());
    return true;
}

std::string Options::help() const {
    std::string out = fmt::format("usage: vkllm {} {}\n\n", command_, synopsis_);
    // The description's lines are wrapped, but those indented by the command are laid out already.
    for (std::string_view about = about_; !about.empty();) {
        const std::string_view line = about.substr(0, about.find('\n'));
        about = line.size() == about.size() ? std::string_view() : about.substr(line.size() + 1);
        out += (line.starts_with(' ') ? std::string(line) : wrapped(line, 0)) + "\n";
    }
    const auto entry = [&out](std::string left, const std::string& text) {
        left = "  " + left;
        out += left;
        if (left.size() + 2 > help_column) out += "\n" + std::string(help_column, ' ');
        else out += std::string(help_column - left.size(), ' ');
        out += wrapped(text, help_column) + "\n";
    };
    if (!positionals_.empty()) out += "\narguments:\n";
    for (const Positional& positional : positionals_)
        entry(positional.placeholder + (positional.repeatable ? "..." : ""), positional.help);
    const std::string* section = nullptr;
    for (const Option& option : options_) {
        if (!section || option.section != *section) {
            section = &option.section;
            out += fmt::format("\n{}:\n", section->empty() ? "options" : *section);
        }
        std::string left = fmt::format("{}", fmt::join(option.names, ", "));
        if (option.takes_value) left += " " + option.placeholder;
        std::string text = option.help;
        if (option.required) text += " (required)";
        else if (!option.shown_default.empty()) text += fmt::format(" (default: {})", option.shown_default);
        if (option.repeatable) text += " (repeatable)";
        entry(left, text);
    }
    return out;
}

void check_writable(std::string_view option, const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code error;
    const fs::path file(path);
    if (fs::is_directory(file, error)) fail("{} {}: is a directory; give a file name", option, path);
    if (fs::exists(file, error)) {
        if (access(path.c_str(), W_OK) != 0) fail("{} {}: the file is not writable", option, path);
        return;
    }
    const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
    if (!fs::is_directory(folder, error)) fail("{} {}: {} is not an existing folder", option, path, folder.string());
    if (access(folder.c_str(), W_OK) != 0) fail("{} {}: the folder {} is not writable", option, path, folder.string());
}

}  // namespace vkllm::cli
