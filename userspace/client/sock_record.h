// SPDX-License-Identifier: GPL-2.0-only
// One socket syscall of a traced client, decoded from a ring record
// (struct mt_sock_event) into a neutral form the connection table consumes.
#pragma once

#include <cstdint>
#include <span>

#include "mysqltrace/abi/event.h"

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

}  // namespace mysqltrace::client
