// SPDX-License-Identifier: GPL-2.0-only
// Single-packet decoders and the early classifiers, on bytes
// taken from recorded sessions and on hand-built edge cases.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "protocol/constants.h"
#include "mysql/commands.h"
#include "protocol/decode.h"
#include "protocol/wl6226.h"
#include "unit/protocol_fixture.h"

namespace mysqltrace::protocol {
namespace {

using Vec = std::vector<uint8_t>;

Vec text(const std::string &s) {
    return Vec(s.begin(), s.end());
}
Vec cat(std::initializer_list<Vec> parts) {
    Vec out;
    for (const auto &p : parts) {
        out.insert(out.end(), p.begin(), p.end());
    }
    return out;
}
// Payload of the first packet of a recorded data line.
Vec first_payload(const fixture::FixtureRecord &r) {
    return Vec(r.bytes.begin() + 4, r.bytes.end());
}

TEST(Decode, GreetingOfMariaDB) {
    auto recs = fixture::load_fixture("connect_query");
    ASSERT_EQ(recs[1].dir, Direction::server_to_client);
    auto g = decode_greeting(first_payload(recs[1]));
    ASSERT_TRUE(g);
    EXPECT_EQ(g->protocol_version, 10);
    EXPECT_EQ(g->server_version, "5.5.5-10.11.19-MariaDB-0+deb12u1");
    EXPECT_EQ(g->connection_id, 6u);
    EXPECT_TRUE(g->mariadb);
    EXPECT_EQ(g->capabilities, 0x1d81fff7feULL);
    EXPECT_TRUE(g->capabilities & cap::mariadb_cache_metadata);
    EXPECT_TRUE(g->capabilities & cap::deprecate_eof);
    EXPECT_EQ(g->charset, 8);
    EXPECT_EQ(g->status, status::autocommit);
    EXPECT_EQ(g->auth_data_len, 20u);
    EXPECT_EQ(g->auth_plugin, "mysql_native_password");
}

TEST(Decode, GreetingRejectsOtherProtocols) {
    EXPECT_FALSE(
        decode_greeting(text("\x09"
                             "5.0\0")));
    EXPECT_FALSE(decode_greeting(Vec{}));
    EXPECT_FALSE(decode_greeting(Vec{10, '8', '.', '0', 0, 1, 2}));  // cut short
}

TEST(Decode, HandshakeResponseOfLibmariadb) {
    auto recs = fixture::load_fixture("connect_query");
    ASSERT_EQ(recs[2].dir, Direction::client_to_server);
    auto h = decode_handshake_response(first_payload(recs[2]));
    ASSERT_TRUE(h);
    EXPECT_FALSE(h->ssl_request);
    EXPECT_EQ(h->capabilities, 0x1d00bea28cULL);
    EXPECT_EQ(h->max_packet, 1u << 20);
    EXPECT_EQ(h->user, "mt");
    EXPECT_EQ(h->database, "mt");
    EXPECT_EQ(h->auth_plugin, "mysql_native_password");
    EXPECT_EQ(h->auth_response.size(), 20u);
    ASSERT_EQ(h->attributes.size(), 6u);
    EXPECT_EQ(h->attributes[0], (std::pair<std::string, std::string>{"_os", "Linux"}));
    EXPECT_EQ(h->attributes[1].second, "libmariadb");
}

TEST(Decode, SslRequestIsTheBareHeader) {
    Vec req = {0x8c, 0xaa, 0xbe, 0x00,  // caps incl. CLIENT_SSL (0x800)
               0x00, 0x00, 0x00, 0x01, 0x2d};
    req.resize(32, 0);
    auto h = decode_handshake_response(req);
    ASSERT_TRUE(h);
    EXPECT_TRUE(h->ssl_request);
    EXPECT_TRUE(h->capabilities & cap::ssl);
    EXPECT_TRUE(h->user.empty());
}

TEST(Decode, AuthSwitchRequests) {
    auto recs = fixture::load_fixture("auth_switch_ed25519");
    // The reply to the handshake response is the switch to client_ed25519.
    auto sw = decode_auth_switch(first_payload(recs[3]));
    ASSERT_TRUE(sw);
    EXPECT_EQ(sw->plugin, "client_ed25519");
    EXPECT_EQ(sw->data_len, 32u);
    EXPECT_FALSE(sw->old_password);
    auto old = decode_auth_switch(Vec{0xFE});
    ASSERT_TRUE(old);
    EXPECT_TRUE(old->old_password);
    EXPECT_EQ(old->plugin, "mysql_old_password");
}

TEST(Decode, OkPacketWithInfo) {
    // affected 3, insert id 5, status 0x0002, warnings 0, info.
    Vec p = cat({Vec{0x00, 0x03, 0x05, 0x02, 0x00, 0x00, 0x00, 0x05}, text("hello")});
    auto ok = decode_ok(p, cap::protocol_41);
    ASSERT_TRUE(ok);
    EXPECT_FALSE(ok->eof_header);
    EXPECT_EQ(ok->affected_rows, 3u);
    EXPECT_EQ(ok->last_insert_id, 5u);
    EXPECT_EQ(ok->status, 2);
    EXPECT_EQ(ok->warnings, 0);
    EXPECT_EQ(ok->info, "hello");
    // Large length-encoded counts.
    Vec big = {0x00, 0xFC, 0x10, 0x27, 0xFD, 0x40, 0x42, 0x0F, 0x00, 0x00, 0x01, 0x00};
    ok = decode_ok(big, cap::protocol_41);
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->affected_rows, 10000u);
    EXPECT_EQ(ok->last_insert_id, 1000000u);
    EXPECT_EQ(ok->warnings, 1);
    // The 0xFE-led OK that ends rows under CLIENT_DEPRECATE_EOF.
    ok = decode_ok(Vec{0xFE, 0x00, 0x00, 0x22, 0x00, 0x00, 0x00}, cap::protocol_41);
    ASSERT_TRUE(ok);
    EXPECT_TRUE(ok->eof_header);
    EXPECT_EQ(ok->status, 0x22);
    EXPECT_FALSE(decode_ok(Vec{0x00, 0x01}, cap::protocol_41));
}

TEST(Decode, ErrPacketWithAndWithoutSqlstate) {
    auto recs = fixture::load_fixture("connect_query");
    auto err = decode_err(first_payload(recs[11]));
    ASSERT_TRUE(err);
    EXPECT_EQ(err->code, 1146);
    EXPECT_EQ(err->sqlstate, "42S02");
    EXPECT_EQ(err->message, "Table 'mt.nosuch' doesn't exist");
    EXPECT_FALSE(err->progress);
    err = decode_err(cat({Vec{0xFF, 0x10, 0x04}, text("Too many connections")}));
    ASSERT_TRUE(err);
    EXPECT_EQ(err->code, 1040);
    EXPECT_EQ(err->sqlstate, "");
    EXPECT_EQ(err->message, "Too many connections");
}

TEST(Decode, MariadbProgressReport) {
    auto recs = fixture::load_fixture("local_infile");
    // Find the progress packet the server sent during LOAD DATA.
    std::optional<ErrPacket> err;
    for (const auto &r : recs) {
        if (r.kind == fixture::FixtureRecord::Kind::data && r.bytes.size() > 7 &&
            r.bytes[4] == 0xFF && r.bytes[5] == 0xFF && r.bytes[6] == 0xFF) {
            err = decode_err(first_payload(r));
            break;
        }
    }
    ASSERT_TRUE(err);
    EXPECT_EQ(err->code, kProgressErrorCode);
    ASSERT_TRUE(err->progress);
    EXPECT_EQ(err->progress->stage, 2);
    EXPECT_EQ(err->progress->max_stage, 2);
    EXPECT_EQ(err->progress->progress, 0u);
    EXPECT_EQ(err->progress->info, "End bulk insert");
}

TEST(Decode, EofOnlyWhenShort) {
    Vec eof = {0xFE, 0x00, 0x00, 0x02, 0x00};
    EXPECT_TRUE(is_eof_packet(eof, eof.size()));
    auto e = decode_eof(eof);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->status, 2);
    // A text row whose first value has an 8-byte length also starts with 0xFE.
    EXPECT_FALSE(is_eof_packet(eof, 0x1000010));
}

TEST(Decode, ColumnCountWithAndWithoutMetadataFlag) {
    auto c = decode_column_count(Vec{0x03});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->count, 3u);
    EXPECT_FALSE(c->metadata_follows);
    c = decode_column_count(Vec{0x05, 0x00});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->count, 5u);
    ASSERT_TRUE(c->metadata_follows);
    EXPECT_FALSE(*c->metadata_follows);
    c = decode_column_count(Vec{0xFC, 0x2C, 0x01, 0x01});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->count, 300u);
    EXPECT_TRUE(*c->metadata_follows);
    EXPECT_FALSE(decode_column_count(Vec{0x00}));
    EXPECT_FALSE(decode_column_count(Vec{0x02, 0x01, 0x01}));
}

TEST(Decode, ColumnDefinitionFromRecordedResult) {
    // "SELECT id, name, price FROM t": count, then three definitions.
    auto recs = fixture::load_fixture("connect_query");
    const Vec &chunk = recs[7].bytes;
    // Skip the column count packet (2 bytes: count and MariaDB's metadata flag).
    size_t off = 4 + chunk[0];
    ASSERT_EQ(chunk[0], 2);
    uint32_t len = chunk[off] | chunk[off + 1] << 8 | chunk[off + 2] << 16;
    Vec def(chunk.begin() + static_cast<ptrdiff_t>(off + 4),
            chunk.begin() + static_cast<ptrdiff_t>(off + 4 + len));
    auto c = decode_column_def(def, true);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->schema, "mt");
    EXPECT_EQ(c->table, "t");
    EXPECT_EQ(c->org_table, "t");
    EXPECT_EQ(c->name, "id");
    EXPECT_EQ(c->type, field_type::long_);
    EXPECT_EQ(c->length, 11u);
    // The same bytes without the capability: the extension is noticed anyway.
    auto again = decode_column_def(def, false);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->type, field_type::long_);
}

TEST(Decode, PrepareOk) {
    auto p = decode_prepare_ok(Vec{0x00, 0x07, 0, 0, 0, 0x02, 0x00, 0x01, 0x00, 0x00, 0x03, 0x00});
    ASSERT_TRUE(p);
    EXPECT_EQ(p->statement_id, 7u);
    EXPECT_EQ(p->columns, 2);
    EXPECT_EQ(p->params, 1);
    EXPECT_EQ(p->warnings, 3);
    EXPECT_FALSE(decode_prepare_ok(Vec{0x00, 0x01}));
}

TEST(Decode, TextRows) {
    Vec row = cat({Vec{0x01}, text("1"), Vec{0x03}, text("a'b"), Vec{0xFB}, Vec{0x00}});
    auto v = decode_text_row(row, 64);
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, (RowValues{"'1'", "'a\\'b'", "NULL", "''"}));
    std::vector<ColumnType> types = {{field_type::long_, false},
                                     {field_type::var_string, false},
                                     {field_type::null, false},
                                     {field_type::string, false}};
    v = decode_text_row(row, 64, &types);
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, (RowValues{"1", "'a\\'b'", "NULL", "''"}));
    v = decode_text_row(cat({Vec{0x0A}, text("0123456789")}), 4);
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, (RowValues{"'0123'..."}));
    EXPECT_FALSE(decode_text_row(Vec{0x05, 'a'}, 64));
}

TEST(Decode, BinaryRowStartsWithZeroAndHasShiftedNullBitmap) {
    std::vector<ColumnType> cols = {
        {field_type::long_, false},      {field_type::var_string, false},
        {field_type::newdecimal, false}, {field_type::datetime, false},
        {field_type::double_, false},    {field_type::tiny, true},
        {field_type::time, false}};
    // Column 3 (datetime) is NULL: bit 3 + 2 = 5.
    Vec row = {0x00, 0x20, 0x00};
    Vec dbl(8);
    double d = 0.5;
    std::memcpy(dbl.data(), &d, 8);
    row = cat({row, Vec{0x2A, 0, 0, 0}, Vec{0x03}, text("abc"), Vec{0x04}, text("1.25"), dbl,
               Vec{0xFF}, Vec{0x08, 0x01, 0x01, 0, 0, 0, 0x02, 0x03, 0x04}});
    auto v = decode_binary_row(row, cols, 64);
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, (RowValues{"42", "'abc'", "1.25", "NULL", "0.5", "255", "'-26:03:04'"}));
    EXPECT_FALSE(decode_binary_row(Vec{0x01, 0x00}, cols, 64));
    EXPECT_FALSE(decode_binary_row(Vec{0x00, 0x00, 0x00, 0x01}, cols, 64));
    EXPECT_FALSE(decode_binary_row(Vec{}, cols, 64));

    // The same row appended to a line, without a string per value; a row
    // that does not decode leaves the line as it was.
    std::string line = "Row: ";
    ASSERT_TRUE(append_binary_row(line, row, cols, 64));
    EXPECT_EQ(line, "Row: 42, 'abc', 1.25, NULL, 0.5, 255, '-26:03:04'");
    line = "Row: ";
    EXPECT_FALSE(append_binary_row(line, Vec{0x00, 0x00, 0x00, 0x01}, cols, 64));
    // Cut in its fifth value (the double).
    EXPECT_FALSE(append_binary_row(line, Vec(row.begin(), row.begin() + 20), cols, 64));
    EXPECT_FALSE(append_binary_row(line, Vec{}, cols, 64));
    EXPECT_EQ(line, "Row: ");
}

TEST(Decode, LocalInfileRequest) {
    EXPECT_EQ(decode_local_infile_request(cat({Vec{0xFB}, text("/tmp/x.csv")})), "/tmp/x.csv");
    EXPECT_FALSE(decode_local_infile_request(Vec{0x00}));
}

TEST(Decode, Commands) {
    auto c =
        decode_command(text("\x03SELECT 1"), cap::protocol_41, std::nullopt, nullptr, nullptr, 64);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->name, "COM_QUERY");
    EXPECT_EQ(c->sql, "SELECT 1");

    // MySQL 8 with CLIENT_QUERY_ATTRIBUTES: one attribute before the SQL.
    Vec qa = cat({Vec{0x03, 0x01, 0x01, 0x00, 0x01, field_type::string, 0x00, 0x01, 'a', 0x01, 'x'},
                  text("SELECT 2")});
    c = decode_command(qa, cap::protocol_41 | cap::query_attributes, std::nullopt, nullptr, nullptr,
                       64);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->sql, "SELECT 2");
    EXPECT_EQ(c->attributes, (std::vector<QueryAttribute>{{"a", "'x'"}}));
    EXPECT_TRUE(c->params.empty());
    c = decode_command(cat({Vec{0x03, 0x00, 0x01}, text("SELECT 3")}),
                       cap::protocol_41 | cap::query_attributes, std::nullopt, nullptr, nullptr,
                       64);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->sql, "SELECT 3");

    c = decode_command(Vec{0x19, 0x07, 0, 0, 0}, cap::protocol_41, std::nullopt, nullptr, nullptr,
                       64);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->name, "COM_STMT_CLOSE");
    EXPECT_EQ(c->statement_id, 7u);

    c = decode_command(Vec{0x1c, 0x02, 0, 0, 0, 0x0A, 0, 0, 0}, 0, std::nullopt, nullptr, nullptr,
                       64);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->fetch_rows, 10u);

    // Execute with two parameters: LONG 5 and NULL; types sent.
    std::vector<ColumnType> types;
    Vec exec = {0x17, 0x01, 0,    0,    0,    0x00, 0x01, 0, 0, 0,
                0x02, 0x01, 0x03, 0x00, 0x0F, 0x00, 0x05, 0, 0, 0};
    c = decode_command(exec, cap::protocol_41, uint16_t{2}, &types, nullptr, 64);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->params, (std::vector<std::string>{"5", "NULL"}));
    ASSERT_EQ(types.size(), 2u);
    EXPECT_EQ(types[0].type, field_type::long_);
    // The next execute does not resend types; the remembered ones apply.
    Vec exec2 = {0x17, 0x01, 0, 0, 0, 0x00, 0x01, 0, 0, 0,
                 0x02,  // NULL bitmap: second parameter
                 0x00,  // types not resent
                 0x09, 0,    0, 0};
    c = decode_command(exec2, cap::protocol_41, uint16_t{2}, &types, nullptr, 64);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->params, (std::vector<std::string>{"9", "NULL"}));
    // Without values (`--summary-only`): none are read, but the types sent
    // are still bound for the executes that follow.
    std::vector<ColumnType> bound;
    c = decode_command(exec, cap::protocol_41, uint16_t{2}, &bound, nullptr, 64, false);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->statement_id, 1u);
    EXPECT_TRUE(c->params.empty());
    ASSERT_EQ(bound.size(), 2u);
    EXPECT_EQ(bound[0].type, field_type::long_);
    c = decode_command(exec2, cap::protocol_41, uint16_t{2}, &bound, nullptr, 64);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->params, (std::vector<std::string>{"9", "NULL"}));

    // Bulk execute: types sent, three rows with indicators.
    Vec bulk = {0xFA, 0x04, 0,    0,    0, 0x80, 0x00,  // id 4, SEND_TYPES_TO_SERVER
                0x03, 0x00, 0x06, 0x00,                 // LONG, NULL
                0x00, 0x01, 0,    0,    0, 0x01,        // row 1: 1, NULL
                0x00, 0x02, 0,    0,    0, 0x02,        // row 2: 2, DEFAULT
                0x03, 0x00};                            // row 3: IGNORE, (NULL type: no bytes)
    c = decode_command(bulk, cap::protocol_41, uint16_t{2}, nullptr, nullptr, 64);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->name, "COM_STMT_BULK_EXECUTE");
    EXPECT_EQ(c->statement_id, 4u);
    EXPECT_EQ(c->iterations, 3u);
    EXPECT_EQ(c->params, (std::vector<std::string>{"1", "NULL"}));

    // Change user with plugin.
    Vec cu = cat({Vec{0x11}, text("bob"), Vec{0x00, 0x02, 0xAA, 0xBB}, text("db"),
                  Vec{0x00, 0x2D, 0x00}, text("client_ed25519"), Vec{0x00}});
    c = decode_command(cu, cap::protocol_41 | cap::secure_connection | cap::plugin_auth,
                       std::nullopt, nullptr, nullptr, 64);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->user, "bob");
    EXPECT_EQ(c->database, "db");
    EXPECT_EQ(c->auth_plugin, "client_ed25519");
    EXPECT_EQ(c->auth_response_len, 2u);

    c = decode_command(Vec{0x1B, 0x01, 0x00}, 0, std::nullopt, nullptr, nullptr, 64);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->argument, "MULTI_STATEMENTS_OFF");
    EXPECT_EQ(mysql::command_name(com::stmt_bulk_execute), "COM_STMT_BULK_EXECUTE");
    EXPECT_EQ(mysql::command_name(200), "COM_200");
    EXPECT_FALSE(decode_command(Vec{}, 0, std::nullopt, nullptr, nullptr, 64));
}

TEST(Classify, GreetingAndCommands) {
    auto recs = fixture::load_fixture("connect_query");
    const auto &greeting = recs[1].bytes;
    EXPECT_TRUE(looks_like_greeting(greeting.data(), greeting.size()));
    EXPECT_TRUE(looks_like_greeting(greeting.data(), 40));  // a short copy is enough
    EXPECT_FALSE(looks_like_greeting(recs[2].bytes.data(), recs[2].bytes.size()));
    const auto &query = recs[4].bytes;  // SELECT 1, 'abc', NULL
    EXPECT_EQ(looks_like_command(query.data(), query.size(), query.size()), CommandFraming::plain);
    EXPECT_EQ(looks_like_command(greeting.data(), greeting.size(), greeting.size()),
              CommandFraming::none);
    // The write must hold the whole announced packet.
    EXPECT_EQ(looks_like_command(query.data(), query.size() - 1, query.size() - 1),
              CommandFraming::none);
    // TLS records and HTTP are not commands.
    Vec tls = {0x17, 0x03, 0x03, 0x00, 0x20, 1, 2, 3};
    EXPECT_EQ(looks_like_command(tls.data(), tls.size(), 37), CommandFraming::none);
    Vec http = text("GET / HTTP/1.1\r\n");
    EXPECT_EQ(looks_like_command(http.data(), http.size(), http.size()), CommandFraming::none);
    Vec ping = {0x01, 0x00, 0x00, 0x00, 0x0E};
    EXPECT_EQ(looks_like_command(ping.data(), ping.size(), ping.size()), CommandFraming::plain);
    Vec bad_ping = {0x02, 0x00, 0x00, 0x00, 0x0E, 0x00};
    EXPECT_EQ(looks_like_command(bad_ping.data(), bad_ping.size(), bad_ping.size()),
              CommandFraming::none);
}

TEST(Classify, CompressedCommands) {
    auto recs = fixture::load_fixture("compressed_c");
    // After the handshake every client write is a compressed frame.
    size_t seen = 0;
    for (size_t i = 4; i < recs.size(); ++i) {
        const auto &r = recs[i];
        if (r.kind != fixture::FixtureRecord::Kind::data || r.dir != Direction::client_to_server) {
            continue;
        }
        EXPECT_EQ(looks_like_command(r.bytes.data(), r.bytes.size(), r.bytes.size()),
                  CommandFraming::compressed)
            << "record " << i;
        ++seen;
    }
    EXPECT_EQ(seen, 3u);
}

// Quotes and backslashes are escaped wherever they fall, alone or in runs;
// a value past max_len is cut and says so.
TEST(Decode, QuoteValueEscapes) {
    EXPECT_EQ(quote_value("", 10), "''");
    EXPECT_EQ(quote_value("plain text", 64), "'plain text'");
    EXPECT_EQ(quote_value("it's", 64), "'it\\'s'");
    EXPECT_EQ(quote_value("'", 64), "'\\''");
    EXPECT_EQ(quote_value("\\", 64), "'\\\\'");
    EXPECT_EQ(quote_value("a\\'b''c\\\\", 64), "'a\\\\\\'b\\'\\'c\\\\\\\\'");
    EXPECT_EQ(quote_value("'x\\", 64), "'\\'x\\\\'");
    EXPECT_EQ(quote_value("abcdef", 3), "'abc'...");
    // The cut comes before a quote past it is looked at.
    EXPECT_EQ(quote_value("ab'cd", 2), "'ab'...");
    EXPECT_EQ(quote_value("ab'cd", 3), "'ab\\''...");
    EXPECT_EQ(quote_value(std::string_view("a\0b", 3), 64), std::string("'a\0b'", 5));
}

}  // namespace
}  // namespace mysqltrace::protocol
