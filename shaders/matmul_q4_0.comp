#version 450
// Y = W X (or Y += W X), a batch of token vectors with Q4_0 weights read in their GGUF layout.
#include "dequant_q4_0.glsl"
#include "matmul_body.glsl"
