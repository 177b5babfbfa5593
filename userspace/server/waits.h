// SPDX-License-Identifier: GPL-2.0-only
// Waits of server threads (contended locks, file and socket I/O, idle time
// between commands), from syscall tracepoints, named the way
// performance_schema's events_waits tables name them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>
#include <sys/types.h>

#include "elf/elf_file.h"
#include "mysqltrace/abi/event.h"

namespace mysqltrace::server {

struct Wait {
    uint32_t tid = 0;
    uint64_t start_ns = 0, end_ns = 0;
    uint64_t thread_id = 0;
    uint32_t kind = 0;  // enum mt_wait_kind
    uint32_t flags = 0;
    uint64_t object = 0;  // futex word address, fd, or a table's handler
    uint64_t bytes = 0;
    uint64_t caller = 0;
    uint64_t value = 0;  // futex: the word's value; table I/O: enum mt_table_op
    int32_t ret = 0;
    std::string schema, table;  // table I/O: OBJECT_SCHEMA, OBJECT_NAME

    bool in_statement() const { return flags & MT_WAIT_IN_STATEMENT; }
};

// Decodes one ring record; false when it is not a wait record.
bool decode_wait(std::span<const uint8_t> record, Wait *out);
// The same for a table I/O record (server --table-io).
bool decode_table_io(std::span<const uint8_t> record, Wait *out);

// The handler method of a table I/O wait ("index_read_map"), and what
// performance_schema calls the operation: fetch, insert, update or delete.
const char *table_op_method(uint32_t op);
const char *table_op_operation(uint32_t op);

// What performance_schema would call a wait. The names are views: of static
// text, of the names of locks and functions the WaitNamer that made them
// keeps for its lifetime, or (files and tables, which come and go) of
// `owner`, so that naming a socket or lock wait allocates nothing (a busy
// server has hundreds of thousands a second).
struct WaitName {
    std::string_view event_name;  // "wait/synch/mutex/sql/LOCK_open", "idle", ...
    // lock, wait, timed_wait, read, write, sync, open, close, recv, send, idle
    std::string_view operation;
    std::string_view object_schema;  // a table's schema
    std::string_view object_name;    // a file's path, a lock's symbol, a table
    std::string_view object_type;    // "FILE", "SOCKET", "" for synchronisation objects
    uint64_t object_instance = 0;    // OBJECT_INSTANCE_BEGIN: the lock's address
    bool report = true;              // false: not a wait worth an event (a pipe, an eventfd...)
    std::shared_ptr<const std::string> owner;  // a file's path, a table's "schema" "table"

    // "schema.table", or the object's name alone.
    void append_object(std::string &out) const {
        if (!object_schema.empty()) {
            out.append(object_schema).append(1, '.');
        }
        out.append(object_name);
    }
};

// Whose instrument names files get: MariaDB's or MySQL's (8.0.30+).
enum class FileNaming { mariadb, mysql };

// The event name of a file by its path, as InnoDB and the server register
// their file instruments: "wait/io/file/innodb/innodb_log_file", ...
std::string_view file_event_name(std::string_view path, FileNaming naming = FileNaming::mariadb);

// Names the waits of one server process: lock addresses through its exported
// global lock objects (LOCK_open, ...), otherwise through the function that
// waited; file descriptors through /proc/PID/fd.
class WaitNamer {
  public:
    // `bias`: runtime address - file address of the server binary.
    WaitNamer(pid_t pid, std::shared_ptr<const elf::ElfFile> exe, int64_t bias,
              FileNaming naming = FileNaming::mariadb);
    // Its views stay valid while this namer lives.
    WaitName name(const Wait &w);

  private:
    std::string_view symbol_at(uint64_t runtime_addr, bool functions);
    std::shared_ptr<const std::string> path_of(uint64_t fd, bool refresh);
    // A lasting copy of s, for names of locks and functions (the binary's).
    std::string_view intern(std::string_view s);
    std::string_view futex_event_name(const Wait &w, std::string_view object, const char *kind);

    pid_t pid_;
    std::shared_ptr<const elf::ElfFile> exe_;
    int64_t bias_;
    FileNaming naming_;
    std::vector<const elf::Symbol *> objects_, functions_;  // sorted by address
    std::map<uint64_t, std::shared_ptr<const std::string>> fd_paths_;
    struct Hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_set<std::string, Hash, std::equal_to<>> interned_;
    // Event names of futex waits on unnamed objects, by the waiting
    // function's address and the kind ("mutex", "cond").
    std::map<std::pair<uint64_t, bool>, std::string_view> caller_names_;
    std::string key_;  // futex_event_name's
};

}  // namespace mysqltrace::server
