// SPDX-License-Identifier: GPL-2.0-only
#include "server/accounts.h"

#include <cstring>

#include "mysqltrace/abi/event.h"

namespace mysqltrace::server {

namespace {

// Connections remembered at once: ids only grow, and a long trace of a
// server with much connection churn must not keep every closed one.
constexpr size_t kMaxAccounts = 65536;

}  // namespace

std::string Account::actor() const {
    if (user.empty()) {
        return "";
    }
    return host.empty() ? user : user + "@" + host;
}

bool decode_account(std::span<const uint8_t> record, Account *out) {
    mt_server_account_event ev;
    if (record.size() != sizeof(ev)) {
        return false;
    }
    std::memcpy(&ev, record.data(), sizeof(ev));
    if (ev.hdr.type != MT_EV_SERVER_ACCOUNT || ev.hdr.size != sizeof(ev)) {
        return false;
    }
    out->thread_id = ev.thread_id;
    out->user = printable_name(ev.user);
    out->host = printable_name(ev.host);
    return true;
}

void Accounts::add(Account a) {
    if (by_id_.size() >= kMaxAccounts && !by_id_.contains(a.thread_id)) {
        by_id_.clear();
    }
    const uint64_t id = a.thread_id;
    by_id_[id] = std::move(a);
}

const Account &Accounts::of(uint64_t thread_id) const {
    auto it = by_id_.find(thread_id);
    return it == by_id_.end() ? none_ : it->second;
}

}  // namespace mysqltrace::server
