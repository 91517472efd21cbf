# Turns one .spv file into a C++ source defining vkllm::shaders::spirv_<NAME> as 32-bit words.
file(READ ${SPV} hex HEX)
string(LENGTH "${hex}" nhex)
math(EXPR rem "${nhex} % 8")
if(NOT rem EQUAL 0)
  message(FATAL_ERROR "${SPV} is not a whole number of 32-bit words")
endif()
# SPIR-V words are little-endian on disk: reorder each group of 4 bytes into a 0x........ literal.
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," words "${hex}")
string(REGEX REPLACE "((0x........u,){8})" "\\1\n" words "${words}")
file(WRITE ${OUT}.tmp "// Generated from ${SPV}; do not edit.\n#include <cstdint>\n#include <span>\n"
  "namespace vkllm::shaders {\nstatic const uint32_t words_${NAME}[] = {\n${words}\n};\n"
  "extern const std::span<const uint32_t> spirv_${NAME}(words_${NAME});\n}\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
