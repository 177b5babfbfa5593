// SPDX-License-Identifier: GPL-2.0-only
// The tests' OTLP receiver (tests/testprogs/otlp_receiver.js, which decodes
// with the protobuf classes generated from the official OTLP .proto files)
// and what they read from the spans it writes.
#pragma once

#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "priv/cli_util.h"

namespace mysqltrace::test {

inline const std::string kOtlpReceiver =
    std::string(MYSQLTRACE_SOURCE_DIR) + "/tests/testprogs/otlp_receiver.js";

inline uint64_t unix_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
}

// The receiver on a free port; *port gets it.
inline std::unique_ptr<BackgroundCommand> start_receiver(
    const std::string &out, int *port, const std::vector<std::string> &extra = {}) {
    std::vector<std::string> argv = {"/usr/bin/env", "node", kOtlpReceiver, "--port", "0",
                                     "--out",        out};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = std::make_unique<BackgroundCommand>(argv);
    EXPECT_TRUE(r->wait_for_stderr("listening ")) << r->stderr_so_far();
    std::smatch m;
    const std::string err = r->stderr_so_far();
    *port = std::regex_search(err, m, std::regex("listening ([0-9]+)")) ? std::stoi(m[1]) : 0;
    return r;
}

inline std::vector<nlohmann::json> json_lines(const std::string &text) {
    std::vector<nlohmann::json> out;
    size_t from = 0;
    while (from < text.size()) {
        const size_t nl = text.find('\n', from);
        const std::string line = text.substr(from, nl == std::string::npos ? nl : nl - from);
        from = nl == std::string::npos ? text.size() : nl + 1;
        if (!line.empty()) {
            out.push_back(nlohmann::json::parse(line));
        }
    }
    return out;
}

inline std::string int_attr(const nlohmann::json &span, const std::string &key) {
    const auto &a = span["attributes"];
    return a.contains(key) && a[key].is_object() ? a[key]["int"].get<std::string>() : "(none)";
}

inline std::string str_attr(const nlohmann::json &span, const std::string &key) {
    const auto &a = span["attributes"];
    return a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : "(none)";
}

}  // namespace mysqltrace::test
