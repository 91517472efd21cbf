#version 450
// y = W x (or y += W x), one vector with Q5_0 weights read in their GGUF layout.
#include "dequant_q5_0.glsl"
#include "matvec_body.glsl"
