// SPDX-License-Identifier: GPL-2.0-only
// Records that BPF programs write into mysqltrace's per-CPU ring buffers.
// One definition for BPF and C++: fixed-width fields, explicit padding, no
// pointers or bool; the C++ side static_asserts the sizes (abi_check.cpp).
#pragma once

#include "mysqltrace/abi/types.h"

// Bumped whenever a record layout below changes incompatibly.
#define MT_ABI_VERSION 5

// The largest number of CPUs the per-CPU ring array can serve.
#define MT_MAX_CPUS 256

// Scratch slots per CPU for records built before they are copied to a ring
// (bpf/ring.bpf.h explains why one per CPU is not enough).
#define MT_SCRATCH_SLOTS 4

enum mt_event_type {
    MT_EV_SELFTEST = 1,          // doctor and tests: one probe hit
    MT_EV_SERVER_STATEMENT = 2,  // a server statement ended (struct mt_server_statement_event)
    MT_EV_SOCK = 3,              // socket syscall of a traced client (struct mt_sock_event)
    MT_EV_PROC = 4,              // traced process forked or exited (struct mt_proc_event)
    MT_EV_API = 5,               // the shim: a MySQL C API call (struct mt_api_event)
    MT_EV_SERVER_WAIT = 6,      // a server thread waited in a syscall (struct mt_server_wait_event)
    MT_EV_CALL = 7,             // `calls`: a function entry/return, annotation or thread exit
    MT_EV_SERVER_ACCOUNT = 8,   // a server connection's account (struct mt_server_account_event)
    MT_EV_SERVER_TABLE_IO = 9,  // a handler row operation returned (mt_server_table_io_event)
    MT_EV_SERVER_LOCK_WAIT = 10,  // a lock wait began or ended (mt_server_lock_wait_event)
    MT_EV_SERVER_LOCK_EDGE = 11,  // InnoDB: a wait-for edge (struct mt_server_lock_edge_event)
    MT_EV_SERVER_THREAD = 12,     // a connection logged in or ended (mt_server_thread_event)
    MT_EV_SERVER_TXN = 13,        // a transaction began or ended (mt_server_txn_event)
};

// Common header of every record. `size` is the whole record including this
// header and any payload.
struct mt_event_header {
    __u32 type;
    __u32 size;
    __u32 cpu;
    __u32 _pad0;
    __u64 ts_ns;  // CLOCK_MONOTONIC (bpf_ktime_get_ns)
    __u32 pid;    // thread group id
    __u32 tid;
};

enum mt_selftest_source {
    MT_SELFTEST_UPROBE = 1,
    MT_SELFTEST_USDT = 2,
    MT_SELFTEST_SYSCALL = 3,
};

struct mt_selftest_event {
    struct mt_event_header hdr;
    __u32 source;  // enum mt_selftest_source
    __u32 _pad0;
    __u64 cookie;  // attach cookie of the probe site that fired
    __u64 arg;     // first argument of the probed function / probe / syscall
};

// Per-CPU delivery counters kept by the BPF side (a PERCPU_ARRAY of one).
struct mt_ring_stats {
    __u64 events;         // records written
    __u64 drops;          // records lost: ring full or no ring for this CPU
    __u64 dropped_bytes;  // payload bytes of the lost records
    __u64 busy_drops;     // of the drops: every scratch slot of the CPU was taken
};

// Largest statement text copied per command (the --max-sql ceiling); a power
// of two so BPF can bound copies with a mask.
#define MT_MAX_SQL 65536

// ---- Server statements (bpf/server.bpf.c) ----

// Counters of the running server thread, read from its task_struct at
// statement and stage boundaries: per thread, unlike getrusage(RUSAGE_SELF).
struct mt_task_counters {
    __u64 cpu_ns;    // se.sum_exec_runtime, as of the scheduler's last accounting point
    __u64 utime_ns;  // user/system split (tick-sampled, as getrusage)
    __u64 stime_ns;
    __u64 nvcsw;       // voluntary context switches
    __u64 nivcsw;      // involuntary context switches
    __u64 min_flt;     // minor page faults
    __u64 maj_flt;     // major page faults
    __u64 read_bytes;  // block I/O that reached storage (task I/O accounting)
    __u64 write_bytes;
};

// Exact stage transitions kept per statement; more are counted, not kept.
#define MT_MAX_STAGES 64
// Distinct stages one statement's samples are attributed to.
#define MT_STAGE_SLOTS 8
// Largest error message and schema name copied.
#define MT_MAX_MESSAGE 512
#define MT_MAX_DB 256
// Longest schema or user name the server probe filters on (--db, --user).
#define MT_FILTER_NAME_MAX 64

// One exact stage transition: the thread passed stage site `site`.
struct mt_stage_mark {
    __u64 ts_ns;
    __u32 site;   // the probe's attach cookie: index into userspace's stage-site table
    __u32 line;   // at an out-of-line THD::enter_stage call: its calling_line, else 0
    __u64 stage;  // at sites whose stage is only known at run time: THD::proc_info
    __u64 file;   // at an out-of-line THD::enter_stage call: its calling_file (server address)
    struct mt_task_counters c;
};

// Sampled stages: where one statement's time went, by the stage the thread
// was in (THD::proc_info) when a CPU timer fired or when it was switched out.
struct mt_stage_samples {
    __u64 stage;       // proc_info: address of the stage name in the server
    __u32 on_cpu;      // timer samples taken while running in this stage
    __u32 switches;    // times switched out in this stage
    __u64 off_cpu_ns;  // time switched out in this stage
};

enum mt_statement_flags {
    MT_STMT_ENDED = 1,     // reached the end of its command
    MT_STMT_SPLIT = 2,     // ended where the next statement of the same COM_QUERY began
    MT_STMT_CUT = 4,       // the thread began another command before this one's end was seen
    MT_STMT_EXACT = 8,     // exact stage probes were attached while it ran
    MT_STMT_SAMPLED = 16,  // stage sampling was on while it ran
    // Ended where another statement of the same query follows, while the
    // THD's text still runs on to the query's end: userspace cuts it where
    // the next statement's text begins.
    MT_STMT_MORE = 32,
    // Described at its end by the one probe on log_slow_statement: no
    // entry was seen, so begin (per-thread counters) is not known; the
    // start is the THD's start_utime and the text the THD's.
    MT_STMT_ONEPASS = 64,
    // mem_used and mem_max were read from the THD (else unknown in this build).
    MT_STMT_MEMORY = 128,
    // mem_max is the mark since the command began (MySQL), not since the
    // connection began (MariaDB).
    MT_STMT_MEMORY_PER_COMMAND = 256,
};

struct mt_server_statement_event {
    struct mt_event_header hdr;  // ts_ns: when the statement ended
    __u64 start_ns;
    __u64 thread_id;  // the server's connection id (THD::thread_id)
    __u64 query_id;
    __u64 text_addr;  // server address of the statement text: splits multi-statements
    __u64 rows_sent;
    __u64 rows_examined;
    __u64 rows_affected;  // when the statement ended with OK
    __u64 lock_ns;        // the slow log's Lock_time (0: not known in this build)
    __u32 command;        // enum_server_command
    __u32 _pad1;
    __u32 error;        // MYSQL_ERRNO when da_status is an error
    __u32 da_status;    // enum mt_da_status (the server's own values differ by flavour)
    __u32 flags;        // enum mt_statement_flags
    __u32 seq;          // statements of this command before this one
    __u32 text_len;     // true length of the statement text
    __u32 text_copied;  // bytes of it in data[]
    __u16 message_len;  // bytes of MESSAGE_TEXT in data[]
    __u16 db_len;       // bytes of CURRENT_SCHEMA in data[]
    __u16 n_stages;     // exact stage marks in data[]
    __u16 stages_lost;  // exact stage transitions not kept (over MT_MAX_STAGES)
    __u16 n_samples;    // struct mt_stage_samples in data[] (sampled stages)
    __u16 _pad2[3];
    __u32 samples_lost;      // samples of stages beyond MT_STAGE_SLOTS
    __u32 sample_period_us;  // timer sampling period (0: not sampled)
    char sqlstate[8];        // RETURNED_SQLSTATE, NUL-terminated
    // Memory the connection's thread holds at the end, and its high-water
    // mark (server/thd_layout.h says since when); MT_STMT_MEMORY.
    __u64 mem_used;
    __u64 mem_max;
    struct mt_task_counters begin, end;
    // n_stages struct mt_stage_mark, n_samples struct mt_stage_samples, then
    // message, schema, statement text: a statement sends only what it has.
    __u8 data[];
};

// Waits of server threads, from syscall tracepoints.
enum mt_wait_kind {
    MT_WAIT_FUTEX = 1,   // blocked on a contended lock or condition (FUTEX_WAIT*, LOCK_PI)
    MT_WAIT_READ = 2,    // read/pread64/readv: a file, or a socket
    MT_WAIT_WRITE = 3,   // write/pwrite64/writev
    MT_WAIT_SYNC = 4,    // fsync/fdatasync
    MT_WAIT_OPEN = 5,    // openat (object: the new fd)
    MT_WAIT_CLOSE = 6,   // close
    MT_WAIT_POLL = 7,    // idle: a connection waiting for its client between commands
    MT_WAIT_RECV = 8,    // recvfrom/recvmsg (not sent: their tracepoints are not attached)
    MT_WAIT_SEND = 9,    // sendto/sendmsg
    MT_WAIT_TABLE = 10,  // a handler row operation (its own record: mt_server_table_io_event)
};

enum mt_wait_flags {
    MT_WAIT_IN_STATEMENT = 1,  // began while the thread ran a statement
    MT_WAIT_TIMED = 2,         // futex with a timeout
    MT_WAIT_SOCKET = 4,        // I/O on a socket
    MT_WAIT_FILE = 8,          // I/O on a regular file
};

struct mt_server_wait_event {
    struct mt_event_header hdr;  // ts_ns: when the wait ended
    __u64 start_ns;
    __u64 thread_id;  // connection id of the thread's THD
    __u64 object;     // futex: the lock word's address; I/O: the fd
    __u64 bytes;      // I/O: bytes transferred
    __u64 caller;     // futex: first return address into the server on the user stack
    __u64 value;      // futex: the value waited on (2: a contended glibc mutex)
    __u32 kind;       // enum mt_wait_kind
    __u32 flags;      // enum mt_wait_flags
    __s32 ret;        // the syscall's result when negative (an errno), else 0
    __u32 _pad0;
};

// The account a server connection runs as, sent once per connection (and
// again after COM_CHANGE_USER) from its first command or wait: read then,
// while the connection is alive, not later from userspace.
#define MT_MAX_ACCOUNT_USER 129  // MariaDB: 128 characters (ASCII names)
#define MT_MAX_ACCOUNT_HOST 256

struct mt_server_account_event {
    struct mt_event_header hdr;
    __u64 thread_id;
    char user[MT_MAX_ACCOUNT_USER];  // NUL-terminated; empty: none (a system thread)
    char host[MT_MAX_ACCOUNT_HOST];  // the client's host name, else its IP address
    __u8 _pad0[7];
};

// Connections (server --threads), as performance_schema.threads shows them:
// one record when a connection has logged in, one as it ends, and the
// connect attributes its client sent, when the server hands them to
// performance_schema (MySQL with performance_schema on), just before login.
enum mt_thread_op {
    MT_THREAD_CONNECT = 1,
    MT_THREAD_DISCONNECT = 2,
    MT_THREAD_ATTRS = 3,  // attrs[]: the handshake's attribute block; thread_id 0 (not yet known)
};
#define MT_MAX_THREAD_IP 64
#define MT_MAX_THREAD_DB 65  // MariaDB and MySQL: 64 characters (ASCII names)
#define MT_MAX_THREAD_ATTRS 1024

struct mt_server_thread_event {
    struct mt_event_header hdr;
    __u64 thread_id;
    __u32 op;                        // enum mt_thread_op
    __u32 attrs_total;               // MT_THREAD_ATTRS: true length of the block
    __u32 attrs_len;                 // bytes of it in attrs[]
    char user[MT_MAX_ACCOUNT_USER];  // NUL-terminated, as in mt_server_account_event
    char host[MT_MAX_ACCOUNT_HOST];
    char ip[MT_MAX_THREAD_IP];  // empty: not a TCP/IP connection
    char db[MT_MAX_THREAD_DB];
    __u8 _pad0[6];
    __u8 attrs[MT_MAX_THREAD_ATTRS];
};

// Transactions (server --transactions): trans_begin(THD*, flags), each
// statement's ha_commit_trans/ha_rollback_trans(THD*, 0), and the
// transaction-level trans_commit/trans_rollback (and their _implicit
// forms), with what the THD says then; userspace tells which statement
// commit ends an autocommit transaction.
enum mt_txn_op {
    MT_TXN_BEGIN = 1,     // arg: trans_begin's flags (MYSQL_START_TRANS_OPT_*)
    MT_TXN_COMMIT = 2,    // ha_commit_trans(thd, all = 0): a statement's commit
    MT_TXN_ROLLBACK = 3,  // ha_rollback_trans(thd, all = 0)
    // trans_commit / trans_commit_implicit, trans_rollback /
    // trans_rollback_implicit: the transaction's end (COMMIT, ROLLBACK, an
    // implicit commit before DDL). ha_commit_trans(thd, 1) is not it: the
    // servers also commit their own internal transactions with it.
    MT_TXN_END_COMMIT = 4,
    MT_TXN_END_ROLLBACK = 5,
};

struct mt_server_txn_event {
    struct mt_event_header hdr;
    __u64 thread_id;
    __u64 option_bits;    // THD::variables.option_bits
    __u64 stmt_start_us;  // THD::start_utime: the running statement's start (its clock)
    __u32 op;             // enum mt_txn_op
    __u32 arg;
    __u32 isolation;  // THD::tx_isolation (enum_tx_isolation: 0 READ UNCOMMITTED .. 3 SERIALIZABLE)
    __u32 read_only;  // THD::tx_read_only
};

// Table I/O (server --table-io): one record per handler row operation of a
// connection thread, as performance_schema's wait/io/table/sql/handler.
enum mt_table_op {  // the handler method (the attach cookie)
    MT_TABLE_RND_NEXT = 1,
    MT_TABLE_RND_POS = 2,
    MT_TABLE_INDEX_READ_MAP = 3,
    MT_TABLE_INDEX_READ_IDX_MAP = 4,
    MT_TABLE_INDEX_NEXT = 5,
    MT_TABLE_INDEX_PREV = 6,
    MT_TABLE_INDEX_FIRST = 7,
    MT_TABLE_INDEX_LAST = 8,
    MT_TABLE_INDEX_NEXT_SAME = 9,
    MT_TABLE_WRITE_ROW = 10,
    MT_TABLE_UPDATE_ROW = 11,
    MT_TABLE_DELETE_ROW = 12,
};

// Table names are at most 64 characters, up to 4 bytes each in utf8mb4.
#define MT_MAX_TABLE_NAME 256

struct mt_server_table_io_event {
    struct mt_event_header hdr;  // ts_ns: when the operation returned
    __u64 start_ns;
    __u64 thread_id;
    __u64 handler;   // OBJECT_INSTANCE_BEGIN: the open table's handler
    __s32 ret;       // what the method returned: 0 a row, else HA_ERR_* (137: no more rows)
    __u32 op;        // enum mt_table_op
    __u32 flags;     // MT_WAIT_IN_STATEMENT
    __u16 db_len;    // bytes in db[] (cut at MT_MAX_TABLE_NAME - 1)
    __u16 name_len;  // bytes in name[]
    char db[MT_MAX_TABLE_NAME];    // OBJECT_SCHEMA
    char name[MT_MAX_TABLE_NAME];  // OBJECT_NAME
};

// Lock waits (server --locks, bpf/server_locks.bpf.h): probes only on the
// paths a wait takes, so that a server without contention pays nothing.
enum mt_lock_kind {
    MT_LOCK_METADATA = 1,  // an MDL wait (MDL_wait::timed_wait)
    MT_LOCK_ROW = 2,       // an InnoDB row or table lock wait
};

// How a metadata lock wait ended: MDL_wait::enum_wait_status, the same
// numbers in MariaDB and MySQL (0: not known, e.g. an InnoDB wait).
enum mt_lock_status {
    MT_LOCK_GRANTED = 1,
    MT_LOCK_VICTIM = 2,  // chosen as a deadlock victim
    MT_LOCK_TIMEOUT = 3,
    MT_LOCK_KILLED = 4,
};

enum mt_lock_flags {
    // The blocker search ran for this wait (MDL's deadlock detector visited
    // the waiter's lock): blockers[] lists what it found, maybe nothing.
    MT_LOCK_SEARCHED = 1,
    // InnoDB: the wait's begin was seen, and who woke the waiter watched:
    // granter_tid is the first thread of the server that woke it (0: none).
    MT_LOCK_WAKER_SEEN = 2,
    // The wait began and is still open (status 0, ts_ns = start_ns): what
    // is known of it then (MDL: the object, type and blockers the search
    // found; InnoDB: the waiter). Its end comes as a record of its own.
    MT_LOCK_OPEN = 4,
};

#define MT_MAX_LOCK_BLOCKERS 8
// Bytes of MDL_key copied: its lengths, then namespace, schema and name,
// NUL-separated (64 + 64 characters of 3 bytes, plus headers).
#define MT_MAX_MDL_KEY 416
// Bytes of the waiting statement's text an open wait's record carries.
#define MT_MAX_LOCK_QUERY 256

struct mt_server_lock_wait_event {
    struct mt_event_header hdr;  // ts_ns: when the wait ended
    __u64 start_ns;
    __u64 thread_id;                       // the waiting connection (0: unknown)
    __u64 stage;                           // MDL: the wait's stage name (server address), else 0
    __u64 blockers[MT_MAX_LOCK_BLOCKERS];  // connection ids holding what it waits for
    __u32 kind;                            // enum mt_lock_kind
    __u32 status;                          // enum mt_lock_status (0: unknown)
    __s32 lock_type;   // MDL: the build's enum_mdl_type value requested (-1: unknown)
    __u16 n_blockers;  // entries in blockers[] (more are counted in blockers_lost)
    __u16 blockers_lost;
    __u16 flags;    // enum mt_lock_flags
    __u16 key_len;  // bytes of the MDL_key in key[] (0: none)
    // The OS thread that granted the lock (MDL: its release made the
    // request compatible, the last blocker; InnoDB: MT_LOCK_WAKER_SEEN), 0:
    // none seen.
    __u32 granter_tid;
    __s32 lock_duration;  // MDL: enum_mdl_duration requested (-1: unknown)
    __u32 _pad0;
    __u8 key[MT_MAX_MDL_KEY];
    // MT_LOCK_OPEN: the start of the waiting statement's text (the THD's
    // query string when the wait began); query_len bytes of it, 0: none.
    __u16 query_len;
    __u16 _pad1[3];
    char query[MT_MAX_LOCK_QUERY];
};

// InnoDB reported a wait-for edge: `thread_id` waits for a lock that
// `blocker` holds (MySQL's thd_report_lock_wait).
struct mt_server_lock_edge_event {
    struct mt_event_header hdr;
    __u64 thread_id;
    __u64 blocker;
};

// Largest variable part of a statement record.
#define MT_STATEMENT_DATA_MAX                       \
    (MT_MAX_STAGES * sizeof(struct mt_stage_mark) + \
     MT_STAGE_SLOTS * sizeof(struct mt_stage_samples) + MT_MAX_MESSAGE + MT_MAX_DB + MT_MAX_SQL)

// How a statement's Diagnostics_area ended, whatever the server's own
// enum_diagnostics_status numbers (DA_ERROR is 5 in MariaDB, 3 in MySQL).
enum mt_da_status {
    MT_DA_EMPTY = 0,
    MT_DA_OK = 1,     // affected rows are reported
    MT_DA_OTHER = 2,  // EOF, disabled, ...
    MT_DA_ERROR = 5,
};

// The server object fields a statement's end reads are copied in a few
// windows (server/read_plan.h) into a gather area: this many of at most this
// many bytes for the THD, and one of at most MT_DA_WINDOW_MAX bytes for its
// Diagnostics_area after them (MySQL's status and affected rows are 0x214
// bytes apart: one copy costs the same up to about a KiB). MySQL 9.7's THD
// fields, with the start, lock time and command, span five windows.
#define MT_THD_WINDOWS 5
#define MT_THD_WINDOW_MAX 1024
#define MT_DA_WINDOW_MAX 1024
#define MT_GATHER_BYTES (MT_THD_WINDOWS * MT_THD_WINDOW_MAX + MT_DA_WINDOW_MAX)

// ---- Client capture (bpf/client.bpf.c) ----

// Largest payload copied per syscall (the --snaplen ceiling); a power of two
// so BPF can bound copies with a mask.
#define MT_MAX_SNAPLEN 65536
// iovecs of one readv/writev/recvmsg/sendmsg that are looked at.
#define MT_MAX_IOV 16

enum mt_sock_op {
    MT_SOCK_CONNECT = 1,  // data: the peer's sockaddr
    MT_SOCK_RECV = 2,     // data: bytes received (server -> client)
    MT_SOCK_SEND = 3,     // data: bytes sent (client -> server)
    MT_SOCK_CLOSE = 4,
    MT_SOCK_SHUTDOWN = 5,
    MT_SOCK_TLS_RECV = 6,  // data: cleartext returned by SSL_read / gnutls_record_recv
    MT_SOCK_TLS_SEND = 7,  // data: cleartext given to SSL_write / gnutls_record_send
};

// TLS library functions probed, told apart by the probe's attach cookie.
enum mt_tls_func {
    MT_TLS_SSL_READ = 1,     // int SSL_read(SSL *, void *buf, int num)
    MT_TLS_SSL_READ_EX = 2,  // int SSL_read_ex(SSL *, void *buf, size_t num, size_t *readbytes)
    MT_TLS_SSL_WRITE = 3,    // int SSL_write(SSL *, const void *buf, int num)
    MT_TLS_SSL_WRITE_EX =
        4,  // int SSL_write_ex(SSL *, const void *buf, size_t num, size_t *written)
    MT_TLS_GNUTLS_RECV = 5,  // ssize_t gnutls_record_recv(session, void *data, size_t size)
    MT_TLS_GNUTLS_SEND = 6,  // ssize_t gnutls_record_send(session, const void *data, size_t size)
    MT_TLS_GO_READ = 7,      // Go: func (c *tls.Conn) Read(b []byte) (int, error)
    MT_TLS_GO_WRITE = 8,     // Go: func (c *tls.Conn) Write(b []byte) (int, error)
    MT_TLS_JAVA_READ = 9,    // JDK: SSLSocketImpl$AppInputStream.read(byte[], int, int)
    MT_TLS_JAVA_WRITE = 10,  // JDK: SSLSocketImpl$AppOutputStream.write(byte[], int, int)
};

// What the kernel side does with a socket, kept per struct sock.
enum mt_sock_state {
    MT_SOCK_UNKNOWN = 0,    // seen mid-stream: copy until userspace decides
    MT_SOCK_FRESH = 1,      // connected while traced: the first bytes received decide
    MT_SOCK_MYSQL = 2,      // a MySQL connection: copy everything
    MT_SOCK_IGNORED = 3,    // not MySQL: report nothing more
    MT_SOCK_FRESH_HDR = 4,  // fresh, and 4 bytes of a seq-0 packet header came alone
};

struct mt_sock_event {
    struct mt_event_header hdr;
    // Identity of the socket: the struct sock address (syscall capture), or
    // for the shim's probes MT_SHIM_SOCK(tgid, conn).
    __u64 sock;
    __s64 ret;  // syscall result: bytes transferred (true length) or -errno
    __u32 fd;
    __u16 op;       // enum mt_sock_op
    __u16 family;   // AF_INET, AF_INET6, AF_UNIX
    __u32 copied;   // bytes in data[]
    __u32 syscall;  // syscall number, for diagnostics
    __u8 data[];
};

enum mt_proc_op {
    MT_PROC_FORK = 1,  // `child` is a new traced process
    MT_PROC_EXIT = 2,  // hdr.pid's whole process exited
};

struct mt_proc_event {
    struct mt_event_header hdr;
    __u32 op;
    __u32 child;
};

// ---- The shim (shim/, include/mysqltrace/abi/usdt.h) ----

// The socket identity of the shim's connection `conn` in process `tgid`;
// never a kernel address, so the two kinds cannot collide.
#define MT_SHIM_SOCK(tgid, conn) (((__u64)(tgid) << 32) | (__u32)(conn))

enum mt_api_phase {
    MT_API_BEGIN = 1,  // api_begin
    MT_API_END = 2,    // api_end
    MT_API_TRACE = 3,  // trace_event: func = WL#6226 stage, error_code = event
};

// Bytes of statement text (begin) or error message (end) copied per call.
#define MT_MAX_API_TEXT 512

struct mt_api_event {
    struct mt_event_header hdr;
    __u64 handle;  // MYSQL * or MYSQL_STMT *
    __u64 sock;    // MT_SHIM_SOCK(pid, conn), 0 when the call has no connection
    __s64 ret;
    __u32 phase;       // enum mt_api_phase
    __u32 func;        // enum mt_api_func
    __u32 error_code;  // end: mysql_errno() on failure
    __u32 thread_id;   // end: mysql_thread_id()
    __u32 text_len;    // true length of the text (begin: argument; end: message)
    __u32 copied;      // bytes of it in data[]
    char sqlstate[8];  // end: mysql_sqlstate() on failure, NUL-terminated
    __u8 data[];
};

// ---- Call tracing (bpf/calls.bpf.c) ----

enum mt_call_kind {
    MT_CALL_ENTRY = 1,        // a traced function was entered
    MT_CALL_RETURN = 2,       // it returned (uretprobe)
    MT_CALL_USDT = 3,         // a USDT probe asked for with --usdt fired
    MT_CALL_THREAD_EXIT = 4,  // a thread that produced records exited
    // An unwinder was entered (exception thrown, forced unwind, stack walk):
    // the return addresses that return probes had replaced were put back
    // so that it can walk the stack. func: enum mt_call_unwinder; value: how
    // many were put back.
    MT_CALL_UNWIND = 5,
    // An exception was caught (__cxa_begin_catch): calls above sp live on,
    // and their return probes were re-armed. value: how many.
    MT_CALL_CATCH = 6,
};

enum mt_call_unwinder {
    MT_UNWIND_RAISE = 0,    // _Unwind_RaiseException: a C++ throw
    MT_UNWIND_RESUME = 1,   // _Unwind_Resume: unwinding goes on after a cleanup
    MT_UNWIND_RETHROW = 2,  // _Unwind_Resume_or_Rethrow
    MT_UNWIND_FORCED = 3,   // _Unwind_ForcedUnwind: pthread_exit, thread cancellation
    MT_UNWIND_WALK = 4,     // _Unwind_Backtrace: backtrace(), crash handlers
};

struct mt_call_event {
    struct mt_event_header hdr;
    // Records of this thread so far, this one included (1, 2, ...); a gap
    // means records were lost there. 0: unknown (the sequence map was full).
    __u64 seq;
    // ENTRY: the stack pointer at the probe, which points at the return
    // address; RETURN: after the return popped it (entry sp + 8); USDT: at
    // the probe site.
    __u64 sp;
    // ENTRY: the return address (the caller's call site); RETURN: rax;
    // USDT: the first argument (0 if it has none); UNWIND, CATCH: a count.
    __u64 value;
    __u32 func;  // ENTRY/RETURN: the attach cookie, an index into userspace's
                 // function table; USDT: the annotation's index; UNWIND: the unwinder
    __u32 kind;  // enum mt_call_kind
};

// Where a kernel refuses BPF writes to user memory (lockdown), the unwinder
// guard stops the process instead (SIGSTOP) and asks mysqltrace, through a
// ring of its own, to put these return addresses back and continue it.
#define MT_CALL_FIXUP_SLOTS 64  // the kernel's MAX_URETPROBE_DEPTH

struct mt_call_fixup {
    __u32 tgid;
    __u32 tid;
    __u32 count;  // pairs filled in; those with slot 0 need nothing
    __u32 _pad0;
    __u64 trampoline;  // what a slot holds while its return probe is armed
    struct {
        __u64 slot;  // stack address of a replaced return address
        __u64 orig;  // the original return address
    } pairs[MT_CALL_FIXUP_SLOTS];
};
