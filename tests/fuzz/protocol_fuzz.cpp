// SPDX-License-Identifier: GPL-2.0-only
// libFuzzer target for the client protocol decoder: arbitrary captured byte
// streams, in both directions and from both sources, with gaps, connects,
// closes and client errors, must never crash, hang or break the trace's
// invariants. Every event is also rendered as text and JSON.
//
// Input layout:
//   byte 0: options (bit 0 show_secrets, bit 1 keep_packets, bits 2-4 keep
//           cap exponent, bit 5 also fuzz a compressed PacketStream)
//   then records until the input ends:
//     ctl & 0x80: an event; ctl & 3: 0 connect, 1 connected, 2 close, 3 error
//     otherwise data: bit 0 server->client, bit 1 TLS cleartext, bit 2 a
//     2-byte count of missing bytes follows; then a 2-byte length and the bytes.
// tests/fuzz/make_protocol_seeds.py turns the recorded fixtures into seeds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "output/protocol_json.h"
#include "output/protocol_text.h"
#include "protocol/constants.h"
#include "protocol/decode.h"
#include "protocol/packet_stream.h"
#include "sql/redact.h"
#include "sql/tables.h"
#include "protocol/wl6226.h"

using namespace mysqltrace;
using namespace mysqltrace::protocol;
using mysqltrace::sql::redact_sql;

namespace {

void check(bool ok) {
    if (!ok) {
        __builtin_trap();
    }
}

// Payload bytes read, so that the reads are not optimised away.
volatile unsigned payload_sink = 0;

struct Reader {
    const uint8_t *p;
    size_t n;
    bool take(size_t k, const uint8_t **out) {
        if (k > n) {
            return false;
        }
        *out = p;
        p += k;
        n -= k;
        return true;
    }
    bool u8(uint8_t *v) {
        const uint8_t *b;
        if (!take(1, &b)) {
            return false;
        }
        *v = b[0];
        return true;
    }
    bool u16(uint16_t *v) {
        const uint8_t *b;
        if (!take(2, &b)) {
            return false;
        }
        *v = static_cast<uint16_t>(b[0] | (b[1] << 8));
        return true;
    }
};

void fuzz_decoders(const uint8_t *data, size_t size) {
    Bytes b(data, size);
    (void)decode_greeting(b);
    (void)decode_handshake_response(b);
    (void)decode_auth_switch(b);
    (void)decode_ok(b, ~0ULL);
    (void)decode_ok(b, 0);
    (void)decode_err(b);
    (void)decode_eof(b);
    (void)decode_column_count(b);
    (void)decode_column_def(b, true);
    (void)decode_column_def(b, false);
    (void)decode_prepare_ok(b);
    (void)decode_text_row(b, 16);
    std::vector<ColumnType> types;
    for (size_t i = 0; i < size && i < 8; ++i) {
        types.push_back({data[i], (data[i] & 1) != 0});
    }
    (void)decode_binary_row(b, types, 16);
    std::string row_line = "Row: ";
    if (!append_binary_row(row_line, b, types, 16) && row_line != "Row: ") {
        __builtin_trap();  // a row that does not decode must leave the line alone
    }
    std::vector<ColumnType> bound;
    std::vector<bool> long_data = {true, false};
    (void)decode_command(b, ~0ULL, uint16_t{3}, &bound, &long_data, 16);
    (void)decode_command(b, cap::protocol_41, uint16_t{2}, &bound, nullptr, 16);
    bool changed = false;
    std::string sql(reinterpret_cast<const char *>(data), size);
    std::string red = redact_sql(sql, &changed);
    check(changed || red == sql);
    // The tables a statement names: each one's name is part of the text.
    for (const auto &t : mysqltrace::sql::statement_tables(sql)) {
        check(!t.name.empty() || sql.find("``") != std::string::npos);
    }
    (void)looks_like_greeting(data, size);
    (void)looks_like_command(data, size, size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) {
        return 0;
    }
    fuzz_decoders(data, size);

    Reader r{data + 1, size - 1};
    TracerOptions opt;
    opt.show_secrets = data[0] & 1;
    opt.keep_packets = data[0] & 2;
    opt.max_packet_keep = size_t{16} << ((data[0] >> 2) & 7);
    opt.max_rows_shown = 4;
    opt.max_pending_commands = 8;
    uint64_t last_ts = 0;
    uint64_t events = 0;
    ConnectionTracer t(
        1, opt,
        [&](const ProtocolEvent &ev) {
            check(ev.ts_ns >= last_ts);
            last_ts = ev.ts_ns;
            check(std::string(stage_name(ev.stage)) != "UNKNOWN");
            check(std::string(event_name(ev.event)) != "UNKNOWN");
            check(ev.packet.size() <= opt.max_dump_bytes);
            (void)output::render_protocol_text(ev, {true, true});
            (void)output::render_protocol_json(ev, {true});
            ++events;
        },
        [&](const CommandSummary &s) {
            check(s.ts_end_ns >= s.ts_start_ns);
            (void)output::render_command_summary_text(s);
            (void)output::render_command_summary_json(s);
        });

    PacketStream raw(64);
    raw.set_compressed(data[0] & 0x20);

    uint64_t ts = 1000;
    uint8_t ctl;
    while (r.u8(&ctl)) {
        ts += 1 + (ctl & 0x40);
        if (ctl & 0x80) {
            switch (ctl & 3) {
                case 0:
                    t.on_connect(ts, 1, 2);
                    break;
                case 1:
                    t.on_connected(ts, 1, 2);
                    break;
                case 2:
                    t.on_close(ts, 1, 2);
                    break;
                default:
                    t.on_error(ts, 1, 2, 2013, "HY000", "lost");
                    break;
            }
            continue;
        }
        uint16_t missing = 0;
        if ((ctl & 4) && !r.u16(&missing)) {
            break;
        }
        uint16_t len = 0;
        if (!r.u16(&len)) {
            break;
        }
        const uint8_t *bytes = nullptr;
        size_t copied = std::min<size_t>(len, r.n);
        if (!r.take(copied, &bytes)) {
            break;
        }
        Direction dir = (ctl & 1) ? Direction::server_to_client : Direction::client_to_server;
        Source src = (ctl & 2) ? Source::tls_cleartext : Source::socket;
        t.feed(dir, src, bytes, copied, copied + missing, ts, 1, 2);
        raw.feed(bytes, copied, copied + missing, ts);
        Packet p;
        while (raw.next(p)) {
            check(p.payload.size() <= 64);
            check(p.payload.size() <= p.length || !p.length_known);
            if (!p.payload.empty()) {
                // Read where the payload points (ASan checks it is live).
                payload_sink = payload_sink + p.payload[0] + p.payload[p.payload.size() - 1];
            }
        }
        if (!raw.synced()) {
            raw.resync();
        }
    }
    t.on_close(ts + 1, 1, 2);
    auto st = t.stats();
    check(st.events == events);
    return 0;
}
