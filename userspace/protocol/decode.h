// SPDX-License-Identifier: GPL-2.0-only
// Decoders for the payloads of single MySQL/MariaDB protocol packets. They
// are pure: payload bytes (possibly a cut prefix of the real packet) in, a
// struct out, nullopt when the bytes cannot be that packet. Which decoder
// applies is the stage machine's business (wl6226.h); nothing here keeps
// state or prints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/byte_reader.h"
#include "protocol/event.h"

namespace mysqltrace::protocol {

using Bytes = std::span<const uint8_t>;

// Initial handshake packet, protocol version 10.
struct Greeting {
    uint8_t protocol_version = 0;
    std::string server_version;
    uint32_t connection_id = 0;
    uint64_t capabilities = 0;  // high 32 bits: MariaDB extended capabilities
    uint8_t charset = 0;
    uint16_t status = 0;
    size_t auth_data_len = 0;  // scramble bytes (never shown: they seed the auth response)
    std::string auth_plugin;   // empty when the server did not name one
    bool mariadb = false;      // the server uses the extended capability bytes
};
std::optional<Greeting> decode_greeting(Bytes payload);

// SSL request and handshake response (protocol 41; 320 is decoded as far as
// it goes). An SSL request is the 32-byte prefix of a 41 response with
// CLIENT_SSL set and nothing after it.
struct HandshakeResponse {
    bool ssl_request = false;
    bool protocol_41 = true;
    uint64_t capabilities = 0;  // high 32 bits: MariaDB extended capabilities
    uint32_t max_packet = 0;
    uint8_t charset = 0;
    std::string user;
    std::vector<uint8_t> auth_response;  // secret: shown only with show_secrets
    std::string database;
    std::string auth_plugin;
    std::vector<std::pair<std::string, std::string>> attributes;
};
// with_attributes false: the connection attributes, which come last, are
// left undecoded (attributes stays empty).
std::optional<HandshakeResponse> decode_handshake_response(Bytes payload,
                                                           bool with_attributes = true);

// 0xFE in the authentication phase: switch to another plugin.
struct AuthSwitch {
    std::string plugin;
    size_t data_len = 0;
    bool old_password = false;  // the 1-byte pre-4.1 form
};
std::optional<AuthSwitch> decode_auth_switch(Bytes payload);

struct OkPacket {
    bool eof_header = false;  // 0xFE: the OK that ends rows under CLIENT_DEPRECATE_EOF
    uint64_t affected_rows = 0;
    uint64_t last_insert_id = 0;
    uint16_t status = 0;
    uint16_t warnings = 0;
    std::string info;
};
std::optional<OkPacket> decode_ok(Bytes payload, uint64_t capabilities);

struct ProgressReport {
    uint8_t stage = 0;
    uint8_t max_stage = 0;
    uint32_t progress = 0;  // per mille of the stage, times 1000 (0..100000)
    std::string info;
};
struct ErrPacket {
    uint16_t code = 0;
    std::string sqlstate;  // empty when the server sent none
    std::string message;
    std::optional<ProgressReport> progress;  // set for MariaDB's code 0xFFFF
};
std::optional<ErrPacket> decode_err(Bytes payload);

struct EofPacket {
    uint16_t warnings = 0;
    uint16_t status = 0;
};
// A 0xFE packet is an EOF only if it is short; longer 0xFE packets are rows
// or column definitions whose first length is 8-byte encoded.
bool is_eof_packet(Bytes payload, uint64_t true_length);
std::optional<EofPacket> decode_eof(Bytes payload);

// Column count packet. MariaDB with CACHE_METADATA appends one byte saying
// whether column definitions follow; its presence is visible in the length.
struct ColumnCount {
    uint64_t count = 0;
    std::optional<bool> metadata_follows;
};
std::optional<ColumnCount> decode_column_count(Bytes payload);

// The names are views of the payload decoded.
struct ColumnDef {
    std::string_view schema;
    std::string_view table;
    std::string_view org_table;
    std::string_view name;
    std::string_view org_name;
    uint16_t charset = 0;
    uint32_t length = 0;
    uint8_t type = 0;
    uint16_t flags = 0;
    uint8_t decimals = 0;
};
// extended_metadata: MARIADB_CLIENT_EXTENDED_METADATA negotiated.
std::optional<ColumnDef> decode_column_def(Bytes payload, bool extended_metadata);

struct PrepareOk {
    uint32_t statement_id = 0;
    uint16_t columns = 0;
    uint16_t params = 0;
    uint16_t warnings = 0;
};
std::optional<PrepareOk> decode_prepare_ok(Bytes payload);

struct ColumnType {
    uint8_t type = 0;
    bool is_unsigned = false;
};

// Values rendered for display: strings quoted, numbers plain, NULL as NULL.
// Each value is cut to max_value bytes.
using RowValues = std::vector<std::string>;
// Text row; with the columns' types known, numbers are shown unquoted.
std::optional<RowValues> decode_text_row(Bytes payload, size_t max_value,
                                         const std::vector<ColumnType> *types = nullptr);
// decode_text_row's values joined by ", ", appended to out without a string
// per value; false (out unchanged) when they do not decode.
bool append_text_row(std::string &out, Bytes payload, size_t max_value,
                     const std::vector<ColumnType> *types);
// Binary (prepared statement) row: 0x00 header, NULL bitmap with a 2-bit
// offset, then values laid out by column type.
std::optional<RowValues> decode_binary_row(Bytes payload, const std::vector<ColumnType> &columns,
                                           size_t max_value);
// decode_binary_row's values joined by ", ", appended to out without a string
// per value; false (out unchanged) when they do not decode.
bool append_binary_row(std::string &out, Bytes payload, const std::vector<ColumnType> &columns,
                       size_t max_value);

// Formats one binary-protocol value of `type` from r; nullopt if it does not fit.
std::optional<std::string> decode_binary_value(ByteReader &r, ColumnType type, size_t max_value);
// The same, appended to out; false (out unchanged) if it does not fit.
bool append_binary_value(std::string &out, ByteReader &r, ColumnType type, size_t max_value);

// 0xFB in reply to a query: the server asks for a local file.
std::optional<std::string> decode_local_infile_request(Bytes payload);

// A client command packet, decoded as far as its command byte defines.
struct Command {
    uint8_t code = 0;
    std::string_view name;           // "COM_QUERY" (mysql::command_name_view: static)
    std::optional<std::string> sql;  // COM_QUERY, COM_STMT_PREPARE (not yet redacted)
    std::optional<uint32_t> statement_id;
    std::string argument;  // schema, table, user, ... for the detail line
    // COM_STMT_EXECUTE / COM_STMT_BULK_EXECUTE / COM_STMT_FETCH
    uint8_t flags = 0;
    uint32_t iterations = 0;
    uint32_t fetch_rows = 0;
    std::vector<std::string> params;  // decoded execute parameters (display form)
    // CLIENT_QUERY_ATTRIBUTES: the named values sent before a COM_QUERY's
    // text or after an execute's parameters.
    std::vector<QueryAttribute> attributes;
    // The attribute block before a COM_QUERY's text did not decode, so where
    // the text starts is unknown: sql is then unset rather than guessed.
    bool attributes_undecodable = false;
    // COM_CHANGE_USER
    std::string user;
    std::string database;
    std::string auth_plugin;
    size_t auth_response_len = 0;
    std::vector<uint8_t> auth_response;  // secret
    uint16_t param_id = 0;               // COM_STMT_SEND_LONG_DATA
    size_t data_len = 0;                 // COM_STMT_SEND_LONG_DATA
};
// param_count: parameters of the statement an execute names, when known
// (nullopt: parameters are not decoded). param_types: types bound by an
// earlier execute, which a client does not resend; updated when it does.
// long_data: parameters whose value went with COM_STMT_SEND_LONG_DATA.
// param_values false: an execute's parameter values are left out of params
// (their types are still bound); query attributes are decoded all the same.
std::optional<Command> decode_command(Bytes payload, uint64_t capabilities,
                                      std::optional<uint16_t> param_count,
                                      std::vector<ColumnType> *param_types,
                                      const std::vector<bool> *long_data, size_t max_value,
                                      bool param_values = true);
// The same into c, which keeps the room of an earlier command's parameter
// list (every field is set anew); false where nullopt would be returned.
bool decode_command(Command &c, Bytes payload, uint64_t capabilities,
                    std::optional<uint16_t> param_count, std::vector<ColumnType> *param_types,
                    const std::vector<bool> *long_data, size_t max_value, bool param_values = true);

// For a connection whose handshake was not seen: does this COM_QUERY payload
// start with MySQL 8's query attribute block (CLIENT_QUERY_ATTRIBUTES)?
// true: it does and the block decodes; false: it starts with statement text;
// nullopt: it cannot be told (too short, or a control byte that is neither).
std::optional<bool> infer_query_attributes(Bytes payload);

// "select 1" with quotes: for detail lines and row values.
std::string quote_value(std::string_view s, size_t max_len);

}  // namespace mysqltrace::protocol
