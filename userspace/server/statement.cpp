// SPDX-License-Identifier: GPL-2.0-only
#include "server/statement.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <utility>

#include "mysql/commands.h"

namespace mysqltrace::server {

TaskCounters TaskCounters::from(const mt_task_counters &c) {
    TaskCounters t;
    t.cpu_ns = c.cpu_ns;
    t.utime_ns = c.utime_ns;
    t.stime_ns = c.stime_ns;
    t.nvcsw = c.nvcsw;
    t.nivcsw = c.nivcsw;
    t.min_flt = c.min_flt;
    t.maj_flt = c.maj_flt;
    t.read_bytes = c.read_bytes;
    t.write_bytes = c.write_bytes;
    return t;
}

TaskCounters TaskCounters::until(const TaskCounters &later) const {
    auto d = [](uint64_t a, uint64_t b) { return b > a ? b - a : 0; };
    TaskCounters t;
    t.cpu_ns = d(cpu_ns, later.cpu_ns);
    t.utime_ns = d(utime_ns, later.utime_ns);
    t.stime_ns = d(stime_ns, later.stime_ns);
    t.nvcsw = d(nvcsw, later.nvcsw);
    t.nivcsw = d(nivcsw, later.nivcsw);
    t.min_flt = d(min_flt, later.min_flt);
    t.maj_flt = d(maj_flt, later.maj_flt);
    t.read_bytes = d(read_bytes, later.read_bytes);
    t.write_bytes = d(write_bytes, later.write_bytes);
    return t;
}

uint64_t TaskCounters::user_ns() const {
    const uint64_t sampled = utime_ns + stime_ns;
    if (sampled == 0) {
        // No tick landed in the interval: a user-space server thread is the
        // likelier side, as getrusage's cputime_adjust also assumes.
        return cpu_ns;
    }
    return static_cast<uint64_t>(static_cast<double>(cpu_ns) * static_cast<double>(utime_ns) /
                                 static_cast<double>(sampled));
}

uint64_t TaskCounters::system_ns() const {
    return cpu_ns - std::min(cpu_ns, user_ns());
}

size_t first_statement_end(std::string_view sql) {
    char quote = 0;
    for (size_t i = 0; i < sql.size(); i++) {
        const char c = sql[i];
        if (quote) {
            if (c == '\\' && quote != '`') {
                i++;
            } else if (c == quote) {
                quote = 0;
            }
        } else if (c == '\'' || c == '"' || c == '`') {
            quote = c;
        } else if (sql.substr(i, 2) == "/*") {
            const size_t e = sql.find("*/", i + 2);
            i = e == std::string_view::npos ? sql.size() : e + 1;
        } else if ((sql.substr(i, 3) == "-- " || c == '#')) {
            const size_t e = sql.find('\n', i);
            i = e == std::string_view::npos ? sql.size() : e;
        } else if (c == ';') {
            // Only a delimiter with another statement after it ends this one.
            const size_t next = sql.find_first_not_of(" \t\r\n;", i);
            if (next != std::string_view::npos) {
                return i;
            }
        }
    }
    return sql.size();
}

bool cut_to_first_statement(std::string &text, uint32_t *text_len) {
    const size_t end = first_statement_end(text);
    if (end >= text.size()) {
        return false;
    }
    size_t n = end;
    while (n > 0 && std::isspace(static_cast<unsigned char>(text[n - 1]))) {
        n--;
    }
    text.resize(n);
    *text_len = static_cast<uint32_t>(n);
    return true;
}

bool decode_statement(std::span<const uint8_t> record, Statement *out) {
    mt_server_statement_event ev;
    if (record.size() < sizeof(ev)) {
        return false;
    }
    std::memcpy(&ev, record.data(), sizeof(ev));
    const size_t marks = size_t{ev.n_stages} * sizeof(mt_stage_mark) +
                         size_t{ev.n_samples} * sizeof(mt_stage_samples);
    const size_t want = sizeof(ev) + marks + ev.message_len + ev.db_len + ev.text_copied;
    if (ev.hdr.type != MT_EV_SERVER_STATEMENT || ev.hdr.size != record.size() ||
        want != record.size() || ev.n_stages > MT_MAX_STAGES || ev.n_samples > MT_STAGE_SLOTS) {
        return false;
    }
    Statement &s = *out;
    s.tid = ev.hdr.tid;
    s.start_ns = ev.start_ns;
    s.end_ns = ev.hdr.ts_ns;
    s.thread_id = ev.thread_id;
    s.query_id = ev.query_id;
    s.text_addr = ev.text_addr;
    s.command = ev.command;
    s.seq = ev.seq;
    s.flags = ev.flags;
    s.error = ev.error;
    s.da_status = ev.da_status;
    s.sqlstate.assign(ev.sqlstate, strnlen(ev.sqlstate, sizeof(ev.sqlstate)));
    s.text_len = ev.text_len;
    s.rows_sent = ev.rows_sent;
    s.rows_examined = ev.rows_examined;
    s.rows_affected = ev.rows_affected;
    s.lock_ns = ev.lock_ns;
    s.mem_used = ev.mem_used;
    s.mem_max = ev.mem_max;
    s.begin = TaskCounters::from(ev.begin);
    s.end = TaskCounters::from(ev.end);
    s.stages_lost = ev.stages_lost;
    s.samples_lost = ev.samples_lost;
    s.sample_period_us = ev.sample_period_us;
    s.stages.clear();
    const uint8_t *p = record.data() + sizeof(ev);
    for (unsigned i = 0; i < ev.n_stages; i++, p += sizeof(mt_stage_mark)) {
        mt_stage_mark m;
        std::memcpy(&m, p, sizeof(m));
        s.stages.push_back({m.ts_ns, m.site, m.stage, TaskCounters::from(m.c), m.file, m.line});
    }
    s.samples.clear();
    for (unsigned i = 0; i < ev.n_samples; i++, p += sizeof(mt_stage_samples)) {
        mt_stage_samples smp;
        std::memcpy(&smp, p, sizeof(smp));
        s.samples.push_back({smp.stage, smp.on_cpu, smp.switches, smp.off_cpu_ns});
    }
    auto take = [&p](std::string &dst, size_t n) {
        dst.assign(reinterpret_cast<const char *>(p), n);
        p += n;
    };
    take(s.message, ev.message_len);
    take(s.db, ev.db_len);
    take(s.text, ev.text_copied);
    if (s.command == mysql::kComInitDb && s.one_probe() && !s.failed()) {
        // MySQL: the schema the command switched to, its argument.
        s.text = s.db;
        s.text_len = static_cast<uint32_t>(s.db.size());
    } else if (s.command == mysql::kComQuery && s.one_probe()) {
        // The THD's text may still run on to the query's end (MariaDB keeps
        // the rest of a multi-statement query there): this statement's own.
        cut_to_first_statement(s.text, &s.text_len);
    } else if (s.command == mysql::kComQuery && s.failed() && s.text.size() == s.text_len) {
        // A failing statement ends a multi-statement query, and the server
        // gave it the rest of the query: keep its own text only.
        const size_t end = first_statement_end(s.text);
        if (end < s.text.size()) {
            s.text.resize(end);
            s.text_len = static_cast<uint32_t>(end);
        }
    }
    if (ev.flags & MT_STMT_SPLIT) {
        // The delimiter and blanks before the next statement of the query.
        while (!s.text.empty() &&
               (s.text.back() == ';' || std::isspace(static_cast<unsigned char>(s.text.back())))) {
            s.text.pop_back();
        }
        s.text_len = static_cast<uint32_t>(s.text.size());
    }
    s.text_cut = s.text.size() < s.text_len;
    return true;
}

namespace {

// Upper-cased words of `sql`, skipping comments, up to `n` of them.
std::vector<std::string> leading_words(std::string_view sql, size_t n) {
    std::vector<std::string> words;
    size_t i = 0;
    while (i < sql.size() && words.size() < n) {
        const char c = sql[i];
        if (std::isspace(static_cast<unsigned char>(c)) || c == '(') {
            i++;
        } else if (sql.substr(i, 2) == "/*") {
            size_t e = sql.find("*/", i + 2);
            i = e == std::string_view::npos ? sql.size() : e + 2;
        } else if (sql.substr(i, 2) == "--" || c == '#') {
            size_t e = sql.find('\n', i);
            i = e == std::string_view::npos ? sql.size() : e + 1;
        } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            std::string w;
            while (i < sql.size() &&
                   (std::isalnum(static_cast<unsigned char>(sql[i])) || sql[i] == '_')) {
                w += static_cast<char>(std::toupper(static_cast<unsigned char>(sql[i])));
                i++;
            }
            words.push_back(std::move(w));
        } else {
            break;
        }
    }
    return words;
}

}  // namespace

std::string sql_command_name(std::string_view sql) {
    const auto w = leading_words(sql, 4);
    if (w.empty()) {
        return "";
    }
    const std::string &a = w[0];
    const std::string b = w.size() > 1 ? w[1] : "";
    auto lower = [](std::string s) {
        for (char &c : s) {
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
        return s;
    };
    // Words that are the instrument name by themselves (SQLCOM_SELECT -> select).
    static const std::array<const char *, 20> plain = {
        "SELECT",   "UPDATE",  "DELETE", "TRUNCATE",  "COMMIT", "ROLLBACK", "BEGIN",
        "DO",       "HANDLER", "CALL",   "SAVEPOINT", "LOAD",   "CHECKSUM", "ANALYZE",
        "OPTIMIZE", "REPAIR",  "CHECK",  "KILL",      "FLUSH",  "SIGNAL"};
    if (a == "WITH" || a == "VALUES" || a == "TABLE") {
        return "select";
    }
    if (a == "INSERT" || a == "REPLACE") {
        for (size_t i = 1; i < w.size(); i++) {
            if (w[i] == "SELECT") {
                return lower(a) + "_select";
            }
        }
        return lower(a);
    }
    if (a == "SET") {
        if (b == "PASSWORD") {
            return "set_password";
        }
        if (b == "ROLE") {
            return "set_role";
        }
        return "set_option";
    }
    if (a == "START" && b == "TRANSACTION") {
        return "begin";
    }
    if (a == "USE") {
        return "change_db";
    }
    if (a == "DEALLOCATE" || (a == "DROP" && b == "PREPARE")) {
        return "dealloc_sql";
    }
    if (a == "EXECUTE") {
        return "execute_sql";
    }
    if (a == "PREPARE") {
        return "prepare_sql";
    }
    if (a == "EXPLAIN" || a == "DESCRIBE" || a == "DESC") {
        return w.size() > 1 ? sql_command_name(sql.substr(sql.find_first_of(" \t\n") + 1)) : "";
    }
    if ((a == "CREATE" || a == "DROP" || a == "ALTER" || a == "RENAME") && !b.empty()) {
        std::string obj = b;
        size_t i = 1;
        // CREATE OR REPLACE / TEMPORARY / UNIQUE / DEFINER ... TABLE
        while (i < w.size() && (w[i] == "OR" || w[i] == "REPLACE" || w[i] == "TEMPORARY" ||
                                w[i] == "UNIQUE" || w[i] == "FULLTEXT" || w[i] == "SPATIAL")) {
            i++;
        }
        obj = i < w.size() ? w[i] : b;
        if (obj == "DATABASE" || obj == "SCHEMA") {
            obj = "DB";
        }
        return lower(a) + "_" + lower(obj);
    }
    if (a == "SHOW" && !b.empty()) {
        std::string what = b;
        if (what == "FULL" && w.size() > 2) {
            what = w[2];
        }
        if (what == "COLUMNS" || what == "FIELDS") {
            what = "FIELDS";
        } else if (what == "INDEX" || what == "INDEXES") {
            what = "KEYS";
        } else if (what == "SESSION" || what == "GLOBAL") {
            what = w.size() > 2 ? w[2] : what;
        } else if (what == "CREATE") {
            return w.size() > 2 && w[2] != "TABLE" ? "show_create_" + lower(w[2]) : "show_create";
        }
        if (what == "DATABASES" || what == "SCHEMAS") {
            what = "DATABASES";
        }
        return "show_" + lower(what);
    }
    if (a == "GRANT" || a == "REVOKE" || a == "LOCK" || a == "UNLOCK") {
        return lower(a) + (a == "LOCK" || a == "UNLOCK" ? "_tables" : "");
    }
    if (a == "XA") {
        return b.empty() ? "" : "xa_" + lower(b);
    }
    for (const char *p : plain) {
        if (a == p) {
            return lower(a);
        }
    }
    return "";
}

std::string statement_event_name(const Statement &st) {
    if (st.command == mysql::kComQuery) {
        const std::string n = sql_command_name(st.text);
        return n.empty() ? "statement/sql/error" : "statement/sql/" + n;
    }
    return mysql::command_event_name(st.command);
}

std::string digest_text(std::string_view sql) {
    std::string out;
    out.reserve(sql.size());
    size_t i = 0;
    auto wordish = [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '?' || c == '_' || c == '`';
    };
    auto emit = [&out, &wordish](std::string_view s) {
        if (!out.empty() && wordish(out.back()) && wordish(s[0])) {
            out += ' ';
        }
        out += s;
    };
    while (i < sql.size()) {
        const unsigned char c = static_cast<unsigned char>(sql[i]);
        if (std::isspace(c)) {
            i++;
            if (!out.empty() && out.back() != ' ') {
                out += ' ';
            }
        } else if (c == '\'' || c == '"') {
            size_t j = i + 1;
            while (j < sql.size()) {
                if (sql[j] == '\\') {
                    j += 2;
                } else if (sql[j] != static_cast<char>(c)) {
                    j++;
                } else if (j + 1 < sql.size() && sql[j + 1] == static_cast<char>(c)) {
                    j += 2;  // a doubled quote stays inside the literal
                } else {
                    break;
                }
            }
            i = std::min(sql.size(), j + 1);
            emit("?");
        } else if (std::isdigit(c) &&
                   (out.empty() ||
                    !(std::isalnum(static_cast<unsigned char>(out.back())) || out.back() == '_'))) {
            while (i < sql.size() &&
                   (std::isalnum(static_cast<unsigned char>(sql[i])) || sql[i] == '.')) {
                i++;
            }
            emit("?");
        } else if (std::isalpha(c) || c == '_' || c == '`') {
            size_t j = i;
            while (j < sql.size() &&
                   (std::isalnum(static_cast<unsigned char>(sql[j])) || sql[j] == '_' ||
                    sql[j] == '`' || sql[j] == '.' || sql[j] == '$')) {
                j++;
            }
            std::string word(sql.substr(i, j - i));
            emit(word);
            i = j;
        } else {
            out += static_cast<char>(c);
            i++;
        }
    }
    while (!out.empty() && (out.back() == ' ' || out.back() == ';')) {
        out.pop_back();
    }
    // "IN (?, ?, ?)" -> "IN (...)": lists of values of any length read alike.
    for (size_t p; (p = out.find("?, ?")) != std::string::npos;) {
        out.replace(p, 4, "?");
    }
    for (size_t p; (p = out.find("?,?")) != std::string::npos;) {
        out.replace(p, 3, "?");
    }
    return out;
}

}  // namespace mysqltrace::server
