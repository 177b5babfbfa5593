// SPDX-License-Identifier: GPL-2.0-only
// The account (user@host) each server connection runs as, for the WL#4878
// trace file names and the --user filter. The BPF side reads it from
// THD::security_ctx at a connection's first command or wait (again after
// COM_CHANGE_USER) and sends it once: read later, from userspace, a short
// connection would already be gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <unordered_map>

namespace mysqltrace::server {

// A NUL-terminated name of printable ASCII within a record's fixed-size
// `field`, else "" (accounts and connection records).
template <size_t N>
std::string printable_name(const char (&field)[N]) {
    const void *end = std::memchr(field, '\0', N);
    if (end == nullptr) {
        return "";
    }
    std::string s(field, static_cast<const char *>(end));
    for (char c : s) {
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) {
            return "";
        }
    }
    return s;
}

struct Account {
    uint64_t thread_id = 0;
    std::string user;  // empty: none (a system thread) or not readable
    std::string host;  // the client's host name, else its IP address

    // "user@host", "user" without a host, "" without a user.
    std::string actor() const;
};

// Decodes one ring record; false when it is not a well-formed account record.
bool decode_account(std::span<const uint8_t> record, Account *out);

// The accounts seen so far, by connection id.
class Accounts {
  public:
    void add(Account a);
    // Empty when connection `thread_id` has not been seen yet.
    const Account &of(uint64_t thread_id) const;

  private:
    std::unordered_map<uint64_t, Account> by_id_;
    Account none_;
};

}  // namespace mysqltrace::server
