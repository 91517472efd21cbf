# ASan/UBSan builds (VKLLM_SANITIZE). The Vulkan loader unloads the driver and the validation layer
# when an instance goes away; leaks they keep are then reported from "<unknown module>" and the
# driver-only suppressions in tests/sanitizer/lsan.supp cannot match them. Executables that create a
# Vulkan instance therefore keep every module loaded in these builds.
if(VKLLM_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

function(vkllm_keep_modules_loaded target)
  if(VKLLM_SANITIZE)
    target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/keep_modules_loaded.cpp)
    target_link_options(${target} PRIVATE -Wl,--export-dynamic-symbol=dlclose)
  endif()
endfunction()
