#version 450
// y = W x (or y += W x), one vector with Q8_0 weights read in their GGUF layout.
#include "dequant_q8_0.glsl"
#include "matvec_body.glsl"
