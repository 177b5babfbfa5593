// SPDX-License-Identifier: GPL-2.0-only
// enum_server_command: the first byte of every client command packet, and the
// first argument of the server's dispatch_command().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mysqltrace::mysql {

// "COM_QUERY"; "COM_<n>" for values no server defines.
std::string command_name(uint32_t command);
// The same for a command byte, from static storage (a decoded command and
// its summary keep it without a copy of their own).
std::string_view command_name_view(uint8_t command);
// performance_schema's instrument name: "statement/com/Query".
std::string command_event_name(uint32_t command);

inline constexpr uint32_t kComInitDb = 2;
inline constexpr uint32_t kComQuery = 3;
inline constexpr uint32_t kComStmtPrepare = 22;
inline constexpr uint32_t kComStmtExecute = 23;
inline constexpr uint32_t kComStmtBulkExecute = 250;  // MariaDB

}  // namespace mysqltrace::mysql
