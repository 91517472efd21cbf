#version 450
// Y = W X (or Y += W X), a batch of token vectors with Q8_0 weights read in their GGUF layout.
#include "dequant_q8_0.glsl"
#include "matmul_body.glsl"
