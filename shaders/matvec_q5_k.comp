#version 450
// y = W x (or y += W x), one vector with Q5_K weights read in their GGUF layout.
#include "dequant_q5_k.glsl"
#include "matvec_body.glsl"
