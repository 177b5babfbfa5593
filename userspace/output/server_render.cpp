// SPDX-License-Identifier: GPL-2.0-only
#include "output/server_render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "mysql/commands.h"
#include "output/protocol_text.h"
#include "output/json_writer.h"
#include "output/units.h"
#include "server/statement_tracer.h"

namespace mysqltrace::output {

namespace {

// Pads what was appended since `from` with spaces after it, to `width` bytes.
void align_left(std::string &out, size_t from, size_t width) {
    const size_t n = out.size() - from;
    if (n < width) {
        out.append(width - n, ' ');
    }
}

// Pads what was appended since `from` with spaces in front, to `width` bytes.
void align_right(std::string &out, size_t from, size_t width) {
    const size_t n = out.size() - from;
    if (n < width) {
        out.insert(from, width - n, ' ');
    }
}

std::string seconds(uint64_t ns) {
    std::string s;
    append_fixed(s, ns, 1'000'000'000, 6);
    return s;
}

std::string dump(const nlohmann::ordered_json &j) {
    // Statement text may hold any bytes: never fail on invalid UTF-8.
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace

bool ServerRenderer::has_text(const server::Statement &st) {
    switch (st.command) {
        case 2:   // COM_INIT_DB
        case 3:   // COM_QUERY
        case 4:   // COM_FIELD_LIST
        case 5:   // COM_CREATE_DB
        case 6:   // COM_DROP_DB
        case 22:  // COM_STMT_PREPARE
            return true;
        case mysql::kComStmtExecute:
        case 28:  // COM_STMT_FETCH: the prepared statement's text
        case mysql::kComStmtBulkExecute:
            return !st.text.empty();
        default:
            return false;
    }
}

ServerRenderer::ServerRenderer(ServerFormat format, uint32_t pid,
                               const std::vector<server::StageSite> &sites,
                               std::function<std::string(uint64_t)> name_at)
    : format_(format), pid_(pid), sites_(sites), name_at_(std::move(name_at)) {}

std::string ServerRenderer::header() const {
    if (format_ != ServerFormat::text) {
        return "";
    }
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%-15s %9s %10s %-26s %9s %s\n", "TIME", "THREAD_ID",
                  "DURATION", "EVENT_NAME", "ROWS", "SQL_TEXT");
    return buf;
}

const std::string &ServerRenderer::name_of(uint64_t addr) {
    auto it = names_.find(addr);
    if (it == names_.end()) {
        it = names_.emplace(addr, name_at_(addr)).first;
    }
    return it->second;
}

const std::string &ServerRenderer::event_name(const server::Statement &st) {
    return text_classes_.of(st).event_name;
}

const std::vector<ServerRenderer::StageRow> &ServerRenderer::stage_rows(
    const server::Statement &st) {
    auto &rows = rows_;
    rows.clear();
    // MySQL 8 enters "starting" inside dispatch_command, after its probe:
    // that mark's row then begins with the statement.
    const bool starts_itself = !st.stages.empty() && st.stages[0].file != 0 &&
                               st.stages[0].stage != 0 && name_of(st.stages[0].stage) == "starting";
    if ((st.flags & MT_STMT_EXACT) && !st.stages.empty() && st.stages[0].ts_ns > st.start_ns &&
        !starts_itself) {
        // The server entered "starting" before dispatch_command, where the
        // statement's own probe fires: that first stretch is still its own.
        StageRow r;
        r.name = "starting";
        r.start_ns = st.start_ns;
        r.end_ns = st.stages[0].ts_ns;
        r.used = st.begin.until(st.stages[0].counters);
        rows.push_back(r);
    }
    for (size_t i = 0; i < st.stages.size(); i++) {
        const auto &m = st.stages[i];
        StageRow r;
        if (m.stage != 0) {
            r.name = name_of(m.stage);  // a site that enters a stage known only at run time
            if (m.file != 0) {
                r.file = name_of(m.file);  // THD::enter_stage's calling_file
                r.line = m.line;
            }
        } else if (m.site < sites_.size()) {
            const auto &site = sites_[m.site];
            r.name = site.stage_name;
            r.function = site.function;
            r.file = site.source_file;
            r.line = site.source_line;
        } else {
            auto &name = unknown_sites_[m.site];
            if (name.empty()) {
                name = "(stage site " + std::to_string(m.site) + ")";
            }
            r.name = name;
        }
        r.start_ns = m.ts_ns;
        const bool last = i + 1 == st.stages.size();
        r.end_ns = last ? st.end_ns : st.stages[i + 1].ts_ns;
        r.used = m.counters.until(last ? st.end : st.stages[i + 1].counters);
        if (i == 0 && starts_itself && m.ts_ns > st.start_ns) {
            r.start_ns = st.start_ns;
            r.used = st.begin.until(last ? st.end : st.stages[i + 1].counters);
        }
        // A stage entered again right away (the same site twice in a row)
        // reads as one stage, as SHOW PROFILE shows it; but each call of
        // MySQL's out-of-line THD::enter_stage (its calling file known) is a
        // stage of its own, as its SHOW PROFILE and performance_schema list
        // them (INSERT ... SELECT: "checking permissions" twice).
        if (m.file == 0 && !rows.empty() && rows.back().name == r.name &&
            rows.back().end_ns == r.start_ns && rows.back().line == r.line) {
            rows.back().end_ns = r.end_ns;
            rows.back().used =
                st.stages[i - 1].counters.until(last ? st.end : st.stages[i + 1].counters);
            continue;
        }
        rows.push_back(r);
    }
    return rows;
}

uint64_t ServerRenderer::take_event_id(uint64_t thread_id) {
    uint64_t &next = next_event_id_[thread_id];
    if (next == 0) {
        next = 1;
    }
    return next++;
}

const std::string &ServerRenderer::statement(const server::Statement &st,
                                             const std::vector<NamedWait> &waits) {
    const auto &rows = stage_rows(st);
    uint64_t &next = next_event_id_[st.thread_id];
    if (next == 0) {
        next = 1;
    }
    const uint64_t event_id = next;
    next += 1 + rows.size() + waits.size();
    for (const auto &w : waits) {
        count_wait(w);
    }
    if (st.failed()) {
        auto &e = errors_[{st.error, st.sqlstate}];
        if (e.count++ == 0) {
            e.first_ns = st.start_ns;
        }
        e.last_ns = st.start_ns;
        e.message = st.message;
    }

    if (!st.samples.empty() || st.sample_period_us != 0) {
        auto &tc = text_classes_.of(st);
        if (tc.extra.totals == nullptr) {
            tc.extra.totals =
                &classes_[tc.event_name + "\x1f" + (has_text(st) ? tc.digest(st) : "")];
            tc.extra.totals->event_name = tc.event_name;
        }
        auto &c = *tc.extra.totals;
        c.count++;
        c.wait_ns += st.end_ns - st.start_ns;
        c.cpu_ns += st.begin.until(st.end).cpu_ns;
        c.period_us = st.sample_period_us;
        c.samples_lost += st.samples_lost;
        for (const auto &s : st.samples) {
            auto &t = c.stages[name_of(s.stage)];
            t.on_cpu += s.on_cpu;
            t.off_cpu_ns += s.off_cpu_ns;
            t.switches += s.switches;
        }
    }
    last_.clear();
    out_.clear();
    switch (format_) {
        case ServerFormat::text:
            text_rows(out_, st, rows, waits);
            break;
        case ServerFormat::json:
            json_lines(out_, st, rows, waits, event_id);
            break;
        case ServerFormat::pfs_sql:
            json_lines(out_, st, rows, waits, event_id);
            as_events(out_);
            break;
        case ServerFormat::profile:
            out_ = profile_rows(st, rows);
            break;
    }
    return out_;
}

void ServerRenderer::count_wait(const NamedWait &w) {
    auto it = wait_totals_.find(w.name.event_name);
    if (it == wait_totals_.end()) {
        it = wait_totals_.emplace(std::string(w.name.event_name), WaitTotals{}).first;
    }
    auto &t = it->second;
    const uint64_t ns = w.wait.end_ns - w.wait.start_ns;
    t.count++;
    t.sum_ns += ns;
    t.min_ns = std::min(t.min_ns, ns);
    t.max_ns = std::max(t.max_ns, ns);
}

std::string ServerRenderer::wait(const NamedWait &w) {
    count_wait(w);
    last_.clear();
    if (format_ != ServerFormat::json && format_ != ServerFormat::pfs_sql) {
        return "";  // text and profile show waits inside statements only
    }
    uint64_t &next = next_event_id_[w.wait.thread_id];
    if (next == 0) {
        next = 1;
    }
    std::string line;
    wait_line(line, w, next++, 0, nullptr);
    if (format_ == ServerFormat::pfs_sql) {
        as_events(line);
    }
    return line;
}

void ServerRenderer::text_rows(std::string &out, const server::Statement &st,
                               const std::vector<StageRow> &rows,
                               const std::vector<NamedWait> &waits) {
    // "%-15s %9llu %10s %-26s %9llu SQL_TEXT", then a line per stage
    // "    %-40s %10s  cpu %s": written piece by piece, as a busy server
    // brings tens of thousands of statements a second.
    size_t from = out.size();
    clock_.append_wall(st.start_ns, out);
    align_left(out, from, 15);
    out += ' ';
    from = out.size();
    append_uint(out, st.thread_id);
    align_right(out, from, 9);
    out += ' ';
    from = out.size();
    append_human_duration(out, st.end_ns - st.start_ns);
    align_right(out, from, 10);
    out += ' ';
    from = out.size();
    out += event_name(st);
    align_left(out, from, 26);
    out += ' ';
    from = out.size();
    append_uint(out, st.rows_sent ? st.rows_sent : st.rows_affected);
    align_right(out, from, 9);
    out += ' ';
    if (has_text(st)) {
        append_escaped(out, st.text);
        if (st.truncated()) {
            out += "... (";
            append_uint(out, st.text_len);
            out += " bytes)";
        }
    }
    while (!out.empty() && out.back() == ' ') {
        out.pop_back();
    }
    out += '\n';
    if (st.failed()) {
        out += "    ERROR ";
        append_uint(out, st.error);
        out += " (";
        out += st.sqlstate;
        out += "): ";
        append_escaped(out, st.message);
        out += '\n';
    }
    for (const auto &r : rows) {
        out += "    ";
        from = out.size();
        out += "stage/sql/";
        out += r.name;
        align_left(out, from, 40);
        out += ' ';
        from = out.size();
        append_human_duration(out, r.end_ns - r.start_ns);
        align_right(out, from, 10);
        out += "  cpu ";
        append_human_duration(out, r.used.cpu_ns);
        out += '\n';
    }
    if (st.stages_lost) {
        out += "    (";
        append_uint(out, st.stages_lost);
        out += " more stages not kept)\n";
    }
    // "      ~ %-44s %10s OPERATION[ OBJECT]"
    for (const auto &w : waits) {
        out += "      ~ ";
        from = out.size();
        out += w.name.event_name;
        align_left(out, from, 44);
        out += ' ';
        from = out.size();
        append_human_duration(out, w.wait.end_ns - w.wait.start_ns);
        align_right(out, from, 10);
        out += ' ';
        out += w.name.operation;
        if (!w.name.object_name.empty() || !w.name.object_schema.empty()) {
            out += ' ';
            w.name.append_object(out);
        }
        out += '\n';
    }
}

std::string ServerRenderer::profile_rows(const server::Statement &st,
                                         const std::vector<StageRow> &rows) {
    if (rows.empty()) {
        return "";  // sampled mode: the shares come in the summary
    }
    std::string out = "# THREAD_ID " + std::to_string(st.thread_id) + ", " + event_name(st) + ", " +
                      seconds(st.end_ns - st.start_ns) + " s";
    if (has_text(st)) {
        out += ": " + escape_text(st.text.substr(0, 200));
    }
    out += "\n";
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%-32s %-9s %-9s %-10s %-7s %-7s %-6s %-6s %-5s %-5s %s\n",
                  "Status", "Duration", "CPU_user", "CPU_system", "Ctx_vol", "Ctx_inv", "Blk_in",
                  "Blk_out", "PF_ma", "PF_mi", "Source");
    out += buf;
    for (const auto &r : rows) {
        std::string source;
        if (!r.file.empty()) {
            source = std::string(r.file) + ":" + std::to_string(r.line);
        }
        std::snprintf(buf, sizeof(buf),
                      "%-32.*s %-9s %-9s %-10s %-7llu %-7llu %-6llu %-6llu %-5llu %-5llu %s\n",
                      static_cast<int>(r.name.size()), r.name.data(),
                      seconds(r.end_ns - r.start_ns).c_str(), seconds(r.used.user_ns()).c_str(),
                      seconds(r.used.system_ns()).c_str(),
                      static_cast<unsigned long long>(r.used.nvcsw),
                      static_cast<unsigned long long>(r.used.nivcsw),
                      static_cast<unsigned long long>(r.used.read_bytes / 512),
                      static_cast<unsigned long long>(r.used.write_bytes / 512),
                      static_cast<unsigned long long>(r.used.maj_flt),
                      static_cast<unsigned long long>(r.used.min_flt), source.c_str());
        out += buf;
    }
    return out + "\n";
}

std::string ServerRenderer::wait_summary() {
    std::vector<std::pair<std::string, WaitTotals>> order(wait_totals_.begin(), wait_totals_.end());
    std::sort(order.begin(), order.end(),
              [](const auto &a, const auto &b) { return a.second.sum_ns > b.second.sum_ns; });
    std::string out;
    if (!order.empty() && format_ != ServerFormat::json) {
        char buf[256];
        std::snprintf(buf, sizeof(buf),
                      "\n---- waits by event name (events_waits_summary_global_by_event_name) "
                      "----\n%-52s %10s %12s %12s %12s %12s\n",
                      "EVENT_NAME", "COUNT_STAR", "SUM_WAIT", "MIN_WAIT", "AVG_WAIT", "MAX_WAIT");
        out += buf;
    }
    for (const auto &[name, t] : order) {
        if (format_ == ServerFormat::json) {
            nlohmann::ordered_json j;
            j["kind"] = "wait_summary";
            j["pid"] = pid_;
            j["EVENT_NAME"] = name;
            j["COUNT_STAR"] = t.count;
            j["SUM_TIMER_WAIT"] = t.sum_ns * 1000;
            j["MIN_TIMER_WAIT"] = t.min_ns * 1000;
            j["AVG_TIMER_WAIT"] = t.sum_ns / t.count * 1000;
            j["MAX_TIMER_WAIT"] = t.max_ns * 1000;
            out += dump(j);
            continue;
        }
        char buf[256];
        std::snprintf(buf, sizeof(buf), "%-52s %10llu %12s %12s %12s %12s\n", name.c_str(),
                      static_cast<unsigned long long>(t.count), human_duration(t.sum_ns).c_str(),
                      human_duration(t.min_ns).c_str(), human_duration(t.sum_ns / t.count).c_str(),
                      human_duration(t.max_ns).c_str());
        out += buf;
    }
    return out;
}

std::string ServerRenderer::error_summary() {
    std::string out;
    if (!errors_.empty() && format_ != ServerFormat::json) {
        char buf[256];
        std::snprintf(buf, sizeof(buf),
                      "\n---- errors by number (events_errors_summary_global_by_error) ----\n"
                      "%12s %-9s %16s %-15s  %-15s  %s\n",
                      "ERROR_NUMBER", "SQL_STATE", "SUM_ERROR_RAISED", "FIRST_SEEN", "LAST_SEEN",
                      "MESSAGE_TEXT (the last)");
        out += buf;
    }
    for (const auto &[key, e] : errors_) {
        if (format_ == ServerFormat::json) {
            JsonWriter j(out);
            j.begin_object();
            j.field("kind", "error_summary");
            j.field("pid", pid_);
            j.field("ERROR_NUMBER", key.first);
            j.field("SQL_STATE", key.second);
            j.field("SUM_ERROR_RAISED", e.count);
            // TIMER_START of the first and the last statement that raised it.
            j.field("FIRST_SEEN_TIMER", e.first_ns * 1000);
            j.field("LAST_SEEN_TIMER", e.last_ns * 1000);
            j.field("MESSAGE_TEXT", e.message);
            j.end_object();
            out += '\n';
            continue;
        }
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%12u %-9s %16llu ", key.first, key.second.c_str(),
                      static_cast<unsigned long long>(e.count));
        out += buf;
        clock_.append_wall(e.first_ns, out);  // "HH:MM:SS.uuuuuu"
        out += "  ";
        clock_.append_wall(e.last_ns, out);
        out += "  ";
        out += e.message;
        out += '\n';
    }
    return out;
}

std::string ServerRenderer::summary() {
    std::string out = wait_summary() + error_summary();
    std::vector<std::pair<std::string, const ClassTotals *>> order;
    for (const auto &[k, c] : classes_) {
        order.emplace_back(k, &c);
    }
    std::sort(order.begin(), order.end(),
              [](const auto &a, const auto &b) { return a.second->wait_ns > b.second->wait_ns; });
    if (!order.empty() && format_ != ServerFormat::json) {
        out += "\n---- where the time went, by statement class and stage (sampled) ----\n";
    }
    for (const auto &[key, c] : order) {
        const std::string digest = key.substr(key.find('\x1f') + 1);
        // On-CPU time per stage is estimated from samples, off-CPU time is
        // measured at each switch; both over the statements' total time.
        uint64_t samples = 0;
        for (const auto &[name, t] : c->stages) {
            samples += t.on_cpu;
        }
        std::vector<std::pair<std::string, double>> shares;
        double attributed = 0;
        for (const auto &[name, t] : c->stages) {
            const double ns = static_cast<double>(t.on_cpu) * c->period_us * 1e3 +
                              static_cast<double>(t.off_cpu_ns);
            shares.emplace_back(name, ns);
            attributed += ns;
        }
        std::sort(shares.begin(), shares.end(),
                  [](const auto &a, const auto &b) { return a.second > b.second; });
        const double rel = samples ? 100.0 / std::sqrt(static_cast<double>(samples)) : 100.0;
        if (format_ == ServerFormat::json) {
            nlohmann::ordered_json j;
            j["kind"] = "stage_profile";
            j["pid"] = pid_;
            j["EVENT_NAME"] = c->event_name;
            j["DIGEST_TEXT"] = digest;
            j["COUNT_STAR"] = c->count;
            j["SUM_TIMER_WAIT"] = c->wait_ns * 1000;
            j["on_cpu_samples"] = samples;
            j["sample_period_us"] = c->period_us;
            j["samples_lost"] = c->samples_lost;
            auto &a = j["stages"] = nlohmann::ordered_json::array();
            for (const auto &[name, ns] : shares) {
                const auto &t = c->stages.at(name);
                a.push_back({{"EVENT_NAME", server::stage_event_name(name)},
                             {"share", attributed > 0 ? ns / attributed : 0.0},
                             {"on_cpu_samples", t.on_cpu},
                             {"off_cpu_ns", t.off_cpu_ns},
                             {"switches", t.switches}});
            }
            out += dump(j);
            continue;
        }
        char buf[256];
        std::snprintf(buf, sizeof(buf), "# %s x%llu, %s s total%s%s\n", c->event_name.c_str(),
                      static_cast<unsigned long long>(c->count), seconds(c->wait_ns).c_str(),
                      digest.empty() ? "" : ": ", escape_text(digest.substr(0, 160)).c_str());
        out += buf;
        for (const auto &[name, ns] : shares) {
            const auto &t = c->stages.at(name);
            std::snprintf(buf, sizeof(buf), "  %5.1f%%  %-36s %6llu samples  off-CPU %s\n",
                          attributed > 0 ? 100.0 * ns / attributed : 0.0, name.c_str(),
                          static_cast<unsigned long long>(t.on_cpu),
                          human_duration(t.off_cpu_ns).c_str());
            out += buf;
        }
        const auto period = static_cast<unsigned long long>(c->period_us);
        if (shares.empty()) {
            // Too short to be sampled, and never switched out.
            std::snprintf(buf, sizeof(buf),
                          "  (no sample: a timer every %llu us found none of them running, and "
                          "none was switched out)\n",
                          period);
        } else if (samples == 0) {
            std::snprintf(buf, sizeof(buf),
                          "  (no on-CPU sample every %llu us: the shares are of the off-CPU time, "
                          "measured at each switch)\n",
                          period);
        } else {
            std::snprintf(buf, sizeof(buf),
                          "  (%llu on-CPU samples every %llu us, share of on-CPU time +-%.0f%%; "
                          "off-CPU time measured at each switch)\n",
                          static_cast<unsigned long long>(samples), period, rel);
        }
        out += buf;
    }
    return out;
}

}  // namespace mysqltrace::output
