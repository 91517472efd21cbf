// vkllm shaders and the device choices around it, through Mesa's RADV null-hardware device
// (RADV_FORCE_FAMILY): AMD's compiler without an AMD GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "run_cli.h"

using vkllm::test::run_cli;

namespace {

const std::string model = std::string(VKLLM_SOURCE_DIR) + "/models/stories260K.gguf";
const std::string navi21 = "RADV_FORCE_FAMILY=navi21";

}  // namespace

TEST_CASE("shaders --stats creates stories260K's pipelines on null-hardware navi21 and reports ACO's registers") {
    auto result = run_cli("shaders --stats -m " + model + " --device 'null hardware'", navi21);
    INFO(result.err);
    CHECK(result.exit_code == 0);
    CHECK(result.out.find("Null hardware (RADV NAVI21)") != std::string::npos);
    for (const char* pipeline : {"matvec_f32:", "matmul_f32:", "attn_decode_split_f16:", "attn_decode_split_q8_0:", "rmsnorm_mul:"})
        CHECK(result.out.find(pipeline) != std::string::npos);
    for (const char* field : {"registers ", "SGPRs", "spills 0", "waves/SIMD", "summary:", " (VGPRs),", " 0 spilling"})
        CHECK(result.out.find(field) != std::string::npos);
}

TEST_CASE("null hardware is never chosen to run, and naming it to run is refused with one line") {
    auto devices = run_cli("devices", navi21);
    REQUIRE(devices.exit_code == 0);
    REQUIRE(devices.out.find("Null hardware") != std::string::npos);  // else this checks nothing
    const size_t chosen = devices.out.find("* device");
    REQUIRE(chosen != std::string::npos);
    CHECK(devices.out.substr(chosen, devices.out.find('\n', chosen) - chosen).find("Null hardware") == std::string::npos);

    auto run = run_cli("run -m " + model + " -p hi -n 1 --device 'null hardware'", navi21);
    CHECK(run.exit_code == 1);
    CHECK(run.err.find("null hardware") != std::string::npos);
    CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
}

TEST_CASE("shaders on a device without compiler statistics, and an unknown profile, are one-line errors") {
    for (auto [arguments, environment] : {std::pair{"shaders --stats -m " + model + " --device llvmpipe", std::string()},
                                          std::pair{std::string("devices"), std::string("VKLLM_DEVICE_PROFILE=phone")}}) {
        CAPTURE(arguments);
        auto result = run_cli(arguments, environment);
        CHECK(result.exit_code == 1);
        CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
    }
}
