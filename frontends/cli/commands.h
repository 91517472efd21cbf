#pragma once
// Each subcommand is one function in its own file; main.cpp's table names them.
#include <span>
#include <string_view>

namespace vkllm::cli {

using Args = std::span<const std::string_view>;  // the arguments after the subcommand's name

int bench(Args args);
int bench_ops(Args args);
int chat(Args args);
int convert(Args args);
int devices(Args args);
int embed(Args args);
int eval(Args args);
int info(Args args);
int perplexity(Args args);
int quantize(Args args);
int run(Args args);
int serve(Args args);
int shaders(Args args);
int synth(Args args);
int tokenize(Args args);
int tune(Args args);
int detokenize(Args args);
int chat_template(Args args);

}  // namespace vkllm::cli
