// SPDX-License-Identifier: GPL-2.0-only
#include "output/otlp_json.h"

#include <time.h>

#include <algorithm>

namespace mysqltrace::output::otlp {

uint64_t realtime_offset() {
    timespec r{}, m{};
    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &m);
    const auto ns = [](const timespec &t) {
        return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull +
               static_cast<uint64_t>(t.tv_nsec);
    };
    return ns(r) - ns(m);
}

void int64_string(JsonWriter &j, std::string_view key, uint64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof(buf), v);
    j.field(key, std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
}

void hex_field(JsonWriter &j, std::string_view key, const uint8_t *bytes, size_t n) {
    static const char digits[] = "0123456789abcdef";
    char buf[32];
    for (size_t i = 0; i < n && i < 16; i++) {
        buf[2 * i] = digits[bytes[i] >> 4];
        buf[2 * i + 1] = digits[bytes[i] & 15];
    }
    j.field(key, std::string_view(buf, std::min<size_t>(n, 16) * 2));
}

void IdSource::fill(uint8_t *bytes, size_t n) {
    do {
        for (size_t i = 0; i < n; i += 8) {
            const uint64_t v = rng_();
            for (size_t k = 0; k < 8 && i + k < n; k++) {
                bytes[i + k] = static_cast<uint8_t>(v >> (8 * k));
            }
        }
    } while (std::all_of(bytes, bytes + n, [](uint8_t b) { return b == 0; }));
}

void scope_field(JsonWriter &j, std::string_view version) {
    j.key("scope");
    j.begin_object();
    j.field("name", "mysqltrace");
    if (!version.empty()) {
        j.field("version", version);
    }
    j.end_object();
}

}  // namespace mysqltrace::output::otlp
