#version 450
// y = W x (or y += W x), one vector with Q6_K weights read in their GGUF layout.
#include "dequant_q6_k.glsl"
#include "matvec_body.glsl"
