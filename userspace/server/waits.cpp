// SPDX-License-Identifier: GPL-2.0-only
#include "server/waits.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>

#include "elf/symbol_name.h"

namespace mysqltrace::server {

bool decode_wait(std::span<const uint8_t> record, Wait *out) {
    mt_server_wait_event ev;
    if (record.size() != sizeof(ev)) {
        return false;
    }
    std::memcpy(&ev, record.data(), sizeof(ev));
    if (ev.hdr.type != MT_EV_SERVER_WAIT || ev.hdr.size != sizeof(ev) || ev.kind == 0 ||
        ev.kind > MT_WAIT_SEND) {
        return false;
    }
    out->tid = ev.hdr.tid;
    out->start_ns = ev.start_ns;
    out->end_ns = ev.hdr.ts_ns;
    out->thread_id = ev.thread_id;
    out->kind = ev.kind;
    out->flags = ev.flags;
    out->object = ev.object;
    out->bytes = ev.bytes;
    out->caller = ev.caller;
    out->value = ev.value;
    out->ret = ev.ret;
    return true;
}

bool decode_table_io(std::span<const uint8_t> record, Wait *out) {
    mt_server_table_io_event ev;
    if (record.size() != sizeof(ev)) {
        return false;
    }
    std::memcpy(&ev, record.data(), sizeof(ev));
    if (ev.hdr.type != MT_EV_SERVER_TABLE_IO || ev.hdr.size != sizeof(ev) ||
        table_op_operation(ev.op) == nullptr || ev.db_len >= sizeof(ev.db) ||
        ev.name_len >= sizeof(ev.name)) {
        return false;
    }
    *out = Wait{};
    out->tid = ev.hdr.tid;
    out->start_ns = ev.start_ns;
    out->end_ns = ev.hdr.ts_ns;
    out->thread_id = ev.thread_id;
    out->kind = MT_WAIT_TABLE;
    out->flags = ev.flags;
    out->object = ev.handler;
    out->value = ev.op;
    out->ret = ev.ret;
    out->schema.assign(ev.db, ev.db_len);
    out->table.assign(ev.name, ev.name_len);
    return true;
}

const char *table_op_method(uint32_t op) {
    switch (op) {
        case MT_TABLE_RND_NEXT:
            return "rnd_next";
        case MT_TABLE_RND_POS:
            return "rnd_pos";
        case MT_TABLE_INDEX_READ_MAP:
            return "index_read_map";
        case MT_TABLE_INDEX_READ_IDX_MAP:
            return "index_read_idx_map";
        case MT_TABLE_INDEX_NEXT:
            return "index_next";
        case MT_TABLE_INDEX_PREV:
            return "index_prev";
        case MT_TABLE_INDEX_FIRST:
            return "index_first";
        case MT_TABLE_INDEX_LAST:
            return "index_last";
        case MT_TABLE_INDEX_NEXT_SAME:
            return "index_next_same";
        case MT_TABLE_WRITE_ROW:
            return "write_row";
        case MT_TABLE_UPDATE_ROW:
            return "update_row";
        case MT_TABLE_DELETE_ROW:
            return "delete_row";
    }
    return nullptr;
}

const char *table_op_operation(uint32_t op) {
    switch (op) {
        case MT_TABLE_WRITE_ROW:
            return "insert";
        case MT_TABLE_UPDATE_ROW:
            return "update";
        case MT_TABLE_DELETE_ROW:
            return "delete";
        default:
            return table_op_method(op) != nullptr ? "fetch" : nullptr;
    }
}

namespace {

std::string_view base_name(std::string_view path) {
    const size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

namespace {

// How a server names its files' instruments, matched on the file's base
// name in order; the first match wins. From each server's own
// performance_schema.file_instances.
enum class Match { prefix, suffix, contains };
struct FileRule {
    Match how;
    std::string_view pattern;
    const char *event;
};

constexpr const char *kInnodbLog = "wait/io/file/innodb/innodb_log_file";
constexpr const char *kInnodbData = "wait/io/file/innodb/innodb_data_file";
constexpr const char *kInnodbTemp = "wait/io/file/innodb/innodb_temp_file";

constexpr FileRule kMariadbFiles[] = {
    {Match::prefix, "ib_logfile", kInnodbLog},
    {Match::prefix, "ibtmp", kInnodbTemp},
    {Match::prefix, "ibdata", kInnodbData},
    {Match::prefix, "undo", kInnodbData},
    {Match::suffix, ".ibd", kInnodbData},
    {Match::suffix, ".frm", "wait/io/file/sql/FRM"},
    {Match::prefix, "#sql", "wait/io/file/sql/file_parser"},
    {Match::prefix, "ML", "wait/io/file/sql/file_parser"},
    {Match::contains, "-bin.", "wait/io/file/sql/binlog"},
    {Match::suffix, ".MAI", "wait/io/file/aria/data"},
    {Match::suffix, ".MAD", "wait/io/file/aria/data"},
    {Match::suffix, ".MYI", "wait/io/file/aria/data"},
    {Match::suffix, ".MYD", "wait/io/file/aria/data"},
    {Match::prefix, "aria_log", "wait/io/file/aria/log"},
};

// MySQL 8.0.30+/9.x: redo in #innodb_redo/#ib_redoN, session temporary
// tablespaces in #innodb_temp/temp_N.ibt, the doublewrite buffer in its own
// files; ibtmp1 and undo_00N are data files there.
constexpr FileRule kMysqlFiles[] = {
    {Match::prefix, "#ib_redo", kInnodbLog},
    {Match::prefix, "ib_logfile", kInnodbLog},
    {Match::suffix, ".ibt", kInnodbTemp},
    {Match::suffix, ".dblwr", "wait/io/file/innodb/innodb_dblwr_file"},
    {Match::prefix, "ibtmp", kInnodbData},
    {Match::prefix, "ibdata", kInnodbData},
    {Match::prefix, "undo_", kInnodbData},
    {Match::suffix, ".ibu", kInnodbData},
    {Match::suffix, ".ibd", kInnodbData},
    {Match::suffix, ".index", "wait/io/file/sql/binlog_index"},
    {Match::prefix, "binlog.", "wait/io/file/sql/binlog"},  // the default log_bin_basename
    {Match::contains, "-bin.", "wait/io/file/sql/binlog"},
    {Match::suffix, ".MYI", "wait/io/file/myisam/kfile"},
    {Match::suffix, ".MYD", "wait/io/file/myisam/dfile"},
};

bool matches(const FileRule &r, std::string_view b) {
    switch (r.how) {
        case Match::prefix:
            return b.starts_with(r.pattern);
        case Match::suffix:
            return b.ends_with(r.pattern);
        case Match::contains:
            return b.find(r.pattern) != std::string_view::npos;
    }
    return false;
}

}  // namespace

std::string_view file_event_name(std::string_view path, FileNaming naming) {
    const std::string_view b = base_name(path);
    const std::span<const FileRule> rules =
        naming == FileNaming::mysql ? std::span<const FileRule>(kMysqlFiles) : kMariadbFiles;
    for (const FileRule &r : rules) {
        if (matches(r, b)) {
            return r.event;
        }
    }
    return "wait/io/file/sql/misc";
}

WaitNamer::WaitNamer(pid_t pid, std::shared_ptr<const elf::ElfFile> exe, int64_t bias,
                     FileNaming naming)
    : pid_(pid), exe_(std::move(exe)), bias_(bias), naming_(naming) {
    if (exe_) {
        for (const auto &s : exe_->symbols()) {
            if (s.size == 0 || s.vaddr == 0) {
                continue;
            }
            (s.is_function ? functions_ : objects_).push_back(&s);
        }
        auto by_addr = [](const elf::Symbol *a, const elf::Symbol *b) {
            return a->vaddr < b->vaddr;
        };
        std::sort(objects_.begin(), objects_.end(), by_addr);
        std::sort(functions_.begin(), functions_.end(), by_addr);
    }
}

std::string_view WaitNamer::intern(std::string_view s) {
    auto it = interned_.find(s);
    if (it == interned_.end()) {
        it = interned_.emplace(s).first;
    }
    return *it;
}

std::string_view WaitNamer::futex_event_name(const Wait &w, std::string_view object,
                                             const char *kind) {
    const bool mutex = kind[0] == 'm';
    if (!object.empty()) {
        // "wait/synch/mutex/sql/LOCK_open", put together in a reused buffer.
        key_.assign("wait/synch/").append(kind).append("/sql/").append(object);
        return intern(key_);
    }
    auto [it, fresh] = caller_names_.try_emplace({w.caller, mutex});
    if (fresh) {
        const std::string_view fn = w.caller ? symbol_at(w.caller, true) : std::string_view();
        it->second = intern(std::string("wait/synch/") + kind + "/sql/" +
                            (fn.empty() ? std::string("unknown")
                                        : elf::without_params(elf::demangle(std::string(fn)))));
    }
    return it->second;
}

std::string_view WaitNamer::symbol_at(uint64_t runtime_addr, bool functions) {
    const uint64_t vaddr = runtime_addr - static_cast<uint64_t>(bias_);
    const auto &v = functions ? functions_ : objects_;
    auto it = std::upper_bound(v.begin(), v.end(), vaddr,
                               [](uint64_t a, const elf::Symbol *s) { return a < s->vaddr; });
    if (it == v.begin()) {
        return "";
    }
    const elf::Symbol *s = *(it - 1);
    if (vaddr >= s->vaddr + s->size) {
        return "";
    }
    return s->name;
}

std::shared_ptr<const std::string> WaitNamer::path_of(uint64_t fd, bool refresh) {
    auto it = fd_paths_.find(fd);
    if (it != fd_paths_.end() && !refresh) {
        return it->second;
    }
    char buf[PATH_MAX];
    const std::string link = "/proc/" + std::to_string(pid_) + "/fd/" + std::to_string(fd);
    ssize_t n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
    auto path =
        std::make_shared<const std::string>(n > 0 ? std::string(buf, static_cast<size_t>(n)) : "");
    fd_paths_[fd] = path;
    return path;
}

WaitName WaitNamer::name(const Wait &w) {
    WaitName n;
    switch (w.kind) {
        case MT_WAIT_FUTEX: {
            // glibc's mutexes wait with the value 2 ("locked, with waiters");
            // condition variables and rwlocks wait on sequence counters.
            const bool mutex = w.value == 2;
            const std::string_view object = symbol_at(w.object, false);
            const bool cond_name = object.starts_with("COND_");
            const char *kind = mutex && !cond_name ? "mutex" : "cond";
            n.operation = mutex && !cond_name         ? "lock"
                          : (w.flags & MT_WAIT_TIMED) ? "timed_wait"
                                                      : "wait";
            n.object_instance = w.object;
            n.object_name = object;
            n.event_name = futex_event_name(w, object, kind);
            return n;
        }
        case MT_WAIT_TABLE:
            n.event_name = "wait/io/table/sql/handler";
            n.operation = table_op_operation(static_cast<uint32_t>(w.value));
            n.object_type = "TABLE";
            n.owner = std::make_shared<const std::string>(w.schema + w.table);
            n.object_schema = std::string_view(*n.owner).substr(0, w.schema.size());
            n.object_name = std::string_view(*n.owner).substr(w.schema.size());
            n.object_instance = w.object;
            return n;
        case MT_WAIT_POLL:
            // A connection thread waiting for its client between commands,
            // from the end of its last statement to the start of its next
            // command (send_idle in bpf/server_waits.bpf.h).
            n.event_name = "idle";
            n.operation = "idle";
            n.object_type = "SOCKET";
            n.report = !w.in_statement();
            return n;
        default:
            break;
    }
    if (w.flags & MT_WAIT_SOCKET) {
        n.event_name = "wait/io/socket/sql/client_connection";
        n.object_type = "SOCKET";
        n.operation = w.kind == MT_WAIT_READ || w.kind == MT_WAIT_RECV    ? "recv"
                      : w.kind == MT_WAIT_WRITE || w.kind == MT_WAIT_SEND ? "send"
                      : w.kind == MT_WAIT_CLOSE                           ? "close"
                                                                          : "misc";
        return n;
    }
    // A regular file (the kernel said so): its path while it is open.
    std::shared_ptr<const std::string> path = path_of(w.object, w.kind == MT_WAIT_OPEN);
    if (w.kind == MT_WAIT_CLOSE) {
        fd_paths_.erase(w.object);
    }
    if (!(w.flags & MT_WAIT_FILE) || path->empty() || (*path)[0] != '/') {
        n.report = false;  // gone before it could be named, or not a file
        return n;
    }
    n.event_name = file_event_name(*path, naming_);
    n.object_type = "FILE";
    n.object_name = *path;
    n.owner = std::move(path);
    switch (w.kind) {
        case MT_WAIT_READ:
        case MT_WAIT_RECV:
            n.operation = "read";
            break;
        case MT_WAIT_WRITE:
        case MT_WAIT_SEND:
            n.operation = "write";
            break;
        case MT_WAIT_SYNC:
            n.operation = "sync";
            break;
        case MT_WAIT_OPEN:
            n.operation = "open";
            break;
        case MT_WAIT_CLOSE:
            n.operation = "close";
            break;
        default:
            n.operation = "misc";
    }
    return n;
}

}  // namespace mysqltrace::server
