// SPDX-License-Identifier: GPL-2.0-only
#include "cli/server_duty.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "output/digest_summary.h"
#include "server/duty_cycle.h"
#include "server/query_counter.h"

namespace mysqltrace::cli {

namespace {

// 20 and 0.5, not 20.000000 and 0.500000.
std::string short_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", v);
    return buf;
}

// A window's records may still be in the rings (and the reader's reorder
// buffer) a while after its detach: it is counted once this much older.
constexpr uint64_t kSettleNs = 1'000'000'000;

}  // namespace

void add_duty_options(CLI::App *cmd, DutyArgs &d) {
    cmd->add_option(
           "--duty", d.duty_pct,
           "Leave-on mode: attach the statement probe only this percent of the time, one "
           "window per --duty-period at a random phase, and print per-digest summaries "
           "(--format digests, or digests-json for JSON lines): each digest's share of the "
           "statements seen times the exact number of query ids the server took (its "
           "global_query_id counter, read from its memory; by the measured on-time if that "
           "cannot be read), each with a 95% interval computed from the spread between windows, "
           "latency mean/p50/p95/p99, rows and errors per digest, and with --stages sampled "
           "where the time went. A probe left on costs a trap per statement (~1 us, ~8% of a "
           "point select), one on 10% of the time about a tenth of that. Attaching takes "
           "milliseconds and detaching tens of milliseconds (an RCU grace period, the probe "
           "already out); scaled by time, that time is counted at half the window rate with half "
           "of it in the bound (docs/server.md). 100: always on, exact counts")
        ->check(CLI::Range(0.1, 100.0));
    cmd->add_option("--duty-period", d.period_s,
                    "--duty: seconds between the starts of windows (the window is --duty% of "
                    "it); shorter periods give more windows and tighter random bounds, but each "
                    "period has two probe swaps (~40 ms on a busy 2-CPU machine; with counts "
                    "scaled by time they widen the swap term)")
        ->check(CLI::Range(0.01, 3600.0))
        ->capture_default_str();
    cmd->add_option("--interval", d.interval_s,
                    "Digest summaries: print one every this many seconds (cumulative since the "
                    "start; windows count once their records are in, ~1 s after they close), "
                    "and the final one at the end")
        ->check(CLI::Range(0.0, 86400.0));
}

int run_server_duty(const server::ServerTarget &target, server::StatementTracerOptions opts,
                    const DutyArgs &d, const TraceArgs &t, const GlobalOptions &g,
                    output::OutputFile &o) {
    const bool always_on = d.duty_pct <= 0 || d.duty_pct >= 100;
    server::StatementTracer *tracer_ptr = nullptr;
    server::DutyCycle *cycle_ptr = nullptr;
    output::DigestSummary summary([&tracer_ptr](uint64_t addr) {
        return tracer_ptr ? tracer_ptr->stage_name_at(addr) : std::string();
    });
    uint64_t statements = 0, outside = 0, filtered = 0;
    auto on_statement = [&](const server::Statement &st) {
        statements++;
        const long w = cycle_ptr ? cycle_ptr->window_of(st.end_ns) : -1;
        if (w < 0) {
            outside++;  // fired while the probe was being attached or detached
            return;
        }
        if ((!d.db.empty() && st.db != d.db) ||
            (!d.user.empty() && tracer_ptr->accounts().of(st.thread_id).user != d.user)) {
            filtered++;
            return;
        }
        summary.add(st, static_cast<size_t>(w));
    };
    opts.switchable = !always_on;
    auto tracer = server::StatementTracer::attach(target, opts, on_statement);
    if (!tracer) {
        std::cerr << "mysqltrace: " << tracer.error().message << "\n";
        return kExitFailure;
    }
    tracer_ptr = tracer->get();
    if (!(*tracer)->one_probe()) {
        std::cerr << "mysqltrace: --duty and --format digests need the one-probe path: "
                  << (*tracer)->path_note() << "\n";
        return kExitUsage;
    }
    if (!always_on) {
        if (auto r = (*tracer)->set_statement_probes(false); !r) {
            std::cerr << "mysqltrace: " << r.error().message << "\n";
            return kExitFailure;
        }
    }
    // The server's query id counter: the exact number of statements, by
    // which the windows' counts are scaled (else by time).
    std::optional<server::QueryIdCounter> qid;
    if (!always_on) {
        if (auto c = server::QueryIdCounter::open(target)) {
            qid = *c;
        } else {
            std::cerr << "mysqltrace: counts scaled by time, not by query ids: "
                      << c.error().message << "\n";
        }
    }
    server::DutyOptions dopts;
    dopts.fraction = always_on ? 1.0 : d.duty_pct / 100.0;
    dopts.period_ns = static_cast<uint64_t>(d.period_s * 1e9);
    if (const char *seed = std::getenv("MYSQLTRACE_DUTY_SEED")) {
        dopts.seed = std::strtoull(seed, nullptr, 10);
    }
    // Before the cycle's thread starts: it must not take a Ctrl-C.
    trace::block_stop_signals();
    auto *tr = tracer->get();
    server::DutyCycle cycle(
        dopts, [tr](bool on) { return tr->set_statement_probes(on); },
        [tr] { return tr->rings().stats().dropped; },
        qid ? server::DutyCycle::QueryId([&qid]() -> std::optional<uint64_t> {
            auto v = qid->read();
            return v ? std::optional<uint64_t>(*v) : std::nullopt;
        })
            : server::DutyCycle::QueryId());
    cycle_ptr = &cycle;
    std::cerr << "mysqltrace: tracing statements of pid " << target.pid << " ("
              << (*tracer)->path_note() << "; "
              << (always_on ? std::string("probe attached all the time, exact counts")
                            : "probe attached " + short_number(d.duty_pct) + "% of each " +
                                  short_number(d.period_s) +
                                  " s period, at a random phase: counts are estimates, scaled by " +
                                  (qid ? "the server's " + qid->symbol() : std::string("time")))
              << "); Ctrl-C to stop\n";

    auto write_summary = [&](bool final) {
        const auto windows = cycle.windows();
        const uint64_t end = final ? cycle.end_ns() : server::monotonic_ns();
        size_t complete = 0;
        output::WindowReport r;
        if (always_on) {
            r = output::report_windows({}, cycle.start_ns(), end, end, true, &complete);
            r.set.add(r.set.elapsed_s);
            complete = windows.size();
            if (final && !windows.empty()) {
                r.drop_windows = windows[0].drops ? 1 : 0;
                r.drops = windows[0].drops;
            }
        } else {
            // Read after the windows were copied: one opened since is unsampled time.
            const auto qid_end = cycle.query_id_end();
            r = output::report_windows(windows, cycle.start_ns(), end,
                                       final ? end : end - std::min(end, kSettleNs), false,
                                       &complete, cycle.query_id_start(), qid_end);
        }
        summary.settle(complete, windows);
        o.write(d.json ? summary.json(r, static_cast<uint64_t>(target.pid)) : summary.text(r));
        o.flush();
    };
    trace::LoopOptions lo;
    lo.duration_s = t.duration;
    lo.reader_nice = t.reader_nice;
    lo.targets = {target.pid};
    uint64_t next_summary =
        d.interval_s > 0 ? cycle.start_ns() + static_cast<uint64_t>(d.interval_s * 1e9) : 0;
    lo.on_tick = [&] {
        (*tracer)->refresh_clock();
        if (next_summary && server::monotonic_ns() >= next_summary) {
            write_summary(false);
            next_summary += static_cast<uint64_t>(d.interval_s * 1e9);
        }
        if (g.verbose > 0) {
            std::cerr << "mysqltrace: " << statements << " statements in " << cycle.windows().size()
                      << " windows, " << (*tracer)->rings().stats().dropped << " dropped\n";
        }
    };
    lo.all_exited = [&] { return cycle.failure().has_value(); };
    auto stop = trace::run_loop((*tracer)->rings(), lo);
    cycle.stop();
    auto flushed = (*tracer)->rings().flush();
    (*tracer)->flush_held();
    write_summary(true);
    std::string totals = std::to_string(statements) + " statements seen";
    if (filtered) {
        totals += " (" + std::to_string(filtered) + " filtered out)";
    }
    if (outside && g.verbose > 0) {
        totals += ", " + std::to_string(outside) + " in attach or detach calls (not counted)";
    }
    if ((*tracer)->undecodable()) {
        totals += ", " + std::to_string((*tracer)->undecodable()) + " undecodable records";
    }
    const int rc = report_end(totals, (*tracer)->rings().stats(), stop, flushed);
    if (auto f = cycle.failure()) {
        std::cerr << "mysqltrace: the duty cycle stopped: " << f->message << "\n";
        return kExitFailure;
    }
    return rc;
}

}  // namespace mysqltrace::cli
