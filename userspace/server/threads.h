// SPDX-License-Identifier: GPL-2.0-only
// Connections of a traced server (server --threads), as performance_schema's
// threads and session_connect_attrs tables show them: a record when a
// connection has logged in and one as it ends (bpf/server_threads.bpf.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bpf/handles.h"
#include "util/result.h"

struct server;

namespace mysqltrace::server {

struct ServerTarget;

using ConnectAttrs = std::vector<std::pair<std::string, std::string>>;

struct Connection {
    enum class Op : uint8_t { connect, disconnect };
    Op op = Op::connect;
    uint32_t tid = 0;    // the server's OS thread (THREAD_OS_ID)
    uint64_t ts_ns = 0;  // CLOCK_MONOTONIC
    uint64_t thread_id = 0;
    std::string user, host, ip, db;
    // The client's connect attributes in the order sent (empty: none sent,
    // or the server did not hand them over: see docs/server.md).
    ConnectAttrs attrs;
    bool attrs_cut = false;  // the block was longer than the record holds
    // Disconnect: when the connect was seen (0: before the trace began).
    uint64_t connected_ns = 0;
    // performance_schema's CONNECTION_TYPE: "TCP/IP" when the client has an
    // IP address, else "Socket" (a Unix socket or a named pipe).
    const char *connection_type() const { return ip.empty() ? "Socket" : "TCP/IP"; }
};

// The attribute block of a handshake response (after its total length):
// length-encoded key and value strings, pairs until the end. Stops at the
// first pair that does not fit (a cut block keeps the whole pairs before).
ConnectAttrs parse_connect_attrs(std::span<const uint8_t> block);

// Turns thread records into Connections: attributes seen on a thread go
// with the next connect on it; a disconnect learns its connect's time.
class Connections {
  public:
    // False when `record` is not a well-formed thread record; true with
    // *ready false when it only fed state (the attributes).
    bool decode(std::span<const uint8_t> record, Connection *out, bool *ready);
    uint64_t connects() const { return connects_; }
    uint64_t disconnects() const { return disconnects_; }

  private:
    struct Pending {
        ConnectAttrs attrs;
        bool cut = false;
    };
    std::unordered_map<uint32_t, Pending> attrs_by_tid_;
    std::unordered_map<uint64_t, uint64_t> connected_at_;
    uint64_t connects_ = 0, disconnects_ = 0;
};

// Attaches the connection probes to `skel`'s server (links appended to
// `links`): thd_prepare_connection's entry and return, end_connection's
// entry, and pfs_set_thread_connect_attrs_vc's where the build exports it.
// Returns a note on what is not available, or an error naming what is missing.
Result<std::string> attach_connection_probes(::server *skel, const ServerTarget &target,
                                             std::vector<bpf::Link> &links);

}  // namespace mysqltrace::server
