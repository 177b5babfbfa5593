// SPDX-License-Identifier: GPL-2.0-only
// Connections (server --threads) as text lines or performance_schema
// threads-shaped JSON objects (server/threads.h).
#pragma once

#include <cstdint>
#include <string>

#include "output/clock.h"
#include "server/threads.h"

namespace mysqltrace::output {

// "HH:MM:SS.uuuuuu   THREAD_ID connect    user@host db=... type=Socket attr=value ..."
void connection_text(std::string &out, const Clock &clock, const server::Connection &c);
// One JSON object and a newline: "kind":"thread", "EVENT":"connect"|"disconnect",
// THREAD_ID and PROCESSLIST_ID (the connection id), THREAD_OS_ID, NAME,
// PROCESSLIST_USER, PROCESSLIST_HOST, PROCESSLIST_DB, CONNECTION_TYPE, TIMER
// (picoseconds), "connect_attrs" (session_connect_attrs' ATTR_NAME ->
// ATTR_VALUE, in ORDINAL_POSITION order), and on a disconnect the
// connection's duration when its connect was seen.
void connection_json(std::string &out, uint32_t pid, const server::Connection &c);

}  // namespace mysqltrace::output
