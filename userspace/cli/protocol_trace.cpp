// SPDX-License-Identifier: GPL-2.0-only
#include "cli/protocol_trace.h"

#include <iostream>
#include <set>

#include "client/connection_table.h"
#include "client/socket_capture.h"
#include "output/output_file.h"
#include "output/protocol_json.h"
#include "output/protocol_text.h"
#include "trace/trace_loop.h"

namespace mysqltrace::cli {

void add_protocol_options(CLI::App *cmd, ProtocolArgs &a) {
    add_trace_options(cmd, a, {"text", "json"});
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
}

int run_protocol_trace(const ProtocolArgs &a, const ProtocolSession &s, const GlobalOptions &g) {
    auto out = open_trace_output(a, s.to_stderr);
    if (!out) {
        std::cerr << "mysqltrace: " << out.error().message << "\n";
        return kExitFailure;
    }
    auto &o = **out;
    const bool json = a.format == "json";
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
        if (g.verbose > 0) {
            std::cerr << "mysqltrace: connection " << c.id << ": pid " << c.pid << " fd " << c.fd
                      << (c.peer.empty() ? "" : " to " + c.peer)
                      << (c.from_start ? ""
                                       : " (open before the trace: joined at the next command)")
                      << "\n";
        }
    };
    std::string line;  // reused: a busy trace renders ~10 events per command
    if (!a.summary_only) {
        cb.on_event = [&](const protocol::ProtocolEvent &ev) {
            if (json) {
                o.write(output::render_protocol_json(ev, json_opts));
                return;
            }
            line.clear();
            output::append_protocol_text(line, ev, text_opts);
            o.write(line);
        };
        cb.on_api_call = [&](const protocol::ApiCall &call) {
            o.write(json ? output::render_api_call_json(call)
                         : output::render_api_call_text(call, text_opts));
        };
    }
    if (!a.no_summary) {
        cb.on_summary = [&](const protocol::CommandSummary &sum) {
            if (json) {
                o.write(output::render_command_summary_json(sum));
                return;
            }
            line.clear();
            output::append_command_summary_text(line, sum, text_opts);
            o.write(line);
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
        live.erase(pid);
        if (g.verbose > 0) {
            std::cerr << "mysqltrace: process " << pid << " exited\n";
        }
    };
    sinks.on_fork = [&](uint32_t parent, uint32_t child) {
        live.insert(child);
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
    lo.on_tick = [&] {
        o.flush();
        if (g.verbose > 0) {
            auto st = capture->rings().stats();
            std::cerr << "mysqltrace: " << table.stats().connections << " connections, "
                      << table.stats().events << " events, " << st.dropped << " dropped\n";
        }
    };
    auto stop = trace::run_loop(capture->rings(), lo);
    auto flushed = capture->rings().flush();
    o.flush();
    const auto &ts = table.stats();
    std::string totals = std::to_string(ts.connections) + " connections, " +
                         std::to_string(ts.commands) + " commands, " + std::to_string(ts.events) +
                         " events, " + std::to_string(ts.bytes) + " bytes";
    if (ts.bytes_not_copied > 0) {
        totals += " (" + std::to_string(ts.bytes_not_copied) + " beyond --snaplen)";
    }
    return report_end(totals, capture->rings().stats(), stop, flushed);
}

}  // namespace mysqltrace::cli
