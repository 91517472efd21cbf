#version 450
// Y = W X (or Y += W X), a batch of token vectors with F16 weights read in their GGUF layout.
#include "dequant_f16.glsl"
#include "matmul_body.glsl"
