#version 450
// Y = W X (or Y += W X), a batch of token vectors with F32 weights read in their GGUF layout.
#include "dequant_f32.glsl"
#include "matmul_body.glsl"
