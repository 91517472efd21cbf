# ASan/UBSan builds (VKLLM_SANITIZE). The Vulkan loader unloads the driver and the validation layer
# when an instance goes away; leaks they keep are then reported from "<unknown module>" and the
# driver-only suppressions in tests/sanitizer/lsan.supp cannot match them. Executables that create a
# Vulkan instance therefore keep every module loaded in these builds. Line tables only (-g1): a
# report's stack still names files and lines, and the build compiles ~15% faster than with -g (-O1 would
# cost ~45% more compile time than -O0 for a suite that waits mostly on lavapipe).
if(VKLLM_SANITIZE)
  add_compile_options(-g1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# libFuzzer targets (VKLLM_FUZZ; scripts/fuzz configures clang with VKLLM_SANITIZE too). A library a
# fuzzer exercises is built with -fsanitize=fuzzer-no-link, so its code reports coverage.
if(VKLLM_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "VKLLM_FUZZ needs clang: configure with -DCMAKE_CXX_COMPILER=clang++")
endif()

# vkllm_fuzzer(NAME SOURCES files... LIBS libraries...): a fuzzer executable of its own sources.
function(vkllm_fuzzer name)
  cmake_parse_arguments(FUZZER "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${FUZZER_SOURCES})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(${name} PRIVATE ${FUZZER_LIBS})
endfunction()

function(vkllm_keep_modules_loaded target)
  if(VKLLM_SANITIZE)
    target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/keep_modules_loaded.cpp)
    target_link_options(${target} PRIVATE -Wl,--export-dynamic-symbol=dlclose)
  endif()
endfunction()
