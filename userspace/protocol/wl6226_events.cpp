// SPDX-License-Identifier: GPL-2.0-only
// The events of the stage machine: built in reused objects, detail lines
// appended into reused buffers, emitted in time order.
#include <algorithm>

#include "protocol/wl6226.h"

namespace mysqltrace::protocol {

namespace {

// Events are built in these, in turn, and reused with their buffers (their
// detail lines' too: Lines keeps them): one set per thread serves every
// tracer on it, so that a new connection's first events allocate nothing
// either.
struct EventPool {
    static constexpr size_t kSlots = 4;
    ProtocolEvent slots[kSlots];
    size_t next = 0;
    std::string scratch_line;  // add_line's with event_contents off
    // Every READ_PACKET: it carries no more than its command (and a pending
    // note), so only those are cleared.
    ProtocolEvent read_packet;
};

EventPool &event_pool() {
    thread_local EventPool pool;
    return pool;
}

// Clears ev for reuse, keeping its buffers.
void recycle_event(ProtocolEvent &ev) {
    // Every field of ProtocolEvent (event.h), back to its default.
    ev.command.reset();
    ev.command_name = {};
    ev.sql.reset();
    ev.sql_bytes.reset();
    ev.statement_id.reset();
    ev.query_attributes.clear();
    ev.bytes.reset();
    ev.seq.reset();
    ev.truncated = false;
    ev.packet.clear();
    ev.packet_redacted = false;
    ev.error_code.reset();
    ev.sqlstate.clear();
    ev.error_message.clear();
    ev.affected_rows.reset();
    ev.last_insert_id.reset();
    ev.warnings.reset();
    ev.status_flags.reset();
    ev.column_count.reset();
    ev.row_count.reset();
    ev.auth_plugin.clear();
    ev.user.clear();
    ev.database.clear();
    ev.server_version.clear();
    ev.server_connection_id.reset();
    ev.details.clear();
    ev.from_library = false;
}

}  // namespace

std::string &ConnectionTracer::new_line(ProtocolEvent &ev) {
    if (!options_.event_contents) {
        std::string &scratch = event_pool().scratch_line;
        scratch.clear();
        return scratch;
    }
    return ev.details.emplace_back();
}

ProtocolEvent &ConnectionTracer::make_event(TraceEvent event, Stage stage, uint64_t ts_ns,
                                            const Ctx &ctx) {
    EventPool &pool = event_pool();
    ProtocolEvent &ev = pool.slots[pool.next];
    pool.next = (pool.next + 1) % EventPool::kSlots;
    recycle_event(ev);
    ev.conn = conn_;
    ev.ts_ns = ts_ns;
    ev.pid = ctx.pid;
    ev.tid = ctx.tid;
    ev.stage = stage;
    ev.event = event;
    if (server_conn_id_ != 0) {
        ev.server_connection_id = server_conn_id_;
    }
    return ev;
}

ProtocolEvent &ConnectionTracer::read_packet_event(Stage stage, const Ctx &ctx) {
    ProtocolEvent &ev = event_pool().read_packet;
    ev.conn = conn_;
    ev.ts_ns = last_ts_;
    ev.pid = ctx.pid;
    ev.tid = ctx.tid;
    ev.stage = stage;
    ev.event = TraceEvent::read_packet;
    ev.command.reset();
    ev.command_name = {};
    ev.details.clear();
    ev.server_connection_id.reset();
    if (server_conn_id_ != 0) {
        ev.server_connection_id = server_conn_id_;
    }
    return ev;
}

ProtocolEvent &ConnectionTracer::packet_event(TraceEvent event, Stage stage, const Packet &p,
                                              const Ctx &ctx, uint64_t ts_ns) {
    ProtocolEvent &ev = make_event(event, stage, ts_ns, ctx);
    ev.bytes = p.length;
    ev.seq = p.seq;
    ev.truncated = p.truncated() || !p.length_known;
    return ev;
}

void ConnectionTracer::attach_packet(ProtocolEvent &ev, const Packet &p, bool secret) {
    if (!options_.keep_packets || !options_.event_contents) {
        return;
    }
    // What answers a statement with secrets may quote them (a column named
    // after its expression, a parse error): no dump of it either.
    const PendingCommand *h = head();
    secret = secret || (h != nullptr && h->sql_redacted);
    if (secret && !options_.show_secrets) {
        ev.packet_redacted = true;
        return;
    }
    size_t n = std::min(p.payload.size(), options_.max_dump_bytes);
    ev.packet.assign(p.payload.begin(), p.payload.begin() + static_cast<ptrdiff_t>(n));
}

void ConnectionTracer::emit(ProtocolEvent &ev) {
    if (!pending_note_.empty()) {
        if (options_.event_contents) {
            ev.details.push_front(std::move(pending_note_));
        }
        pending_note_.clear();
    }
    if (ev.ts_ns < last_ts_) {
        // Events of one connection never go back in time, even when the
        // capture's clock for two CPUs disagrees by a little.
        ev.ts_ns = last_ts_;
    }
    last_ts_ = ev.ts_ns;
    emitted_any_ = true;
    ++stats_.events;
    if (on_event_) {
        on_event_(ev);
    }
}

}  // namespace mysqltrace::protocol
