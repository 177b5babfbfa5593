// SPDX-License-Identifier: GPL-2.0-only
#include "output/otlp_metrics.h"

#include <algorithm>

#include "output/json_writer.h"
#include "output/otlp_json.h"

namespace mysqltrace::output {

using namespace otlp;

namespace {

// OTLP's AggregationTemporality.
constexpr int kCumulative = 2;

struct MetricInfo {
    const char *name;
    const char *description;
};
constexpr MetricInfo kMetrics[2] = {
    {"db.client.operation.duration",
     "Duration of database client operations: a command from its send to the last packet of "
     "its reply"},
    {"mysqltrace.server.operation.duration",
     "Duration of statements in the database server: from the start the server gives the "
     "statement to its end (log_slow_statement)"},
};

}  // namespace

OtlpMetrics::OtlpMetrics(std::string version, uint64_t start_unix_ns)
    : version_(std::move(version)), start_unix_ns_(start_unix_ns) {}

void OtlpMetrics::record(DurationMetric m, const std::string &resource_attrs, const MetricAttrs &a,
                         double seconds) {
    key_.clear();
    Attrs attrs(key_);
    attrs.str("db.system.name", a.system);
    if (!a.ns.empty()) {
        attrs.str("db.namespace", a.ns);
    }
    if (!a.operation.empty()) {
        attrs.str("db.operation.name", a.operation);
    }
    if (!a.collection.empty()) {
        attrs.str("db.collection.name", a.collection);
    }
    if (!a.summary.empty()) {
        attrs.str("db.query.summary", a.summary);
    }
    if (!a.status_code.empty()) {
        attrs.str("db.response.status_code", a.status_code);
        attrs.str("error.type", a.status_code);
    }
    if (!a.server_address.empty()) {
        attrs.str("server.address", a.server_address);
    }
    if (a.server_port != 0) {
        attrs.integer("server.port", a.server_port);
    }
    Point &p = series_[resource_attrs][m == DurationMetric::client ? 0 : 1][key_];
    if (p.count == 0 || seconds < p.min) {
        p.min = seconds;
    }
    if (p.count == 0 || seconds > p.max) {
        p.max = seconds;
    }
    p.count++;
    p.sum += seconds;
    // Bucket i holds (bounds[i-1], bounds[i]]; the last one what is above.
    const auto it = std::lower_bound(kBounds.begin(), kBounds.end(), seconds);
    p.buckets[static_cast<size_t>(it - kBounds.begin())]++;
}

size_t OtlpMetrics::series() const {
    size_t n = 0;
    for (const auto &[r, metrics] : series_) {
        for (const auto &m : metrics) {
            n += m.size();
        }
    }
    return n;
}

size_t OtlpMetrics::take(std::string &out, uint64_t now_unix_ns) const {
    out.clear();
    size_t points = 0;
    JsonWriter j(out);
    j.begin_object();
    j.key("resourceMetrics");
    j.begin_array();
    for (const auto &[resource, metrics] : series_) {
        j.begin_object();
        j.key("resource");
        j.begin_object();
        j.key("attributes");
        j.begin_array();
        out += resource;
        j.end_array();
        j.end_object();
        j.key("scopeMetrics");
        j.begin_array();
        j.begin_object();
        scope_field(j, version_);
        j.key("metrics");
        j.begin_array();
        for (size_t m = 0; m < 2; m++) {
            if (metrics[m].empty()) {
                continue;
            }
            j.begin_object();
            j.field("name", kMetrics[m].name);
            j.field("description", kMetrics[m].description);
            j.field("unit", "s");
            j.key("histogram");
            j.begin_object();
            j.key("dataPoints");
            j.begin_array();
            for (const auto &[attrs, p] : metrics[m]) {
                points++;
                j.begin_object();
                j.key("attributes");
                j.begin_array();
                out += attrs;
                j.end_array();
                int64_string(j, "startTimeUnixNano", start_unix_ns_);
                int64_string(j, "timeUnixNano", std::max(now_unix_ns, start_unix_ns_));
                int64_string(j, "count", p.count);
                j.field("sum", p.sum);
                j.key("bucketCounts");
                j.begin_array();
                for (uint64_t c : p.buckets) {
                    j.value(std::to_string(c));
                }
                j.end_array();
                j.key("explicitBounds");
                j.begin_array();
                for (double b : kBounds) {
                    j.value(b);
                }
                j.end_array();
                j.key("min");
                j.value(p.min);
                j.key("max");
                j.value(p.max);
                j.end_object();
            }
            j.end_array();
            j.field("aggregationTemporality", kCumulative);
            j.end_object();
            j.end_object();
        }
        j.end_array();
        j.end_object();
        j.end_array();
        j.end_object();
    }
    j.end_array();
    j.end_object();
    if (points == 0) {
        out.clear();
    }
    return points;
}

}  // namespace mysqltrace::output
