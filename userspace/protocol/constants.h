// SPDX-License-Identifier: GPL-2.0-only
// Numbers of the MySQL/MariaDB client-server protocol: capability bits,
// server status bits, command bytes and column types. Capabilities are kept
// in one 64-bit value: the low 32 bits are the classic flags both servers
// share, the high 32 bits are MariaDB's extended capabilities, which travel in
// otherwise reserved bytes of the greeting and the handshake response.
#pragma once

#include <cstdint>
#include <string>

namespace mysqltrace::protocol {

namespace cap {
// Bit 0 was CLIENT_LONG_PASSWORD; a MariaDB server clears it to say "I use the
// extended capability bytes" (MariaDB calls it CLIENT_MYSQL).
inline constexpr uint64_t mysql = 1ULL << 0;
inline constexpr uint64_t found_rows = 1ULL << 1;
inline constexpr uint64_t long_flag = 1ULL << 2;
inline constexpr uint64_t connect_with_db = 1ULL << 3;
inline constexpr uint64_t no_schema = 1ULL << 4;
inline constexpr uint64_t compress = 1ULL << 5;
inline constexpr uint64_t odbc = 1ULL << 6;
inline constexpr uint64_t local_files = 1ULL << 7;
inline constexpr uint64_t ignore_space = 1ULL << 8;
inline constexpr uint64_t protocol_41 = 1ULL << 9;
inline constexpr uint64_t interactive = 1ULL << 10;
inline constexpr uint64_t ssl = 1ULL << 11;
inline constexpr uint64_t ignore_sigpipe = 1ULL << 12;
inline constexpr uint64_t transactions = 1ULL << 13;
inline constexpr uint64_t reserved = 1ULL << 14;
inline constexpr uint64_t secure_connection = 1ULL << 15;
inline constexpr uint64_t multi_statements = 1ULL << 16;
inline constexpr uint64_t multi_results = 1ULL << 17;
inline constexpr uint64_t ps_multi_results = 1ULL << 18;
inline constexpr uint64_t plugin_auth = 1ULL << 19;
inline constexpr uint64_t connect_attrs = 1ULL << 20;
inline constexpr uint64_t plugin_auth_lenenc_data = 1ULL << 21;
inline constexpr uint64_t can_handle_expired_passwords = 1ULL << 22;
inline constexpr uint64_t session_track = 1ULL << 23;
inline constexpr uint64_t deprecate_eof = 1ULL << 24;
inline constexpr uint64_t optional_resultset_metadata = 1ULL << 25;  // MySQL 8
inline constexpr uint64_t zstd_compression = 1ULL << 26;             // MySQL 8
inline constexpr uint64_t query_attributes = 1ULL << 27;             // MySQL 8
inline constexpr uint64_t multi_factor_auth = 1ULL << 28;            // MySQL 8
inline constexpr uint64_t progress_obsolete = 1ULL << 29;            // MariaDB, older
inline constexpr uint64_t ssl_verify_server_cert = 1ULL << 30;
inline constexpr uint64_t remember_options = 1ULL << 31;
// MariaDB extended capabilities.
inline constexpr uint64_t mariadb_progress = 1ULL << 32;
inline constexpr uint64_t mariadb_com_multi = 1ULL << 33;
inline constexpr uint64_t mariadb_stmt_bulk_operations = 1ULL << 34;
inline constexpr uint64_t mariadb_extended_metadata = 1ULL << 35;
inline constexpr uint64_t mariadb_cache_metadata = 1ULL << 36;
inline constexpr uint64_t mariadb_bulk_unit_results = 1ULL << 37;
}  // namespace cap

namespace status {
inline constexpr uint16_t in_trans = 0x0001;
inline constexpr uint16_t autocommit = 0x0002;
inline constexpr uint16_t more_results_exist = 0x0008;
inline constexpr uint16_t cursor_exists = 0x0040;
inline constexpr uint16_t last_row_sent = 0x0080;
inline constexpr uint16_t ps_out_params = 0x1000;
inline constexpr uint16_t session_state_changed = 0x4000;
}  // namespace status

namespace com {
inline constexpr uint8_t sleep = 0;
inline constexpr uint8_t quit = 1;
inline constexpr uint8_t init_db = 2;
inline constexpr uint8_t query = 3;
inline constexpr uint8_t field_list = 4;
inline constexpr uint8_t create_db = 5;
inline constexpr uint8_t drop_db = 6;
inline constexpr uint8_t refresh = 7;
inline constexpr uint8_t shutdown = 8;
inline constexpr uint8_t statistics = 9;
inline constexpr uint8_t process_info = 10;
inline constexpr uint8_t connect = 11;
inline constexpr uint8_t process_kill = 12;
inline constexpr uint8_t debug = 13;
inline constexpr uint8_t ping = 14;
inline constexpr uint8_t time = 15;
inline constexpr uint8_t delayed_insert = 16;
inline constexpr uint8_t change_user = 17;
inline constexpr uint8_t binlog_dump = 18;
inline constexpr uint8_t table_dump = 19;
inline constexpr uint8_t connect_out = 20;
inline constexpr uint8_t register_slave = 21;
inline constexpr uint8_t stmt_prepare = 22;
inline constexpr uint8_t stmt_execute = 23;
inline constexpr uint8_t stmt_send_long_data = 24;
inline constexpr uint8_t stmt_close = 25;
inline constexpr uint8_t stmt_reset = 26;
inline constexpr uint8_t set_option = 27;
inline constexpr uint8_t stmt_fetch = 28;
inline constexpr uint8_t daemon = 29;
inline constexpr uint8_t binlog_dump_gtid = 30;
inline constexpr uint8_t reset_connection = 31;
inline constexpr uint8_t stmt_bulk_execute = 250;  // MariaDB
inline constexpr uint8_t slave_worker = 251;       // MariaDB, server-internal
inline constexpr uint8_t slave_io = 252;
inline constexpr uint8_t slave_sql = 253;
}  // namespace com

// True for bytes a client may start a command packet with. Used to recognise
// a command when attaching mid-connection, so it excludes server-internal
// values (251..253) and the removed COM_MULTI (254).
bool is_client_command(uint8_t command);

namespace field_type {
inline constexpr uint8_t decimal = 0;
inline constexpr uint8_t tiny = 1;
inline constexpr uint8_t short_ = 2;
inline constexpr uint8_t long_ = 3;
inline constexpr uint8_t float_ = 4;
inline constexpr uint8_t double_ = 5;
inline constexpr uint8_t null = 6;
inline constexpr uint8_t timestamp = 7;
inline constexpr uint8_t longlong = 8;
inline constexpr uint8_t int24 = 9;
inline constexpr uint8_t date = 10;
inline constexpr uint8_t time = 11;
inline constexpr uint8_t datetime = 12;
inline constexpr uint8_t year = 13;
inline constexpr uint8_t newdate = 14;
inline constexpr uint8_t varchar = 15;
inline constexpr uint8_t bit = 16;
inline constexpr uint8_t timestamp2 = 17;
inline constexpr uint8_t datetime2 = 18;
inline constexpr uint8_t time2 = 19;
inline constexpr uint8_t json = 245;
inline constexpr uint8_t newdecimal = 246;
inline constexpr uint8_t enum_ = 247;
inline constexpr uint8_t set = 248;
inline constexpr uint8_t tiny_blob = 249;
inline constexpr uint8_t medium_blob = 250;
inline constexpr uint8_t long_blob = 251;
inline constexpr uint8_t blob = 252;
inline constexpr uint8_t var_string = 253;
inline constexpr uint8_t string = 254;
inline constexpr uint8_t geometry = 255;
}  // namespace field_type

// "LONG", "VAR_STRING", ...; "TYPE_<n>" when unknown.
std::string field_type_name(uint8_t type);

inline constexpr uint16_t kColumnFlagUnsigned = 0x0020;

// The payload length that says "this logical packet continues in the next".
inline constexpr uint32_t kMaxPacketPayload = 0xFFFFFF;

// MariaDB reports progress of long statements as ERR packets with this code;
// they are not errors and do not end the command.
inline constexpr uint16_t kProgressErrorCode = 0xFFFF;

}  // namespace mysqltrace::protocol
