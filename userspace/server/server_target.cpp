// SPDX-License-Identifier: GPL-2.0-only
// What mysqltrace learns about a server from its binary (server/server_target.h).
#include "server/server_target.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "elf/disassembler.h"
#include "mysqltrace/abi/event.h"
#include "proc/maps.h"
#include "server/hooks.h"

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
    // MySQL 8/9: write_row(uchar*), update_row(const uchar*, uchar*).
    {"_ZN7handler12ha_write_rowEPh", MT_TABLE_WRITE_ROW},
    {"_ZN7handler13ha_update_rowEPKhPh", MT_TABLE_UPDATE_ROW},
    {"_ZN7handler13ha_delete_rowEPKh", MT_TABLE_DELETE_ROW},
};

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
    elf::Disassembler dis(file.budget(), true);
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

// Adds the entry of `sym` as a stage site, unless the kernel would have to
// single-step its first instruction (never on a hot path) or cannot decode it.
void add_entry_stage_site(const elf::ElfFile &f, const elf::Symbol &sym, const std::string &name,
                          ServerTarget &t) {
    auto site = entry_probe_site(f, sym);
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
    if (auto entry = entry_probe_site(f, *callee); entry && cheap(*entry)) {
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

std::string one_probe_missing(const ServerTarget &t) {
    const ThdLayout &l = t.layout;
    if (!t.statement_end_site) {
        return "no log_slow_statement(THD*) whose entry the kernel emulates";
    }
    if (l.start_utime < 0) {
        return "THD::start_utime not learnt";
    }
    if (l.command < 0) {
        return "the THD's current command not learnt";
    }
    if (t.query_string_offset < 0) {
        return "the THD's query text not learnt";
    }
    return "";
}

namespace {

// analyse_server() up to the budget check.
Result<ServerTarget> analyse(const elf::ElfFile &f, const std::string &who) {
    ServerTarget t;
    auto prof = detect_profile(f, who);
    if (!prof) {
        return prof.error();
    }
    t.profile = prof->profile;
    const bool mysql8 = t.profile == ServerProfile::mysql8;
    auto dispatch = f.find(prof->dispatch);
    auto parse = f.find(prof->statement);
    if (!dispatch || !parse) {
        return Error{ENOENT, "cannot read the symbols of " + f.path()};
    }
    auto ds = entry_probe_site(f, *dispatch);
    auto ps = entry_probe_site(f, *parse);
    if (!ds || !ps) {
        return !ds ? ds.error() : ps.error();
    }
    // Hot probes, once per command and statement: never on an instruction
    // the kernel single-steps (an endbr64 is skipped already).
    for (const auto &[site, name] : {std::pair{&*ds, &prof->dispatch}, {&*ps, &prof->statement}}) {
        if (site->cost == elf::ProbeCost::single_stepped ||
            site->cost == elf::ProbeCost::undecodable) {
            return Error{ENOTSUP, who + ": the entry of " + *name + " begins with `" +
                                      site->instruction +
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
        // Every row passes here: never a single-stepped instruction.
        auto site = entry_probe_site(f, *fs);
        if (site && site->cost != elf::ProbeCost::undecodable &&
            site->cost != elf::ProbeCost::single_stepped) {
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
    if (!prof->end_statement.empty()) {
        if (auto ls = f.find(prof->end_statement)) {
            auto site = entry_probe_site(f, *ls);
            if (site && (site->cost == elf::ProbeCost::emulated ||
                         site->cost == elf::ProbeCost::optimized)) {
                t.statement_end_site = *site;
            }
        }
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
    // Each site becomes a uprobe.
    f.budget()->check(elf::Limit::probe_sites,
                      t.stages.size() + t.table_io.size() + t.end_sites.size());
    return t;
}

}  // namespace

Result<ServerTarget> analyse_server(std::shared_ptr<const elf::ElfFile> file,
                                    const std::string &who) {
    auto t = analyse(*file, who);
    // A step cut short by the budget may have failed for that reason, or
    // found less: either way the binary is refused, naming the limit.
    if (auto &over = file->budget()->exceeded()) {
        return *over;
    }
    if (t) {
        t->file = std::move(file);
    }
    return t;
}

namespace {

// Where a server thread's THD pointer (current_thd) is, from its thread
// pointer, learnt from the function the server exports to read it; for
// MySQL's initial-exec load the slot the dynamic loader filled in is read
// from the running process. nullopt: not learnt.
std::optional<int64_t> current_thd_tp_offset(pid_t pid, const elf::ElfFile &f, int64_t bias) {
    for (const char *fn : {"_current_thd", "_Z19thd_get_current_thdv"}) {
        auto load = elf::thread_pointer_load(f, fn);
        if (!load) {
            continue;
        }
        if (load->got == 0) {
            return load->offset;
        }
        int64_t tpoff = 0;
        if (proc::read_memory(pid, load->got + static_cast<uint64_t>(bias), &tpoff,
                              sizeof(tpoff)) == static_cast<ssize_t>(sizeof(tpoff))) {
            return tpoff + load->offset;
        }
    }
    return std::nullopt;
}

}  // namespace

Result<ServerTarget> resolve_server(pid_t pid, const elf::AnalysisLimits &limits) {
    if (!proc::process_exists(pid)) {
        return Error{ESRCH, "no such process: " + std::to_string(pid)};
    }
    const std::string exe = "/proc/" + std::to_string(pid) + "/exe";
    auto opened = elf::ElfFile::open(exe, limits);
    if (!opened) {
        return opened.error();
    }
    auto analysed = analyse_server(std::move(opened).value(), "pid " + std::to_string(pid));
    if (!analysed) {
        return analysed.error();
    }
    ServerTarget &t = *analysed;
    t.pid = pid;
    t.exe = exe;
    const elf::ElfFile &f = *t.file;
    auto dispatch = f.find(t.dispatch_symbol);
    if (!dispatch) {
        return Error{ENOENT, "cannot read the symbols of " + exe};
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
    t.current_thd_tp_offset = current_thd_tp_offset(pid, f, t.load_bias);
    return analysed;
}

}  // namespace mysqltrace::server
