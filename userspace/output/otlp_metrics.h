// SPDX-License-Identifier: GPL-2.0-only
// Operation durations as OpenTelemetry histograms, in OTLP's JSON encoding
// (ExportMetricsServiceRequest): `db.client.operation.duration` from the
// client's commands and `mysqltrace.server.operation.duration` from the
// server's statements, in seconds, with the semantic conventions' bucket
// boundaries and the same attributes (dimensions) on both. Cumulative: each
// export holds every series since the trace started.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace mysqltrace::output {

// The dimensions of one operation ("" / 0: not set, left out).
struct MetricAttrs {
    std::string_view system;       // db.system.name
    std::string_view ns;           // db.namespace
    std::string_view operation;    // db.operation.name
    std::string_view collection;   // db.collection.name
    std::string_view summary;      // db.query.summary
    std::string_view status_code;  // db.response.status_code and error.type
    std::string_view server_address;
    uint16_t server_port = 0;
};

enum class DurationMetric { client, server };

class OtlpMetrics {
  public:
    // db.client.operation.duration's explicit bucket boundaries (seconds).
    static constexpr std::array<double, 9> kBounds = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10};

    // `start_unix_ns`: the series' start time.
    OtlpMetrics(std::string version, uint64_t start_unix_ns);

    // One operation of `seconds`, of the process that `resource_attrs`
    // describes (an OTLP attribute list's inside, as Attrs writes it).
    void record(DurationMetric m, const std::string &resource_attrs, const MetricAttrs &a,
                double seconds);
    // Every series as one ExportMetricsServiceRequest (no newline), at
    // `now_unix_ns`, into `out`; returns the number of data points (0: no
    // series, `out` empty).
    size_t take(std::string &out, uint64_t now_unix_ns) const;
    size_t series() const;

  private:
    struct Point {
        uint64_t count = 0;
        double sum = 0, min = 0, max = 0;
        std::array<uint64_t, kBounds.size() + 1> buckets{};
    };
    std::string version_;
    uint64_t start_unix_ns_;
    // Resource attributes -> metric -> point attributes -> point.
    std::map<std::string, std::array<std::map<std::string, Point>, 2>> series_;
    std::string key_;  // reused
};

}  // namespace mysqltrace::output
