// SPDX-License-Identifier: GPL-2.0-only
// Reader for recorded protocol byte streams (tests/data/protocol/*.txt) and
// helpers to replay them into a ConnectionTracer and collect what it emits.
//
// Fixture format, one record a line (written by scripts/record-protocol.py):
//   # comment
//   <t_us> connect               the client connected
//   <t_us> C <hex> [+<n>]        bytes the client wrote (client -> server)
//   <t_us> S <hex> [+<n>]        bytes the client read (server -> client)
//   <t_us> TC <hex> [+<n>]       cleartext the client wrote through TLS
//   <t_us> TS <hex> [+<n>]       cleartext the client read through TLS
//   <t_us> close                 the connection ended
// t_us: microseconds since the client connected. "+<n>": n more bytes were
// on the wire after <hex> but were not copied (a capture gap). One data line
// is one read()/write() of the client.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "protocol/wl6226.h"

namespace mysqltrace::protocol::fixture {

struct FixtureRecord {
    enum class Kind { connect, close, data };
    Kind kind = Kind::data;
    uint64_t t_us = 0;
    Direction dir = Direction::client_to_server;
    Source src = Source::socket;
    std::vector<uint8_t> bytes;
    uint64_t missing = 0;
};

inline std::vector<uint8_t> from_hex(const std::string &hex) {
    if (hex.size() % 2 != 0) {
        throw std::runtime_error("odd hex length");
    }
    std::vector<uint8_t> out;
    out.reserve(hex.size() / 2);
    for (size_t i = 0; i < hex.size(); i += 2) {
        out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
    }
    return out;
}

inline std::vector<FixtureRecord> parse_fixture(std::istream &in) {
    std::vector<FixtureRecord> out;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') {
            continue;
        }
        std::istringstream ls(line);
        FixtureRecord r;
        std::string tag;
        ls >> r.t_us >> tag;
        if (tag == "connect") {
            r.kind = FixtureRecord::Kind::connect;
        } else if (tag == "close") {
            r.kind = FixtureRecord::Kind::close;
        } else {
            if (tag == "C" || tag == "TC") {
                r.dir = Direction::client_to_server;
            } else if (tag == "S" || tag == "TS") {
                r.dir = Direction::server_to_client;
            } else {
                throw std::runtime_error("bad fixture tag: " + tag);
            }
            r.src = tag.size() == 2 ? Source::tls_cleartext : Source::socket;
            std::string hex, extra;
            ls >> hex >> extra;
            r.bytes = from_hex(hex);
            if (!extra.empty() && extra[0] == '+') {
                r.missing = std::stoull(extra.substr(1));
            }
        }
        out.push_back(std::move(r));
    }
    return out;
}

inline std::vector<FixtureRecord> load_fixture(const std::string &name) {
    std::string path = std::string(MYSQLTRACE_SOURCE_DIR) + "/tests/data/protocol/" + name + ".txt";
    std::ifstream in(path);
    if (!in) {
        throw std::runtime_error("cannot open fixture " + path);
    }
    return parse_fixture(in);
}

// Everything one tracer emitted.
struct Collector {
    std::vector<ProtocolEvent> events;
    std::vector<CommandSummary> summaries;

    EventCallback on_event() {
        return [this](const ProtocolEvent &ev) { events.push_back(ev); };
    }
    SummaryCallback on_summary() {
        return [this](const CommandSummary &s) { summaries.push_back(s); };
    }

    // "STAGE EVENT" pairs, in order.
    std::vector<std::string> sequence() const {
        std::vector<std::string> out;
        for (const auto &e : events) {
            out.push_back(std::string(stage_name(e.stage)) + " " + event_name(e.event));
        }
        return out;
    }
    // The events of one kind, in order.
    std::vector<const ProtocolEvent *> of(TraceEvent kind) const {
        std::vector<const ProtocolEvent *> out;
        for (const auto &e : events) {
            if (e.event == kind) {
                out.push_back(&e);
            }
        }
        return out;
    }
    // Details of all events of one kind, flattened.
    std::vector<std::string> details(TraceEvent kind) const {
        std::vector<std::string> out;
        for (const auto &e : events) {
            if (e.event == kind) {
                out.insert(out.end(), e.details.begin(), e.details.end());
            }
        }
        return out;
    }
};

// Appends bytes one by one. (GCC 12 at -O2 reports a false -Warray-bounds
// for vector::insert after a small braced initialiser.)
template <typename Range>
void append(std::vector<uint8_t> &v, const Range &r) {
    for (auto c : r) {
        v.push_back(static_cast<uint8_t>(c));
    }
}

// Header and payload of one physical packet.
inline std::vector<uint8_t> packet(uint8_t seq, const std::vector<uint8_t> &payload) {
    std::vector<uint8_t> out;
    out.reserve(4 + payload.size());
    for (int i = 0; i < 3; ++i) {
        out.push_back(static_cast<uint8_t>(payload.size() >> (8 * i)));
    }
    out.push_back(seq);
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
}

inline constexpr uint32_t kPid = 4242;
inline constexpr uint32_t kTid = 4243;

// Feeds records [from, to) into the tracer; connect/close records become
// on_connect+on_connected / on_close unless skip_connect.
inline void replay(ConnectionTracer &t, const std::vector<FixtureRecord> &records, size_t from = 0,
                   size_t to = SIZE_MAX, bool skip_connect = false) {
    to = std::min(to, records.size());
    for (size_t i = from; i < to; ++i) {
        const auto &r = records[i];
        uint64_t ts = 1'000'000'000ULL + r.t_us * 1000;
        switch (r.kind) {
            case FixtureRecord::Kind::connect:
                if (!skip_connect) {
                    t.on_connect(ts, kPid, kTid);
                    t.on_connected(ts, kPid, kTid);
                }
                break;
            case FixtureRecord::Kind::close:
                t.on_close(ts, kPid, kTid);
                break;
            case FixtureRecord::Kind::data:
                t.feed(r.dir, r.src, r.bytes.data(), r.bytes.size(), r.bytes.size() + r.missing, ts,
                       kPid, kTid);
                break;
        }
    }
}

// Splits every data record into pieces of at most n bytes: the decoder must
// not care how the capture chunked the stream.
inline std::vector<FixtureRecord> rechunk(const std::vector<FixtureRecord> &records, size_t n) {
    std::vector<FixtureRecord> out;
    for (const auto &r : records) {
        if (r.kind != FixtureRecord::Kind::data || r.bytes.size() <= n) {
            out.push_back(r);
            continue;
        }
        for (size_t off = 0; off < r.bytes.size(); off += n) {
            FixtureRecord piece = r;
            size_t len = std::min(n, r.bytes.size() - off);
            piece.bytes.assign(r.bytes.begin() + static_cast<ptrdiff_t>(off),
                               r.bytes.begin() + static_cast<ptrdiff_t>(off + len));
            piece.missing = off + len == r.bytes.size() ? r.missing : 0;
            out.push_back(std::move(piece));
        }
    }
    return out;
}

// Concatenates all data records of a direction into one (the whole stream
// in one chunk).
inline std::vector<uint8_t> stream_bytes(const std::vector<FixtureRecord> &records, Direction dir) {
    std::vector<uint8_t> out;
    for (const auto &r : records) {
        if (r.kind == FixtureRecord::Kind::data && r.dir == dir) {
            out.insert(out.end(), r.bytes.begin(), r.bytes.end());
        }
    }
    return out;
}

}  // namespace mysqltrace::protocol::fixture
