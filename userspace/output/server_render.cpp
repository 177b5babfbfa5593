// SPDX-License-Identifier: GPL-2.0-only
#include "output/server_render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "mysql/commands.h"
#include "output/json_writer.h"
#include "output/protocol_text.h"
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

// Commands whose argument is text worth showing as SQL_TEXT.
bool has_text(const server::Statement &st) {
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

std::string seconds(uint64_t ns) {
    std::string s;
    append_fixed(s, ns, 1'000'000'000, 6);
    return s;
}

std::string dump(const nlohmann::ordered_json &j) {
    // Statement text may hold any bytes: never fail on invalid UTF-8.
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

// SHOW PROFILE's resource columns (CPU in picoseconds, blocks of 512 bytes).
void put_counters(nlohmann::ordered_json &j, const server::TaskCounters &used) {
    j["CPU_user"] = used.user_ns() * 1000;
    j["CPU_system"] = used.system_ns() * 1000;
    j["Context_voluntary"] = used.nvcsw;
    j["Context_involuntary"] = used.nivcsw;
    j["Page_faults_major"] = used.maj_flt;
    j["Page_faults_minor"] = used.min_flt;
    j["Block_ops_in"] = used.read_bytes / 512;
    j["Block_ops_out"] = used.write_bytes / 512;
}

// performance_schema counts bytes of file and socket transfers only.
bool wait_has_bytes(const server::WaitName &n) {
    const bool io = n.object_type == "FILE" || n.event_name.rfind("wait/io/socket", 0) == 0;
    return io && n.operation != "open" && n.operation != "close" && n.operation != "sync";
}

}  // namespace

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

ServerRenderer::TextClass &ServerRenderer::text_class(const server::Statement &st) {
    key_.assign(reinterpret_cast<const char *>(&st.command), sizeof(st.command));
    key_ += st.text;
    auto it = text_classes_.find(key_);
    if (it != text_classes_.end()) {
        return it->second;
    }
    if (text_classes_.size() >= 4096) {
        text_classes_.clear();  // texts with literals in them: seldom seen twice
    }
    TextClass c;
    c.event_name = server::statement_event_name(st);
    return text_classes_.emplace(key_, std::move(c)).first->second;
}

const std::string &ServerRenderer::event_name(const server::Statement &st) {
    return text_class(st).event_name;
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
        // reads as one stage, as SHOW PROFILE shows it.
        if (!rows.empty() && rows.back().name == r.name && rows.back().end_ns == r.start_ns &&
            rows.back().line == r.line) {
            rows.back().end_ns = r.end_ns;
            rows.back().used =
                st.stages[i - 1].counters.until(last ? st.end : st.stages[i + 1].counters);
            continue;
        }
        rows.push_back(r);
    }
    return rows;
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

    if (!st.samples.empty() || st.sample_period_us != 0) {
        auto &tc = text_class(st);
        if (tc.totals == nullptr) {
            tc.totals = &classes_[tc.event_name + "\x1f" +
                                  (has_text(st) ? server::digest_text(st.text) : "")];
            tc.totals->event_name = tc.event_name;
        }
        auto &c = *tc.totals;
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
            json_rows(st, rows, waits, event_id);
            break;
        case ServerFormat::profile:
            out_ = profile_rows(st, rows);
            break;
    }
    return out_;
}

void ServerRenderer::count_wait(const NamedWait &w) {
    auto &t = wait_totals_[w.name.event_name];
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
    if (format_ == ServerFormat::json) {
        std::string line;
        wait_line(line, w, next++, 0, nullptr);
        return line;
    }
    last_.push_back(wait_json(w, next++, nlohmann::ordered_json(), nullptr));
    return "";
}

nlohmann::ordered_json ServerRenderer::wait_json(const NamedWait &w, uint64_t event_id,
                                                 nlohmann::ordered_json nesting_id,
                                                 const char *nesting_type) {
    using J = nlohmann::ordered_json;
    const auto &n = w.name;
    J j;
    j["kind"] = "wait";
    j["pid"] = pid_;
    j["tid"] = w.wait.tid;
    j["THREAD_ID"] = w.wait.thread_id;
    j["EVENT_ID"] = event_id;
    j["END_EVENT_ID"] = event_id;
    j["EVENT_NAME"] = n.event_name;
    j["SOURCE"] = J();
    j["TIMER_START"] = w.wait.start_ns * 1000;
    j["TIMER_END"] = w.wait.end_ns * 1000;
    j["TIMER_WAIT"] = (w.wait.end_ns - w.wait.start_ns) * 1000;
    j["SPINS"] = J();
    j["OBJECT_SCHEMA"] = n.object_schema.empty() ? J() : J(n.object_schema);
    j["OBJECT_NAME"] = n.object_name.empty() ? J() : J(n.object_name);
    j["INDEX_NAME"] = J();
    j["OBJECT_TYPE"] = n.object_type.empty() ? J() : J(n.object_type);
    j["OBJECT_INSTANCE_BEGIN"] = n.object_instance;
    j["NESTING_EVENT_ID"] = nesting_id;
    j["NESTING_EVENT_TYPE"] = nesting_type ? J(nesting_type) : J();
    j["OPERATION"] = n.operation;
    j["NUMBER_OF_BYTES"] = wait_has_bytes(n) ? J(w.wait.bytes) : J();
    j["FLAGS"] = J();
    if (w.wait.kind == MT_WAIT_TABLE) {
        // The handler's result: a fetch that found no row (137: end of the
        // table or range, 120: no such key) is a call performance_schema
        // counts only outside its batch mode (MySQL's scans of a join's last
        // table count the rows found).
        if (w.wait.ret != 0) {
            j["handler_error"] = w.wait.ret;
        }
    } else if (w.wait.ret < 0) {
        j["errno"] = -w.wait.ret;
    }
    return j;
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
    for (const auto &w : waits) {
        std::string object = w.name.object_schema.empty()
                                 ? w.name.object_name
                                 : w.name.object_schema + "." + w.name.object_name;
        char buf[1024];
        std::snprintf(buf, sizeof(buf), "      ~ %-44s %10s %s%s%s\n", w.name.event_name.c_str(),
                      human_duration(w.wait.end_ns - w.wait.start_ns).c_str(),
                      w.name.operation.c_str(), object.empty() ? "" : " ", object.c_str());
        out += buf;
    }
}

void ServerRenderer::json_rows(const server::Statement &st, const std::vector<StageRow> &rows,
                               const std::vector<NamedWait> &waits, uint64_t event_id) {
    nlohmann::ordered_json j;
    const auto used = st.begin.until(st.end);
    j["kind"] = "statement";
    j["pid"] = pid_;
    j["tid"] = st.tid;
    j["THREAD_ID"] = st.thread_id;
    j["EVENT_ID"] = event_id;
    j["END_EVENT_ID"] = event_id + rows.size() + waits.size() + 1;
    j["EVENT_NAME"] = event_name(st);
    j["TIMER_START"] = st.start_ns * 1000;  // picoseconds, as performance_schema
    j["TIMER_END"] = st.end_ns * 1000;
    j["TIMER_WAIT"] = (st.end_ns - st.start_ns) * 1000;
    j["SQL_TEXT"] = has_text(st) ? nlohmann::ordered_json(st.text) : nlohmann::ordered_json();
    if (st.truncated()) {
        j["sql_bytes"] = st.text_len;
    }
    j["DIGEST_TEXT"] = has_text(st) ? nlohmann::ordered_json(server::digest_text(st.text))
                                    : nlohmann::ordered_json();
    j["CURRENT_SCHEMA"] = st.db.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(st.db);
    j["MYSQL_ERRNO"] = st.failed() ? st.error : 0;
    j["RETURNED_SQLSTATE"] =
        st.failed() ? nlohmann::ordered_json(st.sqlstate) : nlohmann::ordered_json();
    j["MESSAGE_TEXT"] = st.failed() ? nlohmann::ordered_json(st.message) : nlohmann::ordered_json();
    j["ERRORS"] = st.failed() ? 1 : 0;
    j["ROWS_AFFECTED"] = st.rows_affected;
    j["ROWS_SENT"] = st.rows_sent;
    j["ROWS_EXAMINED"] = st.rows_examined;
    j["command"] = mysql::command_name(st.command);
    j["query_id"] = st.query_id;
    j["CPU_TIME"] = used.cpu_ns * 1000;
    put_counters(j, used);
    if (!(st.flags & MT_STMT_ENDED) && !(st.flags & MT_STMT_SPLIT)) {
        j["end"] = "not seen";  // the thread began another command first
    }
    if (st.stages_lost) {
        j["stages_lost"] = st.stages_lost;
    }
    if (!st.samples.empty()) {
        auto &s = j["stage_samples"] = nlohmann::ordered_json::array();
        for (const auto &smp : st.samples) {
            s.push_back({{"stage", name_of(smp.stage)},
                         {"on_cpu_samples", smp.on_cpu},
                         {"off_cpu_ns", smp.off_cpu_ns},
                         {"switches", smp.switches}});
        }
    }
    last_.push_back(std::move(j));
    for (const auto &n : nested(rows, waits, event_id)) {
        const uint64_t id = n.id;
        const size_t i = n.index;
        if (i >= rows.size()) {
            last_.push_back(wait_json(waits[i - rows.size()], id, n.nesting_id, n.nesting_type));
            continue;
        }
        const auto &r = rows[i];
        nlohmann::ordered_json s;
        s["kind"] = "stage";
        s["pid"] = pid_;
        s["tid"] = st.tid;
        s["THREAD_ID"] = st.thread_id;
        s["EVENT_ID"] = id;
        s["END_EVENT_ID"] = id;
        s["EVENT_NAME"] = server::stage_event_name(r.name);
        s["SOURCE"] =
            r.file.empty()
                ? nlohmann::ordered_json()
                : nlohmann::ordered_json(std::string(r.file) + ":" + std::to_string(r.line));
        s["TIMER_START"] = r.start_ns * 1000;
        s["TIMER_END"] = r.end_ns * 1000;
        s["TIMER_WAIT"] = (r.end_ns - r.start_ns) * 1000;
        s["NESTING_EVENT_ID"] = event_id;
        s["NESTING_EVENT_TYPE"] = "STATEMENT";
        put_counters(s, r.used);
        last_.push_back(std::move(s));
    }
}

const std::vector<ServerRenderer::Nested> &ServerRenderer::nested(
    const std::vector<StageRow> &rows, const std::vector<NamedWait> &waits, uint64_t event_id) {
    // Nested events are numbered in the order they began, as the server
    // numbers them; a wait nests in the stage it began in.
    auto &order = order_;  // start, index (stages, then waits)
    order.clear();
    for (size_t i = 0; i < rows.size(); i++) {
        order.emplace_back(rows[i].start_ns, i);
    }
    for (size_t i = 0; i < waits.size(); i++) {
        order.emplace_back(waits[i].wait.start_ns, rows.size() + i);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
    nested_.clear();
    uint64_t id = event_id;
    for (const auto &[start, i] : order) {
        ++id;
        Nested n{i, id, event_id, "STATEMENT"};
        if (i >= rows.size()) {
            const auto &w = waits[i - rows.size()];
            // Stages numbered so far: those that began before the wait.
            for (const auto &earlier : nested_) {
                const size_t k = earlier.index;
                if (k < rows.size() && rows[k].start_ns <= w.wait.start_ns &&
                    w.wait.start_ns < rows[k].end_ns) {
                    n.nesting_id = earlier.id;
                    n.nesting_type = "STAGE";
                }
            }
        }
        nested_.push_back(n);
    }
    return nested_;
}

namespace {

void put_counters(JsonWriter &j, const server::TaskCounters &used) {
    j.field("CPU_user", used.user_ns() * 1000);
    j.field("CPU_system", used.system_ns() * 1000);
    j.field("Context_voluntary", used.nvcsw);
    j.field("Context_involuntary", used.nivcsw);
    j.field("Page_faults_major", used.maj_flt);
    j.field("Page_faults_minor", used.min_flt);
    j.field("Block_ops_in", used.read_bytes / 512);
    j.field("Block_ops_out", used.write_bytes / 512);
}

}  // namespace

void ServerRenderer::json_lines(std::string &out, const server::Statement &st,
                                const std::vector<StageRow> &rows,
                                const std::vector<NamedWait> &waits, uint64_t event_id) {
    const auto used = st.begin.until(st.end);
    const bool text = has_text(st);
    const bool failed = st.failed();
    {
        JsonWriter j(out);
        j.begin_object();
        j.field("kind", "statement");
        j.field("pid", pid_);
        j.field("tid", st.tid);
        j.field("THREAD_ID", st.thread_id);
        j.field("EVENT_ID", event_id);
        j.field("END_EVENT_ID", event_id + rows.size() + waits.size() + 1);
        j.field("EVENT_NAME", event_name(st));
        j.field("TIMER_START", st.start_ns * 1000);  // picoseconds, as performance_schema
        j.field("TIMER_END", st.end_ns * 1000);
        j.field("TIMER_WAIT", (st.end_ns - st.start_ns) * 1000);
        j.key("SQL_TEXT");
        text ? j.value(st.text) : j.null();
        if (st.truncated()) {
            j.field("sql_bytes", st.text_len);
        }
        j.key("DIGEST_TEXT");
        text ? j.value(server::digest_text(st.text)) : j.null();
        j.string_or_null("CURRENT_SCHEMA", st.db);
        j.field("MYSQL_ERRNO", failed ? st.error : 0);
        j.key("RETURNED_SQLSTATE");
        failed ? j.value(st.sqlstate) : j.null();
        j.key("MESSAGE_TEXT");
        failed ? j.value(st.message) : j.null();
        j.field("ERRORS", failed ? 1 : 0);
        j.field("ROWS_AFFECTED", st.rows_affected);
        j.field("ROWS_SENT", st.rows_sent);
        j.field("ROWS_EXAMINED", st.rows_examined);
        j.field("command", mysql::command_name(st.command));
        j.field("query_id", st.query_id);
        j.field("CPU_TIME", used.cpu_ns * 1000);
        put_counters(j, used);
        if (!(st.flags & MT_STMT_ENDED) && !(st.flags & MT_STMT_SPLIT)) {
            j.field("end", "not seen");  // the thread began another command first
        }
        if (st.stages_lost) {
            j.field("stages_lost", st.stages_lost);
        }
        if (!st.samples.empty()) {
            j.key("stage_samples");
            j.begin_array();
            for (const auto &smp : st.samples) {
                j.begin_object();
                j.field("stage", name_of(smp.stage));
                j.field("on_cpu_samples", smp.on_cpu);
                j.field("off_cpu_ns", smp.off_cpu_ns);
                j.field("switches", smp.switches);
                j.end_object();
            }
            j.end_array();
        }
        j.end_object();
        out += '\n';
    }
    for (const auto &n : nested(rows, waits, event_id)) {
        if (n.index >= rows.size()) {
            wait_line(out, waits[n.index - rows.size()], n.id, n.nesting_id, n.nesting_type);
            continue;
        }
        const auto &r = rows[n.index];
        JsonWriter s(out);
        s.begin_object();
        s.field("kind", "stage");
        s.field("pid", pid_);
        s.field("tid", st.tid);
        s.field("THREAD_ID", st.thread_id);
        s.field("EVENT_ID", n.id);
        s.field("END_EVENT_ID", n.id);
        s.field("EVENT_NAME", server::stage_event_name(r.name));
        s.key("SOURCE");
        if (r.file.empty()) {
            s.null();
        } else {
            // "file:line", built in place: the writer escapes the whole.
            key_.assign(r.file);
            key_ += ':';
            append_uint(key_, r.line);
            s.value(key_);
        }
        s.field("TIMER_START", r.start_ns * 1000);
        s.field("TIMER_END", r.end_ns * 1000);
        s.field("TIMER_WAIT", (r.end_ns - r.start_ns) * 1000);
        s.field("NESTING_EVENT_ID", event_id);
        s.field("NESTING_EVENT_TYPE", "STATEMENT");
        put_counters(s, r.used);
        s.end_object();
        out += '\n';
    }
}

void ServerRenderer::wait_line(std::string &out, const NamedWait &w, uint64_t event_id,
                               uint64_t nesting_id, const char *nesting_type) {
    const auto &n = w.name;
    JsonWriter j(out);
    j.begin_object();
    j.field("kind", "wait");
    j.field("pid", pid_);
    j.field("tid", w.wait.tid);
    j.field("THREAD_ID", w.wait.thread_id);
    j.field("EVENT_ID", event_id);
    j.field("END_EVENT_ID", event_id);
    j.field("EVENT_NAME", n.event_name);
    j.null_field("SOURCE");
    j.field("TIMER_START", w.wait.start_ns * 1000);
    j.field("TIMER_END", w.wait.end_ns * 1000);
    j.field("TIMER_WAIT", (w.wait.end_ns - w.wait.start_ns) * 1000);
    j.null_field("SPINS");
    j.string_or_null("OBJECT_SCHEMA", n.object_schema);
    j.string_or_null("OBJECT_NAME", n.object_name);
    j.null_field("INDEX_NAME");
    j.string_or_null("OBJECT_TYPE", n.object_type);
    j.field("OBJECT_INSTANCE_BEGIN", n.object_instance);
    j.key("NESTING_EVENT_ID");
    nesting_id ? j.value(nesting_id) : j.null();
    j.key("NESTING_EVENT_TYPE");
    nesting_type ? j.value(nesting_type) : j.null();
    j.field("OPERATION", n.operation);
    j.key("NUMBER_OF_BYTES");
    if (wait_has_bytes(n)) {
        j.value(w.wait.bytes);
    } else {
        j.null();
    }
    j.null_field("FLAGS");
    if (w.wait.kind == MT_WAIT_TABLE) {
        // As in wait_json: the handler's result of a fetch that found no row.
        if (w.wait.ret != 0) {
            j.field("handler_error", w.wait.ret);
        }
    } else if (w.wait.ret < 0) {
        j.field("errno", -w.wait.ret);
    }
    j.end_object();
    out += '\n';
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

std::string ServerRenderer::summary() {
    std::string out = wait_summary();
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
