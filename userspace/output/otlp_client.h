// SPDX-License-Identifier: GPL-2.0-only
// Client commands as OpenTelemetry CLIENT spans, in OTLP's JSON encoding:
// one span per command of a traced connection (`client`, `run`), from the
// command summary the WL#6226 stage machine gives when the reply has been
// read. The resource is the client process, so a batch holds one
// ResourceSpans per process.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <string>
#include <vector>

#include "output/otlp.h"
#include "output/otlp_json.h"
#include "output/otlp_metrics.h"
#include "protocol/event.h"
#include "sql/tables.h"

namespace mysqltrace::output {

// What a connection's span needs that its commands do not say: where it
// goes, what answered, and its default schema; kept up to date from the
// connection's protocol events (ClientConnectionState).
struct ClientConnection {
    std::string peer;            // "127.0.0.1:3306", "[::1]:3306", "/run/mysqld/mysqld.sock"
    std::string server_version;  // the greeting's; "" when the trace joined mid-stream
    uint32_t connection_id = 0;  // the server's, from the greeting; 0 when unknown
    std::string db;              // the default schema; "" when none or unknown
};

// Follows one connection's protocol events and command summaries for the
// ClientConnection its spans need: the greeting, the schema of the
// handshake response, COM_INIT_DB, COM_CHANGE_USER and a `USE db` query
// that succeeded.
class ClientConnectionState {
  public:
    void on_event(const protocol::ProtocolEvent &ev);
    void on_summary(const protocol::CommandSummary &sum);
    ClientConnection conn;

  private:
    std::string pending_db_;  // handshake or change-user schema, until the server accepts it
    bool pending_ = false;
};

// db.system.name of a server version string: "mariadb" when it says
// MariaDB, "mysql" for other versions, "other_sql" when unknown.
std::string_view db_system_of(std::string_view server_version);

// What describes a client process (its resource).
struct ClientProcess {
    uint32_t pid = 0;
    std::string executable;  // process.executable.name, also service.name
};
// The process as /proc shows it now (fields empty when it is gone).
ClientProcess read_client_process(uint32_t pid);

// The ids a span was written with, for children in the same trace.
struct SpanContext {
    std::array<uint8_t, 16> trace_id{};
    std::array<uint8_t, 8> span_id{};
    uint8_t flags = 0;
    std::string trace_state;
};

class OtlpClientSpans {
  public:
    // `seed` 0: ids from std::random_device (tests pass a fixed seed).
    OtlpClientSpans(std::string host_name, std::string version, uint64_t seed = 0);

    // Appends the command's CLIENT span (of process `proc`) and returns its
    // ids. `sum.sql` is as the trace has it: redacted unless --show-secrets.
    SpanContext add(const protocol::CommandSummary &sum, const ClientConnection &conn,
                    const ClientProcess &proc);
    size_t spans() const { return spans_; }
    // The batch as one ExportTraceServiceRequest object (no newline), into
    // `out` (replaced); the batch is emptied.
    void take(std::string &out);
    void set_realtime_offset(uint64_t offset_ns) { offset_ns_ = offset_ns; }
    // Each command's duration into `m` too (null: none).
    void set_metrics(OtlpMetrics *m) { metrics_ = m; }

  private:
    struct ProcessBatch {
        std::string head;  // the ResourceSpans object up to its spans array
        std::string body;  // span objects, comma-separated
    };
    ProcessBatch &batch_of(const ClientProcess &proc);
    // The process's resource attribute list, as Attrs writes it.
    const std::string &resource_attrs(const ClientProcess &proc);

    std::string host_name_, version_;
    std::map<uint32_t, ProcessBatch> batches_;
    size_t spans_ = 0;
    uint64_t offset_ns_;
    otlp::IdSource ids_;
    OtlpMetrics *metrics_ = nullptr;
    std::string scratch_, collection_;
    // Per pid: the executable and the resource attributes written for it.
    std::unordered_map<uint32_t, std::pair<std::string, std::string>> resources_;
    std::vector<sql::TableName> tables_;
};

}  // namespace mysqltrace::output
