// SPDX-License-Identifier: GPL-2.0-only
#include "client/connection_table.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>

namespace mysqltrace::client {

namespace {

// Records of a socket that may pass before it shows a greeting or a command
// packet; after that it is judged not to be MySQL.
constexpr size_t kMaxUndecided = 16;
// Received bytes kept to recognise a greeting split over several reads.
constexpr size_t kGreetingPrefix = 64;

}  // namespace

bool decode_sock_record(std::span<const uint8_t> record, SockRecord *out) {
    mt_sock_event ev;
    if (record.size() < sizeof(ev)) {
        return false;
    }
    std::memcpy(&ev, record.data(), sizeof(ev));
    if (ev.hdr.type != MT_EV_SOCK || sizeof(ev) + ev.copied != record.size() ||
        ev.op < MT_SOCK_CONNECT || ev.op > MT_SOCK_TLS_SEND) {
        return false;
    }
    const bool data_op = ev.op == MT_SOCK_RECV || ev.op == MT_SOCK_SEND ||
                         ev.op == MT_SOCK_TLS_RECV || ev.op == MT_SOCK_TLS_SEND;
    if (data_op && (ev.ret < 0 || static_cast<uint64_t>(ev.ret) < ev.copied)) {
        return false;
    }
    out->ts_ns = ev.hdr.ts_ns;
    out->pid = ev.hdr.pid;
    out->tid = ev.hdr.tid;
    out->sock = ev.sock;
    out->fd = ev.fd;
    out->op = static_cast<mt_sock_op>(ev.op);
    out->family = ev.family;
    out->ret = ev.ret;
    out->data = record.subspan(sizeof(ev), ev.copied);
    return true;
}

std::string format_sockaddr(std::span<const uint8_t> addr) {
    if (addr.size() < sizeof(sa_family_t)) {
        return {};
    }
    sa_family_t fam;
    std::memcpy(&fam, addr.data(), sizeof(fam));
    char buf[INET6_ADDRSTRLEN] = {};
    if (fam == AF_INET && addr.size() >= sizeof(sockaddr_in)) {
        sockaddr_in in;
        std::memcpy(&in, addr.data(), sizeof(in));
        inet_ntop(AF_INET, &in.sin_addr, buf, sizeof(buf));
        return std::string(buf) + ":" + std::to_string(ntohs(in.sin_port));
    }
    if (fam == AF_INET6 && addr.size() >= sizeof(sockaddr_in6)) {
        sockaddr_in6 in6;
        std::memcpy(&in6, addr.data(), sizeof(in6));
        inet_ntop(AF_INET6, &in6.sin6_addr, buf, sizeof(buf));
        return "[" + std::string(buf) + "]:" + std::to_string(ntohs(in6.sin6_port));
    }
    if (fam == AF_UNIX) {
        auto path = addr.subspan(sizeof(sa_family_t));
        size_t n = 0;
        while (n < path.size() && path[n] != 0) {
            n++;
        }
        if (n == 0 && path.size() > 1) {
            return "@abstract";  // abstract socket: name starts with NUL
        }
        return std::string(reinterpret_cast<const char *>(path.data()), n);
    }
    return {};
}

ConnectionTable::ConnectionTable(protocol::TracerOptions options, Callbacks callbacks)
    : options_(options), cb_(std::move(callbacks)) {}

ConnectionTable::~ConnectionTable() = default;

void ConnectionTable::recognise(uint64_t sock, Conn &c, bool from_start) {
    c.info.id = next_id_++;
    c.info.from_start = from_start;
    stats_.connections++;
    c.tracer = std::make_unique<protocol::ConnectionTracer>(
        c.info.id, options_,
        [this](const protocol::ProtocolEvent &ev) {
            stats_.events++;
            if (cb_.on_event) {
                cb_.on_event(ev);
            }
        },
        [this](const protocol::CommandSummary &s) {
            stats_.commands++;
            if (cb_.on_summary) {
                cb_.on_summary(s);
            }
        });
    if (cb_.on_connection) {
        cb_.on_connection(c.info);
    }
    if (c.connect_seen) {
        c.tracer->on_connect(c.connect_ts, c.info.pid, c.connect_tid);
    }
    if (cb_.set_verdict) {
        cb_.set_verdict(sock, MT_SOCK_MYSQL);
    }
    for (const auto &h : c.held) {
        feed(c, h.rec);
    }
    c.held.clear();
    c.recv_prefix.clear();
}

void ConnectionTable::ignore(uint64_t sock, Conn &c) {
    c.ignored = true;
    c.held.clear();
    c.recv_prefix.clear();
    stats_.ignored_sockets++;
    if (cb_.set_verdict) {
        cb_.set_verdict(sock, MT_SOCK_IGNORED);
    }
}

void ConnectionTable::feed(Conn &c, const SockRecord &r) {
    const bool tls = r.op == MT_SOCK_TLS_RECV || r.op == MT_SOCK_TLS_SEND;
    const auto dir = (r.op == MT_SOCK_SEND || r.op == MT_SOCK_TLS_SEND)
                         ? protocol::Direction::client_to_server
                         : protocol::Direction::server_to_client;
    const auto true_len = static_cast<size_t>(r.ret);
    stats_.bytes += true_len;
    stats_.bytes_not_copied += true_len - r.data.size();
    c.tracer->feed(dir, tls ? protocol::Source::tls_cleartext : protocol::Source::socket,
                   r.data.data(), r.data.size(), true_len, r.ts_ns, r.pid, r.tid);
}

bool ConnectionTable::judge(uint64_t sock, Conn &c, const SockRecord &r) {
    // Clients often read a packet's 4-byte header alone: judge a greeting on
    // the first received bytes put together.
    if (r.op == MT_SOCK_RECV && c.recv_prefix.size() < kGreetingPrefix) {
        size_t take = std::min(r.data.size(), kGreetingPrefix - c.recv_prefix.size());
        c.recv_prefix.insert(c.recv_prefix.end(), r.data.begin(), r.data.begin() + take);
    }
    if (c.recv_prefix.size() >= 5) {
        if (protocol::looks_like_greeting(c.recv_prefix.data(), c.recv_prefix.size())) {
            recognise(sock, c, true);
            return true;
        }
        if (c.connect_seen) {
            ignore(sock, c);  // a new connection whose server did not greet
            return true;
        }
    }
    // A connection open before the trace shows itself by its next command.
    if (!c.connect_seen && (r.op == MT_SOCK_SEND || r.op == MT_SOCK_TLS_SEND) &&
        protocol::looks_like_command(r.data.data(), r.data.size(), static_cast<size_t>(r.ret)) !=
            protocol::CommandFraming::none) {
        recognise(sock, c, false);
        return true;
    }
    if (c.held.size() >= kMaxUndecided) {
        ignore(sock, c);
        return true;
    }
    return false;
}

void ConnectionTable::on_record(const SockRecord &r) {
    if (r.op == MT_SOCK_CONNECT) {
        Conn c;
        c.info.pid = r.pid;
        c.info.fd = r.fd;
        c.info.family = r.family;
        c.info.peer = format_sockaddr(r.data);
        c.connect_seen = true;
        c.connect_ts = r.ts_ns;
        c.connect_tid = r.tid;
        // A socket connected again (fd reuse after a missed close) starts anew.
        conns_.erase(r.sock);
        conns_.emplace(r.sock, std::move(c));
        return;
    }
    auto it = conns_.find(r.sock);
    if (r.op == MT_SOCK_CLOSE) {
        if (it != conns_.end()) {
            if (it->second.tracer) {
                it->second.tracer->on_close(r.ts_ns, r.pid, r.tid);
            }
            conns_.erase(it);
        }
        return;
    }
    if (r.op == MT_SOCK_SHUTDOWN) {
        return;  // a half-close; the connection ends with close()
    }
    const bool tls = r.op == MT_SOCK_TLS_RECV || r.op == MT_SOCK_TLS_SEND;
    if (tls && r.sock == 0) {
        stats_.tls_unattributed++;  // a TLS session whose socket was never seen
        return;
    }
    if (it == conns_.end()) {
        Conn c;
        c.info.pid = r.pid;
        c.info.fd = r.fd;
        c.info.family = r.family;
        it = conns_.emplace(r.sock, std::move(c)).first;
    }
    Conn &c = it->second;
    if (c.ignored) {
        return;  // records still in flight when the verdict was given
    }
    if (c.tracer) {
        feed(c, r);
        return;
    }
    if (r.data.empty()) {
        return;  // nothing to judge by (TLS records whose cleartext comes separately)
    }
    // Moving a Held (as `held` grows) keeps its bytes' buffer, so the span
    // stays valid.
    Held &h = c.held.emplace_back();
    h.bytes.assign(r.data.begin(), r.data.end());
    h.rec = r;
    h.rec.data = std::span<const uint8_t>(h.bytes);
    judge(it->first, c, h.rec);
}

void ConnectionTable::on_process_exit(uint32_t pid, uint64_t ts_ns) {
    for (auto it = conns_.begin(); it != conns_.end();) {
        if (it->second.info.pid == pid) {
            if (it->second.tracer) {
                it->second.tracer->on_close(ts_ns, pid, pid);
            }
            it = conns_.erase(it);
        } else {
            ++it;
        }
    }
}

}  // namespace mysqltrace::client
