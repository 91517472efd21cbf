#include "openai.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <span>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "vision/prompt.h"

namespace vkllm::server {
namespace {

using json = nlohmann::ordered_json;

// The member `key` of an object; null when absent or not an object (json's const operator[] requires
// the key to exist: a request without it would be undefined behaviour).
const json& member(const json& object, const char* key) {
    static const json null;
    if (!object.is_object()) return null;
    const auto found = object.find(key);
    return found == object.end() ? null : *found;
}

ApiError bad_field(const std::string& field, const std::string& message) {
    return ApiError(400, fmt::format("'{}' {}", field, message), "invalid_request_error", "invalid_value", field);
}

double number_field(const json& body, const char* field, double low, double high) {
    const json& value = member(body, field);
    if (!value.is_number()) throw bad_field(field, "must be a number");
    const double number = value.get<double>();
    if (!std::isfinite(number) || number < low || number > high)
        throw bad_field(field, fmt::format("must be between {} and {}, not {}", low, high, number));
    return number;
}

int64_t integer_field(const json& body, const char* field, int64_t low, int64_t high) {
    const json& value = member(body, field);
    if (!value.is_number_integer()) throw bad_field(field, "must be a whole number");
    // Unsigned JSON numbers past int64 read as their wrapped value: compare as unsigned first.
    if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        throw bad_field(field, fmt::format("must be between {} and {}", low, high));
    const int64_t number = value.get<int64_t>();
    if (number < low || number > high) throw bad_field(field, fmt::format("must be between {} and {}, not {}", low, high, number));
    return number;
}

bool bool_field(const json& body, const char* field) {
    if (!member(body, field).is_boolean()) throw bad_field(field, "must be true or false");
    return member(body, field).get<bool>();
}

std::vector<std::byte> decode_base64(std::string_view text, const std::string& field) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+' || c == '-') return 62;
        if (c == '/' || c == '_') return 63;
        return -1;
    };
    std::vector<std::byte> bytes;
    bytes.reserve(text.size() / 4 * 3);
    uint32_t bits = 0;
    int n_bits = 0;
    for (char c : text) {
        if (c == '=') break;
        const int v = value(c);
        if (v < 0) throw bad_field(field, "holds a character that is not base64");
        bits = (bits << 6) | uint32_t(v);
        n_bits += 6;
        if (n_bits >= 8) {
            n_bits -= 8;
            bytes.push_back(std::byte((bits >> n_bits) & 0xff));
        }
    }
    return bytes;
}

// An image_url part's image: only data URIs (this server reaches no network).
vision::Image image_from_url(const json& part, const std::string& field) {
    const json& image_url = member(part, "image_url");
    const json& url = image_url.is_object() ? member(image_url, "url") : image_url;
    if (!url.is_string()) throw bad_field(field, "needs image_url.url, a data URI");
    const std::string& text = url.get_ref<const std::string&>();
    const size_t comma = text.find(',');
    if (!text.starts_with("data:") || comma == std::string::npos || text.substr(0, comma).find(";base64") == std::string::npos)
        throw bad_field(field, "must be a base64 data URI (data:image/png;base64,...): this server fetches no URLs");
    try {
        return vision::decode_image(decode_base64(std::string_view(text).substr(comma + 1), field), field);
    } catch (const Error& error) {
        throw bad_field(field, fmt::format("is not an image the server can read: {}", error.what()));
    }
}

// A message's content as text: a string, or parts whose text is joined and whose images become
// media markers (their pixels appended to `images`; refused unless the server has an image encoder).
std::string message_content(const json& content, const std::string& field, bool images_allowed, std::vector<vision::Image>& images) {
    if (content.is_null()) return {};
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) throw bad_field(field, "must be a string or an array of content parts");
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const json& part = content[i];
        const std::string part_field = fmt::format("{}[{}]", field, i);
        if (!part.is_object() || !member(part, "type").is_string()) throw bad_field(part_field, "must be an object with a 'type'");
        const std::string type = member(part, "type").get<std::string>();
        if (type == "text") {
            if (!member(part, "text").is_string()) throw bad_field(part_field + ".text", "must be a string");
            text += member(part, "text").get<std::string>();
        } else if (type == "image_url") {
            if (!images_allowed)
                throw ApiError(400, "this server has no image encoder for image_url parts: start it with --mmproj",
                               "invalid_request_error", "unsupported_content", part_field);
            images.push_back(image_from_url(part, part_field + ".image_url"));
            text += vision::media_marker;
        } else {
            throw bad_field(part_field + ".type", fmt::format("'{}' is not supported (text or image_url)", type));
        }
    }
    return text;
}

ApiError prompt_too_long(const char* field, std::string_view what, uint32_t n_ctx) {
    return ApiError(400, fmt::format("the prompt's {} cannot fit the context of {} tokens", what, n_ctx),
                    "invalid_request_error", "context_length_exceeded", field);
}

std::string string_field(const json& object, const char* key, const std::string& field) {
    if (!member(object, key).is_string()) throw bad_field(field + "." + key, "must be a string");
    return member(object, key).get<std::string>();
}

// An assistant message's earlier calls: [{id, type: function, function: {name, arguments: JSON text}}].
json tool_calls_of(const json& calls, const std::string& field) {
    if (!calls.is_array()) throw bad_field(field, "must be an array of tool calls");
    json checked = json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        const std::string call_field = fmt::format("{}[{}]", field, i);
        const json& call = calls[i];
        if (!call.is_object() || !member(call, "function").is_object())
            throw bad_field(call_field, "must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}");
        const json& function = member(call, "function");
        const std::string arguments = string_field(function, "arguments", call_field + ".function");
        const std::string arguments_field = call_field + ".function.arguments";
        // Parsed once here with the body's depth bound, so the templates' copies of it cannot recurse deep.
        json parsed;
        try {
            parsed = parse_json(arguments, fmt::format("'{}'", arguments_field));
        } catch (const Error& error) {
            throw ApiError(400, error.what(), "invalid_request_error", "invalid_value", arguments_field);
        }
        if (!parsed.is_object()) throw bad_field(arguments_field, "must be a JSON object, as text");
        checked.push_back({{"id", string_field(call, "id", call_field)},
                           {"type", "function"},
                           {"function", {{"name", string_field(function, "name", call_field + ".function")}, {"arguments", arguments}}}});
    }
    return checked;
}

json chat_messages(const json& body, const ParseLimits& limits, std::vector<vision::Image>& images) {
    const json& messages = member(body, "messages");
    if (!messages.is_array() || messages.empty()) throw bad_field("messages", "must be a non-empty array");
    json plain = json::array();
    size_t text_bytes = 0;
    for (size_t i = 0; i < messages.size(); ++i) {
        const json& message = messages[i];
        const std::string field = fmt::format("messages[{}]", i);
        if (!message.is_object()) throw bad_field(field, "must be an object");
        if (!member(message, "role").is_string()) throw bad_field(field + ".role", "must be a string");
        const std::string role = member(message, "role").get<std::string>();
        if (role != "system" && role != "user" && role != "assistant" && role != "developer" && role != "tool")
            throw bad_field(field + ".role", fmt::format("'{}' is not a role (system, developer, user, assistant, tool)", role));
        std::string content = message_content(member(message, "content"), field + ".content", limits.images, images);
        text_bytes += content.size();
        if (limits.max_prompt_bytes != 0 && text_bytes > limits.max_prompt_bytes)
            throw prompt_too_long("messages", fmt::format("{} bytes of text", text_bytes), limits.n_ctx);
        json checked = {{"role", role == "developer" ? "system" : role}, {"content", std::move(content)}};
        if (role == "assistant" && !member(message, "tool_calls").is_null()) {
            checked["tool_calls"] = tool_calls_of(member(message, "tool_calls"), field + ".tool_calls");
            if (checked["content"] == "") checked["content"] = nullptr;
        }
        if (role == "tool") checked["tool_call_id"] = string_field(message, "tool_call_id", field);
        plain.push_back(std::move(checked));
    }
    return plain;
}

// response_format (json_object, json_schema), or llama-server's grammar or json_schema: one of them.
void parse_constraint(const json& body, CompletionRequest& request) {
    int given = 0;
    const json& format = member(body, "response_format");
    if (!format.is_null()) {
        if (!format.is_object() || !member(format, "type").is_string())
            throw bad_field("response_format", "must be {\"type\": \"text\" | \"json_object\" | \"json_schema\"}");
        const std::string type = member(format, "type").get<std::string>();
        if (type == "json_object") {
            request.json_schema = json::object();  // any object
            request.constraint_field = "response_format";
            ++given;
        } else if (type == "json_schema") {
            const json& spec = member(format, "json_schema");
            if (!spec.is_object() || !member(spec, "schema").is_object())
                throw bad_field("response_format.json_schema", "must be {\"name\", \"schema\": {...}, \"strict\"}");
            request.json_schema = member(spec, "schema");
            if (!member(spec, "strict").is_null()) request.json_schema_strict = bool_field(spec, "strict");
            request.constraint_field = "response_format.json_schema.schema";
            ++given;
        } else if (type != "text") {
            throw bad_field("response_format.type", fmt::format("'{}' is not one of text, json_object, json_schema", type));
        }
    }
    if (!member(body, "json_schema").is_null()) {
        if (!member(body, "json_schema").is_object()) throw bad_field("json_schema", "must be a JSON Schema object");
        request.json_schema = member(body, "json_schema");
        request.constraint_field = "json_schema";
        ++given;
    }
    if (!member(body, "grammar").is_null()) {
        if (!member(body, "grammar").is_string()) throw bad_field("grammar", "must be a GBNF grammar, as a string");
        request.grammar = member(body, "grammar").get<std::string>();
        request.constraint_field = "grammar";
        ++given;
    }
    if (given > 1) throw bad_field(request.constraint_field, "comes with another constraint: give one of response_format, json_schema and grammar");
}

// Chat: logprobs true and top_logprobs N; completions: logprobs N (OpenAI's legacy form).
void parse_logprobs(const json& body, Endpoint endpoint, CompletionRequest& request) {
    int& top = request.sampling.top_logprobs;
    if (endpoint == Endpoint::Completions) {
        if (!member(body, "logprobs").is_null()) top = int(integer_field(body, "logprobs", 0, sampling::max_top_logprobs));
        return;
    }
    const bool wanted = !member(body, "logprobs").is_null() && bool_field(body, "logprobs");
    if (!member(body, "top_logprobs").is_null()) {
        const int n = int(integer_field(body, "top_logprobs", 0, sampling::max_top_logprobs));
        if (!wanted) throw bad_field("top_logprobs", "needs logprobs: true");
        top = n;
    } else if (wanted) {
        top = 0;
    }
}

// {"token id": bias}: -100 bans a token, 100 all but forces it.
void parse_logit_bias(const json& body, const ParseLimits& limits, sampling::SamplerParams& params) {
    const json& biases = member(body, "logit_bias");
    if (biases.is_null()) return;
    if (!biases.is_object()) throw bad_field("logit_bias", "must map token ids (as strings) to numbers from -100 to 100");
    for (const auto& [key, value] : biases.items()) {
        const std::string field = fmt::format("logit_bias.{}", key);
        int64_t id = -1;
        const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
        if (error != std::errc() || end != key.data() + key.size() || id < 0 || id > std::numeric_limits<int32_t>::max())
            throw bad_field(field, "is not a token id");
        if (id >= limits.n_vocab) throw bad_field(field, fmt::format("names a token outside the vocabulary of {}", limits.n_vocab));
        if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < -100 || value.get<double>() > 100)
            throw bad_field(field, "must be a number from -100 to 100");
        params.logit_bias.emplace_back(int32_t(id), float(value.get<double>()));
    }
}

// tools, tool_choice and parallel_tool_calls.
void parse_tools(const json& body, CompletionRequest& request) {
    const json& tools = member(body, "tools");
    if (!tools.is_null()) {
        if (!tools.is_array()) throw bad_field("tools", "must be an array of {\"type\": \"function\", \"function\": {...}}");
        for (size_t i = 0; i < tools.size(); ++i) {
            const std::string field = fmt::format("tools[{}]", i);
            const json& tool = tools[i];
            if (!tool.is_object() || member(tool, "type") != "function" || !member(tool, "function").is_object())
                throw bad_field(field, "must be {\"type\": \"function\", \"function\": {\"name\", \"parameters\"}}");
            const json& function = member(tool, "function");
            const std::string name = string_field(function, "name", field + ".function");
            if (name.empty() || name.size() > 64) throw bad_field(field + ".function.name", "must have 1 to 64 characters");
            const json& parameters = member(function, "parameters");
            if (!parameters.is_null() && !parameters.is_object()) throw bad_field(field + ".function.parameters", "must be a JSON Schema object");
        }
        if (!tools.empty()) request.tools = tools;
    }
    const json& choice = member(body, "tool_choice");
    if (choice.is_string()) {
        const std::string value = choice.get<std::string>();
        if (value == "none") request.tool_choice = ToolChoice::None;
        else if (value == "required") request.tool_choice = ToolChoice::Required;
        else if (value != "auto") throw bad_field("tool_choice", "must be 'auto', 'none', 'required' or {\"type\": \"function\", \"function\": {\"name\"}}");
    } else if (choice.is_object()) {
        if (member(choice, "type") != "function" || !member(choice, "function").is_object())
            throw bad_field("tool_choice", "must be 'auto', 'none', 'required' or {\"type\": \"function\", \"function\": {\"name\"}}");
        request.tool_choice = ToolChoice::Named;
        request.tool_name = string_field(member(choice, "function"), "name", "tool_choice.function");
        const bool known = request.tools.is_array() && std::ranges::any_of(request.tools, [&](const json& tool) {
            return tool["function"]["name"] == request.tool_name;
        });
        if (!known) throw bad_field("tool_choice.function.name", fmt::format("names '{}', which is not one of the tools", request.tool_name));
    } else if (!choice.is_null()) {
        throw bad_field("tool_choice", "must be a string or an object");
    }
    if ((request.tool_choice == ToolChoice::Required) && request.tools.is_null())
        throw bad_field("tool_choice", "asks for a tool call but the request has no tools");
    if (!member(body, "parallel_tool_calls").is_null()) request.parallel_tool_calls = bool_field(body, "parallel_tool_calls");
}

// A JSON array of token ids (prompts, embedding inputs).
std::vector<int32_t> token_ids(const json& list, const std::string& field) {
    std::vector<int32_t> ids;
    for (const json& id : list) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<int32_t>::max())
            throw bad_field(field, "holds something that is not a token id");
        ids.push_back(int32_t(id.get<int64_t>()));
    }
    return ids;
}

void parse_prompt(const json& body, const ParseLimits& limits, CompletionRequest& request) {
    const json& prompt = member(body, "prompt");
    auto all_ids = [](const json& list) {
        return std::ranges::all_of(list, [](const json& id) { return id.is_number_integer(); });
    };
    if (prompt.is_string()) {
        request.prompt = prompt.get<std::string>();
    } else if (prompt.is_array() && prompt.size() == 1 && prompt[0].is_string()) {
        request.prompt = prompt[0].get<std::string>();
    } else if (prompt.is_array() && !prompt.empty() && all_ids(prompt)) {
        if (prompt.size() >= limits.n_ctx) throw prompt_too_long("prompt", fmt::format("{} tokens", prompt.size()), limits.n_ctx);
        request.prompt_tokens = token_ids(prompt, "prompt");
    } else {
        throw bad_field("prompt", "must be a string, an array of one string, or an array of token ids");
    }
    if (request.prompt.empty() && request.prompt_tokens.empty()) throw bad_field("prompt", "is empty");
    if (limits.max_prompt_bytes != 0 && request.prompt.size() > limits.max_prompt_bytes)
        throw prompt_too_long("prompt", fmt::format("{} bytes", request.prompt.size()), limits.n_ctx);
}

// A request's body: a JSON object, refused past max_json_depth before the tree gets that deep.
json parse_body(const std::string& text) {
    json body;
    try {
        body = parse_json(text, "the request body");
    } catch (const Error& error) {
        throw ApiError(400, error.what(), "invalid_request_error", "invalid_json");
    }
    if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object", "invalid_request_error", "invalid_json");
    return body;
}

// The optional "model" of a request ("": none named).
std::string model_field(const json& body) {
    if (member(body, "model").is_null()) return {};
    if (!member(body, "model").is_string()) throw bad_field("model", "must be a string");
    return member(body, "model").get<std::string>();
}

}  // namespace

ApiError::ApiError(int status, std::string message, std::string type, std::string code, std::string param)
    : std::runtime_error(message), status(status), message(std::move(message)), type(std::move(type)), code(std::move(code)),
      param(std::move(param)) {}

nlohmann::ordered_json ApiError::body() const {
    return {{"error", {{"message", message}, {"type", type}, {"code", code.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(code)},
                       {"param", param.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(param)}}}};
}

CompletionRequest parse_request(Endpoint endpoint, const std::string& text, const ParseLimits& limits) {
    const json body = parse_body(text);
    CompletionRequest request;
    request.endpoint = endpoint;
    auto given = [&](const char* field) { return !member(body, field).is_null(); };
    request.model = model_field(body);
    if (endpoint == Endpoint::ChatCompletions) {
        request.messages = chat_messages(body, limits, request.images);
        parse_tools(body, request);
    } else {
        parse_prompt(body, limits, request);
        for (const char* field : {"tools", "tool_choice"})
            if (given(field)) throw bad_field(field, "applies to /v1/chat/completions only");
    }

    parse_constraint(body, request);
    parse_logprobs(body, endpoint, request);
    parse_logit_bias(body, limits, request.sampling);

    sampling::SamplerParams& s = request.sampling;
    if (given("temperature")) s.temperature = float(number_field(body, "temperature", 0, 2));
    if (given("top_p")) s.top_p = float(number_field(body, "top_p", 0, 1));
    if (given("min_p")) s.min_p = float(number_field(body, "min_p", 0, 1));
    if (given("top_k")) s.top_k = int(integer_field(body, "top_k", 0, std::numeric_limits<int32_t>::max()));
    if (given("presence_penalty")) s.presence_penalty = float(number_field(body, "presence_penalty", -2, 2));
    if (given("frequency_penalty")) s.frequency_penalty = float(number_field(body, "frequency_penalty", -2, 2));
    if (given("repeat_penalty")) s.repeat_penalty = float(number_field(body, "repeat_penalty", 0, 10));
    // What OpenAI's ranges above still allow but sampling cannot take (a top_p or repeat_penalty of 0),
    // refused by the check the CLI shares, naming the JSON keys.
    try {
        sampling::validate(s);
    } catch (const Error& error) {
        throw ApiError(400, error.what(), "invalid_request_error", "invalid_value");
    }
    s.seed = given("seed") ? uint64_t(integer_field(body, "seed", std::numeric_limits<int64_t>::min(),
                                                    std::numeric_limits<int64_t>::max()))
                           : sampling::random_seed();
    const char* max_field = given("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (given(max_field)) request.max_tokens = uint32_t(integer_field(body, max_field, 1, std::numeric_limits<uint32_t>::max()));
    if (given("n") && integer_field(body, "n", 1, 128) != 1) throw bad_field("n", "must be 1: this server returns one choice");
    if (given("best_of") && integer_field(body, "best_of", 1, 128) != 1)
        throw bad_field("best_of", "must be 1: this server returns the one choice it samples");
    if (given("suffix")) throw bad_field("suffix", "is not supported: this server does no fill-in-the-middle completion");
    if (given("echo")) {
        if (endpoint != Endpoint::Completions) throw bad_field("echo", "applies to /v1/completions only");
        request.echo = bool_field(body, "echo");
        if (request.echo && request.sampling.top_logprobs >= 0)
            throw bad_field("logprobs", "is not given for the prompt's tokens: leave out echo");
    }
    if (given("ignore_eos")) request.ignore_eos = bool_field(body, "ignore_eos");
    if (given("stream")) request.stream = bool_field(body, "stream");
    if (given("stream_options")) {
        const json& options = member(body, "stream_options");
        if (!options.is_object()) throw bad_field("stream_options", "must be an object");
        if (!member(options, "include_usage").is_null())
            request.include_usage = bool_field(options, "include_usage");
    }
    if (given("stop")) {
        const json& stop = member(body, "stop");
        if (stop.is_string()) {
            request.stop.push_back(stop.get<std::string>());
        } else if (stop.is_array() && stop.size() <= 16 && std::ranges::all_of(stop, [](const json& s) { return s.is_string(); })) {
            for (const json& s : stop) request.stop.push_back(s.get<std::string>());
        } else {
            throw bad_field("stop", "must be a string or an array of at most 16 strings");
        }
    }
    return request;
}

EmbeddingRequest parse_embedding_request(const std::string& text) {
    const json body = parse_body(text);
    EmbeddingRequest request;
    request.model = model_field(body);
    const json& input = member(body, "input");
    auto ids_of = [](const json& list, const std::string& field) {
        if (list.empty()) throw bad_field(field, "is empty");
        return token_ids(list, field);
    };
    if (input.is_string()) {
        request.texts.push_back(input.get<std::string>());
    } else if (input.is_array() && !input.empty() && input[0].is_number_integer()) {
        request.token_lists.push_back(ids_of(input, "input"));
    } else if (input.is_array() && !input.empty()) {
        if (input.size() > max_embedding_inputs) throw bad_field("input", fmt::format("may hold at most {} inputs", max_embedding_inputs));
        for (size_t i = 0; i < input.size(); ++i) {
            const std::string field = fmt::format("input[{}]", i);
            if (input[i].is_string()) request.texts.push_back(input[i].get<std::string>());
            else if (input[i].is_array()) request.token_lists.push_back(ids_of(input[i], field));
            else throw bad_field(field, "must be a string or an array of token ids");
        }
        if (!request.texts.empty() && !request.token_lists.empty())
            throw bad_field("input", "must be all strings or all token-id arrays");
    } else {
        throw bad_field("input", "must be a string, an array of strings, or token ids");
    }
    for (size_t i = 0; i < request.texts.size(); ++i)
        if (request.texts[i].empty()) throw bad_field(fmt::format("input[{}]", i), "is empty");
    if (!member(body, "encoding_format").is_null()) {
        const json& format = member(body, "encoding_format");
        if (format != "float" && format != "base64") throw bad_field("encoding_format", "must be 'float' or 'base64'");
        request.base64 = format == "base64";
    }
    if (!member(body, "dimensions").is_null()) throw bad_field("dimensions", "is not supported: vectors have the model's size");
    return request;
}

namespace {

std::string base64_of(std::span<const float> values) {
    static constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::vector<uint8_t> bytes(values.size() * 4);
    for (size_t i = 0; i < values.size(); ++i) {
        const uint32_t bits = std::bit_cast<uint32_t>(values[i]);
        for (int b = 0; b < 4; ++b) bytes[i * 4 + size_t(b)] = uint8_t(bits >> (8 * b));  // little-endian
    }
    std::string text;
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const uint32_t chunk = uint32_t(bytes[i]) << 16 | (i + 1 < bytes.size() ? uint32_t(bytes[i + 1]) << 8 : 0) |
                               (i + 2 < bytes.size() ? uint32_t(bytes[i + 2]) : 0);
        text += alphabet[chunk >> 18 & 63];
        text += alphabet[chunk >> 12 & 63];
        text += i + 1 < bytes.size() ? alphabet[chunk >> 6 & 63] : '=';
        text += i + 2 < bytes.size() ? alphabet[chunk & 63] : '=';
    }
    return text;
}

}  // namespace

nlohmann::ordered_json embedding_response(const std::string& model, const std::vector<std::vector<float>>& vectors, bool base64,
                                          size_t prompt_tokens) {
    json data = json::array();
    for (size_t i = 0; i < vectors.size(); ++i)
        data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", base64 ? json(base64_of(vectors[i])) : json(vectors[i])}});
    return {{"object", "list"}, {"data", std::move(data)}, {"model", model},
            {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

std::string finish_reason(engine::FinishReason reason, bool called) {
    // A reply the server cut short (its context full, or the server stopping) reads as one cut by max_tokens.
    if (reason == engine::FinishReason::Length || reason == engine::FinishReason::Context || reason == engine::FinishReason::Interrupted)
        return "length";
    return called ? "tool_calls" : "stop";
}

nlohmann::ordered_json usage(const engine::Completion& completion) {
    return {{"prompt_tokens", completion.prompt_tokens},
            {"completion_tokens", completion.completion_tokens},
            {"total_tokens", completion.prompt_tokens + completion.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", completion.cached_tokens}}}};
}

namespace {

json envelope(const ResponseContext& context, bool chunk) {
    const bool chat = context.endpoint == Endpoint::ChatCompletions;
    return {{"id", context.id},
            {"object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
            {"created", context.created},
            {"model", context.model},
            {"system_fingerprint", "vkllm"}};
}

// A token's entry: llama-server's {id, token, logprob, bytes}, OpenAI's without the id.
json token_json(const TokenChoice& token) {
    json bytes = json::array();
    for (char c : token.piece) bytes.push_back(uint8_t(c));
    return {{"id", token.id}, {"token", token.piece}, {"logprob", token.logprob}, {"bytes", std::move(bytes)}};
}

// Chat's {"content": [...]}; completions' legacy tokens, token_logprobs, top_logprobs and text_offset,
// with the chat form beside them (as llama-server answers) for clients that read that.
json logprobs_json(Endpoint endpoint, const TokenLogprobs& logprobs) {
    if (!logprobs.asked) return nullptr;
    json content = json::array();
    for (const ReplyToken& token : logprobs.tokens) {
        json entry = token_json(token.sampled);
        json top = json::array();
        for (const TokenChoice& alternative : token.top) top.push_back(token_json(alternative));
        entry["top_logprobs"] = std::move(top);
        content.push_back(std::move(entry));
    }
    if (endpoint == Endpoint::ChatCompletions) return {{"content", std::move(content)}, {"refusal", nullptr}};
    json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(), text_offset = json::array();
    size_t offset = logprobs.text_offset;
    for (const ReplyToken& token : logprobs.tokens) {
        tokens.push_back(token.sampled.piece);
        token_logprobs.push_back(token.sampled.logprob);
        json top = json::object();
        for (const TokenChoice& alternative : token.top) top[alternative.piece] = alternative.logprob;
        top_logprobs.push_back(std::move(top));
        text_offset.push_back(offset);
        offset += token.sampled.piece.size();
    }
    return {{"tokens", std::move(tokens)}, {"token_logprobs", std::move(token_logprobs)}, {"top_logprobs", std::move(top_logprobs)},
            {"text_offset", std::move(text_offset)}, {"content", std::move(content)}};
}

json choice(const ResponseContext& context, json content, json finish, bool chunk, const TokenLogprobs& logprobs = {}) {
    json c = {{"index", 0}};
    if (context.endpoint == Endpoint::ChatCompletions) c[chunk ? "delta" : "message"] = std::move(content);
    else c["text"] = std::move(content);
    c["logprobs"] = logprobs_json(context.endpoint, logprobs);
    c["finish_reason"] = std::move(finish);
    return c;
}

// [{id, type, function: {name, arguments}}]; a stream's deltas also number them.
json tool_calls_json(const std::vector<ReplyCall>& calls, bool indexed) {
    json list = json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        json call = indexed ? json{{"index", i}} : json::object();
        call["id"] = calls[i].id;
        call["type"] = "function";
        call["function"] = {{"name", calls[i].name}, {"arguments", calls[i].arguments}};
        list.push_back(std::move(call));
    }
    return list;
}

}  // namespace

nlohmann::ordered_json response_body(const ResponseContext& context, const std::string& text, const std::vector<ReplyCall>& calls,
                                     const engine::Completion& completion, const TokenLogprobs& logprobs) {
    json body = envelope(context, false);
    json content = text;
    if (context.endpoint == Endpoint::ChatCompletions) {
        content = {{"role", "assistant"}, {"content", text.empty() && !calls.empty() ? json() : json(text)}};
        if (!calls.empty()) content["tool_calls"] = tool_calls_json(calls, false);
    }
    body["choices"] = json::array({choice(context, std::move(content), finish_reason(completion.finish, !calls.empty()), false, logprobs)});
    body["usage"] = usage(completion);
    return body;
}

nlohmann::ordered_json text_chunk(const ResponseContext& context, const std::string& text, bool first, const TokenLogprobs& logprobs) {
    json body = envelope(context, true);
    json content = text;
    if (context.endpoint == Endpoint::ChatCompletions)
        content = first ? json{{"role", "assistant"}, {"content", text}} : json{{"content", text}};
    body["choices"] = json::array({choice(context, std::move(content), nullptr, true, logprobs)});
    return body;
}

nlohmann::ordered_json tool_calls_chunk(const ResponseContext& context, const std::vector<ReplyCall>& calls, bool first) {
    json body = envelope(context, true);
    json delta = first ? json{{"role", "assistant"}, {"content", nullptr}} : json::object();
    delta["tool_calls"] = tool_calls_json(calls, true);
    body["choices"] = json::array({choice(context, std::move(delta), nullptr, true)});
    return body;
}

nlohmann::ordered_json final_chunk(const ResponseContext& context, const engine::Completion& completion, bool called,
                                   const TokenLogprobs& logprobs) {
    json body = envelope(context, true);
    json content = context.endpoint == Endpoint::ChatCompletions ? json::object() : json("");
    body["choices"] = json::array({choice(context, std::move(content), finish_reason(completion.finish, called), true, logprobs)});
    return body;
}

nlohmann::ordered_json usage_chunk(const ResponseContext& context, const engine::Completion& completion) {
    json body = envelope(context, true);
    body["choices"] = json::array();
    body["usage"] = usage(completion);
    return body;
}

}  // namespace vkllm::server
