#version 450
// Regroupings of a grid of patch vectors (tokens row-major over an nx x ny grid, n_embd floats each),
// one invocation per output float (model-notes.md D.2, D.3):
//   AVG_POOL    out[oy][ox][c] = mean over k x k of in[oy*k+ky][ox*k+kx][c]      (Gemma 3 projector)
//   MERGE       out[oy][ox][c*k*k + ky*k + kx] = in[oy*k+ky][ox*k+kx][c]          (Pixtral patch merger)
//   ROW_BREAKS  the ny rows of nx tokens with the row_break vector between rows   (Pixtral [IMG_BREAK])
#extension GL_GOOGLE_include_directive : require
#include "params.h"
layout(local_size_x_id = 0) in;
#include "ops_common.glsl"

layout(std430, binding = 0) readonly buffer In { float src[]; };
#ifdef ROW_BREAKS
layout(std430, binding = 1) readonly buffer RowBreak { float row_break[]; };
layout(std430, binding = 2) writeonly buffer Out { float dst[]; };
#else
layout(std430, binding = 1) writeonly buffer Out { float dst[]; };
#endif
layout(push_constant) uniform Push { PatchGridParams p; };

float patch_at(uint x, uint y, uint c) { return src[(y * p.nx + x) * p.n_embd + c]; }

void main() {
    const uint i = flat_invocation();
    if (i >= p.n_out) return;
#if defined(AVG_POOL)
    const uint c = i % p.n_embd, token = i / p.n_embd, ox = token % (p.nx / p.k), oy = token / (p.nx / p.k);
    float sum = 0.0;
    for (uint ky = 0; ky < p.k; ++ky)
        for (uint kx = 0; kx < p.k; ++kx) sum += patch_at(ox * p.k + kx, oy * p.k + ky, c);
    dst[i] = sum / float(p.k * p.k);
#elif defined(MERGE)
    const uint width = p.n_embd * p.k * p.k, j = i % width, token = i / width;
    const uint ox = token % (p.nx / p.k), oy = token / (p.nx / p.k);
    const uint c = j / (p.k * p.k), ky = (j / p.k) % p.k, kx = j % p.k;
    dst[i] = patch_at(ox * p.k + kx, oy * p.k + ky, c);
#elif defined(ROW_BREAKS)
    const uint c = i % p.n_embd, token = i / p.n_embd, x = token % (p.nx + 1), y = token / (p.nx + 1);
    dst[i] = x == p.nx ? row_break[c] : patch_at(x, y, c);
#endif
}
