// SPDX-License-Identifier: GPL-2.0-only
// Server statements as OpenTelemetry spans, in OTLP's JSON encoding (the
// protobuf JSON mapping as OTLP/HTTP specifies it: lowerCamelCase names,
// trace and span ids as hex, 64-bit integers as strings, enums as numbers).
// Spans are written straight into a batch buffer with JsonWriter; a batch
// becomes one ExportTraceServiceRequest object, the line the Collector's
// otlpjsonfile receiver reads and the body OTLP/HTTP posts.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "output/clock.h"
#include "output/otlp_json.h"
#include "output/otlp_metrics.h"
#include "output/server_render.h"
#include "server/statement.h"
#include "sql/tables.h"

namespace mysqltrace::output {

// A W3C trace context carried by a statement.
struct TraceParent {
    std::array<uint8_t, 16> trace_id{};
    std::array<uint8_t, 8> parent_id{};
    uint8_t flags = 0;
    std::string trace_state;  // "" when none came with it
    // The parent is in another process (the application's span); false for
    // a client span this tracer wrote itself.
    bool remote = true;
};

// The traceparent (and tracestate) of the first sqlcommenter comment in
// `sql` that has a valid one: /*key='value',traceparent='00-<32 hex>-<16
// hex>-<2 hex>'*/, keys and values URL-encoded, `\'` inside a value. Quoted
// strings of the statement are skipped; a malformed comment or traceparent
// (bad length, upper-case or non-hex digits, all-zero ids, version ff) is
// ignored.
std::optional<TraceParent> sqlcommenter_traceparent(std::string_view sql);

// What describes the traced server on every span (the OTLP resource).
struct OtlpResource {
    std::string db_system;  // "mysql" or "mariadb" (db.system.name)
    std::string service_name;
    uint32_t pid = 0;
    std::string executable;  // process.executable.name
    std::string host_name;
    uint16_t port = 0;    // a TCP port the server listens on (server.port); 0: none
    std::string version;  // the tracer's, the instrumentation scope's version
};

// One stage as a span (exact stages) or a sampled share (span event).
struct OtlpStage {
    std::string_view name;  // the stage's name, as performance_schema's stage/sql/<name>
    uint64_t start_ns = 0, end_ns = 0;  // CLOCK_MONOTONIC
};
struct OtlpSampledStage {
    std::string_view name;
    uint32_t on_cpu = 0, switches = 0;
    uint64_t off_cpu_ns = 0;
};

class OtlpSpans {
  public:
    // `seed` 0: ids from std::random_device (tests pass a fixed seed).
    explicit OtlpSpans(OtlpResource resource, uint64_t seed = 0);

    // Appends the statement's span, a child span per exact stage and its
    // waits and sampled stages as span events. `event_name` is
    // performance_schema's EVENT_NAME of the statement. `client`: the span
    // of the client command this statement served (same trace, its parent),
    // which takes precedence over a sqlcommenter traceparent.
    void add(const server::Statement &st, std::string_view event_name,
             const std::vector<OtlpStage> &stages, const std::vector<OtlpSampledStage> &sampled,
             const std::vector<NamedWait> &waits, const TraceParent *client = nullptr);
    // Spans in the current batch.
    size_t spans() const { return spans_; }
    // The batch as one ExportTraceServiceRequest object (no newline), into
    // `out` (replaced); the batch is emptied.
    void take(std::string &out);

    // Where monotonic times become unix times (tests fix it).
    void set_realtime_offset(uint64_t offset_ns) { offset_ns_ = offset_ns; }
    // Each statement's duration into `m` too (null: none).
    void set_metrics(OtlpMetrics *m) { metrics_ = m; }

  private:
    OtlpResource resource_;
    std::string resource_attrs_;  // the resource's attribute list, as Attrs writes it
    OtlpMetrics *metrics_ = nullptr;
    std::string collection_;
    std::string head_;  // the request up to the spans array
    std::string body_;  // span objects, comma-separated
    size_t spans_ = 0;
    uint64_t offset_ns_;
    otlp::IdSource ids_;
    std::string scratch_;
    std::vector<sql::TableName> tables_;
};

// db.operation.name and db.query.summary of a statement: "SELECT",
// "SELECT sbtest1" ("INSERT", "CREATE TABLE", ...; a command that is not a
// query gives its name, "COM_PING").
std::string operation_name(const server::Statement &st);
// The same for a command `command` with the statement text `text` (null:
// none known), client or server side.
std::string command_operation(uint8_t command, const std::string *text);
// The summary of an operation on `tables` (in order of appearance, each
// once, at most 255 characters).
std::string summary_of(std::string_view operation, const std::vector<sql::TableName> &tables);
// db.collection.name: the one table every reference names (unqualified ones
// in schema `db`), as the text first spells it; false when there is none,
// more than one, or the text was cut (`truncated`) and the rest could name
// more.
bool one_collection(const std::vector<sql::TableName> &tables, std::string_view db, bool truncated,
                    std::string *out);
std::string query_summary(const server::Statement &st, std::string_view operation);

}  // namespace mysqltrace::output
