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

// What performance_schema would call a wait.
struct WaitName {
    std::string event_name;  // "wait/synch/mutex/sql/LOCK_open", "idle", ...
    std::string
        operation;  // lock, wait, timed_wait, read, write, sync, open, close, recv, send, idle
    std::string object_schema;     // a table's schema
    std::string object_name;       // a file's path, a lock's symbol, a table
    std::string object_type;       // "FILE", "SOCKET", "" for synchronisation objects
    uint64_t object_instance = 0;  // OBJECT_INSTANCE_BEGIN: the lock's address
    bool report = true;            // false: not a wait worth an event (a pipe, an eventfd...)
};

// Whose instrument names files get: MariaDB's or MySQL's (8.0.30+).
enum class FileNaming { mariadb, mysql };

// The event name of a file by its path, as InnoDB and the server register
// their file instruments: "wait/io/file/innodb/innodb_log_file", ...
std::string file_event_name(const std::string &path, FileNaming naming = FileNaming::mariadb);

// Names the waits of one server process: lock addresses through its exported
// global lock objects (LOCK_open, ...), otherwise through the function that
// waited; file descriptors through /proc/PID/fd.
class WaitNamer {
  public:
    // `bias`: runtime address - file address of the server binary.
    WaitNamer(pid_t pid, std::shared_ptr<const elf::ElfFile> exe, int64_t bias,
              FileNaming naming = FileNaming::mariadb);
    WaitName name(const Wait &w);

  private:
    std::string symbol_at(uint64_t runtime_addr, bool functions);
    std::string path_of(uint64_t fd, bool refresh);

    pid_t pid_;
    std::shared_ptr<const elf::ElfFile> exe_;
    int64_t bias_;
    FileNaming naming_;
    std::vector<const elf::Symbol *> objects_, functions_;  // sorted by address
    std::map<uint64_t, std::string> fd_paths_;
    std::map<uint64_t, std::string> symbol_cache_;
};

}  // namespace mysqltrace::server
