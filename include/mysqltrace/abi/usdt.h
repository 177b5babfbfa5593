// SPDX-License-Identifier: GPL-2.0-only
// The USDT probes of libmysqltrace-shim.so (provider "mysqltrace"): their
// names, what each one carries and its values. One definition for the shim
// (which fires them), bpf/client.bpf.c (which reads them) and docs/run.md.
//
// Every probe has a semaphore (`mysqltrace_<name>_semaphore`): the shim
// prepares what a probe carries only while a tracer is attached.
//
// Every probe of the shim has one argument: the user-space address of its
// struct below, filled on the firing thread's stack. BPF reads it with one
// bpf_probe_read_user. libbpf's bpf_usdt_arg() costs ~75 ns an argument on
// the project's VM (a spec lookup and a register or stack read each): io's
// ten arguments took 0.9 us a hit, more than the trap itself.
#pragma once

#include "mysqltrace/abi/types.h"

#define MT_USDT_PROVIDER "mysqltrace"

// io(struct mt_io_probe *)
//   Fired after a socket call of a connection the shim follows returned (for
//   close/shutdown: before the call).
struct mt_io_probe {
    // CONNECT: struct sockaddr *; RECV/SEND/TLS_*: the buffer (kind BUF) or
    // struct iovec * (kind IOV); else 0
    __u64 ptr;
    // CONNECT: the sockaddr length; BUF: the buffer length; IOV: the iovec count
    __u64 len;
    __s64 ret;  // the call's result: bytes transferred, 0, or -errno
    // SEND/TLS_SEND: CLOCK_MONOTONIC ns when the call began (a command is
    // sent when its write starts), else 0
    __u64 start_ns;
    // a struct mt_api_begin_info * (user space) when this is the first io of
    // a C API call whose begin was deferred (see below): the call's begin is
    // reported just before this io; else 0
    __u64 begin;
    // enum mt_sock_op (event.h): CONNECT, RECV, SEND, CLOSE, SHUTDOWN,
    // TLS_RECV, TLS_SEND
    __s32 op;
    // the shim's number for the connection (1, 2, ... per process; never
    // reused while the process lives)
    __u32 conn;
    __s32 fd;      // the socket
    __s32 kind;    // enum mt_io_kind
    __s32 family;  // AF_INET, AF_INET6 or AF_UNIX
    __u32 _pad;
};
#define MT_USDT_IO "io"

// The begin of a C API call.
//
// api_begin(struct mt_api_begin_info *)
//   A MySQL C API function was entered (the CONNECTING event for
//   mysql_real_connect). Fired for mysql_real_connect, mysql_change_user,
//   mysql_close, mysql_bind_param and the non-blocking _start functions; the
//   blocking calls listed below defer their begin.
//
// Deferred begins: instead of a hit of api_begin on entry (a trap per
// call), the shim fills this on its stack before the real call and hands
// its address to the call's first io hit, or to its api_end when the call
// made no io. Such a call costs one hit (api_end) plus its io. The BPF side
// reads it with one bpf_probe_read_user and writes the same MT_API_BEGIN
// record api_begin would have written, timestamped begin_ns. The blocking
// calls of one handle with no need of a begin before their io are
// deferred: mysql_real_query, mysql_query, mysql_send_query,
// mysql_read_query_result, mysql_stmt_prepare, mysql_stmt_execute,
// mysql_stmt_close, mysql_select_db, mysql_ping, mysql_reset_connection.
// Their argument text is the caller's and still valid when the call returns.
struct mt_api_begin_info {
    // CLOCK_MONOTONIC ns before the real call (bpf_ktime_get_ns's clock);
    // 0 in an api_begin hit, whose own time it is
    __u64 begin_ns;
    __u64 handle;  // the MYSQL * or MYSQL_STMT * the call works on
    // mysql_real_query/send_query/stmt_prepare/select_db: the statement or
    // schema text (not NUL-terminated); else 0
    __u64 arg;
    __u64 arg_len;  // its length
    __u32 func;     // enum mt_api_func
    __u32 conn;     // the connection's number (see io), 0 if it has no socket yet
};
#define MT_USDT_API_BEGIN "api_begin"

// api_end(struct mt_api_end_probe *)
//   The function returned (for the non-blocking _start/_cont variants: the
//   call that completed the operation).
struct mt_api_end_probe {
    __u64 handle;  // as in api_begin (for mysql_real_connect: the MYSQL *)
    // 0 success, 1 failure (from the function's own convention), for
    // mysql_stmt_fetch its return value
    __s64 ret;
    __u64 sqlstate;  // mysql_sqlstate() on failure (char *, 5 chars + NUL), else 0
    __u64 message;   // mysql_error() on failure (char *, NUL-terminated), else 0
    // a struct mt_api_begin_info * (user space) when the call's begin was
    // deferred and no io reported it: the begin is reported just before
    // this end; else 0
    __u64 begin;
    __u32 func;        // enum mt_api_func
    __u32 conn;        // the connection's number now (after connect: its socket's)
    __u32 error_code;  // mysql_errno() / mysql_stmt_errno() on failure, else 0
    __u32 thread_id;   // mysql_thread_id(): the server's connection id, 0 if none
};
#define MT_USDT_API_END "api_end"

// trace_event(struct mt_trace_event_probe *)
//   Forwarded from a client library's own WL#6226 protocol trace plugin API
//   (Oracle libmysqlclient >= 5.7).
struct mt_trace_event_probe {
    __u64 handle;  // the MYSQL *
    // the library's enum protocol_stage / enum trace_event values, verbatim
    __s32 stage;
    __s32 event;
    __u32 conn;  // the connection's number (see io)
    __u32 _pad;
};
#define MT_USDT_TRACE_EVENT "trace_event"

// The probes of libmysqltrace-java.so, the native half of the Java agent
// (java/): same provider, fired by the JDK's TLS application streams.
//
// java_tls_enter(op, key)
//   A read (op MT_SOCK_TLS_RECV) or write (MT_SOCK_TLS_SEND) of a JDK TLS
//   socket begins on this thread.
//   key  the SSLSocketImpl's identity hash (32 bits): one TLS session
#define MT_USDT_JAVA_TLS_ENTER "java_tls_enter"
// java_tls_exit(op, key, buf, ret)
//   It ended. buf: the cleartext read or written (the pinned byte array at
//   its offset), or 0; ret: its length, or <= 0 when nothing was moved (end
//   of stream, an exception).
#define MT_USDT_JAVA_TLS_EXIT "java_tls_exit"

enum mt_io_kind {
    MT_IO_BUF = 1,  // ptr/len: one buffer
    MT_IO_IOV = 2,  // ptr/len: an iovec array and its count
};

// MySQL C API functions the shim interposes.
enum mt_api_func {
    MT_API_REAL_CONNECT = 1,
    MT_API_REAL_QUERY = 2,
    MT_API_SEND_QUERY = 3,
    MT_API_READ_QUERY_RESULT = 4,
    MT_API_STORE_RESULT = 5,
    MT_API_USE_RESULT = 6,
    MT_API_NEXT_RESULT = 7,
    MT_API_STMT_PREPARE = 8,
    MT_API_STMT_EXECUTE = 9,
    MT_API_STMT_FETCH = 10,
    MT_API_STMT_CLOSE = 11,
    MT_API_CHANGE_USER = 12,
    MT_API_SELECT_DB = 13,
    MT_API_PING = 14,
    MT_API_CLOSE = 15,
    MT_API_QUERY = 16,  // mysql_query (libraries may implement it without real_query)
    MT_API_RESET_CONNECTION = 17,
    MT_API_BIND_PARAM = 18,  // mysql_bind_param: arg is the attribute names, ", " between
    MT_API_FUNC_COUNT
};
