#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "run_cli.h"

using vkllm::test::run_cli;

TEST_CASE("vkllm devices lists the chosen device with its capabilities") {
    auto result = run_cli("devices");
    CHECK(result.exit_code == 0);
    CHECK(result.out.find("* device") != std::string::npos);
    for (const char* field : {"subgroups", "binding range", "timestamps", "fp16", "memory"})
        CHECK(result.out.find(field) != std::string::npos);
}

TEST_CASE("vkllm devices --json is valid JSON naming the chosen device") {
    auto result = run_cli("devices --json");
    REQUIRE(result.exit_code == 0);
    auto json = nlohmann::json::parse(result.out);
    REQUIRE(json["devices"].size() >= 1);
    size_t chosen = json["chosen"];
    REQUIRE(chosen < json["devices"].size());
    const auto& device = json["devices"][chosen];
    CHECK(device["subgroup"]["size"].get<int>() >= 1);
    CHECK(device["max_storage_buffer_range"].get<uint64_t>() > 0);
    CHECK(device["missing_requirements"] == "");
}

TEST_CASE("no Vulkan driver, an unknown device or an unknown command: one line and exit code 1") {
    for (auto [arguments, environment] : {std::pair{"devices", "VK_ICD_FILENAMES=/nonexistent.json VK_DRIVER_FILES=/nonexistent.json"},
                                          std::pair{"devices --device no-such-gpu", ""},
                                          std::pair{"no-such-command", ""}}) {
        CAPTURE(arguments);
        auto result = run_cli(arguments, environment);
        CHECK(result.exit_code == 1);
        CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
    }
}
