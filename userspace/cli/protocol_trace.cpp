// SPDX-License-Identifier: GPL-2.0-only
#include "cli/protocol_trace.h"

#include <iostream>
#include <set>

#include "cli/client_otlp.h"
#include "cli/joined_trace.h"
#include "client/connection_table.h"
#include "client/socket_capture.h"
#include "output/output_file.h"
#include "output/protocol_json.h"
#include "output/protocol_text.h"
#include "trace/trace_loop.h"

namespace mysqltrace::cli {

void add_protocol_options(CLI::App *cmd, ProtocolArgs &a) {
    add_trace_options(cmd, a, {"text", "json", "otlp"});
    cmd->add_option("--snaplen", a.snaplen, "Bytes copied per socket call (true length kept)")
        ->check(CLI::Range(64, MT_MAX_SNAPLEN))
        ->capture_default_str();
    cmd->add_flag("--dump", a.dump, "Add hex dumps of packets");
    cmd->add_flag("--show-secrets", a.show_secrets,
                  "Do not redact authentication data and password literals");
    auto *no_summary = cmd->add_flag("--no-summary", a.no_summary, "No per-command summary lines");
    cmd->add_flag("--summary-only", a.summary_only,
                  "Only one line per command (statement, result, rows, bytes, server wait): a "
                  "query log, and much cheaper than every protocol event")
        ->excludes(no_summary);
    cmd->add_option(
           "--otlp", a.otlp,
           "Also export every command as an OpenTelemetry CLIENT span over OTLP/HTTP (JSON) to "
           "this collector (its base URL, e.g. http://localhost:4318; /v1/traces is appended), "
           "with the database semantic conventions' attributes (the statement redacted unless "
           "--show-secrets); a statement whose sqlcommenter comment carries a W3C traceparent "
           "joins that trace. Batches of up to 512 spans are sent from a thread of their own "
           "through a bounded queue: a collector that is down or slow costs dropped spans "
           "(counted at the end), never a stalled trace. --format otlp writes the same batches "
           "as JSON lines. Command durations also go to /v1/metrics as the histogram "
           "db.client.operation.duration, every OTEL_METRIC_EXPORT_INTERVAL ms (60000) and at "
           "the end")
        ->option_text("URL");
    cmd->add_option("--otlp-queue", a.otlp_queue,
                    "--otlp: batches (of up to 512 spans, or a second's) that may wait for the "
                    "collector; past that a batch is dropped and its spans counted")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    cmd->add_option(
           "--server-pid", a.server_pid,
           "With --otlp or --format otlp: also trace this local mariadbd/mysqld's statements (one "
           "probe each, as `mysqltrace server`) and export each as a SERVER span that is a child "
           "of the client command's span it served (same connection id, overlapping times): one "
           "statement, one trace. Statements of connections not traced here go out on their own")
        ->option_text("PID");
}

int run_protocol_trace(const ProtocolArgs &a, const ProtocolSession &s, const GlobalOptions &g) {
    auto out = open_trace_output(a, s.to_stderr);
    if (!out) {
        std::cerr << "mysqltrace: " << out.error().message << "\n";
        return kExitFailure;
    }
    auto &o = **out;
    const bool json = a.format == "json";
    // --format otlp: the output gets OTLP JSON lines only.
    const bool otlp_file = a.format == "otlp";
    if (otlp_file && a.dump) {
        std::cerr << "mysqltrace: --dump adds hex dumps to --format text and json; --format otlp "
                     "has no place for them\n";
        return kExitUsage;
    }
    std::unique_ptr<ClientOtlpSink> otlp;
    std::unique_ptr<ServerJoin> join;
    if (a.server_pid != 0 && !otlp_file && a.otlp.empty()) {
        std::cerr << "mysqltrace: --server-pid joins the server's statement spans to the client "
                     "spans: use it with --otlp URL or --format otlp\n";
        return kExitUsage;
    }
    if (otlp_file || !a.otlp.empty()) {
        auto sink = ClientOtlpSink::open(otlp_file ? &o : nullptr, a.otlp, a.otlp_queue);
        if (!sink) {
            std::cerr << "mysqltrace: " << sink.error().message << "\n";
            return kExitUsage;
        }
        otlp = std::move(sink).value();
        if (a.server_pid != 0) {
            ServerJoinOptions jo;
            jo.show_secrets = a.show_secrets;
            jo.ring_bytes_per_cpu = a.ring_kib << 10;
            auto j = ServerJoin::attach(a.server_pid, otlp->channel(), jo);
            if (!j) {
                std::cerr << "mysqltrace: " << j.error().message << "\n";
                return kExitFailure;
            }
            join = std::move(j).value();
            otlp->on_span =
                [&join](const protocol::CommandSummary &sum, const output::ClientConnection &conn,
                        const output::SpanContext &ctx) { join->client_span(sum, conn, ctx); };
        }
        for (size_t i = 0; i < s.pids.size(); i++) {
            otlp->process_seen(static_cast<uint32_t>(s.pids[i]), i == 0 ? s.executable : "");
        }
    }
    output::ProtocolTextOptions text_opts;
    text_opts.dump = a.dump;
    text_opts.timestamps = true;
    output::Clock clock;
    text_opts.clock = &clock;
    output::ProtocolJsonOptions json_opts;
    json_opts.dump = a.dump;

    protocol::TracerOptions topts;
    topts.show_secrets = a.show_secrets;
    topts.keep_packets = a.dump;

    std::unique_ptr<client::SocketCapture> capture;
    client::ConnectionTable::Callbacks cb;
    cb.on_connection = [&](const client::ConnectionInfo &c) {
        if (otlp) {
            otlp->connection(c);
        }
        if (g.verbose > 0) {
            std::cerr << "mysqltrace: connection " << c.id << ": pid " << c.pid << " fd " << c.fd
                      << (c.peer.empty() ? "" : " to " + c.peer)
                      << (c.from_start ? ""
                                       : " (open before the trace: joined at the next command)")
                      << "\n";
        }
    };
    if (otlp_file) {
        // The spans are the output: the events only keep each connection's
        // server, schema and connection id up to date.
        cb.on_event = [&](const protocol::ProtocolEvent &ev) { otlp->event(ev); };
    } else if (!a.summary_only) {
        cb.on_event = [&](const protocol::ProtocolEvent &ev) {
            if (otlp) {
                otlp->event(ev);
            }
            std::string &line = o.line();
            if (json) {
                output::append_protocol_json(line, ev, json_opts);
            } else {
                output::append_protocol_text(line, ev, text_opts);
            }
            o.end_line();
        };
        cb.on_api_call = [&](const protocol::ApiCall &call) {
            std::string &line = o.line();
            if (json) {
                output::append_api_call_json(line, call);
            } else {
                output::append_api_call_text(line, call, text_opts);
            }
            o.end_line();
        };
    } else if (otlp) {
        cb.on_event = [&](const protocol::ProtocolEvent &ev) { otlp->event(ev); };
    } else {
        // Nothing reads the events (only counts them): the tracers build
        // none of their fields and lines, only the command summaries.
        topts.event_contents = false;
    }
    if (otlp_file) {
        cb.on_summary = [&](const protocol::CommandSummary &sum) { otlp->summary(sum); };
    } else if (!a.no_summary || otlp) {
        cb.on_summary = [&](const protocol::CommandSummary &sum) {
            if (otlp) {
                otlp->summary(sum);
            }
            if (a.no_summary) {
                return;
            }
            std::string &line = o.line();
            if (json) {
                output::append_command_summary_json(line, sum);
            } else {
                output::append_command_summary_text(line, sum, text_opts);
            }
            o.end_line();
        };
    }
    cb.set_verdict = [&](uint64_t sock, uint8_t state) {
        if (capture) {
            capture->set_verdict(sock, state);
        }
    };
    client::ConnectionTable table(topts, cb);

    client::CaptureOptions copts;
    copts.pids = s.pids;
    copts.snaplen = a.snaplen;
    copts.follow_forks = s.follow_forks;
    copts.tls = s.tls;
    copts.java_agent = s.java_agent;
    copts.shim_path = s.shim_path;
    copts.shim_api = s.shim_api;
    copts.ring.bytes_per_cpu = a.ring_kib << 10;
    client::CaptureSinks sinks;
    sinks.on_sock = [&](const client::SockRecord &r) { table.on_record(r); };
    sinks.on_api = [&](const client::ApiRecord &r) { table.on_api(r); };
    // Processes traced now: the given ones, plus children when following forks.
    std::set<uint32_t> live(s.pids.begin(), s.pids.end());
    sinks.on_exit = [&](uint32_t pid, uint64_t ts) {
        table.on_process_exit(pid, ts);
        if (otlp) {
            otlp->process_exit(pid);
        }
        live.erase(pid);
        if (g.verbose > 0) {
            std::cerr << "mysqltrace: process " << pid << " exited\n";
        }
    };
    sinks.on_fork = [&](uint32_t parent, uint32_t child) {
        live.insert(child);
        if (otlp) {
            otlp->process_forked(parent, child);
        }
        if (g.verbose > 0) {
            std::cerr << "mysqltrace: following fork " << parent << " -> " << child << "\n";
        }
    };
    auto cap = client::SocketCapture::attach(copts, sinks);
    if (!cap) {
        std::cerr << "mysqltrace: " << cap.error().message << "\n";
        return kExitFailure;
    }
    capture = std::move(cap).value();
    for (const auto &w : capture->tls_warnings()) {
        std::cerr << "mysqltrace: warning: " << w << "\n";
    }
    for (const auto &n : capture->notes()) {
        std::cerr << "mysqltrace: " << n << "\n";
    }
    if (g.verbose > 0) {
        for (const auto &t : capture->tls_probes()) {
            std::cerr << "mysqltrace: TLS cleartext from " << t << "\n";
        }
    }
    if (otlp && !a.otlp.empty()) {
        std::cerr << output::otlp_export_lines(*otlp->channel());
    }
    if (join) {
        std::cerr << "mysqltrace: with " << join->banner() << "\n";
    }
    trace::block_stop_signals();
    std::cerr << "mysqltrace: " << s.banner << "; Ctrl-C to stop\n";
    if (s.started) {
        if (auto r = s.started(); !r) {
            std::cerr << "mysqltrace: " << r.error().message << "\n";
            return kExitFailure;
        }
    }

    trace::LoopOptions lo;
    lo.duration_s = a.duration;
    lo.reader_nice = a.reader_nice;
    lo.on_signal = s.on_signal;
    if (s.end_with_first) {
        lo.targets = {s.pids.front()};
    } else if (s.follow_forks) {
        // Children may outlive the processes named: stop when the last
        // traced process, named or forked, has exited.
        lo.all_exited = [&] { return live.empty(); };
    } else {
        lo.targets = s.pids;
    }
    if (join) {
        lo.more_rings = {&join->rings()};
    }
    lo.on_tick = [&] {
        if (join) {
            join->tick();
        }
        if (otlp) {
            otlp->tick();
        }
        o.flush();
        if (g.verbose > 0) {
            auto st = capture->rings().stats();
            std::cerr << "mysqltrace: " << table.stats().connections << " connections, "
                      << table.stats().events << " events, " << st.dropped << " dropped\n";
        }
    };
    auto stop = trace::run_loop(capture->rings(), lo);
    auto flushed = capture->rings().flush();
    // The exporter gets a few seconds to send what is queued: a collector
    // that is down does not hold the end of the trace longer.
    if (join) {
        join->finish();
    }
    const std::string spans = otlp ? otlp->finish(std::chrono::seconds(3)) : "";
    o.flush();
    const auto &ts = table.stats();
    std::string totals = std::to_string(ts.connections) + " connections, " +
                         std::to_string(ts.commands) + " commands, " + std::to_string(ts.events) +
                         " events, " + std::to_string(ts.bytes) + " bytes";
    if (ts.bytes_not_copied > 0) {
        totals += " (" + std::to_string(ts.bytes_not_copied) + " beyond --snaplen)";
    }
    if (ts.ignored_sockets > 0) {
        // A trace that found no connection says what it did see.
        totals += ", " + std::to_string(ts.ignored_sockets) + " sockets judged not MySQL";
    }
    if (join) {
        totals += ", " + std::to_string(join->statements()) + " server statements (" +
                  std::to_string(join->joined()) + " joined to their client span)";
    }
    if (otlp) {
        totals += ", " + spans;
    }
    return report_end(totals, capture->rings().stats(), stop, flushed);
}

}  // namespace mysqltrace::cli
