// SPDX-License-Identifier: GPL-2.0-only
// Turns the socket syscalls of traced clients into MySQL connections: decides
// which sockets carry MySQL (a greeting for new connections, a command packet
// for connections already open when the trace began), hands their bytes to one
// WL#6226 ConnectionTracer each, and tells the kernel side to stop copying
// sockets that are not MySQL.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/sock_record.h"
#include "protocol/wl6226.h"

namespace mysqltrace::client {

struct ConnectionInfo {
    uint64_t id = 0;  // 1, 2, ... in the order connections were recognised
    uint32_t pid = 0;
    uint32_t fd = 0;
    uint16_t family = 0;
    std::string peer;         // "127.0.0.1:3306", "/run/mysqld/mysqld.sock"; empty if unknown
    bool from_start = false;  // the connect (or at least the greeting) was seen
};

struct TableStats {
    uint64_t connections = 0;      // MySQL connections recognised
    uint64_t ignored_sockets = 0;  // judged not MySQL in userspace
    uint64_t events = 0;
    uint64_t commands = 0;
    uint64_t bytes = 0;                   // true bytes of MySQL connections, both ways
    uint64_t bytes_not_copied = 0;        // beyond the snap length
    uint64_t tls_unattributed = 0;        // TLS cleartext records of sessions with no known socket
    uint64_t library_events_unknown = 0;  // trace plugin events with stage/event out of range
};

class ConnectionTable {
  public:
    struct Callbacks {
        std::function<void(const ConnectionInfo &)> on_connection;  // a new MySQL connection
        protocol::EventCallback on_event;
        protocol::SummaryCallback on_summary;
        // Tell the kernel what a socket is (enum mt_sock_state).
        std::function<void(uint64_t sock, uint8_t state)> set_verdict;
        // The shim's API calls (`mysqltrace run`), when they return.
        std::function<void(const protocol::ApiCall &)> on_api_call;
    };

    ConnectionTable(protocol::TracerOptions options, Callbacks callbacks);
    ~ConnectionTable();

    void on_record(const SockRecord &r);
    // A MySQL C API call entered or returned (the shim). Binds handles to
    // connections, makes mysql_real_connect's entry the CONNECTING event and
    // turns client-side failures into ERROR events.
    void on_api(const ApiRecord &a);
    // The process exited: its connections end.
    void on_process_exit(uint32_t pid, uint64_t ts_ns);

    const TableStats &stats() const { return stats_; }
    size_t open_connections() const { return conns_.size(); }

  private:
    // A record kept while its socket is not judged yet.
    struct Held {
        SockRecord rec;  // rec.data points into bytes
        std::vector<uint8_t> bytes;
    };
    struct Conn {
        ConnectionInfo info;
        uint64_t connect_ts = 0;
        uint32_t connect_tid = 0;
        bool connect_seen = false;
        bool ignored = false;
        std::vector<Held> held;
        std::vector<uint8_t> recv_prefix;  // first received bytes, to spot a greeting
        std::unique_ptr<protocol::ConnectionTracer> tracer;
        // Closed inside an API call that has not returned yet: the call's
        // error, if any, comes before DISCONNECTED.
        bool closing = false;
        uint64_t close_ts = 0;
        uint32_t close_tid = 0;
    };
    // An API call that has not returned yet, per thread (calls may nest).
    struct OpenCall {
        uint32_t func = 0;
        uint32_t pid = 0;
        uint64_t handle = 0;
        uint64_t begin_ns = 0;
        uint64_t sock = 0;  // the connection it works on, once known
        std::optional<std::string> arg;
        uint32_t arg_len = 0;
        uint64_t server_wait_ns = 0;
        std::string connect_failure;  // mysql_real_connect: the last failed connect()
        std::string connect_peer;
    };

    // Judges a socket from what it carried so far: true when it is decided
    // (recognised or ignored).
    bool judge(uint64_t sock, Conn &c, const SockRecord &r);
    void recognise(uint64_t sock, Conn &c, bool from_start);
    void ignore(uint64_t sock, Conn &c);
    void feed(Conn &c, const SockRecord &r);
    void on_connect_record(const SockRecord &r);
    void close_conn(std::map<uint64_t, Conn>::iterator it, uint64_t ts, uint32_t pid, uint32_t tid);
    OpenCall *open_call(uint32_t tid);
    void end_call(const ApiRecord &a);
    // A WL#6226 event from the library's own trace plugin, verbatim.
    void library_event(const ApiRecord &a);
    // A connection that never got a socket to the server (refused, unknown
    // host): CONNECTING, ERROR, DISCONNECTED.
    // Returns its id.
    uint64_t failed_connection(uint32_t pid, uint32_t tid, const std::string &peer,
                               uint64_t begin_ns, uint64_t end_ns, int code,
                               std::string_view sqlstate, std::string_view message);
    std::unique_ptr<protocol::ConnectionTracer> make_tracer(uint64_t id);

    protocol::TracerOptions options_;
    Callbacks cb_;
    std::map<uint64_t, Conn> conns_;                   // by kernel socket identity
    std::map<uint32_t, std::vector<OpenCall>> calls_;  // by thread
    std::map<uint64_t, uint64_t> handle_socks_;        // MYSQL * -> socket identity
    uint64_t next_id_ = 1;
    TableStats stats_;
};

// "127.0.0.1:3306", "[::1]:3306", "/path/to.sock"; empty when not decodable.
std::string format_sockaddr(std::span<const uint8_t> addr);

}  // namespace mysqltrace::client
