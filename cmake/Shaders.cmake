# Shaders: GLSL compiled by glslc at build time, validated by spirv-val, embedded as C arrays.
# Each pipeline is one custom command, so editing one shader rebuilds only its SPIR-V and its array.

set(VKLLM_SHADER_DIR ${CMAKE_CURRENT_LIST_DIR}/../shaders)
# Shader sources CMake writes (shaders/CMakeLists.txt: weight_type.glsl), searched after shaders/.
set(VKLLM_SHADER_GENERATED_DIR ${CMAKE_BINARY_DIR}/shaders/generated)
set(VKLLM_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/EmbedSpirv.cmake)

# Whether SOURCE, or a file it includes, includes subgroup_ops.glsl. Configuration reruns when any of
# them changes.
function(vkllm_uses_subgroup_ops source out)
  set(path ${VKLLM_SHADER_DIR}/${source})
  if(NOT EXISTS ${path})
    set(path ${VKLLM_SHADER_GENERATED_DIR}/${source})
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${path})
  file(STRINGS ${path} lines REGEX "^#include \"")
  set(found FALSE)
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
    if(included STREQUAL "subgroup_ops.glsl")
      set(found TRUE)
    else()
      vkllm_uses_subgroup_ops(${included} nested)
      if(nested)
        set(found TRUE)
      endif()
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# vkllm_shader(NAME SOURCE [DEFINES D=V ...]): one pipeline named NAME compiled from SOURCE, and when
# the source uses subgroup_ops.glsl a second, NAME_basic (SUBGROUP_BASIC: basic subgroup operations
# only), that the pipeline cache takes for NAME on devices without subgroup arithmetic or ballots.
# Appends the generated sources to VKLLM_SHADER_SOURCES and the names to VKLLM_SHADER_NAMES.
function(vkllm_shader name source)
  cmake_parse_arguments(ARG "" "" "DEFINES" ${ARGN})
  set(src ${VKLLM_SHADER_DIR}/${source})
  set(variants ${name})
  set(defines_${name} ${ARG_DEFINES})
  vkllm_uses_subgroup_ops(${source} uses_subgroup_ops)
  if(uses_subgroup_ops)
    list(APPEND variants ${name}_basic)
    set(defines_${name}_basic ${ARG_DEFINES} SUBGROUP_BASIC=1)
  endif()
  foreach(variant IN LISTS variants)
    set(spv ${CMAKE_CURRENT_BINARY_DIR}/spv/${variant}.spv)
    set(cpp ${CMAKE_CURRENT_BINARY_DIR}/embedded/${variant}.cpp)
    set(defines)
    foreach(d IN LISTS defines_${variant})
      list(APPEND defines -D${d})
    endforeach()
    add_custom_command(
      OUTPUT ${spv}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/spv
      COMMAND ${GLSLC} --target-env=vulkan1.2 -O -Werror ${defines} -I${VKLLM_SHADER_DIR}
              -I${VKLLM_SHADER_GENERATED_DIR}
              -MD -MF ${spv}.d -o ${spv} ${src}
      COMMAND ${SPIRV_VAL} --target-env vulkan1.2 ${spv}
      DEPENDS ${src}
      DEPFILE ${spv}.d
      COMMENT "glslc ${variant}"
      VERBATIM)
    add_custom_command(
      OUTPUT ${cpp}
      COMMAND ${CMAKE_COMMAND} -DNAME=${variant} -DSPV=${spv} -DOUT=${cpp} -P ${VKLLM_EMBED_SCRIPT}
      DEPENDS ${spv} ${VKLLM_EMBED_SCRIPT}
      VERBATIM)
    list(APPEND VKLLM_SHADER_SOURCES ${cpp})
    list(APPEND VKLLM_SHADER_NAMES ${variant})
  endforeach()
  set(VKLLM_SHADER_SOURCES ${VKLLM_SHADER_SOURCES} PARENT_SCOPE)
  set(VKLLM_SHADER_NAMES ${VKLLM_SHADER_NAMES} PARENT_SCOPE)
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
