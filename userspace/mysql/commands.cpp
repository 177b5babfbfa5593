// SPDX-License-Identifier: GPL-2.0-only
#include "mysql/commands.h"

#include <array>

namespace mysqltrace::mysql {

namespace {

struct CommandInfo {
    const char *com;  // protocol name
    const char *pfs;  // performance_schema statement/com/ name
};

// Values 0..31 are shared by MySQL and MariaDB.
constexpr std::array<CommandInfo, 32> kCommands = {{
    {"COM_SLEEP", "Sleep"},
    {"COM_QUIT", "Quit"},
    {"COM_INIT_DB", "Init DB"},
    {"COM_QUERY", "Query"},
    {"COM_FIELD_LIST", "Field List"},
    {"COM_CREATE_DB", "Create DB"},
    {"COM_DROP_DB", "Drop DB"},
    {"COM_REFRESH", "Refresh"},
    {"COM_SHUTDOWN", "Shutdown"},
    {"COM_STATISTICS", "Statistics"},
    {"COM_PROCESS_INFO", "Processlist"},
    {"COM_CONNECT", "Connect"},
    {"COM_PROCESS_KILL", "Kill"},
    {"COM_DEBUG", "Debug"},
    {"COM_PING", "Ping"},
    {"COM_TIME", "Time"},
    {"COM_DELAYED_INSERT", "Delayed insert"},
    {"COM_CHANGE_USER", "Change user"},
    {"COM_BINLOG_DUMP", "Binlog Dump"},
    {"COM_TABLE_DUMP", "Table Dump"},
    {"COM_CONNECT_OUT", "Connect Out"},
    {"COM_REGISTER_SLAVE", "Register Slave"},
    {"COM_STMT_PREPARE", "Prepare"},
    {"COM_STMT_EXECUTE", "Execute"},
    {"COM_STMT_SEND_LONG_DATA", "Long Data"},
    {"COM_STMT_CLOSE", "Close stmt"},
    {"COM_STMT_RESET", "Reset stmt"},
    {"COM_SET_OPTION", "Set option"},
    {"COM_STMT_FETCH", "Fetch"},
    {"COM_DAEMON", "Daemon"},
    {"COM_BINLOG_DUMP_GTID", "Binlog Dump GTID"},
    {"COM_RESET_CONNECTION", "Reset Connection"},
}};

// MariaDB's values counted down from 255.
constexpr CommandInfo kMariadb[] = {
    {"COM_STMT_BULK_EXECUTE", "Bulk_execute"},  // 250
    {"COM_SLAVE_WORKER", "Slave_worker"},       // 251
    {"COM_SLAVE_IO", "Slave_IO"},               // 252
    {"COM_SLAVE_SQL", "Slave_SQL"},             // 253
};

const CommandInfo *lookup(uint32_t command) {
    if (command < kCommands.size()) {
        return &kCommands[command];
    }
    if (command >= 250 && command <= 253) {
        return &kMariadb[command - 250];
    }
    return nullptr;
}

}  // namespace

std::string command_name(uint32_t command) {
    const CommandInfo *c = lookup(command);
    return c != nullptr ? c->com : "COM_" + std::to_string(command);
}

std::string_view command_name_view(uint8_t command) {
    static const std::array<std::string, 256> kNames = [] {
        std::array<std::string, 256> names;
        for (uint32_t i = 0; i < names.size(); ++i) {
            names[i] = command_name(i);
        }
        return names;
    }();
    return kNames[command];
}

std::string command_event_name(uint32_t command) {
    const CommandInfo *c = lookup(command);
    return std::string("statement/com/") + (c != nullptr ? c->pfs : std::to_string(command));
}

}  // namespace mysqltrace::mysql
