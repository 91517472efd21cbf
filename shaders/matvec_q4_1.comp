#version 450
// y = W x (or y += W x), one vector with Q4_1 weights read in their GGUF layout.
#include "dequant_q4_1.glsl"
#include "matvec_body.glsl"
