// SPDX-License-Identifier: GPL-2.0-only
// Statements and stages of a running mariadbd, from bpf/server.bpf.c:
// entry probes on dispatch_command and mysql_parse, one probe on the
// end-of-command stage site, and on demand exact stage probes (every stage
// site of the binary) or stage sampling (a CPU timer per CPU and the
// scheduler's switch tracepoint). No performance_schema, no restart.
// MySQL 8.0 and later (ServerProfile::mysql8): entries of dispatch_command
// and dispatch_sql_command, statements ended at dispatch_command's calls of
// log_slow_statement (a return probe without them), and the out-of-line
// THD::enter_stage as the one exact-stage probe. Run against Oracle MySQL
// 9.7.4 (tests/priv/server_trace*_test.cpp); 8.0/8.4 only analysed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>
#include <sys/types.h>

#include "bpf/handles.h"
#include "bpf/ring_set.h"
#include "server/accounts.h"
#include "server/lock_layout.h"
#include "server/server_target.h"
#include "server/statement.h"
#include "server/threads.h"
#include "server/waits.h"
#include "util/result.h"

struct server;

namespace mysqltrace::server {

// traps: the exact stage probes with programs that return at once, the
// floor exact mode is measured against (bench/).
enum class StageMode { off, sampled, exact, traps };

struct StatementTracerOptions {
    uint32_t max_sql = 65536;
    StageMode stages = StageMode::sampled;
    uint32_t sample_hz = 997;      // per CPU, sampled mode
    uint64_t only_thread_id = 0;   // 0: every connection
    uint64_t min_duration_ns = 0;  // shorter statements are dropped in the kernel
    bool waits = false;            // syscall tracepoints: locks, file and socket I/O, idle
    bool accounts = false;         // send each connection's user@host (accounts())
    bool table_io = false;         // handler row operations as wait/io/table/sql/handler
    bool show_secrets = false;     // statement texts and messages as the server has them
    // MEMORY_USED and its peak, read from the THD at every statement's end
    // (only the JSON format shows them): on MariaDB a read of their own,
    // ~90 ns a statement.
    bool memory = true;
    // COM_STMT_EXECUTE's SQL_TEXT: the prepared text with its `?`, as
    // performance_schema shows it (where the build tells where it is), or
    // (false) the text with the values filled in, as the slow log prints it.
    bool prepared_text = true;
    // Only statements of this schema / account user ("": all). Decided in
    // the probe on the one-probe path (names up to MT_FILTER_NAME_MAX - 1
    // bytes); the caller filters what comes too.
    std::string db, user;
    // One probe per statement (log_slow_statement) when the build has what
    // it needs and no mode needs nesting (exact stages, waits, table I/O).
    bool one_probe = true;
    // The log_slow_statement probe on an uprobe_multi link, which attaches
    // in ~0.1 ms and detaches without waiting out an RCU grace period under
    // its trap (a per-uprobe perf link: ~15 ms and ~80-150 ms, traps still
    // firing meanwhile; docs/PERFORMANCE.md): for set_statement_probes().
    bool switchable = false;
    // --locks: probes on the paths of metadata and row lock waits
    // (bpf/server_locks.bpf.h); their records (MT_EV_SERVER_LOCK_*) go to
    // lock_records, undecoded (server/locks.h decodes them).
    bool locks = false;
    std::function<void(std::span<const uint8_t>)> lock_records;
    bpf::RingOptions ring;
    // --threads: connections logging in and ending (server/threads.h),
    // handed to this sink.
    std::function<void(const Connection &)> on_connection;
    // --transactions: transaction records, handed to this sink, which sees
    // them before the statements they end (server/transactions.h).
    std::function<bool(std::span<const uint8_t>)> on_transaction_record;
};

class StatementTracer {
  public:
    static Result<std::unique_ptr<StatementTracer>> attach(
        const ServerTarget &target, const StatementTracerOptions &opts,
        std::function<void(const Statement &)> sink,
        std::function<void(const Wait &)> wait_sink = {});
    ~StatementTracer();
    bpf::RingSet &rings() { return *rings_; }
    uint64_t undecodable() const { return undecodable_; }
    // The account of each connection seen so far (with options.accounts):
    // known before the connection's statements and waits are handed over.
    const Accounts &accounts() const { return accounts_; }
    // Probes attached now (statements + stages + table I/O entries and returns).
    size_t probe_count() const {
        return links_.size() + (end_link_ || end_multi_.get() >= 0 ? 1 : 0) +
               (switch_link_ ? 1 : 0) + stage_probes_ + table_io_links_.size() * table_io_sites_;
    }
    size_t stage_probe_count() const { return stage_probes_; }
    // Statements are traced with one probe each (log_slow_statement), not
    // entry and end probes; path_note() says which path and, if not this
    // one, why.
    bool one_probe() const { return one_probe_; }
    const std::string &path_note() const { return path_note_; }
    // With on_connection: what the connection probes see ("" without).
    const std::string &threads_note() const { return threads_note_; }
    // What the user should know of how this trace attached (tracefs mounted
    // for a moment, the raw syscall tracepoints used instead), a line each.
    const std::vector<std::string> &notes() const { return notes_; }
    const Connections &connections() const { return connections_; }
    // What --locks learnt of this build (empty unless options.locks).
    const LockLayout &lock_layout() const { return lock_layout_; }
    // The one-probe path on a server whose start_utime is wall-clock time:
    // re-reads the wall clock's offset from the monotonic one (call now and
    // then: the wall clock can be stepped).
    void refresh_clock();
    // Removes the exact stage probes; statements go on being traced.
    void detach_stages();
    // Removes every probe: what the rings hold is still read. Touches the
    // links alone, so it may run on another thread while the rings are read
    // (agent::TracedServer).
    void detach_probes();
    // --duty (one-probe path only): takes out (false) or puts back (true)
    // what costs per statement, the log_slow_statement uprobe and, with
    // sampled stages, the context-switch clock and the CPU timers. Taking
    // it out is all an idle window costs nothing (server/duty_cycle.h).
    Result<void> set_statement_probes(bool on);
    // Hands over the statements still waiting for the next statement of
    // their query (MT_STMT_MORE) with the text they have: call after the
    // last drain.
    void flush_held();

    // The stage name at server address `addr` (a THD::proc_info value),
    // read from the server's memory at each call: ServerRenderer asks once
    // per address.
    std::string stage_name_at(uint64_t addr) const;

  private:
    StatementTracer() = default;
    ::server *skel_ = nullptr;
    pid_t pid_ = 0;
    std::unique_ptr<bpf::RingSet> rings_;
    std::vector<bpf::Link> links_;
    bpf::Link end_link_;  // one-probe path: log_slow_statement
    bpf::Fd end_multi_;   // the same, switchable
    bool switchable_ = false;
    bpf::Link switch_link_;  // stages: sched_switch
    std::string exe_;
    uint64_t end_offset_ = 0;
    bpf::Fd stage_link_;                   // one uprobe_multi link for every stage site
    std::vector<bpf::Fd> table_io_links_;  // --table-io: entries and returns
    size_t stage_probes_ = 0;
    size_t table_io_sites_ = 0;
    std::vector<bpf::Fd> perf_fds_;
    std::function<void(const Statement &)> sink_;
    std::function<void(const Wait &)> wait_sink_;
    std::function<void(const Connection &)> connection_sink_;
    std::function<bool(std::span<const uint8_t>)> txn_sink_;
    uint64_t undecodable_ = 0;
    bool show_secrets_ = false;
    bool one_probe_ = false;
    bool wall_clock_start_ = false;
    std::string path_note_;
    Statement decoded_;  // reused: its strings and stage list keep their memory
    // Per server thread: a statement ended with MT_STMT_MORE, held until the
    // next one of its query shows where its text ends.
    std::vector<Statement> held_;
    // One-probe path: the last end per server thread. A start read from the
    // THD is in whole microseconds (and MySQL's on the wall clock, shifted):
    // it is never put before the end of the thread's previous statement.
    std::unordered_map<uint32_t, uint64_t> last_end_;
    void on_statement(Statement &s);
    void emit(Statement &s);  // redacts, then hands over
    Accounts accounts_;
    Connections connections_;
    Connection connection_;  // reused
    std::string threads_note_;
    std::vector<std::string> notes_;
    LockLayout lock_layout_;
    std::function<void(std::span<const uint8_t>)> lock_records_;
};

// The display name of a stage as SHOW PROFILE prints it ("Opening tables").
std::string stage_event_name(std::string_view name);

}  // namespace mysqltrace::server
