// SPDX-License-Identifier: GPL-2.0-only
// `client --server-pid PID` and `run --server-pid PID` with --otlp or
// --format otlp: the server's statements traced in the same process (the
// one-probe path) and exported as SERVER spans that are children of the
// client command's CLIENT span: one statement, one trace. A statement is
// joined to a client span of the same connection id (the greeting's) sent
// before the statement started, the one whose time overlaps it the most.
// Until the connection's next command shows that every candidate is in, a
// statement is joined only to a span that holds most of it; it waits at
// most a second, then goes out joined to the best match there is, or on
// its own (a connection whose greeting was not seen, a client not traced).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>

#include "bpf/ring_set.h"
#include "output/otlp_sink.h"
#include "output/otlp_client.h"
#include "output/server_render.h"
#include "server/server_target.h"
#include "server/statement_tracer.h"
#include "util/result.h"

namespace mysqltrace::cli {

struct ServerJoinOptions {
    bool show_secrets = false;
    uint64_t ring_bytes_per_cpu = 0;
};

class ServerJoin {
  public:
    // Attaches to the server `pid`; its spans go to `channel`.
    static Result<std::unique_ptr<ServerJoin>> attach(pid_t pid,
                                                      std::shared_ptr<output::OtlpChannel> channel,
                                                      const ServerJoinOptions &opts);
    ~ServerJoin();
    bpf::RingSet &rings() { return tracer_->rings(); }
    // "MariaDB 10.11.x (pid N): statements, one probe each (...)".
    const std::string &banner() const { return banner_; }

    // A client span written: held statements of its connection join it.
    void client_span(const protocol::CommandSummary &sum, const output::ClientConnection &conn,
                     const output::SpanContext &ctx);
    // Statements that waited their second go out alone; a batch older than
    // a second goes out.
    void tick();
    // At the end: the rings drained, every held statement out.
    void finish();
    uint64_t statements() const { return statements_; }
    uint64_t joined() const { return joined_; }

  private:
    ServerJoin() = default;
    struct ClientSpan {
        uint64_t start_ns = 0, end_ns = 0;
        uint8_t command = 0;  // the command byte (COM_QUERY, ...)
        output::TraceParent parent;
    };
    struct Held {
        server::Statement st;
        std::chrono::steady_clock::time_point since;
    };
    void on_statement(const server::Statement &st);
    // The client span `st` belongs to, or null; `final`: its wait is over,
    // take the best there is.
    const ClientSpan *match(const server::Statement &st, bool final) const;
    void emit(const server::Statement &st, const ClientSpan *client);
    void release(bool all);

    server::ServerTarget target_;
    std::unique_ptr<output::ServerRenderer> render_;
    std::unique_ptr<server::StatementTracer> tracer_;
    std::unique_ptr<output::OtlpSink> sink_;
    std::string banner_;
    // Recent client spans per server connection id, oldest first.
    std::unordered_map<uint64_t, std::deque<ClientSpan>> clients_;
    std::deque<Held> held_;
    uint64_t statements_ = 0, joined_ = 0;
    std::vector<output::NamedWait> no_waits_;
};

}  // namespace mysqltrace::cli
