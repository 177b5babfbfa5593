// SPDX-License-Identifier: GPL-2.0-only
#include "cli/joined_trace.h"

#include "cli/server_otlp.h"

#include <algorithm>
#include <cstdint>

#include "doctor/trace_plan.h"
#include "server/hooks.h"

namespace mysqltrace::cli {

namespace {

// How long a statement waits for its client span.
constexpr std::chrono::milliseconds kHold{1000};
// How long the end waits for the server's last statements.
constexpr std::chrono::milliseconds kLastStatementGrace{200};
// Client spans kept per connection, and for how long after the newest.
constexpr size_t kKeptPerConnection = 256;
constexpr uint64_t kKeptNs = 10'000'000'000ull;
// A statement's start read from the THD is in whole microseconds (MySQL's
// on the wall clock, shifted to the monotonic one): a command sent up to
// this much after it may still be the one it serves. A command without a
// reply is followed at once by the next: more slack would take that one.
constexpr int64_t kSlackNs = 5'000;

int64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
    return static_cast<int64_t>(std::min(a1, b1)) - static_cast<int64_t>(std::max(a0, b0));
}

}  // namespace

ServerJoin::~ServerJoin() = default;

Result<std::unique_ptr<ServerJoin>> ServerJoin::attach(pid_t pid,
                                                       std::shared_ptr<output::OtlpChannel> channel,
                                                       const ServerJoinOptions &opts) {
    auto target = server::resolve_server(pid);
    if (!target) {
        return Error{target.error().code,
                     "--server-pid " + std::to_string(pid) + ": " + target.error().message};
    }
    std::unique_ptr<ServerJoin> j(new ServerJoin());
    j->target_ = std::move(target).value();
    const auto plan = doctor::plan_trace(j->target_, server::StageMode::sampled, pid);
    ServerJoin *self = j.get();
    j->render_ = std::make_unique<output::ServerRenderer>(
        output::ServerFormat::json, static_cast<uint32_t>(pid), j->target_.stages,
        [self](uint64_t addr) {
            return self->tracer_ ? self->tracer_->stage_name_at(addr) : std::string();
        });
    j->sink_ = output::OtlpSink::open(server_otlp_resource(j->target_, pid), std::move(channel));
    server::StatementTracerOptions o;
    o.stages = plan.stages;
    o.show_secrets = opts.show_secrets;
    o.memory = false;  // spans have no attribute for it
    o.one_probe = true;
    if (opts.ring_bytes_per_cpu > 0) {
        o.ring.bytes_per_cpu = opts.ring_bytes_per_cpu;
    }
    auto t = server::StatementTracer::attach(
        j->target_, o, [self](const server::Statement &st) { self->on_statement(st); });
    if (!t) {
        return Error{t.error().code,
                     "--server-pid " + std::to_string(pid) + ": " + t.error().message};
    }
    j->tracer_ = std::move(t).value();
    const std::string version = server::server_version(*j->target_.file, pid, j->target_.load_bias);
    j->banner_ = "server pid " + std::to_string(pid) + " (" +
                 doctor::server_flavour(j->target_.profile, version) + "): statements (" +
                 std::to_string(j->tracer_->probe_count()) + " probes: " + j->tracer_->path_note() +
                 ")";
    return j;
}

void ServerJoin::on_statement(const server::Statement &st) {
    statements_++;
    if (const ClientSpan *c = match(st, false); c != nullptr) {
        emit(st, c);
        return;
    }
    held_.push_back({st, std::chrono::steady_clock::now()});
}

const ServerJoin::ClientSpan *ServerJoin::match(const server::Statement &st, bool final) const {
    auto it = clients_.find(st.thread_id);
    if (it == clients_.end()) {
        return nullptr;
    }
    // The statement serves a command of its own kind (the server runs the
    // command byte the client sent) sent before it started: of those, the
    // one whose time overlaps it the most (a command without a reply is a
    // point in time: the latest one sent). The kind tells apart a command
    // without a reply (COM_STMT_CLOSE) and the one sent right after it.
    const ClientSpan *best = nullptr;
    int64_t best_overlap = INT64_MIN;
    bool later = false;  // a command was sent after the statement ended
    for (const auto &c : it->second) {
        if (c.start_ns > st.end_ns) {
            later = true;
        }
        if (c.command != st.command ||
            static_cast<int64_t>(c.start_ns) > static_cast<int64_t>(st.start_ns) + kSlackNs) {
            continue;
        }
        const int64_t o = overlap(c.start_ns, c.end_ns, st.start_ns, st.end_ns);
        if (o >= best_overlap) {
            best = &c;
            best_overlap = o;
        }
    }
    if (best != nullptr && !final && !later) {
        // Until the connection has moved on, only a client span that holds
        // most of the statement: the right one may not have come yet.
        const int64_t d = static_cast<int64_t>(st.end_ns - std::min(st.start_ns, st.end_ns));
        if (best_overlap <= 0 || 2 * best_overlap < d) {
            return nullptr;
        }
    }
    return best;
}

void ServerJoin::emit(const server::Statement &st, const ClientSpan *client) {
    joined_ += client != nullptr ? 1 : 0;
    sink_->statement(st, *render_, no_waits_, client != nullptr ? &client->parent : nullptr);
}

void ServerJoin::client_span(const protocol::CommandSummary &sum,
                             const output::ClientConnection &conn, const output::SpanContext &ctx) {
    if (conn.connection_id == 0) {
        return;
    }
    auto &list = clients_[conn.connection_id];
    ClientSpan c;
    c.start_ns = sum.ts_start_ns;
    c.end_ns = std::max(sum.ts_end_ns, sum.ts_start_ns);
    c.command = sum.command;
    c.parent.trace_id = ctx.trace_id;
    c.parent.parent_id = ctx.span_id;
    c.parent.flags = ctx.flags;
    c.parent.trace_state = ctx.trace_state;
    c.parent.remote = false;
    list.push_back(std::move(c));
    while (list.size() > kKeptPerConnection ||
           (list.size() > 1 && list.back().end_ns - list.front().end_ns > kKeptNs)) {
        list.pop_front();
    }
    // Statements of this connection that came first.
    for (auto it = held_.begin(); it != held_.end();) {
        const ClientSpan *m =
            it->st.thread_id == conn.connection_id ? match(it->st, false) : nullptr;
        if (m != nullptr) {
            emit(it->st, m);
            it = held_.erase(it);
        } else {
            ++it;
        }
    }
}

void ServerJoin::release(bool all) {
    const auto now = std::chrono::steady_clock::now();
    while (!held_.empty() && (all || now - held_.front().since >= kHold)) {
        emit(held_.front().st, match(held_.front().st, true));
        held_.pop_front();
    }
}

void ServerJoin::tick() {
    tracer_->refresh_clock();
    release(false);
    // Connections whose last client span is long gone.
    const uint64_t now = bpf::monotonic_ns();
    std::erase_if(clients_, [now](const auto &kv) {
        return kv.second.empty() || now - kv.second.back().end_ns > kKeptNs;
    });
    sink_->tick();
}

void ServerJoin::finish() {
    // The server answers a command before its statement's end probe fires:
    // the statement of the client's last command may still be on its way
    // when the client has gone. Its records get a moment to come in.
    const auto until = std::chrono::steady_clock::now() + kLastStatementGrace;
    while (std::chrono::steady_clock::now() < until) {
        (void)tracer_->rings().poll(10);
    }
    (void)tracer_->rings().flush();
    tracer_->flush_held();
    release(true);
    sink_->flush();
}

}  // namespace mysqltrace::cli
