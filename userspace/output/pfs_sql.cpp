// SPDX-License-Identifier: GPL-2.0-only
#include "output/pfs_sql.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fd_io.h"

namespace mysqltrace::output {

namespace {

constexpr auto N = PfsColumnType::Number;
constexpr auto T = PfsColumnType::Text;

// From SHOW CREATE TABLE performance_schema.<table> on MariaDB 10.11.
constexpr std::array<PfsColumn, 41> kStatementColumns{{
    {"THREAD_ID", N, 0},
    {"EVENT_ID", N, 0},
    {"END_EVENT_ID", N, 0},
    {"EVENT_NAME", T, 128},
    {"SOURCE", T, 64},
    {"TIMER_START", N, 0},
    {"TIMER_END", N, 0},
    {"TIMER_WAIT", N, 0},
    {"LOCK_TIME", N, 0},
    {"SQL_TEXT", T, 0},
    {"DIGEST", T, 32},
    {"DIGEST_TEXT", T, 0},
    {"CURRENT_SCHEMA", T, 64},
    {"OBJECT_TYPE", T, 64},
    {"OBJECT_SCHEMA", T, 64},
    {"OBJECT_NAME", T, 64},
    {"OBJECT_INSTANCE_BEGIN", N, 0},
    {"MYSQL_ERRNO", N, 0},
    {"RETURNED_SQLSTATE", T, 5},
    {"MESSAGE_TEXT", T, 128},
    {"ERRORS", N, 0},
    {"WARNINGS", N, 0},
    {"ROWS_AFFECTED", N, 0},
    {"ROWS_SENT", N, 0},
    {"ROWS_EXAMINED", N, 0},
    {"CREATED_TMP_DISK_TABLES", N, 0},
    {"CREATED_TMP_TABLES", N, 0},
    {"SELECT_FULL_JOIN", N, 0},
    {"SELECT_FULL_RANGE_JOIN", N, 0},
    {"SELECT_RANGE", N, 0},
    {"SELECT_RANGE_CHECK", N, 0},
    {"SELECT_SCAN", N, 0},
    {"SORT_MERGE_PASSES", N, 0},
    {"SORT_RANGE", N, 0},
    {"SORT_ROWS", N, 0},
    {"SORT_SCAN", N, 0},
    {"NO_INDEX_USED", N, 0},
    {"NO_GOOD_INDEX_USED", N, 0},
    {"NESTING_EVENT_ID", N, 0},
    {"NESTING_EVENT_TYPE", T, 11},  // enum('TRANSACTION','STATEMENT','STAGE','WAIT')
    {"NESTING_EVENT_LEVEL", N, 0},
}};

constexpr std::array<PfsColumn, 12> kStageColumns{{
    {"THREAD_ID", N, 0},
    {"EVENT_ID", N, 0},
    {"END_EVENT_ID", N, 0},
    {"EVENT_NAME", T, 128},
    {"SOURCE", T, 64},
    {"TIMER_START", N, 0},
    {"TIMER_END", N, 0},
    {"TIMER_WAIT", N, 0},
    {"WORK_COMPLETED", N, 0},
    {"WORK_ESTIMATED", N, 0},
    {"NESTING_EVENT_ID", N, 0},
    {"NESTING_EVENT_TYPE", T, 11},
}};

constexpr std::array<PfsColumn, 19> kWaitColumns{{
    {"THREAD_ID", N, 0},
    {"EVENT_ID", N, 0},
    {"END_EVENT_ID", N, 0},
    {"EVENT_NAME", T, 128},
    {"SOURCE", T, 64},
    {"TIMER_START", N, 0},
    {"TIMER_END", N, 0},
    {"TIMER_WAIT", N, 0},
    {"SPINS", N, 0},
    {"OBJECT_SCHEMA", T, 64},
    {"OBJECT_NAME", T, 512},
    {"INDEX_NAME", T, 64},
    {"OBJECT_TYPE", T, 64},
    {"OBJECT_INSTANCE_BEGIN", N, 0},
    {"NESTING_EVENT_ID", N, 0},
    {"NESTING_EVENT_TYPE", T, 11},
    {"OPERATION", T, 32},
    {"NUMBER_OF_BYTES", N, 0},
    {"FLAGS", N, 0},
}};

const std::array<PfsTable, 3> kTables{{
    {"events_statements_current", "statement", kStatementColumns},
    {"events_stages_current", "stage", kStageColumns},
    {"events_waits_current", "wait", kWaitColumns},
}};

// Length of the valid UTF-8 sequence at s[i], 0 if there is none (overlong
// forms, surrogates and code points past U+10FFFF are invalid, as MariaDB's
// utf8mb4 sees them).
size_t utf8_seq_len(std::string_view s, size_t i) {
    auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    unsigned char c = b(0);
    if (c < 0x80) {
        return 1;
    }
    size_t len;
    unsigned char lo = 0x80;
    unsigned char hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) {
            lo = 0xa0;
        } else if (c == 0xed) {
            hi = 0x9f;
        }
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) {
            lo = 0x90;
        } else if (c == 0xf4) {
            hi = 0x8f;
        }
    } else {
        return 0;
    }
    if (i + len > s.size() || b(1) < lo || b(1) > hi) {
        return 0;
    }
    for (size_t k = 2; k < len; k++) {
        if (b(k) < 0x80 || b(k) > 0xbf) {
            return 0;
        }
    }
    return len;
}

std::string decimal_from_hex(std::string_view hex) {
    if (hex.empty() || hex.size() > 16) {
        return {};
    }
    uint64_t v = 0;
    for (char c : hex) {
        int d;
        if (c >= '0' && c <= '9') {
            d = c - '0';
        } else if (c >= 'a' && c <= 'f') {
            d = c - 'a' + 10;
        } else if (c >= 'A' && c <= 'F') {
            d = c - 'A' + 10;
        } else {
            return {};
        }
        v = v * 16 + static_cast<uint64_t>(d);
    }
    return std::to_string(v);
}

bool all_digits(std::string_view s) {
    return !s.empty() && s.size() <= 20 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A number column's literal: numbers as they are, numeric strings (decimal or
// 0x hex, as addresses sometimes are) converted, anything else NULL.
std::string number_literal(const nlohmann::ordered_json &v) {
    switch (v.type()) {
        case nlohmann::ordered_json::value_t::number_unsigned:
            return std::to_string(v.get<uint64_t>());
        case nlohmann::ordered_json::value_t::number_integer:
            return std::to_string(v.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_float: {
            double d = v.get<double>();
            if (!std::isfinite(d)) {
                return "NULL";
            }
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.17g", d);
            return buf;
        }
        case nlohmann::ordered_json::value_t::boolean:
            return v.get<bool>() ? "1" : "0";
        case nlohmann::ordered_json::value_t::string: {
            const auto &s = v.get_ref<const std::string &>();
            if (all_digits(s)) {
                return s;
            }
            if (s.size() > 1 && s[0] == '-' && all_digits(std::string_view(s).substr(1))) {
                return s;
            }
            if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
                std::string d = decimal_from_hex(std::string_view(s).substr(2));
                if (!d.empty()) {
                    return d;
                }
            }
            return "NULL";
        }
        default:
            return "NULL";
    }
}

std::string text_literal(const nlohmann::ordered_json &v, uint32_t max_chars) {
    if (v.is_string()) {
        return pfs_sql_string(v.get_ref<const std::string &>(), max_chars);
    }
    return pfs_sql_string(v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace),
                          max_chars);
}

bool is_end_only(std::string_view column) {
    return column == "END_EVENT_ID" || column == "TIMER_END" || column == "TIMER_WAIT";
}

// An unsigned JSON number as uint64_t.
bool get_u64(const nlohmann::ordered_json &event, const char *key, uint64_t &out) {
    auto it = event.find(key);
    if (it == event.end()) {
        return false;
    }
    if (it->is_number_unsigned()) {
        out = it->get<uint64_t>();
        return true;
    }
    if (it->is_number_integer() && it->get<int64_t>() >= 0) {
        out = static_cast<uint64_t>(it->get<int64_t>());
        return true;
    }
    return false;
}

constexpr size_t kFlushBytes = 64 * 1024;

}  // namespace

std::span<const PfsTable> pfs_tables() {
    return kTables;
}

const PfsTable *pfs_table_for_kind(std::string_view kind) {
    for (const auto &t : kTables) {
        if (t.kind == kind) {
            return &t;
        }
    }
    return nullptr;
}

const PfsTable *pfs_table_by_name(std::string_view name) {
    for (const auto &t : kTables) {
        if (t.name == name) {
            return &t;
        }
    }
    return nullptr;
}

std::string pfs_sql_string(std::string_view s, uint32_t max_chars) {
    std::string body;
    body.reserve(s.size() + 8);
    bool ascii = true;
    size_t chars = 0;
    for (size_t i = 0; i < s.size();) {
        if (max_chars != 0 && chars == max_chars) {
            break;
        }
        chars++;
        size_t len = utf8_seq_len(s, i);
        if (len == 0) {
            body += "\xef\xbf\xbd";  // U+FFFD for a byte that is not UTF-8
            ascii = false;
            i++;
            continue;
        }
        if (len > 1) {
            body.append(s.substr(i, len));
            ascii = false;
            i += len;
            continue;
        }
        char c = s[i++];
        switch (c) {
            case '\0':
                body += "\\0";
                break;
            case '\'':
                body += "\\'";
                break;
            case '"':
                body += "\\\"";
                break;
            case '\\':
                body += "\\\\";
                break;
            case '\n':
                body += "\\n";
                break;
            case '\r':
                body += "\\r";
                break;
            case '\x1a':
                body += "\\Z";
                break;
            default:
                body += c;
        }
    }
    std::string out = ascii ? "'" : "_utf8mb4'";
    out += body;
    out += '\'';
    return out;
}

std::string pfs_insert(const nlohmann::ordered_json &event, bool at_end) {
    if (!event.is_object()) {
        return {};
    }
    auto kind = event.find("kind");
    if (kind == event.end() || !kind->is_string()) {
        return {};
    }
    const PfsTable *table = pfs_table_for_kind(kind->get_ref<const std::string &>());
    if (table == nullptr) {
        return {};
    }
    std::string out = "INSERT INTO ";
    out += table->name;
    out += " VALUES (";
    bool first = true;
    for (const auto &col : table->columns) {
        if (!first) {
            out += ',';
        }
        first = false;
        auto it = event.find(col.name);
        if (it == event.end() || it->is_null() || (!at_end && is_end_only(col.name))) {
            out += "NULL";
        } else if (col.type == PfsColumnType::Number) {
            out += number_literal(*it);
        } else {
            out += text_literal(*it, col.max_chars);
        }
    }
    out += ");\n";
    return out;
}

std::string pfs_sanitize_actor(std::string_view actor) {
    if (actor.empty()) {
        return "unknown";
    }
    std::string out;
    for (char c : actor.substr(0, 128)) {
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '@' || c == '-';
        out += ok ? c : '_';
    }
    // "." and ".." would not name a file of their own.
    if (out.find_first_not_of('.') == std::string::npos) {
        std::replace(out.begin(), out.end(), '.', '_');
    }
    return out;
}

std::string pfs_format_time(std::time_t when) {
    std::tm tm{};
    localtime_r(&when, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}

std::string pfs_trace_file_header(std::string_view actor, std::time_t when) {
    return "/* MySQL Trace File for " + pfs_sanitize_actor(actor) + " on " + pfs_format_time(when) +
           " */\n";
}

Result<std::unique_ptr<PfsSqlWriter>> PfsSqlWriter::open(const std::string &dir, MessageSink sink,
                                                         size_t max_open) {
    if (dir.empty()) {
        return make_error(0, "no trace directory given");
    }
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        return make_error(errno, "cannot create trace directory " + dir);
    }
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return make_error(errno, "cannot use trace directory " + dir);
    }
    if (::faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
        int e = errno;
        ::close(fd);
        return make_error(e, "cannot write to trace directory " + dir);
    }
    std::unique_ptr<PfsSqlWriter> w(new PfsSqlWriter());
    w->dir_ = dir;
    w->dir_fd_ = fd;
    w->max_open_ = std::max<size_t>(max_open, 1);
    if (sink) {
        w->sink_ = std::move(sink);
    } else {
        w->sink_ = [](const std::string &msg) {
            std::fprintf(stderr, "%s\n", msg.c_str());
            std::fflush(stderr);
        };
    }
    return w;
}

PfsSqlWriter::~PfsSqlWriter() {
    while (!lru_.empty()) {
        close_file(*lru_.back());
    }
    if (dir_fd_ >= 0) {
        ::close(dir_fd_);
    }
}

PfsSqlWriter::File &PfsSqlWriter::file_for(uint64_t thread_id, const std::string &actor) {
    std::string safe = pfs_sanitize_actor(actor);
    std::string name = "thread." + safe + "." + std::to_string(thread_id);
    auto &slot = files_[name];
    if (!slot) {
        slot = std::make_unique<File>();
        slot->name = std::move(name);
        slot->actor = std::move(safe);
    }
    return *slot;
}

void PfsSqlWriter::fail(File &f, const std::string &why) {
    if (f.fd >= 0) {
        lru_.erase(f.lru_pos);
        ::close(f.fd);
        f.fd = -1;
    }
    f.failed = true;
    f.buf.clear();
    f.buf.shrink_to_fit();
    f.pending_rows = 0;
    failed_files_++;
    sink_("mysqltrace: " + dir_ + "/" + f.name + ": " + why + ": trace of this thread stopped");
}

bool PfsSqlWriter::ensure_open(File &f) {
    if (f.failed) {
        return false;
    }
    if (f.fd >= 0) {
        lru_.splice(lru_.begin(), lru_, f.lru_pos);
        return true;
    }
    while (lru_.size() >= max_open_) {
        close_file(*lru_.back());
    }
    // O_NONBLOCK: opening a FIFO planted there must not hang the trace.
    constexpr int kFlags = O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
    bool fresh = false;
    int fd = -1;
    if (!f.created) {
        fd = ::openat(dir_fd_, f.name.c_str(), kFlags | O_CREAT | O_EXCL, 0600);
        fresh = fd >= 0;
    }
    if (fd < 0 && (f.created || errno == EEXIST)) {
        fd = ::openat(dir_fd_, f.name.c_str(), kFlags);
    }
    if (fd < 0) {
        int e = errno;
        fail(f, e == ELOOP ? "is a symbolic link, not followed" : std::strerror(e));
        return false;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(f, "not a regular file");
        return false;
    }
    ::fcntl(fd, F_SETFL, O_APPEND);
    f.fd = fd;
    lru_.push_front(&f);
    f.lru_pos = lru_.begin();
    if (!f.created && (fresh || st.st_size == 0)) {
        f.buf += pfs_trace_file_header(f.actor, std::time(nullptr));
    }
    f.created = true;
    return true;
}

void PfsSqlWriter::write_out(File &f) {
    if (f.fd < 0 || f.failed) {
        return;
    }
    if (int e = write_all(f.fd, f.buf); e != 0) {
        fail(f, std::strerror(e));
        return;
    }
    f.buf.clear();
    rows_written_ += f.pending_rows;
    f.pending_rows = 0;
}

void PfsSqlWriter::close_file(File &f) {
    write_out(f);
    if (f.fd < 0) {
        return;  // failed and closed
    }
    lru_.erase(f.lru_pos);
    int fd = f.fd;
    f.fd = -1;
    f.buf.shrink_to_fit();
    if (::close(fd) != 0 && errno != EINTR) {
        fail(f, std::strerror(errno));
    }
}

void PfsSqlWriter::write_block(uint64_t thread_id, const std::string &actor,
                               const std::vector<nlohmann::ordered_json> &events) {
    File &f = file_for(thread_id, actor);
    if (f.failed) {
        return;
    }
    struct Row {
        uint64_t start;
        int end;
        uint64_t event_id;
        const nlohmann::ordered_json *event;
    };
    std::vector<Row> rows;
    rows.reserve(events.size() * 2);
    bool any_start = false;
    uint64_t min_start = UINT64_MAX;
    uint64_t max_start = 0;
    for (const auto &ev : events) {
        if (!ev.is_object() || !ev.contains("kind") || !ev["kind"].is_string() ||
            pfs_table_for_kind(ev["kind"].get_ref<const std::string &>()) == nullptr) {
            continue;
        }
        uint64_t start = 0;
        if (get_u64(ev, "TIMER_START", start)) {
            any_start = true;
            min_start = std::min(min_start, start);
            max_start = std::max(max_start, start);
        } else {
            // No TIMER_START (a NULL row): keep it at the front of the block,
            // where it cannot break the file's order.
            start = f.has_last ? f.last_start : 0;
        }
        uint64_t id = 0;
        get_u64(ev, "EVENT_ID", id);
        rows.push_back(Row{start, 0, id, &ev});
        rows.push_back(Row{start, 1, id, &ev});
    }
    if (rows.empty()) {
        return;
    }
    if (any_start && f.has_last && min_start < f.last_start) {
        dropped_blocks_++;
        if (!f.warned_order) {
            f.warned_order = true;
            sink_("mysqltrace: " + dir_ + "/" + f.name + ": events starting at TIMER_START " +
                  std::to_string(min_start) + " came after one at " + std::to_string(f.last_start) +
                  "; such blocks are left out to keep the file in time order");
        }
        return;
    }
    std::stable_sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) {
        if (a.start != b.start) {
            return a.start < b.start;
        }
        if (a.end != b.end) {
            return a.end < b.end;
        }
        return a.event_id < b.event_id;
    });
    if (!ensure_open(f)) {
        return;
    }
    for (const auto &r : rows) {
        f.buf += pfs_insert(*r.event, r.end != 0);
        f.pending_rows++;
    }
    if (any_start) {
        f.has_last = true;
        f.last_start = std::max(f.last_start, max_start);
    }
    if (f.buf.size() >= kFlushBytes) {
        write_out(f);
    }
}

void PfsSqlWriter::flush() {
    // write_out may fail a file and take it off the list.
    std::vector<File *> open(lru_.begin(), lru_.end());
    for (File *f : open) {
        write_out(*f);
    }
}

}  // namespace mysqltrace::output
