// SPDX-License-Identifier: GPL-2.0-only
// What the OTLP JSON encoders of server and client spans share: the
// protobuf JSON mapping's pieces (64-bit integers as strings, ids as hex),
// attribute lists written as raw text, span ids, and the clock offset.
#pragma once

#include <charconv>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "output/json_writer.h"

namespace mysqltrace::output::otlp {

// OTLP's SpanKind and Status.StatusCode; Span.flags bits 8 and 9 say
// whether the parent is remote (trace.proto).
inline constexpr int kSpanKindInternal = 1;
inline constexpr int kSpanKindServer = 2;
inline constexpr int kSpanKindClient = 3;
inline constexpr int kStatusError = 2;
inline constexpr uint32_t kFlagHasIsRemote = 0x100;
inline constexpr uint32_t kFlagIsRemote = 0x200;
inline constexpr uint8_t kSampled = 0x01;

// CLOCK_REALTIME - CLOCK_MONOTONIC now: what turns the probes' monotonic
// times into unix times.
uint64_t realtime_offset();

// Protobuf JSON: 64-bit integers are strings.
void int64_string(JsonWriter &j, std::string_view key, uint64_t v);

// A trace or span id as lower-case hex (at most 16 bytes).
void hex_field(JsonWriter &j, std::string_view key, const uint8_t *bytes, size_t n);

// The instrumentation scope of every batch, as a "scope" key and object:
// mysqltrace, and `version` unless it is empty.
void scope_field(JsonWriter &j, std::string_view version);

// Random ids, never all zero; `seed` 0 seeds from std::random_device.
class IdSource {
  public:
    explicit IdSource(uint64_t seed = 0) : rng_(seed ? seed : std::random_device{}()) {}
    void fill(uint8_t *bytes, size_t n);

  private:
    std::mt19937_64 rng_;
};

// An attribute list, written as raw bytes between JsonWriter's
// begin_array() and end_array() (which keep no state inside it): the
// KeyValue and AnyValue wrappers are fixed text, and a span has some twenty
// of them (writing them key by key was the largest cost of a span). Keys
// are literals: not escaped.
class Attrs {
  public:
    explicit Attrs(std::string &out) : out_(out) {}
    void str(std::string_view key, std::string_view v) {
        open(key);
        out_ += R"(","value":{"stringValue":)";
        append_json_string(out_, v);
        out_ += "}}";
    }
    void integer(std::string_view key, uint64_t v) {
        open(key);
        out_ += R"(","value":{"intValue":")";
        char buf[24];
        const auto r = std::to_chars(buf, buf + sizeof(buf), v);
        out_.append(buf, r.ptr);
        out_ += "\"}}";
    }
    void dbl(std::string_view key, double v) {
        open(key);
        out_ += R"(","value":{"doubleValue":)";
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof(buf), v);
        out_.append(buf, r.ptr);
        out_ += "}}";
    }

  private:
    void open(std::string_view key) {
        if (!first_) {
            out_ += ',';
        }
        first_ = false;
        out_ += R"({"key":")";
        out_ += key;
    }
    std::string &out_;
    bool first_ = true;
};

}  // namespace mysqltrace::output::otlp
