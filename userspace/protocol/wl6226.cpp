// SPDX-License-Identifier: GPL-2.0-only
#include "protocol/wl6226.h"

#include <algorithm>
#include <cstdio>

#include "protocol/constants.h"
#include "protocol/wl6226_util.h"

namespace mysqltrace::protocol {

using detail::hex64;
using detail::join;

namespace {

// What a connection first seen mid-stream is assumed to have negotiated:
// every client and server of the last 15 years speaks protocol 4.1 with
// secure connection and plugin auth. Whether EOF packets are deprecated is
// left open and inferred from the replies (see infer_deprecate_eof).
constexpr uint64_t kAssumedCaps = cap::protocol_41 | cap::transactions | cap::secure_connection |
                                  cap::plugin_auth | cap::multi_results | cap::ps_multi_results;

}  // namespace

ConnectionTracer::ConnectionTracer(uint64_t conn, TracerOptions options, EventCallback on_event,
                                   SummaryCallback on_summary)
    : conn_(conn),
      options_(options),
      on_event_(std::move(on_event)),
      on_summary_(std::move(on_summary)),
      socket_client_(options.max_packet_keep),
      socket_server_(options.max_packet_keep),
      tls_client_(options.max_packet_keep),
      tls_server_(options.max_packet_keep) {
    // Until a connect, a greeting or a command anchors them, stream
    // positions are unknown.
    socket_client_.desync();
    socket_server_.desync();
    tls_client_.desync();
    tls_server_.desync();
}

ConnectionTracer::~ConnectionTracer() = default;

ConnectionStats ConnectionTracer::stats() const {
    ConnectionStats s = stats_;
    for (const PacketStream *ps : {&socket_client_, &socket_server_, &tls_client_, &tls_server_}) {
        s.skipped_bytes += ps->stats().skipped_bytes;
        s.compressed_frames += ps->stats().frames;
        s.inflate_errors += ps->stats().inflate_errors;
    }
    return s;
}

PacketStream &ConnectionTracer::stream(Direction dir, Source src) {
    if (src == Source::tls_cleartext) {
        return dir == Direction::client_to_server ? tls_client_ : tls_server_;
    }
    return dir == Direction::client_to_server ? socket_client_ : socket_server_;
}

uint64_t ConnectionTracer::caps() const {
    return handshake_seen_ ? (server_caps_ & client_caps_) : kAssumedCaps;
}

void ConnectionTracer::on_connect(uint64_t ts_ns, uint32_t pid, uint32_t tid) {
    if (closed_ || connect_seen_ || ever_synced_) {
        return;
    }
    connect_seen_ = true;
    synced_ = ever_synced_ = true;
    stage_ = Stage::connecting;
    socket_client_.resync();
    socket_server_.resync();
    Ctx ctx{ts_ns, pid, tid};
    ProtocolEvent &ev = make_event(TraceEvent::connecting, Stage::connecting, ts_ns, ctx);
    emit(ev);
}

void ConnectionTracer::on_connected(uint64_t ts_ns, uint32_t pid, uint32_t tid) {
    if (closed_ || !synced_ || stage_ != Stage::connecting) {
        return;
    }
    Ctx ctx{ts_ns, pid, tid};
    ProtocolEvent &ev = make_event(TraceEvent::connected, Stage::connecting, ts_ns, ctx);
    emit(ev);
    stage_ = Stage::wait_for_init_packet;
}

void ConnectionTracer::feed(Direction dir, Source src, const uint8_t *data, size_t copied,
                            size_t true_len, uint64_t ts_ns, uint32_t pid, uint32_t tid) {
    if (copied > true_len) {
        true_len = copied;
    }
    if (true_len == 0) {
        return;
    }
    const bool client = dir == Direction::client_to_server;
    (client ? stats_.bytes_client : stats_.bytes_server) += true_len;
    stats_.gap_bytes += true_len - copied;
    Ctx ctx{ts_ns, pid, tid};
    if (closed_) {
        stats_.skipped_bytes += true_len;
        return;
    }
    if (src == Source::tls_cleartext) {
        if (!tls_) {
            tls_ = true;
            socket_client_.desync();
            socket_server_.desync();
            if (synced_ && stage_ == Stage::ssl_negotiation) {
                ProtocolEvent &ev =
                    make_event(TraceEvent::ssl_connected, Stage::ssl_negotiation, ts_ns, ctx);
                emit(ev);
                stage_ = Stage::authenticate;
                tls_client_.resync();
                tls_server_.resync();
            } else if (synced_) {
                // TLS began without an SSL request we saw: where the
                // cleartext stands in the protocol is unknown.
                lose_sync();
            }
        }
    } else if (tls_ || (synced_ && stage_ == Stage::ssl_negotiation)) {
        stats_.tls_record_bytes += true_len;
        return;
    }

    PacketStream &s = stream(dir, src);
    if (!synced_) {
        if (!client && !ever_synced_ && looks_like_greeting(data, copied)) {
            synced_ = ever_synced_ = true;
            stage_ = Stage::wait_for_init_packet;
            pending_note_ = "connection first seen at the server greeting";
            stream(Direction::client_to_server, src).resync();
            s.resync();
        } else if (client) {
            CommandFraming f = looks_like_command(data, copied, true_len);
            if (f == CommandFraming::none) {
                stats_.skipped_bytes += true_len;
                return;
            }
            resync_at_command(f, src, ctx);
        } else {
            stats_.skipped_bytes += true_len;
            return;
        }
    } else if (client && client_lost_) {
        // Only this direction is lost: it picks up at a command write in the
        // framing it already uses. Until then its bytes are counted (they
        // size the upload that was cut) but not parsed.
        CommandFraming f = looks_like_command(data, copied, true_len);
        if (f == CommandFraming::none || (f == CommandFraming::compressed) != s.compressed()) {
            s.feed(data, copied, true_len, ts_ns);
            if (cut_upload_) {
                cut_upload_->ts_last_ns = ts_ns;
            }
            return;
        }
        if (cut_upload_) {
            finish_cut_upload(true);
        }
        client_lost_ = false;
        s.resync();
    } else if (!client && server_resync_pending_) {
        server_resync_pending_ = false;
        s.resync();
        s.set_compressed(stream(Direction::client_to_server, src).compressed());
    }
    if (stage_ == Stage::connecting) {
        on_connected(ts_ns, pid, tid);
    }
    // drain() reads what it can right away; only the rest is copied.
    s.feed_borrowed(data, copied, true_len, ts_ns);
    drain(dir, src, ctx);
    s.keep_pending();
}

void ConnectionTracer::drain(Direction dir, Source src, const Ctx &ctx) {
    PacketStream &s = stream(dir, src);
    Packet p;
    drain_packets(s, p, dir, src, ctx);
    s.recycle(p);
}

void ConnectionTracer::drain_packets(PacketStream &s, Packet &p, Direction dir, Source src,
                                     const Ctx &ctx) {
    while (synced_ && s.next(p)) {
        if (dir == Direction::client_to_server) {
            ++stats_.packets_client;
            if (!p.length_known && take_cut_upload(p, src, ctx)) {
                continue;
            }
            handle_client_packet(p, ctx);
        } else {
            ++stats_.packets_server;
            // The server answers an upload only once all of it has arrived:
            // its first reply packet marks the upload's end.
            if (cut_upload_ && (cut_upload_->file || commands_.empty())) {
                finish_cut_upload(true);
            }
            handle_server_packet(p, ctx);
        }
        if (src == Source::socket && (tls_ || stage_ == Stage::ssl_negotiation)) {
            // Whatever follows the SSL request on the socket is TLS.
            s.desync();
            return;
        }
    }
    if (synced_ && !s.synced()) {
        stream_lost(dir, src, ctx);
    }
}

namespace {

// Stages in which handle_client_packet reads a command packet.
bool command_stage(Stage st) {
    switch (st) {
        case Stage::ready_for_command:
        case Stage::wait_for_packet:
        case Stage::wait_for_result:
        case Stage::wait_for_field_def:
        case Stage::wait_for_row:
        case Stage::wait_for_ps_description:
        case Stage::wait_for_param_def:
            return true;
        default:
            return false;
    }
}

bool reply_stage(Stage st) {
    return st != Stage::ready_for_command && command_stage(st);
}

}  // namespace

bool ConnectionTracer::take_cut_upload(Packet &p, Source src, const Ctx &ctx) {
    const PacketStream &s = stream(Direction::client_to_server, src);
    if (client_lost_ || cut_upload_ || !s.lost_at() ||
        !(command_stage(stage_) || (stage_ == Stage::file_request && head() != nullptr))) {
        return false;
    }
    if (server_lost_) {
        // A new command: the reply being skipped is over.
        end_lost_reply();
    }
    CutUpload u;
    u.file = stage_ == Stage::file_request;
    u.src = src;
    u.lost_at = *s.lost_at();
    u.exact = !s.compressed();
    u.ts_lost_ns = p.ts_first_ns;
    u.ts_last_ns = ctx.ts_ns;
    u.pid = ctx.pid;
    u.tid = ctx.tid;
    p.payload.own();  // kept past the chunk it came in
    u.packet = std::move(p);
    cut_upload_ = std::move(u);
    return true;
}

void ConnectionTracer::stream_lost(Direction dir, Source src, const Ctx &ctx) {
    PacketStream &s = stream(dir, src);
    if (dir == Direction::client_to_server) {
        if (client_lost_) {
            return;
        }
        if (!cut_upload_ && stage_ == Stage::file_request && head() != nullptr && s.lost_at()) {
            // A header lost between two packets of LOCAL INFILE data: more
            // data and the empty packet that ends it are still to come.
            CutUpload u;
            u.file = true;
            u.src = src;
            u.lost_at = *s.lost_at();
            u.exact = !s.compressed();
            u.ts_lost_ns = ctx.ts_ns;
            u.ts_last_ns = ctx.ts_ns;
            u.pid = ctx.pid;
            u.tid = ctx.tid;
            cut_upload_ = std::move(u);
        }
        if (cut_upload_ && cut_upload_->src == src) {
            cut_upload_->ts_last_ns = ctx.ts_ns;
            client_lost_ = true;
            ++stats_.sync_losses;
            return;
        }
    } else {
        if (server_lost_) {
            return;
        }
        // Only a reply whose end the client's next command marks: nothing
        // else pending, no upload waiting for this very reply to end it.
        if (commands_.size() == 1 && reply_stage(stage_) && !cut_upload_ && s.lost_at()) {
            server_lost_ = LostReply{src, *s.lost_at(), !s.compressed()};
            ++stats_.sync_losses;
            return;
        }
    }
    lose_sync();
}

void ConnectionTracer::finish_cut_upload(bool ended) {
    CutUpload u = std::move(*cut_upload_);
    cut_upload_.reset();
    PacketStream &s = stream(Direction::client_to_server, u.src);
    // Everything the client wrote since framing was lost belongs to the
    // upload: it ends where a reply or the next command shows it did.
    const uint64_t unframed = s.offset() - u.lost_at;
    if (u.file) {
        finish_cut_file(u, unframed, ended);
        return;
    }
    Packet p = std::move(*u.packet);
    Ctx ctx{u.ts_last_ns, u.pid, u.tid};
    p.ts_last_ns = std::max(p.ts_last_ns, u.ts_last_ns);
    p.gap = true;
    if (u.exact) {
        // The physical packets of one logical packet: k of 0xFFFFFF bytes and
        // a shorter last one, each behind a 4-byte header. The total decides
        // k; a remainder no packet can have means the bytes were not one
        // packet (the capture lost more than a header), and then only the
        // framed part is certain. So it is when the upload may not be over.
        const uint64_t total = p.wire_bytes + unframed;
        const uint64_t unit = uint64_t{kMaxPacketPayload} + 4;
        const uint64_t k = total >= 4 ? (total - 4) / unit : 0;
        const uint64_t rest = total >= 4 ? (total - 4) % unit : unit;
        if (ended && rest < kMaxPacketPayload && k + 1 > p.physical_packets) {
            p.length = total - 4 * (k + 1);
            p.physical_packets = static_cast<uint32_t>(k + 1);
            p.length_known = true;
        }
        p.wire_bytes = total;
    }
    handle_command(p, ctx);
}

void ConnectionTracer::finish_cut_file(CutUpload &u, uint64_t unframed, bool ended) {
    PendingCommand *h = head();
    Ctx ctx{u.ts_last_ns, u.pid, u.tid};
    const uint64_t sent = (u.packet ? u.packet->wire_bytes : 0) + unframed;
    ProtocolEvent &ev = make_event(TraceEvent::send_file, Stage::file_request, u.ts_lost_ns, ctx);
    ev.truncated = true;
    if (h != nullptr) {
        ev.command = h->code;
        ev.command_name = h->summary.command_name;
        if (u.exact) {
            h->summary.bytes_sent += sent;
        }
    }
    add_line(ev, "file data whose packet framing the capture lost: ", sent,
             u.exact ? " bytes, packet headers included" : " bytes on the wire, compressed");
    const std::optional<uint8_t> command = ev.command;
    emit(ev);
    ProtocolEvent &done =
        make_event(TraceEvent::packet_sent, Stage::file_request, u.ts_last_ns, ctx);
    done.command = command;
    if (h != nullptr) {
        done.command_name = h->summary.command_name;
    }
    done.truncated = true;
    add_line(done, "data sent: ", sent, " bytes");
    if (ended) {
        add_line(done, "File transfer done");
    }
    emit(done);
    if (ended) {
        stage_ = Stage::wait_for_result;
        if (h != nullptr) {
            h->wait_start_ns = u.ts_last_ns;
        }
    }
}

void ConnectionTracer::end_lost_reply() {
    LostReply lr = *server_lost_;
    server_lost_.reset();
    const uint64_t skipped = stream(Direction::server_to_client, lr.src).offset() - lr.lost_at;
    std::string note = "the capture lost the framing of the previous reply";
    if (PendingCommand *h = head()) {
        if (lr.exact) {
            h->summary.bytes_received += skipped;
        }
        note = "the capture lost the framing of the reply to " +
               std::string(h->summary.command_name) + " after " + std::to_string(h->summary.rows) +
               " rows";
    }
    note += "; " + std::to_string(skipped) +
            (lr.exact ? " bytes of it were skipped" : " bytes of it on the wire were skipped");
    pending_note_ = pending_note_.empty() ? note : pending_note_ + "; " + note;
    complete_head(CommandResult::incomplete, last_ts_);
    // The client reads a reply to its end before it sends the next command:
    // the server's next write starts the next reply.
    server_resync_pending_ = true;
}

void ConnectionTracer::lose_sync() {
    if (cut_upload_) {
        // Report the command with what is known of it before giving up.
        finish_cut_upload(false);
    }
    synced_ = false;
    ++stats_.sync_losses;
    client_lost_ = false;
    server_lost_.reset();
    flush_commands(CommandResult::incomplete, last_ts_);
    socket_client_.desync();
    socket_server_.desync();
    tls_client_.desync();
    tls_server_.desync();
    server_resync_pending_ = false;
    col_remaining_ = param_remaining_ = 0;
    in_prepare_ = field_list_ = binary_rows_ = false;
    change_user_auth_ = false;
}

void ConnectionTracer::resync_at_command(CommandFraming framing, Source src, const Ctx &ctx) {
    (void)ctx;
    const bool first = !ever_synced_;
    flush_commands(CommandResult::incomplete, last_ts_);
    synced_ = ever_synced_ = true;
    stage_ = Stage::ready_for_command;
    ++stats_.resyncs;
    client_lost_ = false;
    cut_upload_.reset();
    server_lost_.reset();
    PacketStream &c = stream(Direction::client_to_server, src);
    PacketStream &s = stream(Direction::server_to_client, src);
    c.resync();
    s.desync();
    // The reply starts with the server's next write.
    server_resync_pending_ = true;
    bool compressed = framing == CommandFraming::compressed;
    c.set_compressed(compressed);
    s.set_compressed(compressed);
    uint64_t skipped = stats().skipped_bytes;
    pending_note_ = first ? "connection first seen mid-stream; resynchronised at this command"
                          : "resynchronised at this command after losing track of the stream";
    pending_note_ += " (" + std::to_string(skipped) + " bytes skipped)";
}

void ConnectionTracer::enable_compression() {
    if ((caps() & (cap::compress | cap::zstd_compression)) == 0) {
        return;
    }
    Source src = tls_ ? Source::tls_cleartext : Source::socket;
    stream(Direction::client_to_server, src).set_compressed(true);
    stream(Direction::server_to_client, src).set_compressed(true);
}

void ConnectionTracer::on_error(uint64_t ts_ns, uint32_t pid, uint32_t tid, int code,
                                std::string_view sqlstate, std::string_view message) {
    if (closed_) {
        return;
    }
    Ctx ctx{ts_ns, pid, tid};
    ProtocolEvent &ev = make_event(TraceEvent::error, stage_, ts_ns, ctx);
    ev.sqlstate = std::string(sqlstate);
    ev.error_message = std::string(message);
    if (code > 0) {
        ev.error_code = static_cast<uint16_t>(code);
        std::string &line = add_line(ev, "Client error ", code);
        if (!sqlstate.empty()) {
            detail::append_part(line, " (");
            detail::append_part(line, sqlstate);
            detail::append_part(line, ')');
        }
        detail::append_part(line, ": ");
        detail::append_part(line, message);
    } else {
        add_line(ev, "Client error: ", message);
    }
    emit(ev);
}

void ConnectionTracer::on_close(uint64_t ts_ns, uint32_t pid, uint32_t tid) {
    if (closed_) {
        return;
    }
    closed_ = true;
    if (cut_upload_) {
        finish_cut_upload(false);
    }
    if (server_lost_) {
        LostReply lr = *server_lost_;
        server_lost_.reset();
        if (PendingCommand *h = head(); h != nullptr && lr.exact) {
            h->summary.bytes_received +=
                stream(Direction::server_to_client, lr.src).offset() - lr.lost_at;
        }
    }
    if (!emitted_any_) {
        return;
    }
    flush_commands(CommandResult::incomplete, ts_ns);
    Ctx ctx{ts_ns, pid, tid};
    ProtocolEvent &ev = make_event(TraceEvent::disconnected, stage_, ts_ns, ctx);
    if (!synced_) {
        add_line(ev, "connection was not in sync when it closed");
    }
    emit(ev);
    stage_ = Stage::disconnected;
}

// ---------------------------------------------------------------------------
// Commands

void ConnectionTracer::remember_statement(uint32_t id, Statement st) {
    if (statements_.size() >= options_.max_statements && statements_.count(id) == 0) {
        statements_.erase(statements_.begin());
    }
    statements_[id] = std::move(st);
}

void ConnectionTracer::activate_head() {
    PendingCommand *h = head();
    if (h == nullptr) {
        stage_ = Stage::ready_for_command;
        return;
    }
    stage_ = h->after_send;
    h->wait_start_ns = std::max(h->wait_start_ns, last_ts_);
    col_remaining_ = param_remaining_ = 0;
    prep_columns_ = 0;
    in_prepare_ = false;
    field_list_ = h->code == com::field_list;
    binary_rows_ = h->code == com::stmt_execute || h->code == com::stmt_fetch ||
                   h->code == com::stmt_bulk_execute;
    rows_in_set_ = 0;
    result_types_.clear();
    prepared_id_.reset();
    if (h->code == com::change_user) {
        change_user_auth_ = true;
        sha2_step_ = Sha2Step::none;
        auth_writes_ = 1;
        // The server closes every prepared statement of the session.
        statements_.clear();
    }
    if (h->summary.statement_id && *h->summary.statement_id == 0xFFFFFFFF && last_prepared_id_) {
        // MariaDB's "the statement just prepared", sent before its id was known.
        h->summary.statement_id = last_prepared_id_;
        auto it = statements_.find(*last_prepared_id_);
        if (it != statements_.end() && !h->summary.sql) {
            h->summary.sql = it->second.sql;
            h->summary.sql_bytes = it->second.sql_bytes;
        }
    }
    if (h->code == com::stmt_fetch && h->summary.statement_id) {
        auto it = statements_.find(*h->summary.statement_id);
        if (it != statements_.end()) {
            result_types_ = it->second.column_types;
        }
    }
}

void ConnectionTracer::finish_prepare() {
    if (prepared_id_) {
        prepared_.column_types = result_types_;
        remember_statement(*prepared_id_, std::move(prepared_));
        prepared_ = Statement{};
        prepared_id_.reset();
    }
    in_prepare_ = false;
}

void ConnectionTracer::complete_head(CommandResult result, uint64_t ts_ns) {
    PendingCommand *h = head();
    if (in_prepare_) {
        finish_prepare();
    }
    stage_ = Stage::ready_for_command;
    if (h == nullptr) {
        return;
    }
    if (result == CommandResult::ok && h->summary.result_sets > 0) {
        result = CommandResult::rows;
    }
    h->summary.result = result;
    h->summary.ts_end_ns = std::max(ts_ns, h->summary.ts_start_ns);
    if (on_summary_) {
        on_summary_(h->summary);
    }
    keep_sql_room(h->summary);
    commands_.pop_front();
    change_user_auth_ = false;
    if (!commands_.empty()) {
        activate_head();
    }
}

void ConnectionTracer::keep_sql_room(CommandSummary &sum) {
    // Not the room of a long statement, for good.
    constexpr size_t kKeepBytes = 4096;
    if (sum.sql && sum.sql->capacity() > spare_sql_.capacity() &&
        sum.sql->capacity() <= kKeepBytes) {
        spare_sql_ = std::move(*sum.sql);
    }
}

void ConnectionTracer::flush_commands(CommandResult result, uint64_t ts_ns) {
    while (!commands_.empty()) {
        PendingCommand &h = commands_.front();
        h.summary.result = result;
        h.summary.ts_end_ns = std::max(ts_ns, h.summary.ts_start_ns);
        if (on_summary_) {
            on_summary_(h.summary);
        }
        keep_sql_room(h.summary);
        commands_.pop_front();
    }
    in_prepare_ = false;
    prepared_id_.reset();
    change_user_auth_ = false;
}

}  // namespace mysqltrace::protocol
