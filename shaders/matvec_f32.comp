#version 450
// y = W x (or y += W x), one vector with F32 weights read in their GGUF layout.
#include "dequant_f32.glsl"
#include "matvec_body.glsl"
