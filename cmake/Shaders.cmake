# Shaders: GLSL compiled by glslc at build time, validated by spirv-val, embedded as C arrays.
# Each pipeline is one custom command, so editing one shader rebuilds only its SPIR-V and its array.

set(VKLLM_SHADER_DIR ${CMAKE_CURRENT_LIST_DIR}/../shaders)
set(VKLLM_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/EmbedSpirv.cmake)

# vkllm_shader(NAME SOURCE [DEFINES D=V ...]): one pipeline named NAME compiled from SOURCE.
# Appends the generated source to VKLLM_SHADER_SOURCES and the name to VKLLM_SHADER_NAMES.
function(vkllm_shader name source)
  cmake_parse_arguments(ARG "" "" "DEFINES" ${ARGN})
  set(src ${VKLLM_SHADER_DIR}/${source})
  set(spv ${CMAKE_CURRENT_BINARY_DIR}/spv/${name}.spv)
  set(cpp ${CMAKE_CURRENT_BINARY_DIR}/embedded/${name}.cpp)
  set(defines)
  foreach(d IN LISTS ARG_DEFINES)
    list(APPEND defines -D${d})
  endforeach()
  add_custom_command(
    OUTPUT ${spv}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/spv
    COMMAND ${GLSLC} --target-env=vulkan1.2 -O -Werror ${defines} -I${VKLLM_SHADER_DIR}
            -MD -MF ${spv}.d -o ${spv} ${src}
    COMMAND ${SPIRV_VAL} --target-env vulkan1.2 ${spv}
    DEPENDS ${src}
    DEPFILE ${spv}.d
    COMMENT "glslc ${name}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${cpp}
    COMMAND ${CMAKE_COMMAND} -DNAME=${name} -DSPV=${spv} -DOUT=${cpp} -P ${VKLLM_EMBED_SCRIPT}
    DEPENDS ${spv} ${VKLLM_EMBED_SCRIPT}
    VERBATIM)
  set(VKLLM_SHADER_SOURCES ${VKLLM_SHADER_SOURCES} ${cpp} PARENT_SCOPE)
  set(VKLLM_SHADER_NAMES ${VKLLM_SHADER_NAMES} ${name} PARENT_SCOPE)
endfunction()

# A kernel reading weights, a KV cache or matvec inputs: NAME reads them from storage buffers,
# NAME_texel (TEXEL_READS) through uniform texel buffers, the faster path on CPU devices
# (gpu::Capabilities::texel_reads).
function(vkllm_texel_shader name source)
  vkllm_shader(${name} ${source} ${ARGN})
  cmake_parse_arguments(ARG "" "" "DEFINES" ${ARGN})
  vkllm_shader(${name}_texel ${source} DEFINES ${ARG_DEFINES} TEXEL_READS=1)
  set(VKLLM_SHADER_SOURCES ${VKLLM_SHADER_SOURCES} PARENT_SCOPE)
  set(VKLLM_SHADER_NAMES ${VKLLM_SHADER_NAMES} PARENT_SCOPE)
endfunction()
