# Every dependency is a Debian 12 package (scripts/setup installs them); nothing is vendored.
find_package(Threads REQUIRED)

# Android: the NDK has none of these packages. They are found in one prefix holding arm64-v8a builds
# of fmt, PCRE2 and ICU and copies of the header-only ones (README "Android and ARM"), searched
# through the NDK toolchain's find root so that no host library can be picked up.
if(ANDROID)
  set(VKLLM_ANDROID_PREFIX "" CACHE PATH "Prefix with the Android builds of vkllm's dependencies")
  if(NOT IS_DIRECTORY "${VKLLM_ANDROID_PREFIX}")
    message(FATAL_ERROR "Android builds need -DVKLLM_ANDROID_PREFIX=DIR naming the prefix that holds "
                        "fmt, PCRE2, ICU, nlohmann-json, stb and volk (README: Android and ARM)")
  endif()
  list(APPEND CMAKE_FIND_ROOT_PATH ${VKLLM_ANDROID_PREFIX})
  set(ENV{PKG_CONFIG_LIBDIR} ${VKLLM_ANDROID_PREFIX}/lib/pkgconfig)
endif()

find_path(VULKAN_HEADERS_DIR vulkan/vulkan.h REQUIRED)
find_file(VOLK_SOURCE volk.c PATHS /usr/include REQUIRED
          DOC "volk.c from libvulkan-volk-dev")

# volk ships as volk.h + volk.c only: build it as a small static library. The runtime loads Vulkan
# through it at run time and never links libvulkan, so a missing loader is a message, not a crash.
add_library(volk STATIC ${VOLK_SOURCE})
target_include_directories(volk SYSTEM PUBLIC ${VULKAN_HEADERS_DIR})
target_compile_definitions(volk PUBLIC VK_NO_PROTOTYPES)
target_compile_options(volk PRIVATE -w)
target_link_libraries(volk PUBLIC ${CMAKE_DL_LIBS})

find_program(GLSLC glslc REQUIRED DOC "glslc from the glslc package")
find_program(SPIRV_VAL spirv-val REQUIRED DOC "spirv-val from spirv-tools")

if(VKLLM_TESTS)
  find_path(DOCTEST_INCLUDE_DIR doctest/doctest.h REQUIRED DOC "doctest-dev")
endif()

find_package(nlohmann_json 3 REQUIRED)  # nlohmann-json3-dev
find_package(fmt REQUIRED)  # libfmt-dev: GCC 12 has no <format>
