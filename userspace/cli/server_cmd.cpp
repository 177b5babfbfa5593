// SPDX-License-Identifier: GPL-2.0-only
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <span>

#include "bpf/ring_set.h"
#include "cli/command.h"
#include "cli/server_duty.h"
#include "cli/server_otlp.h"
#include "output/otlp_sink.h"
#include "doctor/trace_plan.h"
#include "output/lock_render.h"
#include "output/output_file.h"
#include "output/pfs_sql.h"
#include "output/server_render.h"
#include "output/server_threads.h"
#include "output/server_txn.h"
#include "output/slowlog.h"
#include "server/locks.h"
#include "server/statement_tracer.h"
#include "server/wait_placer.h"
#include "trace/trace_loop.h"

namespace mysqltrace::cli {

namespace {

struct ServerArgs : TraceArgs {
    pid_t pid = 0;
    uint32_t max_sql = 65536;
    std::string stages = "sampled";
    uint32_t sample_hz = 997;
    uint64_t thread_id = 0;
    uint64_t max_statements = 0;
    double stage_duration = 0;
    bool waits = false;
    bool table_io = false;
    bool threads = false;
    bool transactions = false;
    bool locks = false;
    double min_duration_ms = 0;
    std::string db;
    std::string user;
    bool show_secrets = false;
    bool every_command = false;
    std::string otlp;  // the collector's base URL
    size_t otlp_queue = 64;
    DutyArgs duty;  // --duty, --duty-period, --interval (cli/server_duty.h)
};

server::StageMode stage_mode(const std::string &s) {
    if (s == "exact") {
        return server::StageMode::exact;
    }
    if (s == "traps") {
        return server::StageMode::traps;
    }
    return s == "off" ? server::StageMode::off : server::StageMode::sampled;
}

int run_server(const ServerArgs &a, const GlobalOptions &g) {
    auto target = server::resolve_server(a.pid);
    if (!target) {
        std::cerr << "mysqltrace: " << target.error().message;
        // A server build the analysis does not understand: doctor names
        // every hook and field it found or missed.
        // Not for a binary over an analysis limit: doctor would stop there too.
        if (target.error().code != ESRCH && target.error().code != ENOEXEC &&
            target.error().code != EFBIG) {
            std::cerr << " (`mysqltrace doctor --pid " << a.pid << "` shows what this build has)";
        }
        std::cerr << "\n";
        return kExitFailure;
    }
    const bool mysql8 = target->profile == server::ServerProfile::mysql8;
    const auto plan = doctor::plan_trace(*target, stage_mode(a.stages), a.pid);
    for (const auto &note : plan.notes) {
        std::cerr << "mysqltrace: " << note << "\n";
    }
    if (g.verbose > 0) {
        const auto &l = target->layout;
        std::cerr << std::hex << "mysqltrace: dispatch_command probe at file offset 0x"
                  << target->dispatch_site.offset << " (" << target->dispatch_site.instruction
                  << "), " << (mysql8 ? "dispatch_sql_command" : "mysql_parse") << " at 0x"
                  << target->parse_site.offset << ", end of command at 0x" << target->end_offset
                  << "; THD: thread_id +0x" << l.thread_id << ", proc_info +0x" << l.proc_info
                  << ", stmt_da +0x" << l.stmt_da << std::dec << "; " << target->stages.size()
                  << " stage sites\n";
    }
    if (g.verbose > 1) {
        for (size_t i = 0; i < target->stages.size(); i++) {
            const auto &st = target->stages[i];
            std::cerr << "mysqltrace: stage site " << i << " at 0x" << std::hex << st.probe_offset
                      << std::dec << ": "
                      << (st.stage_name.empty() ? "(stage read at run time)" : st.stage_name)
                      << " in " << (st.function.empty() ? "?" : st.function) << " "
                      << st.source_file << ":" << st.source_line << "\n";
        }
    }
    // pfs-sql writes WL#4878 trace files into a directory; the summaries
    // then go to stdout.
    const bool pfs_sql = a.format == "pfs-sql";
    if (pfs_sql && a.output.empty()) {
        std::cerr << "mysqltrace: --format pfs-sql needs --output DIR (one trace file per "
                     "server thread goes there)\n";
        return kExitUsage;
    }
    if (pfs_sql && a.rotate_size > 0) {
        std::cerr << "mysqltrace: --rotate-size rotates an --output file, not the pfs-sql "
                     "trace directory\n";
        return kExitUsage;
    }
    std::unique_ptr<output::PfsSqlWriter> trace_files;
    if (pfs_sql) {
        auto w = output::PfsSqlWriter::open(a.output);
        if (!w) {
            std::cerr << "mysqltrace: " << w.error().message << "\n";
            return kExitFailure;
        }
        trace_files = std::move(w).value();
    }
    auto out = pfs_sql ? output::OutputFile::open("") : open_trace_output(a);
    if (!out) {
        std::cerr << "mysqltrace: " << out.error().message << "\n";
        return kExitFailure;
    }
    auto &o = **out;
    // --format otlp: the output gets OTLP JSON lines only.
    const bool otlp_file = a.format == "otlp";
    const auto format = a.format == "json"      ? output::ServerFormat::json
                        : a.format == "profile" ? output::ServerFormat::profile
                        : pfs_sql               ? output::ServerFormat::pfs_sql
                                                : output::ServerFormat::text;
    server::StatementTracer *tracer_ptr = nullptr;
    output::ServerRenderer render(
        format, static_cast<uint32_t>(a.pid), target->stages, [&tracer_ptr](uint64_t addr) {
            return tracer_ptr ? tracer_ptr->stage_name_at(addr) : std::string();
        });
    // The slow log takes statements only: no header, waits or summaries.
    const bool slowlog = a.format == "slowlog";
    const bool digests = a.duty.duty_pct > 0 || a.format.starts_with("digests");
    output::SlowlogRenderer slow;
    if (!slowlog && !digests && !otlp_file) {
        o.write(render.header());
    }
    uint64_t statements = 0, shown = 0, failed = 0, with_stages = 0;
    bool stages_detached = false;
    std::map<std::string, uint64_t> per_name;
    server::StatementTracerOptions opts;
    opts.max_sql = a.max_sql;
    opts.stages = plan.stages;
    opts.sample_hz = a.sample_hz;
    opts.only_thread_id = a.thread_id;
    opts.min_duration_ns = static_cast<uint64_t>(a.min_duration_ms * 1e6);
    opts.ring.bytes_per_cpu = a.ring_kib << 10;
    opts.waits = a.waits;
    opts.table_io = a.table_io;
    opts.show_secrets = a.show_secrets;
    opts.memory = a.format == "json";
    // The slow log prints an EXECUTE with its values; performance_schema
    // with its `?`.
    opts.prepared_text = !slowlog;
    opts.db = a.db;
    opts.user = a.user;
    opts.one_probe = !a.every_command;
    server::WaitNamer namer(a.pid, target->file, target->load_bias,
                            mysql8 ? server::FileNaming::mysql : server::FileNaming::mariadb);
    // Accounts are sent only for what needs them: trace file names, --user,
    // the slow log's User@Host.
    opts.accounts = pfs_sql || !a.user.empty() || slowlog;
    if (!a.user.empty() && (target->layout.security_ctx < 0 || target->layout.sctx_user < 0)) {
        std::cerr << "mysqltrace: --user: cannot find where this build keeps a connection's "
                     "account ("
                  << (mysql8 ? "no thd_get_security_context() storing THD::m_security_ctx, or "
                               "no Security_context::user() returning {ptr, length}"
                             : "no thd_user_name() accessor that loads it")
                  << "); statements, stages, --waits and --table-io work without --user\n";
        return kExitFailure;
    }
    if (!digests && a.duty.interval_s > 0) {
        std::cerr << "mysqltrace: --interval prints digest summaries: use it with --duty or "
                     "--format digests\n";
        return kExitUsage;
    }
    if ((a.threads || a.transactions) && (slowlog || pfs_sql || digests || otlp_file)) {
        std::cerr << "mysqltrace: --threads and --transactions are written by --format text "
                     "and json"
                  << (digests ? " without --duty" : "") << "; --format " << a.format
                  << " has no place for them\n";
        return kExitUsage;
    }
    if (a.locks && (slowlog || digests || otlp_file)) {
        std::cerr << "mysqltrace: --locks writes its waits and blocking tree with --format text, "
                     "json, profile and pfs-sql"
                  << (digests ? " without --duty" : "") << "; --format " << a.format
                  << " has no place for them\n";
        return kExitUsage;
    }
    if (digests && !a.otlp.empty()) {
        std::cerr << "mysqltrace: --otlp exports every statement as a span; --duty and the "
                     "digest formats see only part of them\n";
        return kExitUsage;
    }
    if (digests) {
        if (a.format != "text" && a.format != "json" && !a.format.starts_with("digests")) {
            std::cerr << "mysqltrace: --duty sees part of the statements: it prints digest "
                         "summaries (--format digests or digests-json), not --format "
                      << a.format << "\n";
            return kExitUsage;
        }
        DutyArgs d = a.duty;
        d.json = a.format == "json" || a.format == "digests-json";
        d.db = a.db;
        d.user = a.user;
        return run_server_duty(*target, opts, d, a, g, o);
    }
    std::unique_ptr<output::OtlpSink> otlp;
    if (otlp_file || !a.otlp.empty()) {
        auto sink = output::OtlpSink::open(server_otlp_resource(*target, a.pid),
                                           otlp_file ? &o : nullptr, a.otlp, a.otlp_queue);
        if (!sink) {
            std::cerr << "mysqltrace: " << sink.error().message << "\n";
            return kExitUsage;
        }
        otlp = std::move(sink).value();
    }
    auto account_of = [&tracer_ptr](uint64_t thread_id) -> const server::Account & {
        return tracer_ptr->accounts().of(thread_id);
    };
    auto other_user = [&](uint64_t thread_id) {
        return !a.user.empty() && account_of(thread_id).user != a.user;
    };
    output::Clock conn_clock;  // text lines of connections and transactions
    // Waits that began in a statement wait for it (its record comes at its
    // end); those of statements filtered out are dropped with them. On the
    // one-probe path every wait waits for its thread's next statement
    // (server/wait_placer.h).
    server::WaitPlacer<output::NamedWait> placer;
    server::WaitPlacer<output::NamedWait>::Placed placed;
    uint64_t waits = 0;
    auto write_wait = [&](const output::NamedWait &nw) {
        o.write(render.wait(nw));
        if (trace_files) {
            trace_files->write_block(nw.wait.thread_id, account_of(nw.wait.thread_id).actor(),
                                     render.last_events());
        }
    };
    // The statement at hand's waits in placed.in; the thread's idle wait
    // before it (one-probe path) is written.
    auto take_waits = [&](const server::Statement &st) {
        placer.place(st, placed);
        if (slowlog || otlp_file) {
            return;
        }
        if (placed.idle && !(a.thread_id && st.thread_id != a.thread_id) &&
            !other_user(st.thread_id)) {
            waits++;
            write_wait(output::NamedWait{*placed.idle, namer.name(*placed.idle)});
        }
    };
    const std::vector<output::NamedWait> &st_waits = placed.in;
    auto on_wait = [&](const server::Wait &w) {
        if ((a.thread_id && w.thread_id != a.thread_id) || other_user(w.thread_id)) {
            return;
        }
        output::NamedWait nw{w, namer.name(w)};
        if (!nw.name.report) {
            return;
        }
        waits++;
        if (placer.holds(w)) {
            placer.hold(std::move(nw));
            return;
        }
        placer.written(w);
        if (!slowlog && !otlp_file) {
            write_wait(nw);
        }
    };
    const auto started = std::chrono::steady_clock::now();
    auto maybe_detach = [&] {
        if (stages_detached || tracer_ptr == nullptr || tracer_ptr->stage_probe_count() == 0) {
            return;
        }
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if ((a.max_statements && with_stages >= a.max_statements) ||
            (a.stage_duration > 0 && elapsed >= a.stage_duration)) {
            tracer_ptr->detach_stages();
            stages_detached = true;
            std::cerr << "mysqltrace: exact stage probes detached after " << with_stages
                      << " statements; tracing statements only (" << tracer_ptr->probe_count()
                      << " probes)\n";
        }
    };
    // --transactions: events_transactions_*-shaped events, written as each
    // transaction ends (before the statement that ended it).
    std::unique_ptr<server::Transactions> txns;
    std::string txn_line;
    std::function<void(const server::Transaction &)> write_txn;
    if (a.transactions && !slowlog && !pfs_sql) {
        if (target->layout.option_bits < 0 || target->layout.multi_statement_mask == 0) {
            std::cerr << "mysqltrace: --transactions: cannot learn THD::variables.option_bits "
                         "from thd_test_options() or the bits trans_begin() tests; statements "
                         "work without it\n";
            return kExitFailure;
        }
        txns = std::make_unique<server::Transactions>(
            target->layout, server::start_clock_shift_us(target->layout),
            [&render](uint64_t id) { return render.take_event_id(id); });
        write_txn = [&](const server::Transaction &t) {
            if ((a.thread_id && t.thread_id != a.thread_id) || other_user(t.thread_id)) {
                return;
            }
            txn_line.clear();
            if (format == output::ServerFormat::json) {
                output::transaction_json(txn_line, static_cast<uint32_t>(a.pid), t);
            } else {
                output::transaction_text(txn_line, conn_clock, t);
            }
            o.write(txn_line);
        };
        opts.on_transaction_record = [&](std::span<const uint8_t> rec) {
            return txns->decode(rec, write_txn);
        };
    }
    auto on_statement = [&](const server::Statement &st) {
        statements++;
        take_waits(st);
        if ((!a.db.empty() && st.db != a.db) || other_user(st.thread_id)) {
            return;
        }
        shown++;
        failed += st.failed() ? 1 : 0;
        with_stages += st.stages.empty() ? 0 : 1;
        per_name[render.event_name(st)]++;
        if (otlp_file) {
            otlp->statement(st, render, st_waits);
            maybe_detach();
            return;
        }
        if (slowlog) {
            if (otlp) {
                otlp->statement(st, render, st_waits);
            }
            o.write(slow.statement(st, account_of(st.thread_id)));
            maybe_detach();
            return;
        }
        if (txns) {
            // The statement inside a transaction names it (a copy: the
            // tracer's record is read-only here, and this mode is opt-in).
            server::Statement nested = st;
            nested.transaction_event_id = txns->nest(st, write_txn);
            o.write(render.statement(nested, st_waits));
        } else {
            o.write(render.statement(st, st_waits));
        }
        if (otlp) {
            otlp->statement(st, render, st_waits);
        }
        if (trace_files) {
            trace_files->write_block(st.thread_id, account_of(st.thread_id).actor(),
                                     render.last_events());
        }
        maybe_detach();
    };
    // --threads: connections as they log in and end (not in the slow log,
    // whose format has no place for them, nor in the WL#4878 files yet).
    std::string conn_line;
    if (a.threads && !slowlog && !pfs_sql) {
        opts.on_connection = [&](const server::Connection &c) {
            if ((a.thread_id && c.thread_id != a.thread_id) ||
                (!a.user.empty() && c.user != a.user)) {
                return;
            }
            conn_line.clear();
            if (format == output::ServerFormat::json) {
                output::connection_json(conn_line, static_cast<uint32_t>(a.pid), c);
            } else {
                output::connection_text(conn_line, conn_clock, c);
            }
            o.write(conn_line);
        };
    }
    // --locks: waits come out with the statement that waited, the tree at the end.
    server::LockTracker locks(mysql8, [&tracer_ptr](uint64_t addr) {
        return tracer_ptr ? tracer_ptr->stage_name_at(addr) : std::string();
    });
    uint64_t lock_waits = 0;
    auto write_locks = [&](bool all) {
        for (const auto &r : locks.take_waits(all)) {
            if ((a.thread_id && r.wait.thread_id != a.thread_id) || slowlog) {
                continue;
            }
            lock_waits++;
            o.write(format == output::ServerFormat::json ? output::lock_wait_json(r)
                                                         : output::lock_wait_text(r));
        }
        for (const auto &i : locks.take_incidents()) {
            if ((a.thread_id && i.thread_id != a.thread_id) || slowlog) {
                continue;
            }
            o.write(format == output::ServerFormat::json ? output::lock_incident_json(i)
                                                         : output::lock_incident_text(i));
        }
    };
    opts.locks = a.locks;
    opts.lock_records = [&locks](std::span<const uint8_t> rec) { locks.on_record(rec); };
    auto traced_statement = [&](const server::Statement &st) {
        on_statement(st);
        if (a.locks) {
            locks.on_statement(st);
            write_locks(false);
        }
    };
    auto tracer = server::StatementTracer::attach(*target, opts, traced_statement, on_wait);
    if (!tracer) {
        std::cerr << "mysqltrace: " << tracer.error().message << "\n";
        return kExitFailure;
    }
    tracer_ptr = tracer->get();
    placer.set_by_time(a.waits && (*tracer)->one_probe());
    if (a.locks) {
        const auto &k = (*tracer)->lock_layout();
        locks.set_row_blockers(k.row_blockers);
        if (!k.missing.empty()) {
            std::cerr << "mysqltrace: --locks on this build: " << k.missing << "\n";
        }
        if (g.verbose > 0) {
            std::cerr << "mysqltrace: --locks: " << k.sites.size()
                      << " probes; MDL_context::m_owner +" << k.ctx_owner << ", THD at owner -"
                      << k.owner_to_thd << ", MDL_ticket m_type +" << k.ticket_type << " m_ctx +"
                      << k.ticket_ctx << " m_lock +" << k.ticket_lock << ", MDL_lock key +"
                      << k.lock_key << ", trx_t mysql_thd +" << k.trx_thd << " lock.wait_trx +"
                      << k.trx_wait_trx << "\n";
        }
    }
    const char *what = opts.stages == server::StageMode::exact     ? "statements and exact stages"
                       : opts.stages == server::StageMode::traps   ? "statements (stage traps only)"
                       : opts.stages == server::StageMode::sampled ? "statements and sampled stages"
                                                                   : "statements";
    if (otlp && !a.otlp.empty()) {
        std::cerr << output::otlp_export_lines(otlp->channel());
    }
    trace::block_stop_signals();
    std::cerr << "mysqltrace: tracing " << what << " of pid " << a.pid << " ("
              << (*tracer)->probe_count() << " probes: " << (*tracer)->path_note()
              << "); Ctrl-C to stop\n";
    if (!(*tracer)->threads_note().empty()) {
        std::cerr << "mysqltrace: --threads: " << (*tracer)->threads_note() << "\n";
    }
    for (const auto &n : (*tracer)->notes()) {
        std::cerr << "mysqltrace: " << n << "\n";
    }
    trace::LoopOptions lo;
    lo.duration_s = a.duration;
    lo.reader_nice = a.reader_nice;
    lo.targets = {a.pid};
    lo.on_tick = [&] {
        (*tracer)->refresh_clock();
        if (txns) {
            txns->set_start_shift_us(server::start_clock_shift_us(target->layout));
        }
        maybe_detach();
        if (otlp) {
            otlp->tick();
        }
        o.flush();
        if (trace_files) {
            trace_files->flush();
        }
        if (g.verbose > 0) {
            auto st = (*tracer)->rings().stats();
            std::cerr << "mysqltrace: " << statements << " statements, " << st.dropped
                      << " dropped\n";
        }
    };
    auto stop = trace::run_loop((*tracer)->rings(), lo);
    auto flushed = (*tracer)->rings().flush();
    (*tracer)->flush_held();
    if (a.locks && !slowlog) {
        write_locks(true);
        const auto edges = locks.tree();
        o.write(format == output::ServerFormat::json ? output::blocking_tree_json(edges)
                                                     : output::blocking_tree_text(edges));
    }
    if (trace_files) {
        trace_files->flush();
    }
    // The exporter gets a few seconds to send what is queued: a collector
    // that is down does not hold the end of the trace longer.
    const std::string spans = otlp ? otlp->finish(std::chrono::seconds(3)) : "";
    if (!slowlog && !otlp_file) {
        o.write(render.summary());
    }
    o.flush();
    std::string totals = std::to_string(statements) + " statements";
    if (shown != statements) {
        totals += " (" + std::to_string(shown) + " shown)";
    }
    if (failed) {
        totals += ", " + std::to_string(failed) + " failed";
    }
    if (a.waits || a.table_io) {
        totals += ", " + std::to_string(waits) + " waits";
    }
    if (txns) {
        totals += ", " + std::to_string(txns->ended()) + " transactions";
    }
    if (opts.on_connection) {
        totals += ", " + std::to_string((*tracer)->connections().connects()) + " connects, " +
                  std::to_string((*tracer)->connections().disconnects()) + " disconnects";
    }
    if (a.locks) {
        totals += ", " + std::to_string(lock_waits) + " lock waits";
    }
    if (otlp) {
        totals += ", " + spans;
    }
    if (trace_files) {
        totals +=
            ", " + std::to_string(trace_files->rows_written()) + " rows in " + trace_files->dir();
        if (trace_files->failed_files()) {
            totals += " (" + std::to_string(trace_files->failed_files()) + " files stopped)";
        }
    }
    std::string by_name;
    for (const auto &[name, n] : per_name) {
        by_name += (by_name.empty() ? " [" : ", ") + name + " " + std::to_string(n);
    }
    if (!by_name.empty() && g.verbose > 0) {
        totals += by_name + "]";
    }
    if ((*tracer)->undecodable()) {
        totals += ", " + std::to_string((*tracer)->undecodable()) + " undecodable records";
    }
    return report_end(totals, (*tracer)->rings().stats(), stop, flushed);
}

}  // namespace

void register_server(CLI::App &app, const GlobalOptions &global, RunFn &run) {
    auto *cmd = app.add_subcommand(
        "server",
        "Trace a running MariaDB or MySQL server: every statement its threads run, with "
        "performance_schema's columns (text, times, errors, rows, schema), per-thread CPU and "
        "I/O, and where the time went by stage. No restart, no performance_schema.");
    auto a = std::make_shared<ServerArgs>();
    cmd->add_option("-p,--pid", a->pid, "Process id of the mariadbd or mysqld to trace")
        ->required();
    add_trace_options(
        cmd, *a,
        {"text", "json", "profile", "pfs-sql", "slowlog", "digests", "digests-json", "otlp"});
    cmd->add_option("--stages", a->stages,
                    "sampled: where time goes by stage, from a CPU timer and context switches "
                    "(cheap, always-on); exact: every stage transition of every statement, "
                    "with per-stage CPU and I/O (one trap per stage: use on a bounded window); "
                    "off: statements only; traps: exact's probes doing nothing (benchmarks)")
        ->check(CLI::IsMember({"sampled", "exact", "off", "traps"}))
        ->capture_default_str();
    cmd->add_flag("--waits", a->waits,
                  "Also waits, as performance_schema's events_waits: contended locks (futex "
                  "waits), file and socket I/O, idle time between commands (syscall "
                  "tracepoints on the server's threads)");
    cmd->add_flag("--table-io", a->table_io,
                  "Also every row a statement reads or writes through its storage engine, as "
                  "wait/io/table/sql/handler waits (OPERATION fetch, insert, update, delete; "
                  "OBJECT_SCHEMA and OBJECT_NAME the table): two probes on the handler's "
                  "method per row, a few microseconds each; for short, focused traces");
    cmd->add_flag("--threads", a->threads,
                  "Also connections, as performance_schema's threads table shows them: one "
                  "line as each connection logs in (user, host, schema, socket or TCP/IP, and "
                  "the connect attributes its client sent, such as program_name, where the "
                  "server hands them over) and one as it ends; three probes per connection, "
                  "none per statement (text and json formats)");
    cmd->add_flag("--transactions", a->transactions,
                  "Also transactions, as performance_schema's events_transactions: state "
                  "(COMMITTED, ROLLED BACK), AUTOCOMMIT, ISOLATION_LEVEL, ACCESS_MODE, times and "
                  "the statements inside, which name their transaction (NESTING_EVENT_TYPE "
                  "TRANSACTION); a probe per statement that uses a transactional engine "
                  "(text and json formats)");
    cmd->add_flag("--locks", a->locks,
                  "Also lock waits: every metadata lock wait (wait/lock/metadata/sql/mdl, with "
                  "the object, the lock type and the connections holding it) and every InnoDB "
                  "lock wait (with the blocking connection where the server reports it, its "
                  "statement and how long its transaction was open), deadlocks and lock wait "
                  "timeouts, and at the end a blocking tree. Probes only the paths a wait "
                  "takes: free while nothing waits");
    cmd->add_option("--sample-hz", a->sample_hz, "Stage samples per second per CPU (sampled)")
        ->check(CLI::Range(1, 10000))
        ->capture_default_str();
    cmd->add_flag("--every-command", a->every_command,
                  "Take an entry and an end probe per command instead of one probe per "
                  "statement at log_slow_statement: also the commands that never reach it "
                  "(MariaDB: COM_INIT_DB, COM_PING, COM_STMT_CLOSE, COM_QUIT, ...), a MySQL "
                  "binary-protocol prepare's text, an SQL EXECUTE's own text, and per-thread "
                  "CPU and I/O counters; about one more trap per statement");
    cmd->add_option("--thread-id", a->thread_id,
                    "Only statements of this connection id (the server's THREAD_ID)");
    cmd->add_option("--db", a->db, "Only statements whose CURRENT_SCHEMA is this");
    cmd->add_option("--user", a->user,
                    "Only statements and waits of connections logged in as this user (the "
                    "account's user name, read once per connection)");
    cmd->add_option("--min-duration", a->min_duration_ms,
                    "Only statements that took at least this long (ms)");
    cmd->add_option("--max-statements", a->max_statements,
                    "Exact stages: detach the stage probes after this many statements; "
                    "statements go on being traced");
    cmd->add_option("--stage-duration", a->stage_duration,
                    "Exact stages: detach the stage probes after this many seconds");
    cmd->add_option(
           "--otlp", a->otlp,
           "Also export every statement as an OpenTelemetry span over OTLP/HTTP (JSON) to this "
           "collector (its base URL, e.g. http://localhost:4318; /v1/traces is appended): a "
           "SERVER span per statement with the database semantic conventions' attributes, a "
           "child span per stage with --stages exact, waits and sampled stages as span events; "
           "a statement whose sqlcommenter comment carries a W3C traceparent joins that trace. "
           "Batches of up to 512 spans are sent from a thread of their own through a bounded "
           "queue: a collector that is down or slow costs dropped spans (counted at the end), "
           "never a stalled trace. --format otlp writes the same batches as JSON lines. "
           "Statement durations also go to /v1/metrics as the histogram "
           "mysqltrace.server.operation.duration, every OTEL_METRIC_EXPORT_INTERVAL ms (60000) "
           "and at the end")
        ->option_text("URL");
    cmd->add_option("--otlp-queue", a->otlp_queue,
                    "--otlp: batches (of up to 512 spans, or a second's) that may wait for the "
                    "collector; past that a batch is dropped and its spans counted")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    add_duty_options(cmd, a->duty);
    cmd->add_option("--max-sql", a->max_sql, "Bytes of statement text kept per statement")
        ->check(CLI::Range(0, 65536))
        ->capture_default_str();
    cmd->add_flag("--show-secrets", a->show_secrets,
                  "Do not redact passwords and keys in statement texts (IDENTIFIED BY, SET "
                  "PASSWORD, MASTER_PASSWORD, AES_ENCRYPT keys, ...) and in the parse errors "
                  "that quote them; every output redacts them by default");
    cmd->callback([&run, &global, a] { run = [a, &global] { return run_server(*a, global); }; });
}

}  // namespace mysqltrace::cli
