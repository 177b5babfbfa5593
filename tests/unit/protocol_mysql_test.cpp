// SPDX-License-Identifier: GPL-2.0-only
// Oracle MySQL 9.7's own client (the `mysql` CLI and libmysqlclient) against
// a 9.7 server, from streams recorded by scripts/record-protocol-mysql.py:
// query attributes (negotiated, and inferred when joining mid-connection),
// caching_sha2_password's fast path, full authentication with an RSA key
// exchange and over TLS, and zstd/zlib protocol compression.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "protocol/classify.h"
#include "protocol/constants.h"
#include "protocol/decode.h"
#include "protocol_fixture.h"

namespace mysqltrace::protocol {
namespace {

using fixture::Collector;
using fixture::FixtureRecord;
using Seq = std::vector<std::string>;
using Vec = std::vector<uint8_t>;
using Attrs = std::vector<QueryAttribute>;

Collector run(const std::vector<FixtureRecord> &recs, TracerOptions opt = {}, size_t from = 0,
              ConnectionStats *stats = nullptr) {
    Collector c;
    ConnectionTracer t(1, opt, c.on_event(), c.on_summary());
    fixture::replay(t, recs, from, SIZE_MAX, from > 0);
    if (stats != nullptr) {
        *stats = t.stats();
    }
    return c;
}

bool has_detail(const ProtocolEvent &e, const std::string &detail) {
    return std::find(e.details.begin(), e.details.end(), detail) != e.details.end();
}

const ProtocolEvent *find_event(const Collector &c, TraceEvent kind, const std::string &detail) {
    for (const auto &e : c.events) {
        if (e.event == kind && has_detail(e, detail)) {
            return &e;
        }
    }
    return nullptr;
}

// Indexes of the records holding the client's commands: the client writes
// that start a packet (or compressed frame) with sequence 0; the handshake
// response and auth data have later sequence numbers.
std::vector<size_t> command_records(const std::vector<FixtureRecord> &recs) {
    std::vector<size_t> out;
    for (size_t i = 0; i < recs.size(); ++i) {
        const auto &r = recs[i];
        if (r.kind == FixtureRecord::Kind::data && r.dir == Direction::client_to_server &&
            r.bytes.size() > 4 && r.bytes[3] == 0) {
            out.push_back(i);
        }
    }
    return out;
}

Seq tail_from_command(const Seq &full, size_t nth_command) {
    size_t seen = 0;
    for (size_t i = 0; i < full.size(); ++i) {
        if (full[i] == "READY_FOR_COMMAND SEND_COMMAND" && seen++ == nth_command) {
            return Seq(full.begin() + static_cast<ptrdiff_t>(i), full.end());
        }
    }
    return {};
}

struct Sent {
    std::optional<std::string> sql;
    Attrs attributes;
    bool operator==(const Sent &) const = default;
};

std::vector<Sent> queries(const Collector &c) {
    std::vector<Sent> out;
    for (const auto *e : c.of(TraceEvent::send_command)) {
        if (e->command == com::query) {
            out.push_back({e->sql, e->query_attributes});
        }
    }
    return out;
}

const std::vector<Sent> kCliQueries = {
    {"select @@version_comment limit 1", {}},
    {"select $$", {}},
    {"SELECT id, name FROM t ORDER BY id", {}},
    {"SELECT mysql_query_attribute_string('n1') AS a, mysql_query_attribute_string('n2') AS b",
     {{"n1", "'v1'"}, {"n2", "'v2'"}}},
    {"SELECT 'no attributes' AS c", {}},
};

// --- query attributes ---------------------------------------------------------

TEST(Mysql97, CliQueryAttributesNegotiated) {
    Collector c = run(fixture::load_fixture("mysql97_cli_attrs"));
    EXPECT_EQ(queries(c), kCliQueries);
    const ProtocolEvent *q =
        find_event(c, TraceEvent::send_command, "Query attributes: n1='v1', n2='v2'");
    ASSERT_NE(q, nullptr);
    EXPECT_TRUE(has_detail(*q, "QUERY: " + *kCliQueries[3].sql));
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 'v1', 'v2'"), nullptr);
    ASSERT_EQ(c.summaries.size(), 6u);
    EXPECT_EQ(c.summaries[3].query_attributes, kCliQueries[3].attributes);
    EXPECT_TRUE(c.summaries[4].query_attributes.empty());
}

TEST(Mysql97, MidConnectionJoinInfersQueryAttributes) {
    // The 9.7 CLI sends every COM_QUERY with an attribute block, most of them
    // empty ("\x00\x01" before the text): joined at any command, the trace
    // shows the statements and attributes exactly as with the handshake seen.
    auto recs = fixture::load_fixture("mysql97_cli_attrs");
    Collector full = run(recs);
    auto cmds = command_records(recs);
    ASSERT_EQ(cmds.size(), 6u);
    for (size_t n = 0; n < cmds.size(); ++n) {
        SCOPED_TRACE("joined at command " + std::to_string(n));
        Collector c = run(recs, {}, cmds[n]);
        EXPECT_EQ(c.sequence(), tail_from_command(full.sequence(), n));
        std::vector<Sent> expected(
            kCliQueries.begin() + static_cast<ptrdiff_t>(std::min<size_t>(n, kCliQueries.size())),
            kCliQueries.end());
        EXPECT_EQ(queries(c), expected);
        for (const auto *e : c.of(TraceEvent::send_command)) {
            if (e->sql) {
                EXPECT_EQ(e->sql->find('\0'), std::string::npos) << *e->sql;
                EXPECT_NE(e->sql->front(), '\x01');
            }
        }
    }
}

TEST(Mysql97, InferenceFromTheFirstQuery) {
    auto q = [](Vec head, const std::string &sql) {
        Vec v = {com::query};
        fixture::append(v, head);
        fixture::append(v, sql);
        return v;
    };
    EXPECT_EQ(infer_query_attributes(q({0x00, 0x01}, "select 1")), true);
    EXPECT_EQ(infer_query_attributes(q({}, "select 1")), false);
    EXPECT_EQ(infer_query_attributes(q({}, "\n  select 1")), false);
    // One attribute a='x'.
    EXPECT_EQ(
        infer_query_attributes(q(
            {0x01, 0x01, 0x00, 0x01, field_type::string, 0x00, 0x01, 'a', 0x01, 'x'}, "select 2")),
        true);
    // Control bytes that do not decode as a block: cannot be told.
    EXPECT_EQ(infer_query_attributes(q({0x05, 0x01, 0xFF}, "")), std::nullopt);
}

TEST(Mysql97, AttributeBytesNeverRenderAsText) {
    // Joined mid-connection at a COM_QUERY whose attribute block is broken
    // (here: cut short): no statement text is guessed.
    Collector c;
    ConnectionTracer t(1, {}, c.on_event(), c.on_summary());
    Vec payload = {com::query, 0x02, 0x01, 0x00, 0x01, field_type::string, 0x00, 0x01, 'a'};
    fixture::append(payload, std::string("select 1"));
    Vec pkt = fixture::packet(0, payload);
    t.feed(Direction::client_to_server, Source::socket, pkt.data(), pkt.size(), pkt.size(), 1,
           fixture::kPid, fixture::kTid);
    auto cmds = c.of(TraceEvent::send_command);
    ASSERT_EQ(cmds.size(), 1u);
    EXPECT_FALSE(cmds[0]->sql);
    EXPECT_TRUE(has_detail(*cmds[0],
                           "QUERY: (not shown: the query attributes before the statement did not "
                           "decode, so where its text starts is unknown)"));
}

TEST(Mysql97, CApiBindParamAndPreparedStatements) {
    auto recs = fixture::load_fixture("mysql97_c_api");
    Collector c = run(recs);
    ASSERT_EQ(queries(c).size(), 2u);
    EXPECT_EQ(queries(c)[0], (Sent{"SELECT mysql_query_attribute_string('trace_id')",
                                   {{"trace_id", "'abc123'"}}}));
    EXPECT_EQ(queries(c)[1], (Sent{"SELECT nope FROM t", {}}));
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 'abc123'"), nullptr);
    // libmysqlclient sends executes with PARAMETER_COUNT_AVAILABLE and named
    // (here: unnamed) parameters under CLIENT_QUERY_ATTRIBUTES.
    const ProtocolEvent *exec = find_event(c, TraceEvent::send_command, "Parameters: 1");
    ASSERT_NE(exec, nullptr);
    EXPECT_TRUE(exec->query_attributes.empty());
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 3, 'plum'"), nullptr);
    EXPECT_NE(find_event(c, TraceEvent::packet_received,
                         "Server error 1054 (42S22): Unknown column 'nope' in 'field list'"),
              nullptr);
    // Joined just before the execute: the flag says attributes are on.
    auto cmds = command_records(recs);
    size_t at = 0;
    for (size_t i : cmds) {
        if (recs[i].bytes[4] == com::stmt_execute) {
            at = i;
        }
    }
    ASSERT_NE(at, 0u);
    Collector mid = run(recs, {}, at);
    EXPECT_NE(find_event(mid, TraceEvent::send_command, "Parameters: 1"), nullptr);
    EXPECT_EQ(queries(mid), (std::vector<Sent>{{"SELECT nope FROM t", {}}}));
}

TEST(Mysql97, ExecuteWithNamedAttributes) {
    // Statement 1 with one parameter (LONG 7), then attribute tid='z'.
    Vec exec = {com::stmt_execute,
                0x01,
                0,
                0,
                0,
                0x08,
                0x01,
                0,
                0,
                0,
                0x02,  // parameter count: 1 + 1 attribute
                0x00,
                0x01,  // NULL bitmap, types follow
                field_type::long_,
                0x00,
                0x00,  // parameter: LONG, no name
                field_type::string,
                0x00,
                0x03,
                't',
                'i',
                'd',  // attribute
                0x07,
                0,
                0,
                0,
                0x01,
                'z'};
    auto c = decode_command(exec, cap::protocol_41 | cap::query_attributes, uint16_t{1}, nullptr,
                            nullptr, 64);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->params, (std::vector<std::string>{"7"}));
    EXPECT_EQ(c->attributes, (Attrs{{"tid", "'z'"}}));
}

// --- caching_sha2_password ----------------------------------------------------

Seq auth_sequence(const Collector &c) {
    Seq out;
    for (const auto &e : c.events) {
        if (e.stage == Stage::authenticate || e.stage == Stage::ssl_negotiation) {
            out.push_back(std::string(stage_name(e.stage)) + " " + event_name(e.event) +
                          (e.details.empty() ? "" : ": " + e.details.back()));
        }
    }
    return out;
}

TEST(Mysql97, Sha2FullAuthenticationWithRsaKeyExchange) {
    Collector c = run(fixture::load_fixture("mysql97_sha2_rsa"));
    Seq expected = {
        "AUTHENTICATE AUTH_PLUGIN: Using authentication plugin: caching_sha2_password",
        "AUTHENTICATE SEND_AUTH_RESPONSE: Connection attributes: _pid=7554, _platform=x86_64, "
        "_os=Linux, _client_name=libmysql, os_user=root, _client_version=9.7.4, "
        "program_name=mysql",
        "AUTHENTICATE PACKET_SENT: packet sent: 207 bytes",
        "AUTHENTICATE READ_PACKET",
        "AUTHENTICATE PACKET_RECEIVED: Auth more data: 1 bytes (full authentication required)",
        "AUTHENTICATE SEND_AUTH_DATA: Auth data: 1 bytes (request for the server's RSA public "
        "key)",
        "AUTHENTICATE PACKET_SENT: packet sent: 1 bytes",
        "AUTHENTICATE READ_PACKET",
        "AUTHENTICATE PACKET_RECEIVED: Auth more data: 451 bytes (the server's RSA public key)",
        "AUTHENTICATE SEND_AUTH_DATA: Auth data: 256 bytes (password encrypted with the server's "
        "RSA public key)",
        "AUTHENTICATE PACKET_SENT: packet sent: 256 bytes",
        "AUTHENTICATE READ_PACKET",
        "AUTHENTICATE PACKET_RECEIVED: OK from server",
        "AUTHENTICATE AUTHENTICATED",
    };
    EXPECT_EQ(auth_sequence(c), expected);
    // The encrypted password is a secret: withheld from dumps unless asked.
    TracerOptions dump;
    dump.keep_packets = true;
    Collector d = run(fixture::load_fixture("mysql97_sha2_rsa"), dump);
    auto data = d.of(TraceEvent::send_auth_data);
    ASSERT_EQ(data.size(), 2u);
    EXPECT_TRUE(data[1]->packet_redacted);
    EXPECT_TRUE(data[1]->packet.empty());
    dump.show_secrets = true;
    Collector s = run(fixture::load_fixture("mysql97_sha2_rsa"), dump);
    data = s.of(TraceEvent::send_auth_data);
    ASSERT_EQ(data.size(), 2u);
    EXPECT_EQ(data[1]->packet.size(), 256u);
    EXPECT_EQ(data[1]->details.back().size(), std::string("Auth data: ").size() + 512 +
                                                  std::string(" (password encrypted with the "
                                                              "server's RSA public key)")
                                                      .size());
}

TEST(Mysql97, Sha2FastAuthentication) {
    Collector c = run(fixture::load_fixture("mysql97_cli_attrs"));
    Seq seq = auth_sequence(c);
    ASSERT_GE(seq.size(), 4u);
    Seq tail(seq.end() - 5, seq.end());
    EXPECT_EQ(tail, (Seq{"AUTHENTICATE READ_PACKET",
                         "AUTHENTICATE PACKET_RECEIVED: Auth more data: 1 bytes (fast "
                         "authentication succeeded)",
                         "AUTHENTICATE READ_PACKET", "AUTHENTICATE PACKET_RECEIVED: OK from server",
                         "AUTHENTICATE AUTHENTICATED"}));
    EXPECT_TRUE(c.of(TraceEvent::send_auth_data).empty());
}

TEST(Mysql97, Sha2FullAuthenticationOverTls) {
    // The RSA session's greeting and response, replayed as a TLS session in
    // which the server asks for full authentication and the client sends
    // the password in clear inside TLS (what the 9.7 client does).
    auto plain = fixture::load_fixture("mysql97_sha2_rsa");
    auto data = [](Direction d, Source s, Vec bytes) {
        FixtureRecord r;
        r.dir = d;
        r.src = s;
        r.bytes = std::move(bytes);
        return r;
    };
    std::vector<FixtureRecord> recs = {plain[0], plain[1]};
    Vec resp = plain[2].bytes;
    resp[4 + 1] |= 0x08;  // CLIENT_SSL
    Vec ssl = {32, 0, 0, 1};
    fixture::append(ssl, std::vector<uint8_t>(resp.begin() + 4, resp.begin() + 36));
    recs.push_back(data(Direction::client_to_server, Source::socket, ssl));
    recs.push_back(
        data(Direction::client_to_server, Source::socket, Vec{0x16, 0x03, 0x01, 0, 1, 0}));
    resp[3] = 2;
    recs.push_back(data(Direction::client_to_server, Source::tls_cleartext, resp));
    recs.push_back(data(Direction::server_to_client, Source::tls_cleartext,
                        fixture::packet(3, Vec{0x01, 0x04})));
    recs.push_back(data(Direction::client_to_server, Source::tls_cleartext,
                        fixture::packet(4, Vec{'m', 't', 'p', 'a', 's', 's', 0})));
    recs.push_back(data(Direction::server_to_client, Source::tls_cleartext,
                        fixture::packet(5, Vec{0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00})));
    TracerOptions dump;
    dump.keep_packets = true;
    Collector c = run(recs, dump);
    Seq seq = auth_sequence(c);
    Seq expected = {
        "AUTHENTICATE SEND_SSL_REQUEST: SSL request; client capabilities: 0x19bfaa8d",
        "SSL_NEGOTIATION SSL_CONNECT",
        "SSL_NEGOTIATION SSL_CONNECTED",
        "AUTHENTICATE AUTH_PLUGIN: Using authentication plugin: caching_sha2_password",
        "AUTHENTICATE SEND_AUTH_RESPONSE: Connection attributes: _pid=7554, _platform=x86_64, "
        "_os=Linux, _client_name=libmysql, os_user=root, _client_version=9.7.4, "
        "program_name=mysql",
        "AUTHENTICATE PACKET_SENT: packet sent: 207 bytes",
        "AUTHENTICATE READ_PACKET",
        "AUTHENTICATE PACKET_RECEIVED: Auth more data: 1 bytes (full authentication required)",
        "AUTHENTICATE SEND_AUTH_DATA: Auth data: 7 bytes (password in clear text, inside TLS)",
        "AUTHENTICATE PACKET_SENT: packet sent: 7 bytes",
        "AUTHENTICATE READ_PACKET",
        "AUTHENTICATE PACKET_RECEIVED: OK from server",
        "AUTHENTICATE AUTHENTICATED",
    };
    EXPECT_EQ(seq, expected);
    auto pw = c.of(TraceEvent::send_auth_data);
    ASSERT_EQ(pw.size(), 1u);
    EXPECT_TRUE(pw[0]->packet_redacted);
    for (const auto &e : c.events) {
        for (const auto &d : e.details) {
            EXPECT_EQ(d.find("mtpass"), std::string::npos) << d;
            EXPECT_EQ(d.find("6d7470617373"), std::string::npos) << d;
        }
    }
}

// --- compression ----------------------------------------------------------------

TEST(Mysql97, ZstdAndZlibCompressionDecodeTheSameSession) {
    ConnectionStats zs;
    ConnectionStats zl;
    Collector zstd = run(fixture::load_fixture("mysql97_zstd"), {}, 0, &zs);
    Collector zlib = run(fixture::load_fixture("mysql97_zlib"), {}, 0, &zl);
    EXPECT_GT(zs.compressed_frames, 0u);
    EXPECT_GT(zl.compressed_frames, 0u);
    EXPECT_EQ(zs.inflate_errors, 0u);
    EXPECT_EQ(zl.inflate_errors, 0u);
    EXPECT_EQ(zstd.sequence(), zlib.sequence());
    for (const Collector *c : {&zstd, &zlib}) {
        EXPECT_NE(find_event(*c, TraceEvent::packet_received, "Row: 3, 'plum'"), nullptr);
        const ProtocolEvent *big = nullptr;
        for (const auto &e : c->events) {
            if (e.stage == Stage::wait_for_row && e.bytes && *e.bytes > 1500) {
                big = &e;
            }
        }
        ASSERT_NE(big, nullptr);
        EXPECT_EQ(*big->bytes, 3u + 1500u);
        ASSERT_FALSE(c->summaries.empty());
        EXPECT_EQ(c->summaries.back().command_name, "COM_QUIT");
    }
}

TEST(Mysql97, ZstdMidConnectionJoin) {
    auto recs = fixture::load_fixture("mysql97_zstd");
    Collector full = run(recs);
    auto cmds = command_records(recs);
    ASSERT_GE(cmds.size(), 3u);
    EXPECT_EQ(looks_like_command(recs[cmds[1]].bytes.data(), recs[cmds[1]].bytes.size(),
                                 recs[cmds[1]].bytes.size()),
              CommandFraming::compressed);
    ConnectionStats stats;
    Collector c = run(recs, {}, cmds[1], &stats);
    EXPECT_EQ(c.sequence(), tail_from_command(full.sequence(), 1));
    EXPECT_EQ(stats.inflate_errors, 0u);
    EXPECT_NE(find_event(c, TraceEvent::packet_received, "Row: 3, 'plum'"), nullptr);
}

}  // namespace
}  // namespace mysqltrace::protocol
