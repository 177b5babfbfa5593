// SPDX-License-Identifier: GPL-2.0-only
#include "server/statement_tracer.h"

#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <cstring>

#include <bpf/libbpf.h>

#include "bpf/uprobe_multi.h"
#include "elf/disassembler.h"
#include "elf/elf_file.h"
#include "mysqltrace/abi/event.h"
#include "proc/maps.h"
#include "server.skel.h"
#include "server/hooks.h"
#include "server/read_plan.h"
#include "sql/redact.h"

namespace mysqltrace::server {

namespace {

// Entry points, as the start of their mangled names: the arguments that
// matter come first, later ones vary between versions.
// MariaDB 10.x/11.x: dispatch_command(enum_server_command, THD*, char*, ...),
// mysql_parse(THD*, char*, ...).
constexpr const char *kDispatch = "_Z16dispatch_command19enum_server_commandP3THDPc";
constexpr const char *kParse = "_Z11mysql_parseP3THDPc";
// MySQL 8.0 and later: dispatch_command(THD*, const COM_DATA*,
// enum_server_command), dispatch_sql_command(THD*, Parser_state*[, bool])
// (8.0.22+; 9.7 adds the bool), mysql_parse(THD*, Parser_state*...) before.
constexpr const char *kDispatch8 = "_Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command";
constexpr const char *kSqlCommand8 = "_Z20dispatch_sql_commandP3THDP12Parser_state";
constexpr const char *kParse8 = "_Z11mysql_parseP3THDP12Parser_state";
// log_slow_statement(THD*): dispatch_command calls it once each statement is
// done and answered, with the statement's text, schema, outcome and rows
// still in the THD (the slow log prints them); both servers export it.
constexpr const char *kLogSlowStatement = "_Z18log_slow_statementP3THD";
// The stage dispatch_command enters once the command is done and answered.
constexpr const char *kEndStage = "stage_cleaning_up";
// The handler row methods every storage engine's reads and writes go
// through (sql/handler.cc), with what performance_schema calls them.
constexpr std::pair<const char *, uint32_t> kTableIoMethods[] = {
    {"_ZN7handler11ha_rnd_nextEPh", MT_TABLE_RND_NEXT},
    {"_ZN7handler10ha_rnd_posEPhS0_", MT_TABLE_RND_POS},
    {"_ZN7handler17ha_index_read_mapEPhPKhm16ha_rkey_function", MT_TABLE_INDEX_READ_MAP},
    {"_ZN7handler21ha_index_read_idx_mapEPhjPKhm16ha_rkey_function", MT_TABLE_INDEX_READ_IDX_MAP},
    {"_ZN7handler13ha_index_nextEPh", MT_TABLE_INDEX_NEXT},
    {"_ZN7handler13ha_index_prevEPh", MT_TABLE_INDEX_PREV},
    {"_ZN7handler14ha_index_firstEPh", MT_TABLE_INDEX_FIRST},
    {"_ZN7handler13ha_index_lastEPh", MT_TABLE_INDEX_LAST},
    {"_ZN7handler18ha_index_next_sameEPhPKhj", MT_TABLE_INDEX_NEXT_SAME},
    {"_ZN7handler12ha_write_rowEPKh", MT_TABLE_WRITE_ROW},
    {"_ZN7handler13ha_update_rowEPKhS1_", MT_TABLE_UPDATE_ROW},
    {"_ZN7handler13ha_delete_rowEPKh", MT_TABLE_DELETE_ROW},
};

Result<elf::ProbeSite> entry_site(const elf::ElfFile &file, const elf::Symbol &sym) {
    auto code = file.read(sym.vaddr, 16);
    if (!code) {
        return code.error();
    }
    auto off = file.vaddr_to_offset(sym.vaddr);
    if (!off) {
        return off.error();
    }
    return elf::place_entry_probe(*code, *off);
}

// The field an accessor such as thd_query_string(THD*) returns the address
// of: its first instruction is `lea rax, [rdi + disp]`.
int64_t lea_accessor_offset(const elf::ElfFile &file, const char *symbol) {
    auto sym = file.find(symbol);
    if (!sym) {
        return -1;
    }
    auto code = file.read(sym->vaddr, 16);
    if (!code) {
        return -1;
    }
    elf::Disassembler dis(true);
    const cs_insn *in = dis.decode(*code, sym->vaddr);
    if (in == nullptr || in->id != X86_INS_LEA || in->detail->x86.op_count != 2) {
        return -1;
    }
    const cs_x86_op &m = in->detail->x86.operands[1];
    if (m.type != X86_OP_MEM || m.mem.base != X86_REG_RDI || m.mem.index != X86_REG_INVALID) {
        return -1;
    }
    return m.mem.disp;
}

// Runtime address minus file address of the traced binary's code.
Result<int64_t> load_bias(pid_t pid, const elf::ElfFile &file, const elf::Symbol &sym) {
    auto off = file.vaddr_to_offset(sym.vaddr);
    auto maps = proc::read_maps(pid);
    if (!off || !maps) {
        return !off ? off.error() : maps.error();
    }
    char real[PATH_MAX];
    const std::string exe_link = "/proc/" + std::to_string(pid) + "/exe";
    ssize_t n = ::readlink(exe_link.c_str(), real, sizeof(real) - 1);
    if (n <= 0) {
        return make_error(errno, "cannot read " + exe_link);
    }
    real[n] = 0;
    auto holds = [&](const proc::Mapping &m) {
        return *off >= m.file_offset && *off < m.file_offset + (m.end - m.start);
    };
    for (const auto &m : *maps) {
        if (m.path == real && holds(m)) {
            return static_cast<int64_t>(m.start + (*off - m.file_offset) - sym.vaddr);
        }
    }
    // A server in another mount namespace or chroot: its maps name the
    // binary as it sees it. The same file is the same inode.
    struct stat exe {};
    if (::stat(exe_link.c_str(), &exe) == 0) {
        for (const auto &m : *maps) {
            char mf[96];
            std::snprintf(mf, sizeof(mf), "/proc/%d/map_files/%llx-%llx", pid,
                          static_cast<unsigned long long>(m.start),
                          static_cast<unsigned long long>(m.end));
            struct stat st {};
            if (!m.path.empty() && holds(m) && ::stat(mf, &st) == 0 && st.st_dev == exe.st_dev &&
                st.st_ino == exe.st_ino) {
                return static_cast<int64_t>(m.start + (*off - m.file_offset) - sym.vaddr);
            }
        }
    }
    return Error{ENOENT, std::string("cannot find ") + real + " in the memory map of pid " +
                             std::to_string(pid)};
}

// The THD and Diagnostics_area fields a statement's end reads, grouped into
// a few copies (bpf/server.bpf.c, gather() and da_outcome()). The fields of
// the THD's own Diagnostics_area are planned with the THD's: most statements
// report there, and MariaDB keeps it next to m_stmt_da.
void set_read_plan(decltype(::server::rodata) ro, const ThdLayout &l, int64_t query_string) {
    auto in_main_da = [&](int64_t field) {
        return l.main_da >= 0 && field >= 0 ? l.main_da + field : -1;
    };
    const ReadPlan thd = plan_reads({{l.thread_id, 8},
                                     {l.query_id, 8},
                                     {l.sent_row_count, 8},
                                     {l.examined_row_count, 8},
                                     {query_string, 16},
                                     {l.db, 16},
                                     {l.stmt_da, 8},
                                     {in_main_da(l.da_status), 4},
                                     {in_main_da(l.da_affected_rows), 8}},
                                    MT_THD_WINDOW_MAX, MT_THD_WINDOWS);
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

// Adds the entry of `sym` as a stage site, unless the kernel would have to
// single-step its first instruction (never on a hot path) or cannot decode it.
void add_entry_stage_site(const elf::ElfFile &f, const elf::Symbol &sym, const std::string &name,
                          ServerTarget &t) {
    auto site = entry_site(f, sym);
    if (!site || site->cost == elf::ProbeCost::single_stepped ||
        site->cost == elf::ProbeCost::undecodable) {
        return;
    }
    StageSite ss;
    ss.probe_offset = site->offset;
    ss.function = name;
    ss.probe_cost = site->cost;
    t.stages.push_back(std::move(ss));
}

// MariaDB's stage sites: every inlined THD::enter_stage, then the entries
// of THD::enter_cond and THD::exit_cond.
std::optional<Error> add_mariadb_stage_sites(const elf::ElfFile &f, ServerTarget &t) {
    auto scan = find_stage_sites(f, t.layout);
    if (!scan) {
        return scan.error();
    }
    t.stages = std::move(scan->sites);
    t.static_stages = t.stages.size();
    t.stages.insert(t.stages.end(), scan->dynamic_sites.begin(), scan->dynamic_sites.end());
    t.cond_sites = t.stages.size();
    for (const char *sym : {"_ZN3THD10enter_condEP13st_mysql_condP14st_mysql_mutexPK17PSI_stage_"
                            "info_v1PS4_PKcS9_i",
                            "_ZThn232_N3THD10enter_condEP13st_mysql_condP14st_mysql_mutexPK17PSI_"
                            "stage_info_v1PS4_PKcS9_i",
                            "", "_ZN3THD9exit_condEPK17PSI_stage_info_v1PKcS4_i",
                            "_ZThn232_N3THD9exit_condEPK17PSI_stage_info_v1PKcS4_i"}) {
        if (*sym == 0) {
            t.exit_cond_sites = t.stages.size();
            continue;
        }
        if (auto fs = f.find(sym)) {
            add_entry_stage_site(f, *fs, sym, t);
        }
    }
    return std::nullopt;
}

// Where the running server keeps the name of its "starting" stage
// (stage_starting.m_name, read from its memory: a relocated pointer), or 0.
uint64_t starting_stage_name(const ServerTarget &t) {
    auto sym = t.file ? t.file->find("stage_starting") : std::nullopt;
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

// Where statements end when dispatch_command has no end-of-command stage
// site: its calls of log_slow_statement(THD*) (emulated `call rel32`), or
// else the entry of log_slow_statement when it is cheap to probe. Empty
// when neither can be probed without single-stepping.
// `more`: per site, whether the statement hook `statement` is called after
// it before dispatch_command returns (the multi-statement loop's site).
std::vector<elf::ProbeSite> log_slow_statement_sites(const elf::ElfFile &f,
                                                     const elf::Symbol &dispatch,
                                                     const std::string &symbol,
                                                     const std::string &statement,
                                                     std::vector<bool> *more) {
    auto callee = f.find(symbol);
    auto stmt = f.find(statement);
    auto base = f.vaddr_to_offset(dispatch.vaddr);
    more->clear();
    if (!callee || !stmt || !base) {
        return {};
    }
    auto cheap = [](const elf::ProbeSite &s) {
        return s.cost == elf::ProbeCost::emulated || s.cost == elf::ProbeCost::optimized;
    };
    auto sites = call_sites(f, dispatch, *callee);
    if (!sites.empty() && std::all_of(sites.begin(), sites.end(), cheap)) {
        for (const auto &s : sites) {
            more->push_back(call_follows(f, dispatch, dispatch.vaddr + (s.offset - *base), *stmt));
        }
        return sites;
    }
    if (auto entry = entry_site(f, *callee); entry && cheap(*entry)) {
        more->push_back(false);  // which caller it is cannot be told here
        return {*entry};
    }
    return {};
}

}  // namespace

Result<ProfileSymbols> detect_profile(const elf::ElfFile &f, const std::string &who) {
    ProfileSymbols p;
    auto first = [&](std::initializer_list<const char *> prefixes) -> std::string {
        for (const char *prefix : prefixes) {
            if (auto sym = find_by_prefix(f, prefix)) {
                return sym->name;
            }
        }
        return {};
    };
    if (auto d = find_by_prefix(f, kDispatch)) {
        p.dispatch = d->name;
        p.statement = first({kParse});
        if (p.statement.empty()) {
            return Error{ENOENT, who + " has MariaDB's dispatch_command but no " + kParse +
                                     "... (mysql_parse(THD*, char*, ...)) symbol"};
        }
    } else if (auto d8 = find_by_prefix(f, kDispatch8)) {
        p.profile = ServerProfile::mysql8;
        p.dispatch = d8->name;
        p.statement = first({kSqlCommand8, kParse8});
        if (p.statement.empty()) {
            return Error{ENOENT, who + " has MySQL's dispatch_command but neither " + kSqlCommand8 +
                                     "... nor " + kParse8 + "..."};
        }
        if (f.find(kMysql8EnterStage)) {
            p.enter_stage = kMysql8EnterStage;
        }
    } else {
        for (const auto &s : f.symbols()) {
            if (s.name.rfind("_Z16dispatch_command", 0) == 0) {
                return Error{ENOTSUP, who + " has " + s.name +
                                          ": a dispatch_command of neither MariaDB nor MySQL "
                                          "8.0 and later, not supported"};
            }
        }
        // ENOEXEC: not a server at all, where a missing hook is ENOENT.
        return Error{ENOEXEC, who + " is not a MySQL/MariaDB server (no dispatch_command symbol)"};
    }
    if (auto ls = f.find(kLogSlowStatement)) {
        p.end_statement = ls->name;
    }
    return p;
}

Result<ServerTarget> resolve_server(pid_t pid) {
    if (!proc::process_exists(pid)) {
        return Error{ESRCH, "no such process: " + std::to_string(pid)};
    }
    ServerTarget t;
    t.pid = pid;
    t.exe = "/proc/" + std::to_string(pid) + "/exe";
    auto file = elf::ElfFile::open(t.exe);
    if (!file) {
        return file.error();
    }
    const elf::ElfFile &f = **file;
    auto prof = detect_profile(f, "pid " + std::to_string(pid));
    if (!prof) {
        return prof.error();
    }
    t.profile = prof->profile;
    const bool mysql8 = t.profile == ServerProfile::mysql8;
    auto dispatch = f.find(prof->dispatch);
    auto parse = f.find(prof->statement);
    if (!dispatch || !parse) {
        return Error{ENOENT, "cannot read the symbols of " + t.exe};
    }
    auto ds = entry_site(f, *dispatch);
    auto ps = entry_site(f, *parse);
    if (!ds || !ps) {
        return !ds ? ds.error() : ps.error();
    }
    // Hot probes, once per command and statement: never on an instruction
    // the kernel single-steps (an endbr64 is skipped already).
    for (const auto &[site, name] : {std::pair{&*ds, &prof->dispatch}, {&*ps, &prof->statement}}) {
        if (site->cost == elf::ProbeCost::single_stepped ||
            site->cost == elf::ProbeCost::undecodable) {
            return Error{ENOTSUP, "pid " + std::to_string(pid) + ": the entry of " + *name +
                                      " begins with `" + site->instruction +
                                      "`, which the kernel would single-step at every call: "
                                      "not probed"};
        }
    }
    t.dispatch_symbol = prof->dispatch;
    t.dispatch_site = *ds;
    t.parse_site = *ps;
    auto layout = derive_thd_layout(f, mysql8);
    if (!layout) {
        return layout.error();
    }
    t.layout = *layout;
    // MySQL 8's thd_query_unsafe() returns THD::m_query_string; MariaDB's
    // thd_query_string() its address.
    t.query_string_offset =
        mysql8 ? t.layout.query_string : lea_accessor_offset(f, "thd_query_string");
    if (mysql8) {
        // Every stage change is one call of THD::enter_stage: its entry is
        // the only stage probe, never on a single-stepped instruction.
        t.static_stages = t.cond_sites = t.exit_cond_sites = t.stage_call_sites = 0;
        if (auto es = prof->enter_stage.empty() ? std::nullopt : f.find(prof->enter_stage)) {
            add_entry_stage_site(f, *es, prof->enter_stage, t);
        }
    } else if (auto err = add_mariadb_stage_sites(f, t)) {
        return *err;
    }
    for (const auto &[sym, op] : kTableIoMethods) {
        auto fs = f.find(sym);
        if (!fs) {
            continue;
        }
        auto site = entry_site(f, *fs);
        if (site && site->cost != elf::ProbeCost::undecodable) {
            t.table_io.push_back({site->offset, op});
        }
    }
    for (const auto &s : t.stages) {
        if (s.stage_symbol == kEndStage && s.function == t.dispatch_symbol) {
            t.end_offset = s.probe_offset;
        }
    }
    // Tests take the other path on this build too.
    const char *force = std::getenv("MYSQLTRACE_SERVER_END");
    const bool force_return = force != nullptr && std::string(force) == "return";
    if (force_return) {
        t.end_offset = 0;
    }
    if (t.end_offset == 0 && !force_return && !prof->end_statement.empty()) {
        t.end_sites = log_slow_statement_sites(f, *dispatch, prof->end_statement, prof->statement,
                                               &t.end_site_more);
    }
    if (t.end_offset == 0 && t.end_sites.empty()) {
        // Another build: a return probe ends commands instead (about twice
        // the cost of the site probe, shared/FACTS.md section 2). A return
        // probe traps at the function's entry too: it goes where the entry
        // probe does, after any endbr64.
        t.end_offset = t.dispatch_site.offset;
        t.end_is_return = true;
    }
    auto bias = load_bias(pid, f, *dispatch);
    if (!bias) {
        return bias.error();
    }
    t.load_bias = *bias;
    // The executable mapping that holds dispatch_command: the server's code.
    const uint64_t dispatch_rt = dispatch->vaddr + static_cast<uint64_t>(t.load_bias);
    if (auto maps = proc::read_maps(pid)) {
        for (const auto &m : *maps) {
            if (dispatch_rt >= m.start && dispatch_rt < m.end) {
                t.text_lo = m.start;
                t.text_hi = m.end;
            }
        }
    }
    t.file = std::move(file).value();
    return t;
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
    ro->text_at_end = target.end_sites.empty() ? 0 : 1;
    ro->copy_prepare_text = target.end_sites.empty() ? 0 : 1;
    ro->off_da_errno = l.da_errno;
    ro->off_da_sqlstate = l.da_sqlstate;
    ro->off_da_message = l.da_message;
    set_read_plan(ro, l, target.query_string_offset);
    ro->off_proc_info = l.proc_info;
    ro->off_security_ctx = l.security_ctx;
    ro->off_sctx_user = l.sctx_user;
    ro->off_sctx_host = l.sctx_host;
    ro->off_sctx_ip = l.sctx_ip;
    ro->want_accounts = opts.accounts && l.security_ctx >= 0 && l.sctx_user >= 0;
    ro->off_handler_table_share = l.handler_table_share;
    ro->off_share_db = l.share_db;
    ro->off_share_table_name = l.share_table_name;
    ro->max_sql = std::min<uint32_t>(opts.max_sql, MT_MAX_SQL);
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
    }
    for (size_t i = 0; i < target.stages.size(); i++) {
        if (target.stages[i].stage_symbol == "stage_starting" &&
            target.stages[i].function == target.dispatch_symbol) {
            ro->starting_site = static_cast<__u32>(i);
        }
    }
    if (auto r = bpf::size_scratch_slots(t->skel_->obj); !r) {
        return r.error();
    }
    for (bpf_program *prog : {t->skel_->progs.server_stage, t->skel_->progs.server_table_io,
                              t->skel_->progs.server_table_io_ret}) {
        bpf::prepare_uprobe_multi(prog);
    }
    if (int err = ::server::load(t->skel_); err != 0) {
        return make_error(err, "cannot load the server BPF programs");
    }
    t->skel_->bss->only_thread_id = opts.only_thread_id;
    t->skel_->bss->min_duration_ns = opts.min_duration_ns;
    StatementTracer *self = t.get();
    auto rings =
        bpf::RingSet::create(t->skel_->obj, opts.ring, [self](std::span<const uint8_t> rec) {
            Wait w;
            Account account;
            if (decode_account(rec, &account)) {
                self->accounts_.add(std::move(account));
            } else if (decode_statement(rec, &self->decoded_)) {
                self->on_statement(self->decoded_);
            } else if (decode_wait(rec, &w) || decode_table_io(rec, &w)) {
                if (self->wait_sink_) {
                    self->wait_sink_(w);
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
                      const std::string &what) -> Result<bpf::Link> {
        bpf_uprobe_opts uo{};
        uo.sz = sizeof(uo);
        uo.retprobe = retprobe;
        uo.bpf_cookie = cookie;
        bpf_link *l =
            bpf_program__attach_uprobe_opts(prog, target.pid, target.exe.c_str(), offset, &uo);
        if (l == nullptr) {
            return make_error(errno, "cannot attach a uprobe to " + what + " in pid " +
                                         std::to_string(target.pid));
        }
        return bpf::Link(l);
    };
    for (auto [prog, off, ret, what] : {
             std::tuple{mysql8 ? progs->server_dispatch_command_m8 : progs->server_dispatch_command,
                        target.dispatch_site.offset, false, "dispatch_command"},
             std::tuple{mysql8 ? progs->server_sql_command_m8 : progs->server_mysql_parse,
                        target.parse_site.offset, false,
                        mysql8 ? "dispatch_sql_command" : "mysql_parse"},
         }) {
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

    if (opts.waits) {
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
                         "--table-io: this server build has no exported handler::ha_* "
                         "row methods, or their table cannot be found from the code"};
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
    if (opts.stages != StageMode::off) {
        // Off-CPU time by stage, and a per-thread CPU clock exact to the ns.
        bpf_link *sw = bpf_program__attach(progs->server_switch);
        if (sw == nullptr) {
            return make_error(errno, "cannot attach to the sched_switch tracepoint");
        }
        t->links_.emplace_back(sw);
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

StatementTracer::~StatementTracer() {
    stage_link_.reset();
    table_io_links_.clear();
    links_.clear();
    perf_fds_.clear();
    rings_.reset();
    if (skel_ != nullptr) {
        ::server::destroy(skel_);
    }
}

}  // namespace mysqltrace::server
