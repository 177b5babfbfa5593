// SPDX-License-Identifier: GPL-2.0-only
// Small formatting helpers shared by the parts of the stage machine
// (wl6226.cpp: the connection; wl6226_client.cpp: what the client sends;
// wl6226_server.cpp: replies).
#pragma once

#include "util/hex.h"

#include <charconv>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mysqltrace::protocol::detail {

// What printf's "0x%llx" writes, without printf.
inline std::string hex64(uint64_t v) {
    char buf[2 + 16] = {'0', 'x'};
    const auto r = std::to_chars(buf + 2, buf + sizeof(buf), v, 16);
    return std::string(buf, r.ptr);
}

inline std::string join(const std::vector<std::string> &v, const char *sep) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
        if (i > 0) {
            out += sep;
        }
        out += v[i];
    }
    return out;
}

// Columns a result set can have; caps what a broken stream can make us keep.
inline constexpr size_t kMaxColumns = 4096;

}  // namespace mysqltrace::protocol::detail
