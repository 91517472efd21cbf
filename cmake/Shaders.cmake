# Shaders: GLSL compiled by glslc at build time, validated by spirv-val, embedded byte for byte
# (cmake/Embed.cmake). Each pipeline is one custom command, so editing one shader rebuilds only its SPIR-V.

# SPIR-V does not depend on the C++ build type or sanitizers: a second build tree of the same sources
# (scripts/test's ASan build) may take the .spv files of one already built instead of compiling them.
set(VKLLM_SPIRV_FROM "" CACHE PATH "A built vkllm build tree of the same sources whose shaders/spv/*.spv this build embeds instead of compiling its own")

set(VKLLM_SHADER_DIR ${CMAKE_CURRENT_LIST_DIR}/../shaders)
# Shader sources CMake writes (shaders/CMakeLists.txt: weight_type.glsl), searched after shaders/.
set(VKLLM_SHADER_GENERATED_DIR ${CMAKE_BINARY_DIR}/shaders/generated)

# Cooperative-matrix kernels (GL_KHR_cooperative_matrix) need glslang 15 and SPIRV-Tools 2025, which
# Debian 12 does not package: scripts/setup builds glslangValidator and spirv-val from Debian 13's
# sources into VKLLM_COOPMAT_TOOLCHAIN. Found there and able to compile and validate a small
# cooperative-matrix kernel, they build those pipelines (vkllm_shader's COOPMAT); otherwise the
# pipelines are left out, which configuration says once, and vkllm runs its other kernels everywhere.
set(VKLLM_COOPMAT_TOOLCHAIN /opt/vkllm/coopmat-toolchain CACHE PATH
    "Prefix of the glslangValidator and spirv-val that compile cooperative-matrix shaders (scripts/setup)")
find_program(VKLLM_COOPMAT_GLSLANG glslangValidator PATHS ${VKLLM_COOPMAT_TOOLCHAIN}/bin NO_DEFAULT_PATH)
find_program(VKLLM_COOPMAT_SPIRV_VAL spirv-val PATHS ${VKLLM_COOPMAT_TOOLCHAIN}/bin NO_DEFAULT_PATH)
set(VKLLM_COOPMAT_SHADERS OFF)
if(VKLLM_COOPMAT_GLSLANG AND VKLLM_COOPMAT_SPIRV_VAL)
  set(probe_dir ${CMAKE_BINARY_DIR}/coopmat-probe)
  file(WRITE ${probe_dir}/probe.comp [=[
#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer Data { float data[]; };
shared float16_t tile[256];
void main() {
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
    coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b;
    coopMatLoad(a, tile, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(b, tile, 0, 16, gl_CooperativeMatrixLayoutColumnMajor);
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> c;
    c = coopMatMulAdd(a, b, coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0));
    coopMatStore(c, data, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
}
]=])
  execute_process(COMMAND ${VKLLM_COOPMAT_GLSLANG} -V --target-env vulkan1.2 -o ${probe_dir}/probe.spv
                          ${probe_dir}/probe.comp
                  RESULT_VARIABLE compiled OUTPUT_QUIET ERROR_QUIET)
  if(compiled EQUAL 0)
    execute_process(COMMAND ${VKLLM_COOPMAT_SPIRV_VAL} --target-env vulkan1.2 ${probe_dir}/probe.spv
                    RESULT_VARIABLE validated OUTPUT_QUIET ERROR_QUIET)
    if(validated EQUAL 0)
      set(VKLLM_COOPMAT_SHADERS ON)
    endif()
  endif()
endif()
if(NOT VKLLM_COOPMAT_SHADERS)
  message(STATUS "vkllm: no glslangValidator and spirv-val that build cooperative matrices in "
                 "${VKLLM_COOPMAT_TOOLCHAIN}/bin (scripts/setup builds them): the cooperative-matrix kernels "
                 "are left out")
endif()

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

# vkllm_shader(NAME SOURCE [COOPMAT] [DEFINES D=V ...]): one pipeline named NAME compiled from SOURCE,
# and when the source uses subgroup_ops.glsl a second, NAME_basic (SUBGROUP_BASIC: basic subgroup
# operations only), that the pipeline cache takes for NAME on devices without subgroup arithmetic or
# ballots. COOPMAT: a cooperative-matrix kernel, compiled and validated by the toolchain above (build
# one only where VKLLM_COOPMAT_SHADERS).
# Appends the SPIR-V files to VKLLM_SHADER_SPIRV and the names to VKLLM_SHADER_NAMES.
function(vkllm_shader name source)
  cmake_parse_arguments(ARG "COOPMAT" "" "DEFINES" ${ARGN})
  set(src ${VKLLM_SHADER_DIR}/${source})
  set(variants ${name})
  set(defines_${name} ${ARG_DEFINES})
  vkllm_uses_subgroup_ops(${source} uses_subgroup_ops)
  if(uses_subgroup_ops)
    list(APPEND variants ${name}_basic)
    set(defines_${name}_basic ${ARG_DEFINES} SUBGROUP_BASIC=1)
  endif()
  foreach(variant IN LISTS variants)
    list(APPEND VKLLM_SHADER_NAMES ${variant})
    if(VKLLM_SPIRV_FROM)
      set(spv ${VKLLM_SPIRV_FROM}/shaders/spv/${variant}.spv)
      if(NOT EXISTS ${spv})
        message(FATAL_ERROR "VKLLM_SPIRV_FROM: ${VKLLM_SPIRV_FROM} has no ${variant}.spv: build that tree first")
      endif()
      list(APPEND VKLLM_SHADER_SPIRV ${spv})
      continue()
    endif()
    set(spv ${CMAKE_CURRENT_BINARY_DIR}/spv/${variant}.spv)
    set(defines)
    foreach(d IN LISTS defines_${variant})
      list(APPEND defines -D${d})
    endforeach()
    if(ARG_COOPMAT)
      set(compile ${VKLLM_COOPMAT_GLSLANG} -V --target-env vulkan1.2 --quiet ${defines} --depfile ${spv}.d)
      set(validate ${VKLLM_COOPMAT_SPIRV_VAL})
    else()
      set(compile ${GLSLC} --target-env=vulkan1.2 -O -Werror ${defines} -MD -MF ${spv}.d)
      set(validate ${SPIRV_VAL})
    endif()
    add_custom_command(
      OUTPUT ${spv}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/spv
      COMMAND ${compile} -I${VKLLM_SHADER_DIR} -I${VKLLM_SHADER_GENERATED_DIR} -o ${spv} ${src}
      COMMAND ${validate} --target-env vulkan1.2 ${spv}
      DEPENDS ${src}
      DEPFILE ${spv}.d
      COMMENT "compiling shader ${variant}"
      VERBATIM)
    list(APPEND VKLLM_SHADER_SPIRV ${spv})
  endforeach()
  set(VKLLM_SHADER_SPIRV ${VKLLM_SHADER_SPIRV} PARENT_SCOPE)
  set(VKLLM_SHADER_NAMES ${VKLLM_SHADER_NAMES} PARENT_SCOPE)
endfunction()

# A kernel reading weights, a KV cache or matvec inputs: NAME reads them from storage buffers,
# NAME_texel (TEXEL_READS) through uniform texel buffers, the faster path on CPU devices
# (gpu::Capabilities::texel_reads).
function(vkllm_texel_shader name source)
  vkllm_shader(${name} ${source} ${ARGN})
  cmake_parse_arguments(ARG "" "" "DEFINES" ${ARGN})
  vkllm_shader(${name}_texel ${source} DEFINES ${ARG_DEFINES} TEXEL_READS=1)
  set(VKLLM_SHADER_SPIRV ${VKLLM_SHADER_SPIRV} PARENT_SCOPE)
  set(VKLLM_SHADER_NAMES ${VKLLM_SHADER_NAMES} PARENT_SCOPE)
endfunction()
