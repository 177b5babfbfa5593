// SPDX-License-Identifier: GPL-2.0-only
#include "doctor/server_report.h"
#include "doctor/trace_plan.h"

#include <algorithm>
#include <ostream>
#include <sstream>

#include "elf/symbol_name.h"
#include "server/hooks.h"
#include "server/server_target.h"
#include "server/thd_layout.h"

namespace mysqltrace::doctor {

namespace {

std::string hex(int64_t v) {
    std::ostringstream s;
    s << "+0x" << std::hex << v;
    return s.str();
}

std::string site_text(const elf::ProbeSite &s) {
    std::ostringstream o;
    o << "`" << s.instruction << "` at file offset 0x" << std::hex << s.offset << std::dec << " ("
      << elf::probe_cost_name(s.cost) << (s.skipped_endbr ? ", after endbr64" : "") << ")";
    return o.str();
}

void add_fields(const server::ThdLayout &l, ServerReport &r) {
    auto field = [&](const char *name, int64_t off, std::string extra = {}) {
        r.fields.push_back({name, off >= 0, off >= 0 ? hex(off) + extra : "not found"});
    };
    field("THD thread id", l.thread_id, " (" + std::to_string(l.thread_id_size) + " bytes)");
    field("THD query id", l.query_id);
    field("THD query text", l.query_string);
    field("THD current schema", l.db);
    field("THD rows sent", l.sent_row_count);
    field("THD rows examined", l.examined_row_count);
    field("THD statement DA", l.stmt_da);
    field("THD own DA", l.main_da);
    field("DA status", l.da_status);
    r.fields.push_back({"DA error status value", l.da_error_status >= 0,
                        l.da_error_status >= 0 ? std::to_string(l.da_error_status) : "not found"});
    std::string ok;
    for (int v = 0; v < 32; v++) {
        if ((l.da_ok_statuses & (1u << v)) != 0) {
            ok += (ok.empty() ? "" : ", ") + std::to_string(v);
        }
    }
    r.fields.push_back({"DA OK status values", !ok.empty(), ok.empty() ? "not found" : ok});
    field("DA errno", l.da_errno);
    field("DA SQLSTATE", l.da_sqlstate);
    field("DA message", l.da_message);
    field("DA affected rows", l.da_affected_rows);
    field("THD stage name", l.proc_info);
    field("THD security context", l.security_ctx);
    field("handler table share", l.handler_table_share);
    // MySQL only (MariaDB's statement map is inline code): not listed as
    // missing on a build that has neither.
    if (l.last_prepared >= 0 || l.ps_query_string >= 0) {
        field("THD last prepared", l.last_prepared);
        field("prepared stmt text", l.ps_query_string);
        field("prepared stmt display", l.ps_display_query_string);
    }
    field("THD start time", l.start_utime,
          l.start_clock == server::ThdLayout::Clock::realtime ? " (wall clock us)"
                                                              : " (monotonic us)");
    field("THD lock time", l.lock_time, l.lock_is_duration ? " (duration)" : " (time after lock)");
    field("THD command", l.command);
    field("THD memory used", l.mem_used);
    field("THD option bits", l.option_bits);
    field("THD tx isolation", l.tx_isolation);
    field("THD tx read only", l.tx_read_only);
    field("THD memory peak", l.mem_max,
          l.mem_max_per_command ? " (since the command began)" : " (since the connection began)");
}

void add_modes(const server::ServerTarget *t, const server::ThdLayout &l, ServerReport &r) {
    auto mode = [&](const char *name, bool works, const std::string &why) {
        r.modes.push_back({name, works, why});
    };
    auto missing = [](std::initializer_list<std::pair<const char *, bool>> needs) {
        std::string m;
        for (auto [what, have] : needs) {
            if (!have) {
                m += (m.empty() ? "needs " : ", ") + std::string(what);
            }
        }
        return m;
    };
    const bool base = t != nullptr;
    mode("statements", base, base ? "" : "see the refusal above");
    auto part = [&](const char *name, std::initializer_list<std::pair<const char *, bool>> needs) {
        std::string m = missing(needs);
        mode(name, base && m.empty(), base ? (m.empty() ? "" : m + ": reported empty") : "");
    };
    part("  SQL_TEXT",
         {{"THD query text or mysql_parse's text",
           l.query_string >= 0 || (t && t->profile == server::ServerProfile::mariadb)}});
    part("  CURRENT_SCHEMA", {{"THD current schema", l.db >= 0}});
    part("  errors (errno, SQLSTATE, message)", {{"DA status", l.da_status >= 0},
                                                 {"DA error status value", l.da_error_status >= 0},
                                                 {"DA errno", l.da_errno >= 0},
                                                 {"DA SQLSTATE", l.da_sqlstate >= 0},
                                                 {"DA message", l.da_message >= 0}});
    part("  ROWS_SENT, ROWS_EXAMINED", {{"THD rows sent", l.sent_row_count >= 0},
                                        {"THD rows examined", l.examined_row_count >= 0}});
    part("  ROWS_AFFECTED", {{"DA affected rows", l.da_affected_rows >= 0},
                             {"DA OK status values", l.da_ok_statuses != 0}});
    if (t && t->profile == server::ServerProfile::mysql8) {
        const bool ps = l.last_prepared >= 0 && l.ps_query_string >= 0;
        mode("  EXECUTE's text with its `?`", base && ps,
             ps ? "" : "needs THD last prepared and prepared stmt text: shown with its values");
    }
    part("  LOCK_TIME",
         {{"THD lock time", l.lock_time >= 0}, {"THD start time", l.start_utime >= 0}});
    part("  MEMORY_USED and its peak (json)",
         {{"THD memory used", l.mem_used >= 0}, {"THD memory peak", l.mem_max >= 0}});
    const std::string one = base ? server::one_probe_missing(*t) : "see the refusal above";
    mode("one probe per statement (--stages off|sampled)", one.empty(),
         one.empty() ? "at log_slow_statement, " + site_text(*t->statement_end_site)
                     : one + ": entry and end probes instead");
    const bool proc_info = l.proc_info >= 0;
    mode("--stages sampled", base && proc_info, proc_info ? "" : "needs THD stage name");
    const bool exact = base && !t->stages.empty();
    mode("--stages exact", exact,
         exact ? std::to_string(t->stages.size()) + " stage probes"
               : "no stage sites or THD::enter_stage: falls back to sampled");
    mode("--waits", base, "");
    const bool tio = base && !t->table_io.empty() && l.handler_table_share >= 0 && l.share_db >= 0;
    mode("--table-io", tio, tio ? "" : "needs handler::ha_* methods and TABLE_SHARE names");
    const bool conn = base && t->file &&
                      server::find_by_prefix(*t->file, "_Z22thd_prepare_connectionP3THD") &&
                      server::find_by_prefix(*t->file, "_Z14end_connectionP3THD");
    const bool txn = base && l.option_bits >= 0 && l.multi_statement_mask != 0 && t->file &&
                     server::find_by_prefix(*t->file, "_Z11trans_beginP3THDj") &&
                     server::find_by_prefix(*t->file, "_Z15ha_commit_transP3THDb");
    mode("--transactions", txn,
         txn ? "" : "needs THD option bits, trans_begin's tested bits and ha_commit_trans");
    mode("--threads", conn,
         conn ? "" : "needs thd_prepare_connection(THD*) and end_connection(THD*)");
    const bool acc = base && l.security_ctx >= 0 && l.sctx_user >= 0;
    mode("--user, pfs-sql account names", acc,
         acc ? "" : "needs the THD's security context: --user is refused, names are 'unknown'");
}

}  // namespace

ServerReport server_report(pid_t pid) {
    ServerReport r;
    r.exe = "/proc/" + std::to_string(pid) + "/exe";
    auto target = server::resolve_server(pid);
    if (!target) {
        r.error = target.error().message;
    }
    std::shared_ptr<const elf::ElfFile> file;
    if (target) {
        file = target->file;
    } else if (auto f = elf::ElfFile::open(r.exe)) {
        file = std::move(f).value();
    }
    if (!file) {
        return r;
    }
    const std::string who = "pid " + std::to_string(pid);
    auto prof = server::detect_profile(*file, who);
    r.version = server::server_version(*file, pid, target ? target->load_bias : 0);
    if (prof || r.version.find("MariaDB") != std::string::npos) {
        r.flavour =
            server_flavour(prof ? prof->profile : server::ServerProfile::mariadb, r.version);
    }
    auto hook = [&](const char *name, const std::string &sym, std::string detail) {
        r.hooks.push_back(
            {name, !sym.empty(),
             sym.empty() ? detail : elf::demangle(sym) + (detail.empty() ? "" : ": " + detail)});
    };
    if (target) {
        hook("command start", target->dispatch_symbol, site_text(target->dispatch_site));
        hook("statement start", prof ? prof->statement : "", site_text(target->parse_site));
        if (!target->end_sites.empty()) {
            std::string d = std::to_string(target->end_sites.size()) +
                            " call site(s) in dispatch_command, " + site_text(target->end_sites[0]);
            hook("statement end", prof->end_statement, d);
        } else {
            hook("statement end", target->end_is_return ? prof->dispatch : "stage_cleaning_up",
                 target->end_is_return ? "a return probe (dearer)"
                                       : "the end-of-command stage site");
        }
        hook("stage probes", target->stages.empty() ? "" : "THD::enter_stage",
             target->stages.empty() ? "not found"
                                    : std::to_string(target->stages.size()) + " sites");
    } else if (prof) {
        hook("command start", prof->dispatch, "");
        hook("statement start", prof->statement, "");
        hook("statement end", prof->end_statement, prof->end_statement.empty() ? "not found" : "");
    }
    server::ThdLayout l;
    if (target) {
        l = target->layout;
    } else if (auto dl = server::derive_thd_layout(
                   *file, prof && prof->profile == server::ServerProfile::mysql8)) {
        l = *dl;
    }
    add_fields(l, r);
    r.statements = static_cast<bool>(target);
    add_modes(target ? &*target : nullptr, l, r);
    return r;
}

std::vector<ReportLine> server_modes(const server::ServerTarget &t) {
    ServerReport r;
    add_modes(&t, t.layout, r);
    return std::move(r.modes);
}

void print_server_report(const ServerReport &r, std::ostream &out) {
    out << "server: " << (r.flavour.empty() ? "not a recognised MySQL/MariaDB server" : r.flavour)
        << ", version " << (r.version.empty() ? "unknown" : r.version) << " (" << r.exe << ")\n";
    if (!r.error.empty()) {
        out << "mysqltrace server refuses it: " << r.error << "\n";
    }
    auto table = [&](const char *title, const char *yes, const char *no,
                     const std::vector<ReportLine> &lines) {
        size_t w = 6;
        for (const auto &l : lines) {
            w = std::max(w, l.name.size());
        }
        out << "\n"
            << title << std::string(w + 2 - std::string(title).size(), ' ') << "RESULT   DETAIL\n";
        for (const auto &l : lines) {
            const std::string res = l.found ? yes : no;
            out << l.name << std::string(w + 2 - l.name.size(), ' ') << res
                << std::string(9 - std::min<size_t>(8, res.size()), ' ') << l.detail << "\n";
        }
    };
    table("HOOK", "found", "MISSING", r.hooks);
    table("FIELD", "found", "MISSING", r.fields);
    table("MODE", "works", "NO", r.modes);
}

}  // namespace mysqltrace::doctor
