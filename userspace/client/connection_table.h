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
    uint64_t bytes = 0;             // true bytes of MySQL connections, both ways
    uint64_t bytes_not_copied = 0;  // beyond the snap length
    uint64_t tls_unattributed = 0;  // TLS cleartext records of sessions with no known socket
};

class ConnectionTable {
  public:
    struct Callbacks {
        std::function<void(const ConnectionInfo &)> on_connection;  // a new MySQL connection
        protocol::EventCallback on_event;
        protocol::SummaryCallback on_summary;
        // Tell the kernel what a socket is (enum mt_sock_state).
        std::function<void(uint64_t sock, uint8_t state)> set_verdict;
    };

    ConnectionTable(protocol::TracerOptions options, Callbacks callbacks);
    ~ConnectionTable();

    void on_record(const SockRecord &r);
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
    };

    // Judges a socket from what it carried so far: true when it is decided
    // (recognised or ignored).
    bool judge(uint64_t sock, Conn &c, const SockRecord &r);
    void recognise(uint64_t sock, Conn &c, bool from_start);
    void ignore(uint64_t sock, Conn &c);
    void feed(Conn &c, const SockRecord &r);

    protocol::TracerOptions options_;
    Callbacks cb_;
    std::map<uint64_t, Conn> conns_;  // by kernel socket identity
    uint64_t next_id_ = 1;
    TableStats stats_;
};

// "127.0.0.1:3306", "[::1]:3306", "/path/to.sock"; empty when not decodable.
std::string format_sockaddr(std::span<const uint8_t> addr);

}  // namespace mysqltrace::client
