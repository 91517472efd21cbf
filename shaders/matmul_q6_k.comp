#version 450
// Y = W X (or Y += W X), a batch of token vectors with Q6_K weights read in their GGUF layout.
#include "dequant_q6_k.glsl"
#include "matmul_body.glsl"
