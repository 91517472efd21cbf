# `vkllm info` end to end: a damaged file gives exactly one line on stderr, nothing on stdout, and
# exit code 1; a real model (when ../shared is present) lists its tensors and exits 0.
# Run as: cmake -DVKLLM=<vkllm> -DWORK=<dir> -DSHARED=<../shared> -P info_cli.cmake
function(expect_one_line_error file)
  execute_process(COMMAND ${VKLLM} info ${file} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX MATCHALL "\n" newlines "${err}")
  list(LENGTH newlines n_lines)
  if(NOT rc EQUAL 1 OR NOT out STREQUAL "" OR NOT n_lines EQUAL 1)
    message(FATAL_ERROR "vkllm info ${file}: exit ${rc}, stdout '${out}', stderr '${err}'")
  endif()
  message(STATUS "ok: ${err}")
endfunction()

file(WRITE ${WORK}/magic-only.gguf "GGUF")
expect_one_line_error(${WORK}/magic-only.gguf)
file(WRITE ${WORK}/text.gguf "not a model\n")
expect_one_line_error(${WORK}/text.gguf)
expect_one_line_error(${WORK}/absent.gguf)

set(model ${SHARED}/testdata/models/stories260K.gguf)
if(EXISTS ${model})
  execute_process(COMMAND ${VKLLM} info ${model} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "48 tensors" OR NOT out MATCHES "blk.4.ffn_down.weight")
    message(FATAL_ERROR "vkllm info ${model}: exit ${rc}")
  endif()
endif()
