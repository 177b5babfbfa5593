// SPDX-License-Identifier: GPL-2.0-only
#include "protocol/event.h"

#include <array>
#include <cstddef>

namespace mysqltrace::protocol {

namespace {

constexpr std::array<const char *, 13> kStageNames = {
    "CONNECTING",      "WAIT_FOR_INIT_PACKET",    "AUTHENTICATE",
    "SSL_NEGOTIATION", "READY_FOR_COMMAND",       "WAIT_FOR_PACKET",
    "WAIT_FOR_RESULT", "WAIT_FOR_FIELD_DEF",      "WAIT_FOR_ROW",
    "FILE_REQUEST",    "WAIT_FOR_PS_DESCRIPTION", "WAIT_FOR_PARAM_DEF",
    "DISCONNECTED",
};

constexpr std::array<const char *, 17> kEventNames = {
    "ERROR",
    "CONNECTING",
    "CONNECTED",
    "DISCONNECTED",
    "SEND_SSL_REQUEST",
    "SSL_CONNECT",
    "SSL_CONNECTED",
    "INIT_PACKET_RECEIVED",
    "AUTH_PLUGIN",
    "SEND_AUTH_RESPONSE",
    "SEND_AUTH_DATA",
    "AUTHENTICATED",
    "SEND_COMMAND",
    "SEND_FILE",
    "READ_PACKET",
    "PACKET_RECEIVED",
    "PACKET_SENT",
};

}  // namespace

const char *stage_name(Stage stage) {
    auto i = static_cast<size_t>(stage);
    return i < kStageNames.size() ? kStageNames[i] : "UNKNOWN";
}

const char *event_name(TraceEvent event) {
    auto i = static_cast<size_t>(event);
    return i < kEventNames.size() ? kEventNames[i] : "UNKNOWN";
}

const char *command_result_name(CommandResult r) {
    switch (r) {
        case CommandResult::ok:
            return "OK";
        case CommandResult::error:
            return "ERR";
        case CommandResult::rows:
            return "ROWS";
        case CommandResult::reply:
            return "REPLY";
        case CommandResult::no_reply:
            return "NO_REPLY";
        case CommandResult::incomplete:
            return "INCOMPLETE";
    }
    return "UNKNOWN";
}

}  // namespace mysqltrace::protocol
