// SPDX-License-Identifier: GPL-2.0-only
#include "server/statement_tracer.h"

#include <asm/ptrace.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <bpf/libbpf.h>

#include "bpf/tracefs.h"
#include "bpf/uprobe_multi.h"
#include "elf/elf_file.h"
#include "mysqltrace/abi/event.h"
#include "proc/maps.h"
#include "server.skel.h"
#include "server/read_plan.h"
#include "server/transactions.h"
#include "sql/redact.h"

namespace mysqltrace::server {

namespace {

// The THD and Diagnostics_area fields a statement's end reads, grouped into
// a few copies (bpf/server.bpf.c, gather() and da_outcome()). The fields of
// the THD's own Diagnostics_area are planned with the THD's: most statements
// report there, and MariaDB keeps it next to m_stmt_da.
// `accounts`: the account records are wanted, which need the THD's
// Security_context pointer at every statement's end on the one-probe path.
// `memory`: the memory columns are wanted; where their fields fit in no
// other window (MariaDB) they cost a read per statement.
void set_read_plan(decltype(::server::rodata) ro, const ThdLayout &l, int64_t query_string,
                   bool accounts, bool memory) {
    auto in_main_da = [&](int64_t field) {
        return l.main_da >= 0 && field >= 0 ? l.main_da + field : -1;
    };
    std::vector<ReadField> fields = {{l.thread_id, 8},
                                     {l.query_id, 8},
                                     {l.sent_row_count, 8},
                                     {l.examined_row_count, 8},
                                     {query_string, 16},
                                     {l.db, 16},
                                     {l.stmt_da, 8},
                                     {in_main_da(l.da_status), 4},
                                     {in_main_da(l.da_affected_rows), 8},
                                     {l.start_utime, 8},
                                     {l.lock_time, 8},
                                     {l.command, 4},
                                     {memory ? l.mem_used : -1, 8},
                                     {memory ? l.mem_max : -1, 8}};
    ReadPlan thd = plan_reads(fields, MT_THD_WINDOW_MAX, MT_THD_WINDOWS);
    // Taken along only where it costs no read of its own.
    ro->at_security_ctx =
        accounts ? plan_extra(thd, fields, {l.security_ctx, 8}, MT_THD_WINDOW_MAX, MT_THD_WINDOWS)
                 : -1;
    for (size_t i = 0; i < thd.windows.size(); i++) {
        ro->thd_win_off[i] = thd.windows[i].offset;
        ro->thd_win_len[i] = thd.windows[i].length;
    }
    ro->at_thread_id = thd.at[0];
    ro->at_query_id = thd.at[1];
    ro->at_sent_rows = thd.at[2];
    ro->at_examined_rows = thd.at[3];
    ro->at_query_string = thd.at[4];
    ro->at_db = thd.at[5];
    ro->at_stmt_da = thd.at[6];
    ro->at_start_utime = thd.at[9];
    ro->at_lock_time = thd.at[10];
    ro->at_command = thd.at[11];
    ro->at_mem_used = thd.at[12];
    ro->at_mem_max = thd.at[13];
    ro->mem_max_per_command = l.mem_max_per_command ? 1 : 0;
    ro->lock_is_duration = l.lock_is_duration ? 1 : 0;
    // Only when every known field of the area has its place in the copies.
    const bool status_placed = l.da_status < 0 || thd.at[7] >= 0;
    const bool affected_placed = l.da_affected_rows < 0 || thd.at[8] >= 0;
    if (l.main_da >= 0 && status_placed && affected_placed) {
        ro->off_main_da = l.main_da;
        ro->at_main_da_status = thd.at[7];
        ro->at_main_da_affected_rows = thd.at[8];
    }
    const ReadPlan da =
        plan_reads({{l.da_status, 4}, {l.da_affected_rows, 8}}, MT_DA_WINDOW_MAX, 1);
    if (!da.windows.empty()) {
        const int32_t base = MT_THD_WINDOWS * MT_THD_WINDOW_MAX;
        ro->da_win_off = da.windows[0].offset;
        ro->da_win_len = da.windows[0].length;
        ro->at_da_status = da.at[0] < 0 ? -1 : base + da.at[0];
        ro->at_da_affected_rows = da.at[1] < 0 ? -1 : base + da.at[1];
    }
}

// Where the running server keeps the name of its "starting" stage
// (stage_starting.m_name, read from its memory: a relocated pointer), or 0.
uint64_t starting_stage_name(const ServerTarget &t, const char *stage = "stage_starting") {
    auto sym = t.file ? t.file->find(stage) : std::nullopt;
    if (!sym) {
        return 0;
    }
    uint64_t name = 0;
    const uint64_t at = sym->vaddr + static_cast<uint64_t>(t.load_bias) + kPsiStageName;
    if (proc::read_memory(t.pid, at, &name, sizeof(name)) != sizeof(name)) {
        return 0;
    }
    return name;
}

// The wall clock minus the monotonic one, in microseconds.
int64_t realtime_shift_us() {
    timespec rt{}, mono{};
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    return (static_cast<int64_t>(rt.tv_sec) - mono.tv_sec) * 1'000'000 +
           (static_cast<int64_t>(rt.tv_nsec) - mono.tv_nsec) / 1000;
}

// Copies a --db/--user name into a filter of the one-probe program; false
// when it is too long to be decided there (userspace still filters).
template <size_t N>
bool set_filter_name(char (&dst)[N], __u32 *len, const std::string &name) {
    if (name.empty() || name.size() > N - 1) {
        return false;
    }
    std::memcpy(dst, name.data(), name.size());
    *len = static_cast<__u32>(name.size());
    return true;
}

// Where register `slot` (x86 encoding number: rax, rcx, rdx, rbx, rsp, rbp,
// rsi, rdi, r8-r15) is in the struct pt_regs a uprobe program gets; -1.
int32_t pt_regs_offset(int slot) {
    static const int32_t offs[16] = {
        offsetof(pt_regs, rax), offsetof(pt_regs, rcx), offsetof(pt_regs, rdx),
        offsetof(pt_regs, rbx), offsetof(pt_regs, rsp), offsetof(pt_regs, rbp),
        offsetof(pt_regs, rsi), offsetof(pt_regs, rdi), offsetof(pt_regs, r8),
        offsetof(pt_regs, r9),  offsetof(pt_regs, r10), offsetof(pt_regs, r11),
        offsetof(pt_regs, r12), offsetof(pt_regs, r13), offsetof(pt_regs, r14),
        offsetof(pt_regs, r15)};
    return slot >= 0 && slot < 16 ? offs[slot] : -1;
}

}  // namespace

void StatementTracer::refresh_clock() {
    if (skel_ != nullptr && one_probe_ && wall_clock_start_) {
        skel_->bss->start_shift_us = realtime_shift_us();
    }
}

std::string stage_event_name(std::string_view name) {
    return "stage/sql/" + std::string(name);
}

Result<std::unique_ptr<StatementTracer>> StatementTracer::attach(
    const ServerTarget &target, const StatementTracerOptions &opts,
    std::function<void(const Statement &)> sink, std::function<void(const Wait &)> wait_sink) {
    std::unique_ptr<StatementTracer> t(new StatementTracer());
    t->sink_ = std::move(sink);
    t->wait_sink_ = std::move(wait_sink);
    t->connection_sink_ = opts.on_connection;
    t->txn_sink_ = opts.on_transaction_record;
    t->pid_ = target.pid;
    t->show_secrets_ = opts.show_secrets;
    t->skel_ = ::server::open();
    if (t->skel_ == nullptr) {
        return make_error(errno, "cannot open the server BPF object");
    }
    auto *ro = t->skel_->rodata;
    const ThdLayout &l = target.layout;
    ro->target_tgid = static_cast<__u32>(target.pid);
    ro->mt_wakeup_bytes = bpf::wakeup_bytes(opts.ring);
    ro->off_thread_id = l.thread_id;
    ro->thread_id_mask = l.thread_id_size >= 8 ? ~0ull : (1ull << (8 * l.thread_id_size)) - 1;
    ro->da_error_status = static_cast<__s32>(l.da_error_status);
    ro->da_ok_statuses = l.da_ok_statuses;
    ro->end_per_statement = target.end_sites.empty() ? 0 : 1;
    ro->waits_on = opts.waits ? 1 : 0;
    ro->text_at_end = target.end_sites.empty() ? 0 : 1;
    ro->copy_prepare_text = target.end_sites.empty() ? 0 : 1;
    ro->off_da_errno = l.da_errno;
    ro->off_da_sqlstate = l.da_sqlstate;
    ro->off_da_message = l.da_message;
    const bool accounts = opts.accounts && l.security_ctx >= 0 && l.sctx_user >= 0;
    set_read_plan(ro, l, target.query_string_offset, accounts, opts.memory);
    ro->off_proc_info = l.proc_info;
    ro->off_security_ctx = l.security_ctx;
    ro->off_db = l.db;  // --db on the one-probe path, --threads everywhere
    ro->off_option_bits = l.option_bits;
    ro->off_tx_isolation = l.tx_isolation;
    ro->off_tx_read_only = l.tx_read_only;
    ro->off_txn_start_utime = l.start_utime;
    ro->off_sctx_user = l.sctx_user;
    ro->off_sctx_host = l.sctx_host;
    ro->off_sctx_ip = l.sctx_ip;
    ro->sctx_lengths = l.sctx_lengths ? 1 : 0;
    ro->want_accounts = accounts ? 1 : 0;
    if (opts.prepared_text) {
        ro->off_last_prepared = l.last_prepared;
        ro->off_ps_query_string = l.ps_query_string;
        ro->off_ps_display_query_string = l.ps_display_query_string;
    }
    ro->off_handler_table_share = l.handler_table_share;
    ro->off_share_db = l.share_db;
    ro->off_share_table_name = l.share_table_name;
    ro->max_sql = std::min<uint32_t>(opts.max_sql, MT_MAX_SQL);
    if (opts.locks) {
        t->lock_layout_ = learn_lock_layout(*target.file);
        t->lock_records_ = opts.lock_records;
        const LockLayout &k = t->lock_layout_;
        ro->off_ctx_owner = k.ctx_owner;
        ro->owner_to_thd = k.owner_to_thd;
        ro->off_ticket_type = k.ticket_type;
        ro->off_ticket_lock = k.ticket_lock;
        ro->off_lock_key = k.lock_key;
        ro->off_ticket_ctx = k.ticket_ctx;
        ro->row_waited_unit_ns = k.row_waited_unit_ns;
        ro->off_trx_thd = k.trx_thd;
        ro->off_trx_wait_trx = k.trx_wait_trx;
        ro->off_request_duration = k.request_duration;
        ro->off_lock_query = target.layout.query_string;
    }
    ro->text_lo = target.text_lo;
    ro->text_hi = target.text_hi;
    const uint32_t hz = std::max<uint32_t>(1, opts.sample_hz);
    ro->sample_period_us = 1'000'000 / hz;
    ro->first_dynamic_site = static_cast<__u32>(target.static_stages);
    ro->cond_site = static_cast<__u32>(target.cond_sites);
    ro->exit_cond_site = static_cast<__u32>(target.exit_cond_sites);
    if (target.stage_call_sites != SIZE_MAX) {
        ro->stage_call_site = static_cast<__u32>(target.stage_call_sites);
    }
    if (target.profile == ServerProfile::mysql8) {
        ro->off_query_string = target.query_string_offset;
        ro->keep_entry_text = 1;
        ro->starting_stage_name = starting_stage_name(target);
        // With exact stages, a command's statement ends at this stage, which
        // MySQL enters after log_slow_statement, as performance_schema does.
        if (!target.end_sites.empty()) {
            ro->cleanup_stage_name = starting_stage_name(target, kEndStage);
        }
    }
    for (size_t i = 0; i < target.stages.size(); i++) {
        if (target.stages[i].stage_symbol == "stage_starting" &&
            target.stages[i].function == target.dispatch_symbol) {
            ro->starting_site = static_cast<__u32>(i);
        }
    }
    // One probe per statement, unless a mode needs to see statements begin
    // (exact stages nest in them, table I/O is credited to the statement
    // running), or the build lacks what the probe reads. Waits need it only
    // where the THD a thread runs (current_thd) cannot be found: with it, a
    // wait is in a statement when its THD runs a statement's command, and
    // userspace places it in its statement by time.
    const bool thd_known = target.current_thd_tp_offset.has_value() && l.command >= 0;
    const bool nesting = opts.stages == StageMode::exact || opts.stages == StageMode::traps ||
                         opts.table_io || (opts.waits && !thd_known);
    const char *force = std::getenv("MYSQLTRACE_SERVER_PATH");
    const std::string missing = one_probe_missing(target);
    if (!opts.one_probe || (force != nullptr && std::string(force) == "multi")) {
        t->path_note_ = "entry and end probes per statement (--every-command)";
    } else if (nesting) {
        t->path_note_ =
            "entry and end probes per statement (exact stages, --table-io and, where "
            "current_thd is not found, --waits need to see statements begin)";
    } else if (!missing.empty()) {
        t->path_note_ = "entry and end probes per statement (no one-probe path: " + missing + ")";
    } else {
        t->one_probe_ = true;
        t->path_note_ = "one probe per statement (log_slow_statement)";
    }
    if (t->one_probe_) {
        ro->onepass = 1;
        if (opts.waits) {
            ro->thd_from_tls = 1;
            ro->thd_tp_off = *target.current_thd_tp_offset;
            ro->off_command = l.command;
        }
        ro->off_start_utime = l.start_utime;
        ro->off_db = l.db;
        set_filter_name(ro->filter_db, &ro->filter_db_len, opts.db);
        if (l.security_ctx >= 0 && l.sctx_user >= 0) {
            set_filter_name(ro->filter_user, &ro->filter_user_len, opts.user);
        }
        t->wall_clock_start_ = l.start_clock == ThdLayout::Clock::realtime;
    }
    if (auto r = bpf::size_scratch_slots(t->skel_->obj); !r) {
        return r.error();
    }
    t->switchable_ = opts.switchable && t->one_probe_;
    if (t->switchable_) {
        bpf::prepare_uprobe_multi(t->skel_->progs.server_log_slow_statement);
    }
    for (bpf_program *prog : {t->skel_->progs.server_stage, t->skel_->progs.server_table_io,
                              t->skel_->progs.server_table_io_ret}) {
        bpf::prepare_uprobe_multi(prog);
    }
    // --waits: the per-syscall tracepoints (syscalls:sys_enter_futex, ...),
    // attached by id; the raw ones, which run for every syscall on the
    // machine, only when tracefs is out of reach.
    const auto syscalls =
        bpf::choose_syscall_programs(t->skel_->obj, opts.waits, "--waits: ", &t->notes_);
    // Only the programs this trace attaches are loaded: verifying the others
    // (the entry-and-end path's, exact stages', waits', table I/O's,
    // --threads', --transactions', --locks') was
    // most of the ~1.2 s of CPU an attach spent in bpf() on the project's
    // VM, and the agent attaches each server as it starts.
    {
        const auto &p = t->skel_->progs;
        const bool entries = !t->one_probe_;
        const bool is_mysql8 = target.profile == ServerProfile::mysql8;
        const bool exact = opts.stages == StageMode::exact || opts.stages == StageMode::traps;
        const bool conns = static_cast<bool>(opts.on_connection);
        const bool txns = static_cast<bool>(opts.on_transaction_record);
        for (auto [prog, used] : {
                 std::pair{p.server_log_slow_statement, t->one_probe_},
                 std::pair{p.server_dispatch_command, entries && !is_mysql8},
                 std::pair{p.server_mysql_parse, entries && !is_mysql8},
                 std::pair{p.server_dispatch_command_m8, entries && is_mysql8},
                 std::pair{p.server_sql_command_m8, entries && is_mysql8},
                 std::pair{p.server_command_end, entries},
                 std::pair{p.server_sys_enter, syscalls.raw},
                 std::pair{p.server_sys_exit, syscalls.raw},
                 std::pair{p.server_table_io, opts.table_io},
                 std::pair{p.server_table_io_ret, opts.table_io},
                 std::pair{p.server_switch, opts.stages != StageMode::off},
                 std::pair{p.server_sample, opts.stages == StageMode::sampled},
                 std::pair{p.server_stage, exact},
                 std::pair{p.server_login_begin, conns},
                 std::pair{p.server_login_end, conns},
                 std::pair{p.server_connection_end, conns},
                 std::pair{p.server_connect_attrs, conns},
                 std::pair{p.server_txn_begin, txns},
                 std::pair{p.server_txn_commit, txns},
                 std::pair{p.server_txn_rollback, txns},
                 std::pair{p.server_txn_end_commit, txns},
                 std::pair{p.server_txn_end_rollback, txns},
                 std::pair{p.server_lock_waking, opts.locks && t->lock_layout_.row_wakers},
                 std::pair{p.server_lock, opts.locks},
             }) {
            bpf_program__set_autoload(prog, used);
        }
    }
    if (int err = ::server::load(t->skel_); err != 0) {
        return make_error(err, "cannot load the server BPF programs");
    }
    t->skel_->bss->only_thread_id = opts.only_thread_id;
    t->skel_->bss->min_duration_ns = opts.min_duration_ns;
    t->refresh_clock();
    StatementTracer *self = t.get();
    auto rings =
        bpf::RingSet::create(t->skel_->obj, opts.ring, [self](std::span<const uint8_t> rec) {
            Wait w;
            Account account;
            bool ready = false;
            mt_event_header h{};
            if (rec.size() >= sizeof(h)) {
                std::memcpy(&h, rec.data(), sizeof(h));
            }
            if (h.type == MT_EV_SERVER_LOCK_WAIT || h.type == MT_EV_SERVER_LOCK_EDGE) {
                if (self->lock_records_) {
                    self->lock_records_(rec);
                }
            } else if (decode_account(rec, &account)) {
                self->accounts_.add(std::move(account));
            } else if (decode_statement(rec, &self->decoded_)) {
                self->on_statement(self->decoded_);
            } else if (decode_wait(rec, &w) || decode_table_io(rec, &w)) {
                if (self->wait_sink_) {
                    self->wait_sink_(w);
                }
            } else if (self->txn_sink_ && self->txn_sink_(rec)) {
            } else if (self->connections_.decode(rec, &self->connection_, &ready)) {
                if (ready && self->connection_sink_) {
                    self->connection_sink_(self->connection_);
                }
            } else {
                self->undecodable_++;
            }
        });
    if (!rings) {
        return rings.error();
    }
    t->rings_ = std::move(rings).value();

    auto *progs = &t->skel_->progs;
    const bool mysql8 = target.profile == ServerProfile::mysql8;
    auto uprobe = [&](bpf_program *prog, uint64_t offset, bool retprobe, uint64_t cookie,
                      const std::string &what) {
        return bpf::attach_uprobe(prog, target.pid, target.exe, offset, what, retprobe, cookie);
    };
    if (t->one_probe_) {
        t->exe_ = target.exe;
        t->end_offset_ = target.statement_end_site->offset;
        if (auto r = t->set_statement_probes(true); !r) {
            return r.error();
        }
    }
    for (auto [prog, off, ret, what] : {
             std::tuple{mysql8 ? progs->server_dispatch_command_m8 : progs->server_dispatch_command,
                        target.dispatch_site.offset, false, "dispatch_command"},
             std::tuple{mysql8 ? progs->server_sql_command_m8 : progs->server_mysql_parse,
                        target.parse_site.offset, false,
                        mysql8 ? "dispatch_sql_command" : "mysql_parse"},
         }) {
        if (t->one_probe_) {
            break;
        }
        auto l = uprobe(prog, off, ret, 0, what);
        if (!l) {
            return l.error();
        }
        t->links_.push_back(std::move(l).value());
    }
    struct End {
        uint64_t offset;
        bool ret;
        uint64_t cookie;  // 1: another statement of the query follows
    };
    std::vector<End> ends;
    for (size_t i = 0; i < target.end_sites.size(); i++) {
        const bool more = i < target.end_site_more.size() && target.end_site_more[i];
        ends.push_back({target.end_sites[i].offset, false, more ? 1u : 0u});
    }
    if (ends.empty()) {
        ends.push_back({target.end_offset, target.end_is_return, 0});
    }
    if (t->one_probe_) {
        ends.clear();
    }
    for (const auto &e : ends) {
        auto l =
            uprobe(progs->server_command_end, e.offset, e.ret, e.cookie, "the end of a statement");
        if (!l) {
            return l.error();
        }
        t->links_.push_back(std::move(l).value());
    }
    bpf_link *exit_link = bpf_program__attach(progs->server_thread_exit);
    if (exit_link == nullptr) {
        return make_error(errno, "cannot attach to the sched_process_exit tracepoint");
    }
    t->links_.emplace_back(exit_link);

    if (opts.on_transaction_record) {
        if (auto r = attach_transaction_probes(t->skel_, target, t->links_); !r) {
            return r.error();
        }
    }
    if (opts.on_connection) {
        auto note = attach_connection_probes(t->skel_, target, t->links_);
        if (!note) {
            return note.error();
        }
        t->threads_note_ = std::move(note).value();
    }
    for (const auto &[prog, id] : syscalls.per_syscall) {
        auto l = bpf::attach_tracepoint_id(prog, id);
        if (!l) {
            return l.error();
        }
        t->links_.emplace_back(*l);
    }
    if (syscalls.raw) {
        for (bpf_program *prog : {progs->server_sys_enter, progs->server_sys_exit}) {
            bpf_link *l = bpf_program__attach(prog);
            if (l == nullptr) {
                return make_error(errno, "cannot attach to the syscall tracepoints");
            }
            t->links_.emplace_back(l);
        }
    }
    if (opts.table_io) {
        if (target.table_io.empty() || l.handler_table_share < 0) {
            return Error{ENOTSUP,
                         std::string("--table-io: ") +
                             (target.table_io.empty()
                                  ? "this server build exports no handler::ha_* row method "
                                    "(ha_rnd_next, ha_index_read_map, ha_write_row, ...) with an "
                                    "entry the kernel emulates"
                                  : "cannot learn handler::table_share from "
                                    "handler::lock_shared_ha_data()") +
                             "; statements, stages and --waits work without it"};
        }
        std::vector<uint64_t> offsets, cookies;
        for (const auto &s : target.table_io) {
            offsets.push_back(s.offset);
            cookies.push_back(s.op);
        }
        // Returns first: a call already running when its entry probe goes in
        // then ends unseen instead of being left open.
        for (bool ret : {true, false}) {
            auto tl =
                bpf::attach_uprobe_multi(ret ? progs->server_table_io_ret : progs->server_table_io,
                                         target.pid, target.exe, offsets, cookies, ret);
            if (!tl) {
                return tl.error();
            }
            t->table_io_links_.push_back(std::move(tl).value());
        }
        t->table_io_sites_ = offsets.size();
    }
    if (opts.locks) {
        if (t->lock_layout_.sites.empty()) {
            return Error{ENOTSUP, "--locks: " + t->lock_layout_.missing};
        }
        // Returns first, as for table I/O: a wait already running when its
        // entry probe goes in then ends unseen rather than left open.
        for (bool ret : {true, false}) {
            for (const auto &s : t->lock_layout_.sites) {
                if (s.retprobe != ret) {
                    continue;
                }
                // A site that reads a register gets its place in pt_regs
                // in the cookie's upper bits.
                const int32_t reg = s.reg >= 0 ? pt_regs_offset(s.reg) : 0;
                auto lk = uprobe(progs->server_lock, s.offset, s.retprobe,
                                 static_cast<uint64_t>(s.role) | (static_cast<uint64_t>(reg) << 16),
                                 s.what);
                if (!lk) {
                    return lk.error();
                }
                t->links_.push_back(std::move(lk).value());
            }
        }
        if (t->lock_layout_.row_wakers) {
            bpf_link *wl = bpf_program__attach(progs->server_lock_waking);
            if (wl == nullptr) {
                return make_error(errno, "cannot attach to the sched_waking tracepoint");
            }
            t->links_.emplace_back(wl);
        }
    }
    if (opts.stages != StageMode::off) {
        // Off-CPU time by stage, and a per-thread CPU clock exact to the ns.
        bpf_link *sw = bpf_program__attach(progs->server_switch);
        if (sw == nullptr) {
            return make_error(errno, "cannot attach to the sched_switch tracepoint");
        }
        t->switch_link_.reset(sw);
        t->skel_->bss->switch_clock = 1;
    }
    if (opts.stages == StageMode::sampled) {
        const int ncpu = libbpf_num_possible_cpus();
        for (int cpu = 0; cpu < ncpu; cpu++) {
            perf_event_attr pa{};
            pa.size = sizeof(pa);
            pa.type = PERF_TYPE_SOFTWARE;
            pa.config = PERF_COUNT_SW_CPU_CLOCK;
            pa.sample_period = 1'000'000'000ull / hz;  // cpu-clock counts ns
            int fd = static_cast<int>(
                ::syscall(SYS_perf_event_open, &pa, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
            if (fd < 0) {
                if (errno == ENODEV || errno == ENOENT) {
                    continue;  // a possible CPU that is not online
                }
                return make_error(
                    errno, "cannot open a cpu-clock perf event on CPU " + std::to_string(cpu));
            }
            t->perf_fds_.emplace_back(fd);
            bpf_link *pl = bpf_program__attach_perf_event(progs->server_sample, fd);
            if (pl == nullptr) {
                return make_error(errno,
                                  "cannot attach the stage sampler to CPU " + std::to_string(cpu));
            }
            t->links_.emplace_back(pl);
        }
        t->skel_->bss->sampled_stages = 1;
    } else if (opts.stages == StageMode::exact || opts.stages == StageMode::traps) {
        std::vector<uint64_t> offsets, cookies;
        for (size_t i = 0; i < target.stages.size(); i++) {
            offsets.push_back(target.stages[i].probe_offset);
            cookies.push_back(i);
        }
        auto l =
            bpf::attach_uprobe_multi(progs->server_stage, target.pid, target.exe, offsets, cookies);
        if (!l) {
            return l.error();
        }
        t->stage_link_ = std::move(l).value();
        t->stage_probes_ = offsets.size();
        t->skel_->bss->exact_stages = opts.stages == StageMode::exact ? 1 : 0;
    }
    return t;
}

namespace {

// MySQL's own cut (dispatch_command): a statement of a multi-statement
// query runs to the character before its ';', the next one begins after the
// blanks that follow.
void cut_before(Statement &s, uint64_t next_addr) {
    if (next_addr <= s.text_addr || next_addr - s.text_addr > s.text.size()) {
        return;
    }
    std::string_view t(s.text.data(), next_addr - s.text_addr);
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) {
        t.remove_suffix(1);
    }
    if (!t.empty() && t.back() == ';') {
        t.remove_suffix(1);
    }
    s.text.resize(t.size());
    s.text_len = static_cast<uint32_t>(t.size());
    s.text_cut = false;
}

}  // namespace

// Here, once for every output: no renderer sees a secret. After the text is
// cut to its statement, which needs the server's bytes.
void StatementTracer::emit(Statement &s) {
    if (!show_secrets_ && sql::redact_in_place(&s.text)) {
        sql::redact_error_message(&s.message);
    }
    sink_(s);
}

void StatementTracer::on_statement(Statement &s) {
    if (s.one_probe()) {
        if (last_end_.size() >= 65536 && !last_end_.contains(s.tid)) {
            last_end_.clear();
        }
        uint64_t &last = last_end_[s.tid];
        if (s.start_ns < last && last <= s.end_ns) {
            s.start_ns = last;
        }
        last = s.end_ns;
    }
    auto held = std::find_if(held_.begin(), held_.end(),
                             [&](const Statement &h) { return h.tid == s.tid; });
    if (held != held_.end()) {
        if (s.seq == held->seq + 1 && s.command == held->command) {
            cut_before(*held, s.text_addr);
        }
        Statement h = std::move(*held);
        held_.erase(held);
        emit(h);
    }
    if ((s.flags & MT_STMT_MORE) != 0) {
        held_.push_back(s);
        return;
    }
    emit(s);
}

void StatementTracer::flush_held() {
    auto held = std::move(held_);
    held_.clear();
    for (auto &h : held) {
        emit(h);
    }
}

void StatementTracer::detach_stages() {
    if (skel_ != nullptr) {
        skel_->bss->exact_stages = 0;
    }
    stage_link_.reset();
    stage_probes_ = 0;
}

std::string StatementTracer::stage_name_at(uint64_t addr) const {
    if (addr == 0) {
        return "(no stage)";  // THD::proc_info was NULL
    }
    std::string name;
    char buf[128];
    ssize_t n = proc::read_memory(pid_, addr, buf, sizeof(buf));
    if (n > 0) {
        name.assign(buf, strnlen(buf, static_cast<size_t>(n)));
    }
    if (name.empty()) {
        name = "(unreadable stage)";
    }
    return name;
}

Result<void> StatementTracer::set_statement_probes(bool on) {
    if (!one_probe_ || skel_ == nullptr) {
        return Error{ENOTSUP, "statement probes are switched on the one-probe path only"};
    }
    if (!on) {
        end_link_.reset();
        end_multi_.reset();
        switch_link_.reset();
        for (const auto &fd : perf_fds_) {
            ioctl(fd.get(), PERF_EVENT_IOC_DISABLE, 0);
        }
        return {};
    }
    for (const auto &fd : perf_fds_) {
        if (ioctl(fd.get(), PERF_EVENT_IOC_ENABLE, 0) != 0) {
            return make_error(errno, "cannot restart the stage sampler");
        }
    }
    if (skel_->bss->switch_clock && !switch_link_) {
        bpf_link *sw = bpf_program__attach(skel_->progs.server_switch);
        if (sw == nullptr) {
            return make_error(errno, "cannot attach to the sched_switch tracepoint");
        }
        switch_link_.reset(sw);
    }
    if (switchable_ && end_multi_.get() < 0) {
        auto l = bpf::attach_uprobe_multi(skel_->progs.server_log_slow_statement, pid_, exe_,
                                          {end_offset_}, {0});
        if (!l) {
            return l.error();
        }
        end_multi_ = std::move(l).value();
    } else if (!switchable_ && !end_link_) {
        auto l = bpf::attach_uprobe(skel_->progs.server_log_slow_statement, pid_, exe_, end_offset_,
                                    "log_slow_statement");
        if (!l) {
            return l.error();
        }
        end_link_ = std::move(l).value();
    }
    return {};
}

void StatementTracer::detach_probes() {
    end_link_.reset();
    end_multi_.reset();
    switch_link_.reset();
    stage_link_.reset();
    table_io_links_.clear();
    links_.clear();
    perf_fds_.clear();
}

StatementTracer::~StatementTracer() {
    detach_probes();
    rings_.reset();
    if (skel_ != nullptr) {
        ::server::destroy(skel_);
    }
}

}  // namespace mysqltrace::server
