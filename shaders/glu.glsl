// The gated activations of GLU feed-forward blocks (model-notes.md C.0), shared by the elementwise
// pass and the matvec that forms its input on the fly:
//   swiglu(gate, up) = silu(gate) * up        silu(z) = z / (1 + e^-z)
//   geglu(gate, up)  = gelu_tanh(gate) * up   0.5 z (1 + tanh(u)) written as z / (1 + e^(-2u)): no inf/inf
//   swiglu_oai(gate, up): MiniMax-M3's clamped variant, g = min(gate, 7), u = clamp(up, -7, 7),
//                         g / (1 + e^(-1.702 g)) * (u + 1) (llama.cpp's hard-coded alpha and limit)
vec4 swiglu(vec4 gate, vec4 up) { return gate / (1.0 + exp(-gate)) * up; }

vec4 geglu(vec4 gate, vec4 up) {
    const float sqrt_2_over_pi = 0.7978845608028654;
    const vec4 u = sqrt_2_over_pi * (gate + 0.044715 * gate * gate * gate);
    return gate / (1.0 + exp(-2.0 * u)) * up;
}

vec4 swiglu_oai(vec4 gate, vec4 up) {
    const float alpha = 1.702, limit = 7.0;
    const vec4 g = min(gate, limit);
    return g / (1.0 + exp(-alpha * g)) * (clamp(up, -limit, limit) + 1.0);
}
