// SPDX-License-Identifier: GPL-2.0-only
// ServerRenderer's performance_schema-shaped JSON: the events of a statement
// and its waits written straight as lines (json_lines, wait_line). --format
// json prints them; pfs-sql reads them back as objects (as_events), so both
// formats have one field list.
#include "output/server_render.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mysql/commands.h"
#include "output/json_writer.h"
#include "output/units.h"
#include "server/statement.h"
#include "server/statement_tracer.h"

namespace mysqltrace::output {

namespace {

// The columns every --format json line opens with: which event, of which
// thread of which process, up to EVENT_NAME's key; its value is the
// caller's (a statement's is rendered once per text class).
void event_head(FlatWriter &f, std::string_view kind, uint32_t pid, uint32_t tid,
                uint64_t thread_id, uint64_t event_id, uint64_t end_event_id) {
    f.lit("{\"kind\":\"");
    f.raw(kind);  // a plain word: nothing to escape
    f.lit("\",\"pid\":");
    f.num(pid);
    f.lit(",\"tid\":");
    f.num(tid);
    f.lit(",\"THREAD_ID\":");
    f.num(thread_id);
    f.lit(",\"EVENT_ID\":");
    f.num(event_id);
    f.lit(",\"END_EVENT_ID\":");
    f.num(end_event_id);
    f.lit(",\"EVENT_NAME\":");
}

// performance_schema counts bytes of file and socket transfers only.
bool wait_has_bytes(const server::WaitName &n) {
    const bool io = n.object_type == "FILE" || n.event_name.rfind("wait/io/socket", 0) == 0;
    return io && n.operation != "open" && n.operation != "close" && n.operation != "sync";
}

}  // namespace

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

// SHOW PROFILE's resource columns (CPU in picoseconds, blocks of 512 bytes).
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
    const bool text = has_text(st);
    const bool failed = st.failed();
    {
        // What its command and text decide, rendered once per class.
        TextClass &tc = text_classes_.of(st);
        ClassExtra &c = tc.extra;
        if (c.name_json.empty()) {  // rendered once: a JSON string is never empty
            append_json_string(c.name_json, tc.event_name);
            if (text) {
                append_json_string(c.text_json, st.text);
                append_json_string(c.digest_json, tc.digest(st));
            }
            append_json_string(c.command_json, mysql::command_name(st.command));
        }
        {
            // The fields every statement line has.
            FlatWriter f(out);
            event_head(f, "statement", pid_, st.tid, st.thread_id, event_id,
                       event_id + rows.size() + waits.size() + 1);
            f.raw(c.name_json);
            f.lit(",\"TIMER_START\":");  // picoseconds, as performance_schema
            f.num(st.start_ns * 1000);
            f.lit(",\"TIMER_END\":");
            f.num(st.end_ns * 1000);
            f.lit(",\"TIMER_WAIT\":");
            f.num((st.end_ns - st.start_ns) * 1000);
            f.lit(",\"LOCK_TIME\":");
            f.num(st.lock_ns * 1000);
            f.lit(",\"SQL_TEXT\":");
            text ? f.raw(c.text_json) : f.lit("null");
            if (st.truncated()) {
                f.lit(",\"sql_bytes\":");
                f.num(st.text_len);
            }
            f.lit(",\"DIGEST_TEXT\":");
            text ? f.raw(c.digest_json) : f.lit("null");
            f.lit(",\"CURRENT_SCHEMA\":");
            st.db.empty() ? f.lit("null") : f.str(st.db);
            f.lit(",\"MYSQL_ERRNO\":");
            f.num(failed ? st.error : 0);
            f.lit(",\"RETURNED_SQLSTATE\":");
            failed ? f.str(st.sqlstate) : f.lit("null");
            f.lit(",\"MESSAGE_TEXT\":");
            failed ? f.str(st.message) : f.lit("null");
            f.lit(",\"ERRORS\":");
            f.num(failed ? 1 : 0);
            f.lit(",\"ROWS_AFFECTED\":");
            f.num(st.rows_affected);
            f.lit(",\"ROWS_SENT\":");
            f.num(st.rows_sent);
            f.lit(",\"ROWS_EXAMINED\":");
            f.num(st.rows_examined);
            if (st.has_memory()) {
                // MySQL counts the memory max_connection_memory controls, its
                // mark reset per command: performance_schema's name for it.
                // MariaDB's mark is the connection's, as its PROCESSLIST names it.
                f.lit(",\"MEMORY_USED\":");
                f.num(st.mem_used);
                (st.flags & MT_STMT_MEMORY_PER_COMMAND) ? f.lit(",\"MAX_CONTROLLED_MEMORY\":")
                                                        : f.lit(",\"MAX_MEMORY_USED\":");
                f.num(st.mem_max);
            }
            if (st.transaction_event_id) {
                f.lit(",\"NESTING_EVENT_ID\":");
                f.num(st.transaction_event_id);
                f.lit(",\"NESTING_EVENT_TYPE\":\"TRANSACTION\"");
            }
            f.lit(",\"command\":");
            f.raw(c.command_json);
            f.lit(",\"query_id\":");
            f.num(st.query_id);
            if (st.one_probe()) {
                // Counters need the statement's start on its thread: not seen
                // on the one-probe path, so unknown rather than 0.
                f.lit(
                    ",\"CPU_TIME\":null,\"CPU_user\":null,\"CPU_system\":null,"
                    "\"Context_voluntary\":null,\"Context_involuntary\":null,"
                    "\"Page_faults_major\":null,\"Page_faults_minor\":null,"
                    "\"Block_ops_in\":null,\"Block_ops_out\":null");
            }
        }
        JsonWriter j(out, true);
        if (!st.one_probe()) {
            const auto used = st.begin.until(st.end);
            j.field("CPU_TIME", used.cpu_ns * 1000);
            put_counters(j, used);
        }
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
        {
            FlatWriter f(out);
            event_head(f, "stage", pid_, st.tid, st.thread_id, n.id, n.id);
            f.str(server::stage_event_name(r.name));
        }
        JsonWriter s(out, true);
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
    {
        FlatWriter f(out);
        event_head(f, "wait", pid_, w.wait.tid, w.wait.thread_id, event_id, event_id);
        f.str(n.event_name);
    }
    JsonWriter j(out, true);
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
        // The handler's result: a fetch that found no row (137: end of the
        // table or range, 120: no such key) is a call performance_schema
        // counts only outside its batch mode (MySQL's scans of a join's last
        // table count the rows found).
        if (w.wait.ret != 0) {
            j.field("handler_error", w.wait.ret);
        }
    } else if (w.wait.ret < 0) {
        j.field("errno", -w.wait.ret);
    }
    j.end_object();
    out += '\n';
}

void ServerRenderer::as_events(std::string &lines) {
    size_t from = 0;
    while (from < lines.size()) {
        const size_t nl = lines.find('\n', from);
        const size_t to = nl == std::string::npos ? lines.size() : nl;
        last_.push_back(nlohmann::ordered_json::parse(lines.begin() + static_cast<ptrdiff_t>(from),
                                                      lines.begin() + static_cast<ptrdiff_t>(to)));
        from = to + 1;
    }
    lines.clear();
}

}  // namespace mysqltrace::output
