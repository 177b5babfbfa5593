// SPDX-License-Identifier: GPL-2.0-only
// Small formatting helpers shared by the parts of the stage machine
// (wl6226.cpp: the connection; wl6226_client.cpp: what the client sends;
// wl6226_server.cpp: replies; wl6226_events.cpp: building and emitting
// events).
#pragma once

#include "util/hex.h"

#include <charconv>
#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mysqltrace::protocol::detail {

// What printf's "0x%llx" writes, without printf.
inline std::string hex64(uint64_t v) {
    char buf[2 + 16] = {'0', 'x'};
    const auto r = std::to_chars(buf + 2, buf + sizeof(buf), v, 16);
    return std::string(buf, r.ptr);
}

// A number in hexadecimal as hex64 writes it, for append_part.
struct Hex64 {
    uint64_t v;
};

// One part of a detail line appended to it, without a temporary string:
// text as is, integers in decimal as std::to_string writes them.
inline void append_part(std::string &s, std::string_view v) {
    s += v;
}
inline void append_part(std::string &s, char c) {
    s += c;
}
template <std::integral T>
requires(!std::same_as<T, char> && !std::same_as<T, bool>) inline void append_part(std::string &s,
                                                                                   T v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof(buf), v);
    s.append(buf, r.ptr);
}
inline void append_part(std::string &s, Hex64 h) {
    char buf[2 + 16] = {'0', 'x'};
    const auto r = std::to_chars(buf + 2, buf + sizeof(buf), h.v, 16);
    s.append(buf, r.ptr);
}

// Appends "name=value" for each item, ", " between them; `name_value`
// gives an item's two parts.
template <typename Items, typename NameValue>
void append_name_values(std::string &s, const Items &items, NameValue name_value) {
    const char *sep = "";
    for (const auto &item : items) {
        const auto &[name, value] = name_value(item);
        append_part(s, sep);
        append_part(s, name);
        append_part(s, '=');
        append_part(s, value);
        sep = ", ";
    }
}

// Appends v's elements to out, sep between them.
inline void append_joined(std::string &out, const std::vector<std::string> &v, const char *sep) {
    for (size_t i = 0; i < v.size(); ++i) {
        if (i > 0) {
            out += sep;
        }
        out += v[i];
    }
}

inline std::string join(const std::vector<std::string> &v, const char *sep) {
    std::string out;
    append_joined(out, v, sep);
    return out;
}

// Columns a result set can have; caps what a broken stream can make us keep.
inline constexpr size_t kMaxColumns = 4096;

}  // namespace mysqltrace::protocol::detail
