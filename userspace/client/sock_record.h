// SPDX-License-Identifier: GPL-2.0-only
// One socket syscall of a traced client, decoded from a ring record
// (struct mt_sock_event) into a neutral form the connection table consumes;
// likewise the shim's API records.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "mysqltrace/abi/event.h"
#include "mysqltrace/abi/usdt.h"

namespace mysqltrace::client {

struct SockRecord {
    uint64_t ts_ns = 0;
    uint32_t pid = 0;
    uint32_t tid = 0;
    uint64_t sock = 0;  // kernel socket identity
    uint32_t fd = 0;
    mt_sock_op op = MT_SOCK_RECV;
    uint16_t family = 0;
    int64_t ret = 0;                // bytes transferred (true length) or -errno
    std::span<const uint8_t> data;  // what was copied (<= ret), or the sockaddr for connect
};

// False when the record is not a well-formed socket record.
bool decode_sock_record(std::span<const uint8_t> record, SockRecord *out);

// A MySQL C API call entered or returned in the shim (struct mt_api_event).
struct ApiRecord {
    uint64_t ts_ns = 0;
    uint32_t pid = 0;
    uint32_t tid = 0;
    mt_api_phase phase = MT_API_BEGIN;
    uint32_t func = 0;  // enum mt_api_func; MT_API_TRACE: the WL#6226 stage
    uint64_t handle = 0;
    uint64_t sock = 0;  // as SockRecord::sock; 0 when the call has no connection
    int64_t ret = 0;
    uint32_t error_code = 0;  // MT_API_TRACE: the WL#6226 event
    uint32_t thread_id = 0;
    std::string_view sqlstate;
    std::span<const uint8_t> text;  // begin: statement/schema prefix; end: error message
    uint32_t text_len = 0;          // its true length
};

bool decode_api_record(std::span<const uint8_t> record, ApiRecord *out);

// "mysql_real_query", or "" for an unknown number.
const char *api_func_name(uint32_t func);

}  // namespace mysqltrace::client
