// vkllm tune on the bundled stories260K in a cache directory of its own: the fastest launches are kept
// per device and driver, vkllm bench names the ones it used and vkllm devices lists them; an entry the
// device cannot run, or a file that is not a tuning file, is refused with one line and never used.
// The tune runs matvec only with no budget, so each op times the device's own choice (its pipelines
// the bench compiles anyway): a neighbour's compile costs seconds on lavapipe, a matmul tile's a minute.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "run_cli.h"

using vkllm::test::run_cli;

namespace {

const std::string model = std::string(VKLLM_SOURCE_DIR) + "/models/stories260K.gguf";

std::vector<std::string> bench_tuned_shapes(const std::string& environment) {
    const auto bench = run_cli("bench -m " + model + " -p 8 -n 4 -r 1 --json", environment);
    REQUIRE(bench.exit_code == 0);
    return nlohmann::json::parse(bench.out)["tuned_shapes"].get<std::vector<std::string>>();
}

}  // namespace

TEST_CASE("vkllm tune keeps the fastest launches; bench and devices use them; bad entries are refused") {
    const std::filesystem::path cache =
        std::filesystem::temp_directory_path() / ("vkllm-tune-test-" + std::to_string(getpid()));
    std::filesystem::remove_all(cache);
    const std::string environment = "VKLLM_CACHE_DIR=" + cache.string();

    const auto bad_op = run_cli("tune -m " + model + " --op attention", environment);
    CHECK(bad_op.exit_code != 0);
    CHECK(bad_op.err.find("--op must be matvec or matmul, not attention") != std::string::npos);

    const auto tune = run_cli("tune -m " + model + " --op matvec --budget 0 --repeat 2 --json", environment);
    REQUIRE(tune.exit_code == 0);
    const nlohmann::json report = nlohmann::json::parse(tune.out);
    const std::filesystem::path file = report["file"].get<std::string>();
    REQUIRE(std::filesystem::exists(file));
    std::vector<std::string> tuned;
    for (const char* op : {"matvec", "matmul"})
        for (const auto& row : report[op]) {
            CHECK(row["candidates"].get<size_t>() == 1);  // the budget spent, no neighbour starts
            tuned.push_back(row["best"]);
        }
    REQUIRE(report["matvec"].size() >= 2);  // one vector and a batch, for each weight shape
    CHECK(report["matmul"].empty());

    // bench takes the tuned launches and names them; devices lists the file's.
    const std::vector<std::string> used = bench_tuned_shapes(environment);
    CHECK_FALSE(used.empty());
    for (const std::string& shape : used) CHECK(std::ranges::find(tuned, shape) != tuned.end());
    const auto devices = run_cli("devices --json", environment);
    REQUIRE(devices.exit_code == 0);
    const nlohmann::json listed = nlohmann::json::parse(devices.out);
    CHECK(listed["devices"][listed["chosen"].get<size_t>()]["tuning"]["shapes"].size() == tuned.size());

    // Entries the device cannot run: a workgroup past its limits, a team that is no whole subgroup.
    nlohmann::json entries = nlohmann::json::parse(std::ifstream(file));
    const std::string first = report["matvec"][0]["best"];
    entries["matvec"][0]["workgroup_size"] = 1 << 20;
    entries["matvec"][1]["threads_per_row"] = 3;
    std::ofstream(file) << entries.dump();
    const auto refused = run_cli("bench -m " + model + " -p 8 -n 4 -r 1", environment);
    CHECK(refused.exit_code == 0);
    CHECK(refused.err.find("is refused: matvec: a workgroup of 1048576 invocations") != std::string::npos);
    CHECK(refused.err.find("is refused: matvec: 3 threads per row") != std::string::npos);
    CHECK(refused.out.find("tuned shape: " + first + "\n") == std::string::npos);

    // A file that is not a tuning file: one line, the kernels' defaults.
    std::ofstream(file) << "{\"format\": 1, \"matvec\": [";
    const auto malformed = run_cli("bench -m " + model + " -p 8 -n 4 -r 1", environment);
    CHECK(malformed.exit_code == 0);
    CHECK(std::count(malformed.err.begin(), malformed.err.end(), '\n') == 1);
    CHECK(malformed.err.find("is refused") != std::string::npos);
    CHECK(malformed.out.find("tuned shapes: none") != std::string::npos);
    std::filesystem::remove_all(cache);
}
