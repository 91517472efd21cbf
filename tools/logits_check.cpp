// logits_check GOT.f32 REF.f32 N_VOCAB [--max-rel-rms X] [--min-top1 Y]
//
// Compares all-position logits ([n_tokens][n_vocab] little-endian f32, as `vkllm eval --logits-out`
// and peer-logits write them) and exits 1 unless the median per-row relative RMS error is at most X
// (default 0.01) and the top-1 agreement over rows where the reference is sure (margin >= 0.5) is at
// least Y (default 0.95). The worst row and the last tenth of the rows are reported on their own, so
// a kernel that silently stops past some position (lavapipe's loop cap) shows where it went wrong.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

std::vector<float> read_f32(const char* path) {
    std::ifstream file(path, std::ios::binary | std::ios::ate);
    if (!file) return {};
    std::vector<float> values(size_t(file.tellg()) / sizeof(float));
    file.seekg(0);
    file.read(reinterpret_cast<char*>(values.data()), std::streamsize(values.size() * sizeof(float)));
    return values;
}

double row_rel_rms(const float* got, const float* ref, size_t n) {
    double error = 0, norm = 0;
    for (size_t i = 0; i < n; ++i) {
        const double d = std::isfinite(got[i]) ? double(got[i]) - ref[i] : INFINITY;
        error += d * d;
        norm += double(ref[i]) * ref[i];
    }
    return std::sqrt(error / std::max(norm, 1e-30));
}

// The reference's top-1 when it leads the runner-up by at least 0.5, else -1.
long confident_top1(const float* ref, size_t n) {
    size_t best = 0, second = n > 1 ? 1 : 0;
    if (n > 1 && ref[1] > ref[0]) std::swap(best, second);
    for (size_t i = 2; i < n; ++i) {
        if (ref[i] > ref[best]) {
            second = best;
            best = i;
        } else if (ref[i] > ref[second]) {
            second = i;
        }
    }
    return ref[best] - ref[second] >= 0.5f ? long(best) : -1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: logits_check GOT.f32 REF.f32 N_VOCAB [--max-rel-rms X] [--min-top1 Y]\n");
        return 2;
    }
    double max_rel_rms = 0.01, min_top1 = 0.95;
    for (int i = 4; i + 1 < argc; i += 2) {
        if (std::string_view(argv[i]) == "--max-rel-rms") max_rel_rms = std::stod(argv[i + 1]);
        else if (std::string_view(argv[i]) == "--min-top1") min_top1 = std::stod(argv[i + 1]);
    }
    const size_t n_vocab = std::stoul(argv[3]);
    const std::vector<float> got = read_f32(argv[1]), ref = read_f32(argv[2]);
    if (n_vocab == 0 || got.empty() || got.size() != ref.size() || got.size() % n_vocab != 0) {
        std::fprintf(stderr, "logits_check: %s (%zu floats) and %s (%zu floats) are not the same [rows][%zu]\n",
                     argv[1], got.size(), argv[2], ref.size(), n_vocab);
        return 2;
    }
    const size_t rows = got.size() / n_vocab, tail_start = rows - std::max<size_t>(1, rows / 10);
    std::vector<double> errors(rows);
    size_t confident = 0, agree = 0, worst = 0;
    double tail_max = 0;
    for (size_t r = 0; r < rows; ++r) {
        const float* g = got.data() + r * n_vocab;
        const float* f = ref.data() + r * n_vocab;
        errors[r] = row_rel_rms(g, f, n_vocab);
        if (errors[r] > errors[worst]) worst = r;
        if (r >= tail_start) tail_max = std::max(tail_max, errors[r]);
        if (long top = confident_top1(f, n_vocab); top >= 0) {
            ++confident;
            agree += std::max_element(g, g + n_vocab) - g == top;
        }
    }
    std::vector<double> sorted = errors;
    std::nth_element(sorted.begin(), sorted.begin() + rows / 2, sorted.end());
    const double median = sorted[rows / 2], top1 = confident ? double(agree) / confident : 1.0;
    const bool pass = median <= max_rel_rms && top1 >= min_top1 && tail_max <= 10 * max_rel_rms;
    std::printf("%zu positions: median rel RMS %.3g (max %.3g at position %zu, last tenth max %.3g), "
                "top-1 agreement %.1f%% of %zu confident rows: %s\n",
                rows, median, errors[worst], worst, tail_max, 100 * top1, confident, pass ? "pass" : "FAIL");
    return pass ? 0 : 1;
}
