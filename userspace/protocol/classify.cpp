// SPDX-License-Identifier: GPL-2.0-only
#include "protocol/classify.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>

#include "protocol/byte_reader.h"
#include "protocol/constants.h"

namespace mysqltrace::protocol {

namespace {

// Plausible payload lengths of a command packet, for recognising one with
// nothing else to go on. Tight ranges for fixed-size commands keep random
// bytes from passing.
bool plausible_command(uint8_t code, uint64_t len) {
    switch (code) {
        case com::quit:
        case com::statistics:
        case com::process_info:
        case com::debug:
        case com::ping:
        case com::reset_connection:
            return len == 1;
        case com::stmt_close:
        case com::stmt_reset:
        case com::process_kill:
            return len == 5;
        case com::stmt_fetch:
            return len == 9;
        case com::set_option:
            return len == 3;
        case com::refresh:
        case com::shutdown:
            return len == 1 || len == 2;
        case com::stmt_execute:
            return len >= 10;
        case com::stmt_bulk_execute:
            return len >= 7;
        case com::stmt_send_long_data:
            return len >= 7;
        case com::query:
        case com::stmt_prepare:
        case com::init_db:
        case com::create_db:
        case com::drop_db:
        case com::field_list:
        case com::change_user:
            return len >= 2;
        case com::binlog_dump:
        case com::binlog_dump_gtid:
        case com::register_slave:
        case com::table_dump:
            return len >= 2;
        default:
            return false;
    }
}

bool plain_command_at(const uint8_t *data, size_t copied, uint64_t true_len) {
    if (copied < 5) {
        return false;
    }
    uint32_t len = le24(data);
    if (data[3] != 0 || len == 0 || 4 + static_cast<uint64_t>(len) > true_len) {
        return false;
    }
    return is_client_command(data[4]) && plausible_command(data[4], len);
}

}  // namespace

bool looks_like_greeting(const uint8_t *data, size_t copied) {
    if (copied < 6) {
        return false;
    }
    uint32_t len = le24(data);
    if (data[3] != 0 || data[4] != 10 || len < 20 || len > 2048) {
        return false;
    }
    // The server version: printable, NUL-terminated, and followed by at
    // least the connection id, scramble and capabilities (15 bytes).
    size_t end = std::min<size_t>(copied, 4 + static_cast<size_t>(len));
    size_t i = 5;
    while (i < end && data[i] != 0) {
        if (data[i] < 0x20 || data[i] > 0x7E) {
            return false;
        }
        ++i;
    }
    if (i == 5 || i >= end) {
        return false;
    }
    return i + 1 + 15 <= 4 + static_cast<size_t>(len);
}

CommandFraming looks_like_command(const uint8_t *data, size_t copied, size_t true_len) {
    if (copied > true_len) {
        true_len = copied;
    }
    // A compressed frame: 7-byte header with sequence 0 whose body holds a
    // plain command packet, stored, deflated or zstd-compressed.
    if (copied >= 7 + 5 && data[3] == 0) {
        uint32_t clen = le24(data);
        uint32_t ulen = le24(data + 4);
        if (clen > 0 && 7 + static_cast<uint64_t>(clen) <= true_len) {
            if (ulen == 0) {
                if (plain_command_at(data + 7, std::min<size_t>(copied - 7, clen), clen)) {
                    return CommandFraming::compressed;
                }
            } else if (data[7] == 0x28) {
                // A zstd frame (MySQL 8's CLIENT_ZSTD_COMPRESSION_ALGORITHM).
                uint8_t out[16];
                if (ZSTD_DCtx *zd = ZSTD_createDCtx()) {
                    ZSTD_inBuffer in{data + 7, std::min<size_t>(copied - 7, clen), 0};
                    ZSTD_outBuffer o{out, sizeof(out), 0};
                    size_t rc = ZSTD_decompressStream(zd, &o, &in);
                    ZSTD_freeDCtx(zd);
                    if (!ZSTD_isError(rc) && plain_command_at(out, o.pos, ulen)) {
                        return CommandFraming::compressed;
                    }
                }
            } else {
                uint8_t out[16];
                z_stream zs{};
                if (inflateInit(&zs) == Z_OK) {
                    zs.next_in = const_cast<Bytef *>(data + 7);
                    zs.avail_in = static_cast<uInt>(std::min<size_t>(copied - 7, clen));
                    zs.next_out = out;
                    zs.avail_out = sizeof(out);
                    int rc = inflate(&zs, Z_SYNC_FLUSH);
                    size_t produced = sizeof(out) - zs.avail_out;
                    inflateEnd(&zs);
                    if ((rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR) &&
                        plain_command_at(out, produced, ulen)) {
                        return CommandFraming::compressed;
                    }
                }
            }
        }
    }
    if (plain_command_at(data, copied, true_len)) {
        return CommandFraming::plain;
    }
    return CommandFraming::none;
}

}  // namespace mysqltrace::protocol
