// SPDX-License-Identifier: GPL-2.0-only
// Offsets of the THD (and Diagnostics_area) fields the server tracer reads,
// learnt from the code of a mariadbd build without debug info: the exported
// accessors (thd_get_thread_id, thd_query_id, ...) and a few small methods
// are walked with a symbolic register tracker (server/register_state.h),
// and the offsets are read off the loads and stores they perform. Nothing
// here knows the numbers of a particular build.
#pragma once

#include <cstdint>

#include "elf/elf_file.h"
#include "util/result.h"

namespace mysqltrace::server {

struct ThdLayout {  // -1 = not found
    int64_t thread_id = -1;
    // Bytes of thread_id: 8 on MariaDB (unsigned long), 4 on MySQL (my_thread_id).
    uint8_t thread_id_size = 8;
    int64_t query_id = -1;
    int64_t db = -1;       // LEX_CSTRING {str, length}
    int64_t stmt_da = -1;  // Diagnostics_area *
    // The THD's own Diagnostics_area, where stmt_da points unless a
    // statement swaps in another for a while: its fields can then be copied
    // with the THD's.
    int64_t main_da = -1;
    int64_t da_errno = -1;  // the rest are in Diagnostics_area
    int64_t da_sqlstate = -1;
    int64_t da_message = -1;
    int64_t da_status = -1;
    int64_t da_affected_rows = -1;
    // Values of Diagnostics_area::m_status (enum_diagnostics_status differs:
    // DA_ERROR is 5 in MariaDB, 3 in MySQL): the error status (-1 unknown)
    // and a bit per status the area reports affected rows in (DA_OK, and
    // MariaDB's DA_OK_BULK), read off set_ok_status's stores.
    int64_t da_error_status = -1;
    uint32_t da_ok_statuses = 0;
    int64_t sent_row_count = -1;
    int64_t examined_row_count = -1;
    int64_t proc_info = -1;     // const char *: the current stage's name
    int64_t stage_key = -1;     // PSI_stage_key of the current stage
    int64_t security_ctx = -1;  // Security_context * (the connection's account)
    int64_t sctx_user = -1;     // the rest are in Security_context
    int64_t sctx_host = -1;
    int64_t sctx_ip = -1;
    // MySQL: the three are String members, {char *ptr; size_t length}, and
    // not always NUL-terminated (MariaDB: char *).
    bool sctx_lengths = false;
    // Table I/O (--table-io): handler::table_share, and in TABLE_SHARE the
    // schema and table names (LEX_CSTRING {str, length}).
    int64_t handler_table_share = -1;
    int64_t share_db = -1;
    int64_t share_table_name = -1;
    // THD::m_query_string (LEX_CSTRING), from thd_query_unsafe() (MySQL).
    int64_t query_string = -1;
    // MySQL: the prepared statement a COM_STMT_EXECUTE runs, which the THD
    // still points at by the statement's end: THD::stmt_map's
    // m_last_found_statement (Prepared_statement *), the THD offset of that
    // pointer, from Prepared_statement_map::find and mysql_stmt_precheck.
    int64_t last_prepared = -1;
    // In Prepared_statement: m_query_string, the prepared text with its `?`
    // (LEX_CSTRING), and m_display_query_string (a rewritten text, e.g.
    // without a password), which is shown instead when not empty; from
    // Prepared_statement::get_display_query_string.
    int64_t ps_query_string = -1;
    int64_t ps_display_query_string = -1;

    // One-probe statements (log_slow_statement, bpf/server_onepass.bpf.h).
    // THD::start_utime: when the statement began, in microseconds of the
    // clock `start_clock` names.
    int64_t start_utime = -1;
    enum class Clock : uint8_t { monotonic, realtime };
    Clock start_clock = Clock::monotonic;
    // The slow log's Lock_time: MariaDB's THD::utime_after_lock (a time on
    // start_utime's clock: lock time = it - start_utime), MySQL's
    // THD::m_lock_usec (already a duration: lock_is_duration).
    int64_t lock_time = -1;
    bool lock_is_duration = false;
    int64_t command = -1;  // enum_server_command (4 bytes): the command running

    // Memory the connection's thread holds (server/thd_layout_memory.cpp):
    // in use now, and its high-water mark (8 bytes each). MariaDB:
    // status_var.local_memory_used and max_local_memory_used, the mark kept
    // since the connection began; MySQL: Thd_mem_cnt's mem_counter and
    // max_conn_mem, the mark reset as each command begins
    // (mem_max_per_command), counted only while performance_schema's memory
    // instrumentation runs.
    int64_t mem_used = -1;
    int64_t mem_max = -1;
    bool mem_max_per_command = false;

    // Transactions (server/thd_layout_txn.cpp): THD::variables.option_bits
    // (thd_test_options), THD::tx_isolation (4 bytes, thd_tx_isolation),
    // THD::tx_read_only (1 byte, thd_tx_is_read_only); and in option_bits
    // the bit trans_begin sets (OPTION_BEGIN) and the bits it tests before,
    // which make a statement's commit not the transaction's end (BEGIN,
    // autocommit off, LOCK TABLES); 0: not found.
    int64_t option_bits = -1;
    int64_t tx_isolation = -1;
    int64_t tx_read_only = -1;
    uint64_t option_begin = 0;
    uint64_t multi_statement_mask = 0;
};

// Errors only when thread_id cannot be found; any other field whose code
// pattern does not match stays -1. `mysql8`: MySQL 8's symbol profile, whose
// accessors (thd_get_thread_id, ...) may have C++ linkage: a missing C name
// is looked up as `_Z<len><name>P...` too, and THD::enter_stage is out of
// line (proc_info is read off it).
Result<ThdLayout> derive_thd_layout(const elf::ElfFile &file, bool mysql8 = false);

// MySQL 8's out-of-line THD::enter_stage(const PSI_stage_info*,
// PSI_stage_info*, const char *func, const char *file, unsigned line).
inline constexpr const char *kMysql8EnterStage =
    "_ZN3THD11enter_stageEPK17PSI_stage_info_v1PS0_PKcS5_j";

// PSI_stage_info_v1 {unsigned m_key; const char *m_name; int m_flags}: an
// ABI of the performance schema interface, not of a build.
inline constexpr int64_t kPsiStageKey = 0;
inline constexpr int64_t kPsiStageName = 8;

}  // namespace mysqltrace::server
