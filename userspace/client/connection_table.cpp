// SPDX-License-Identifier: GPL-2.0-only
#include "client/connection_table.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "sql/redact.h"

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
    c.tracer = make_tracer(c.info.id);
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

std::unique_ptr<protocol::ConnectionTracer> ConnectionTable::make_tracer(uint64_t id) {
    return std::make_unique<protocol::ConnectionTracer>(
        id, options_,
        [this](const protocol::ProtocolEvent &ev) {
            stats_.events++;
            if (cb_.on_event) {
                cb_.on_event(ev);
            }
        },
        [this](const protocol::CommandSummary &s) {
            stats_.commands++;
            if (OpenCall *call = open_call(s.tid)) {
                call->server_wait_ns += s.server_wait_ns;
            }
            if (cb_.on_summary) {
                cb_.on_summary(s);
            }
        });
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

void ConnectionTable::on_connect_record(const SockRecord &r) {
    const std::string peer = format_sockaddr(r.data);
    OpenCall *call = open_call(r.tid);
    if (call != nullptr && call->func != MT_API_REAL_CONNECT) {
        call = nullptr;
    }
    if (r.ret < 0 && r.ret != -EINPROGRESS) {
        // Only the shim reports failed connects. Inside mysql_real_connect
        // the library's own error follows when the call returns.
        std::string why = "connect() to " + (peer.empty() ? "the server" : peer) +
                          " failed: " + std::strerror(static_cast<int>(-r.ret));
        if (call != nullptr) {
            call->connect_failure = why;
            call->connect_peer = peer;
        } else {
            failed_connection(r.pid, r.tid, peer, r.ts_ns, r.ts_ns, 0, "", why);
        }
        return;
    }
    Conn c;
    c.info.pid = r.pid;
    c.info.fd = r.fd;
    c.info.family = r.family;
    c.info.peer = peer;
    c.connect_seen = true;
    c.connect_ts = r.ts_ns;
    c.connect_tid = r.tid;
    if (call != nullptr) {
        // The library's connect call is where WL#6226 says CONNECTING.
        c.connect_ts = call->begin_ns;
        call->sock = r.sock;
        handle_socks_[call->handle] = r.sock;
    }
    // A socket connected again (fd reuse after a missed close) starts anew.
    conns_.erase(r.sock);
    conns_.emplace(r.sock, std::move(c));
}

void ConnectionTable::close_conn(std::map<uint64_t, Conn>::iterator it, uint64_t ts, uint32_t pid,
                                 uint32_t tid) {
    if (it->second.tracer) {
        it->second.tracer->on_close(ts, pid, tid);
    }
    for (auto h = handle_socks_.begin(); h != handle_socks_.end();) {
        h = h->second == it->first ? handle_socks_.erase(h) : std::next(h);
    }
    conns_.erase(it);
}

void ConnectionTable::on_record(const SockRecord &r) {
    if (r.op == MT_SOCK_CONNECT) {
        on_connect_record(r);
        return;
    }
    auto it = conns_.find(r.sock);
    if (it != conns_.end() && r.op != MT_SOCK_CLOSE) {
        if (OpenCall *call = open_call(r.tid); call != nullptr && call->sock == 0) {
            call->sock = r.sock;  // statement handles name no connection
        }
    }
    if (r.op == MT_SOCK_CLOSE) {
        if (it == conns_.end()) {
            return;
        }
        OpenCall *call = open_call(r.tid);
        if (call != nullptr && call->sock == r.sock && it->second.tracer) {
            // The library closes a broken connection before its call
            // returns the error: report the error first.
            it->second.closing = true;
            it->second.close_ts = r.ts_ns;
            it->second.close_tid = r.tid;
            return;
        }
        close_conn(it, r.ts_ns, r.pid, r.tid);
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
        auto next = std::next(it);
        if (it->second.info.pid == pid) {
            close_conn(it, it->second.closing ? it->second.close_ts : ts_ns, pid,
                       it->second.closing ? it->second.close_tid : pid);
        }
        it = next;
    }
    for (auto it = calls_.begin(); it != calls_.end();) {
        // Calls of the process's threads never return now.
        it = it->second.empty() || it->second.front().pid == pid ? calls_.erase(it) : std::next(it);
    }
}

// ---- The shim's API calls ----

ConnectionTable::OpenCall *ConnectionTable::open_call(uint32_t tid) {
    if (calls_.empty()) {
        return nullptr;
    }
    auto it = calls_.find(tid);
    return it == calls_.end() || it->second.empty() ? nullptr : &it->second.back();
}

uint64_t ConnectionTable::failed_connection(uint32_t pid, uint32_t tid, const std::string &peer,
                                            uint64_t begin_ns, uint64_t end_ns, int code,
                                            std::string_view sqlstate, std::string_view message) {
    ConnectionInfo info;
    info.id = next_id_++;
    info.pid = pid;
    info.peer = peer;
    info.from_start = true;
    stats_.connections++;
    if (cb_.on_connection) {
        cb_.on_connection(info);
    }
    auto tracer = make_tracer(info.id);
    tracer->on_connect(begin_ns, pid, tid);
    tracer->on_error(end_ns, pid, tid, code, sqlstate, message);
    tracer->on_close(end_ns, pid, tid);
    return info.id;
}

void ConnectionTable::on_api(const ApiRecord &a) {
    if (a.phase == MT_API_BEGIN) {
        OpenCall call;
        call.func = a.func;
        call.pid = a.pid;
        call.handle = a.handle;
        call.begin_ns = a.ts_ns;
        call.sock = a.sock != 0 ? a.sock : 0;
        if (call.sock == 0) {
            if (auto h = handle_socks_.find(a.handle); h != handle_socks_.end()) {
                call.sock = h->second;
            }
        }
        if (!a.text.empty() || a.text_len > 0) {
            std::string_view text(reinterpret_cast<const char *>(a.text.data()), a.text.size());
            // mysql_bind_param's are attribute names, never their values.
            call.arg = options_.show_secrets || a.func == MT_API_BIND_PARAM ? std::string(text)
                                                                            : sql::redact_sql(text);
            call.arg_len = a.text_len;
        }
        calls_[a.tid].push_back(std::move(call));
        return;
    }
    if (a.phase == MT_API_END) {
        end_call(a);
        return;
    }
    library_event(a);
}

void ConnectionTable::library_event(const ApiRecord &a) {
    // The library's enum protocol_stage and enum trace_event have the order
    // of protocol::Stage and protocol::TraceEvent (WL#6226).
    if (a.func > static_cast<uint32_t>(protocol::Stage::disconnected) ||
        a.error_code > static_cast<uint32_t>(protocol::TraceEvent::packet_sent)) {
        stats_.library_events_unknown++;
        return;
    }
    protocol::ProtocolEvent ev;
    uint64_t sock = a.sock;
    if (sock == 0) {
        if (auto h = handle_socks_.find(a.handle); h != handle_socks_.end()) {
            sock = h->second;
        }
    }
    if (auto it = sock != 0 ? conns_.find(sock) : conns_.end(); it != conns_.end()) {
        ev.conn = it->second.info.id;
    }
    ev.ts_ns = a.ts_ns;
    ev.pid = a.pid;
    ev.tid = a.tid;
    ev.stage = static_cast<protocol::Stage>(a.func);
    ev.event = static_cast<protocol::TraceEvent>(a.error_code);
    ev.from_library = true;
    char handle[40];
    std::snprintf(handle, sizeof(handle), "0x%llx", static_cast<unsigned long long>(a.handle));
    ev.details.push_back(std::string("reported by the client library's trace plugin (MYSQL ") +
                         handle + ")");
    stats_.events++;
    if (cb_.on_event) {
        cb_.on_event(ev);
    }
}

void ConnectionTable::end_call(const ApiRecord &a) {
    const bool failed = a.func == MT_API_STMT_FETCH ? a.ret == 1 : a.ret != 0;
    auto calls = calls_.find(a.tid);
    OpenCall call;
    // The latest open call of this function on this handle: a thread that
    // drives several handles through a non-blocking API has one open per
    // handle, and they end in any order.
    bool found = false;
    if (calls != calls_.end()) {
        auto &open = calls->second;
        auto it = std::find_if(open.rbegin(), open.rend(), [&a](const OpenCall &c) {
            return c.func == a.func && c.handle == a.handle;
        });
        if (it != open.rend()) {
            call = std::move(*it);
            open.erase(std::next(it).base());
            found = true;
            if (open.empty()) {
                calls_.erase(calls);
            }
        }
    }
    if (!found && !failed) {
        return;  // its entry was not seen: the trace began inside the call
    }
    if (!found) {
        // The shim reports calls that read a buffered reply only when they
        // fail, without their entry (or the trace began inside the call).
        call.func = a.func;
        call.pid = a.pid;
        call.handle = a.handle;
        call.begin_ns = a.ts_ns;
        if (auto h = handle_socks_.find(a.handle); h != handle_socks_.end()) {
            call.sock = h->second;
        }
    }
    const std::string_view message(reinterpret_cast<const char *>(a.text.data()), a.text.size());
    uint64_t sock = a.sock != 0 ? a.sock : call.sock;
    if (a.func == MT_API_REAL_CONNECT && !failed && sock != 0) {
        handle_socks_[a.handle] = sock;
    }
    auto it = sock != 0 ? conns_.find(sock) : conns_.end();

    // Errors the server sent are on the wire already; the library's own
    // (client) errors, CR_* 2000-2999, are not.
    const bool client_error = failed && a.error_code >= 2000 && a.error_code < 3000;
    uint64_t conn_id = it != conns_.end() ? it->second.info.id : 0;
    if (a.func == MT_API_REAL_CONNECT && failed && it == conns_.end()) {
        std::string peer = call.connect_peer;
        conn_id = failed_connection(
            a.pid, a.tid, peer, call.begin_ns, a.ts_ns, static_cast<int>(a.error_code), a.sqlstate,
            message.empty() ? std::string_view(call.connect_failure) : message);
    } else if (client_error && it != conns_.end()) {
        Conn &c = it->second;
        if (!c.tracer && !c.ignored) {
            recognise(it->first, c, c.connect_seen);  // failed before the greeting
        }
        if (c.tracer) {
            uint64_t ts = c.closing ? std::min(c.close_ts, a.ts_ns) : a.ts_ns;
            c.tracer->on_error(ts, a.pid, a.tid, static_cast<int>(a.error_code), a.sqlstate,
                               message);
        }
    }

    if (cb_.on_api_call) {
        protocol::ApiCall out;
        out.conn = conn_id;
        out.pid = a.pid;
        out.tid = a.tid;
        out.func = api_func_name(a.func);
        out.handle = a.handle;
        out.ts_begin_ns = call.begin_ns;
        out.ts_end_ns = a.ts_ns;
        out.ret = a.ret;
        out.failed = failed;
        if (failed && a.error_code != 0) {
            out.error_code = static_cast<uint16_t>(a.error_code);
            out.sqlstate = std::string(a.sqlstate);
            out.error_message = std::string(message);
        }
        // The server's id of the connection is news only when it is made.
        if (a.thread_id != 0 && (a.func == MT_API_REAL_CONNECT || a.func == MT_API_CHANGE_USER)) {
            out.server_thread_id = a.thread_id;
        }
        if (call.arg && call.arg_len > call.arg->size()) {
            out.arg_bytes = call.arg_len;
        }
        out.arg = std::move(call.arg);  // the call is done with
        out.server_wait_ns = call.server_wait_ns;
        cb_.on_api_call(out);
    }
    if (it != conns_.end() && it->second.closing) {
        close_conn(it, it->second.close_ts, a.pid, it->second.close_tid);
    }
}

bool decode_api_record(std::span<const uint8_t> record, ApiRecord *out) {
    mt_api_event ev;
    if (record.size() < sizeof(ev)) {
        return false;
    }
    std::memcpy(&ev, record.data(), sizeof(ev));
    if (ev.hdr.type != MT_EV_API || sizeof(ev) + ev.copied != record.size() ||
        ev.copied > MT_MAX_API_TEXT || ev.phase < MT_API_BEGIN || ev.phase > MT_API_TRACE) {
        return false;
    }
    out->ts_ns = ev.hdr.ts_ns;
    out->pid = ev.hdr.pid;
    out->tid = ev.hdr.tid;
    out->phase = static_cast<mt_api_phase>(ev.phase);
    out->func = ev.func;
    out->handle = ev.handle;
    out->sock = ev.sock;
    out->ret = ev.ret;
    out->error_code = ev.error_code;
    out->thread_id = ev.thread_id;
    const auto *state =
        reinterpret_cast<const char *>(record.data() + offsetof(mt_api_event, sqlstate));
    out->sqlstate = std::string_view(state, strnlen(state, sizeof(ev.sqlstate)));
    out->text = record.subspan(sizeof(ev), ev.copied);
    out->text_len = std::max(ev.text_len, ev.copied);
    return true;
}

const char *api_func_name(uint32_t func) {
    switch (func) {
        case MT_API_REAL_CONNECT:
            return "mysql_real_connect";
        case MT_API_REAL_QUERY:
            return "mysql_real_query";
        case MT_API_SEND_QUERY:
            return "mysql_send_query";
        case MT_API_READ_QUERY_RESULT:
            return "mysql_read_query_result";
        case MT_API_STORE_RESULT:
            return "mysql_store_result";
        case MT_API_USE_RESULT:
            return "mysql_use_result";
        case MT_API_NEXT_RESULT:
            return "mysql_next_result";
        case MT_API_STMT_PREPARE:
            return "mysql_stmt_prepare";
        case MT_API_STMT_EXECUTE:
            return "mysql_stmt_execute";
        case MT_API_STMT_FETCH:
            return "mysql_stmt_fetch";
        case MT_API_STMT_CLOSE:
            return "mysql_stmt_close";
        case MT_API_CHANGE_USER:
            return "mysql_change_user";
        case MT_API_SELECT_DB:
            return "mysql_select_db";
        case MT_API_PING:
            return "mysql_ping";
        case MT_API_CLOSE:
            return "mysql_close";
        case MT_API_QUERY:
            return "mysql_query";
        case MT_API_RESET_CONNECTION:
            return "mysql_reset_connection";
        case MT_API_BIND_PARAM:
            return "mysql_bind_param";
        default:
            return "";
    }
}

}  // namespace mysqltrace::client
