// Reads through a uniform texel buffer of uvec4 texels, the TEXEL_READS variants' bindings
// (gpu::Capabilities::texel_reads: on lavapipe a texel fetch is one vector gather, a storage-buffer
// word a scalar load per lane). Indices count words, pairs of words or vec4s.
#ifndef TEXEL_READS_GLSL
#define TEXEL_READS_GLSL
#extension GL_EXT_samplerless_texture_functions : require
uint texel_word(utextureBuffer texels, uint word) { return texelFetch(texels, int(word >> 2))[word & 3u]; }
uvec2 texel_pair(utextureBuffer texels, uint pair) {
    const uvec4 quad = texelFetch(texels, int(pair >> 1));
    return (pair & 1u) != 0u ? quad.zw : quad.xy;
}
vec4 texel_vec4(utextureBuffer texels, uint i) { return uintBitsToFloat(texelFetch(texels, int(i))); }
#endif
