// SPDX-License-Identifier: GPL-2.0-only
// Early classification of a socket's first bytes, for the capture side:
// is this a MySQL connection (the server greeting), or a command packet a
// client is sending (to pick up a connection already in progress)?
// Both look only at what one read()/write() returned; neither scans for a
// match at other offsets.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mysqltrace::protocol {

// Sequence 0, protocol 10, a printable NUL-terminated server version and
// room for the fixed fields after it. copied: bytes available.
bool looks_like_greeting(const uint8_t *data, size_t copied);

enum class CommandFraming : uint8_t { none, plain, compressed };
// A command packet with sequence 0, a command byte clients send and a
// length that fits the command and the write (true_len: the syscall's
// length); or a compressed frame with sequence 0 holding one.
CommandFraming looks_like_command(const uint8_t *data, size_t copied, size_t true_len);

}  // namespace mysqltrace::protocol
