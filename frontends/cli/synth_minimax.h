#pragma once
// vkllm synth --arch minimax-m3 (synth.cpp hands such a command line here): see synth_minimax.cpp.
#include "commands.h"

namespace vkllm::cli {

int synth_minimax_m3(Args args);

}  // namespace vkllm::cli
