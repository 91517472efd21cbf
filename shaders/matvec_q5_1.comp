#version 450
// y = W x (or y += W x), one vector with Q5_1 weights read in their GGUF layout.
#include "dequant_q5_1.glsl"
#include "matvec_body.glsl"
