// SPDX-License-Identifier: GPL-2.0-only
#include "server/transactions.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <tuple>

#include <bpf/libbpf.h>

#include "bpf/uprobe_multi.h"
#include "mysqltrace/abi/event.h"
#include "server.skel.h"
#include "server/hooks.h"
#include "server/server_target.h"
#include "server/thd_layout.h"

namespace mysqltrace::server {

namespace {

constexpr size_t kMaxOpen = 65536;  // connections with a transaction open at once

}  // namespace

int64_t start_clock_shift_us(const ThdLayout &layout) {
    if (layout.start_clock != ThdLayout::Clock::realtime) {
        return 0;
    }
    timespec rt{}, mono{};
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    return (static_cast<int64_t>(rt.tv_sec) - mono.tv_sec) * 1'000'000 +
           (static_cast<int64_t>(rt.tv_nsec) - mono.tv_nsec) / 1000;
}

const char *Transaction::isolation_name() const {
    switch (isolation) {
        case 0:
            return "READ UNCOMMITTED";
        case 1:
            return "READ COMMITTED";
        case 2:
            return "REPEATABLE READ";
        case 3:
            return "SERIALIZABLE";
        default:
            return "";
    }
}

Transactions::Transactions(const ThdLayout &layout, int64_t start_shift_us,
                           std::function<uint64_t(uint64_t)> take_id)
    : begin_mask_(layout.option_begin),
      multi_mask_(layout.multi_statement_mask),
      start_shift_us_(start_shift_us),
      take_id_(std::move(take_id)) {}

bool Transactions::decode(std::span<const uint8_t> record,
                          const std::function<void(const Transaction &)> &ended) {
    mt_server_txn_event ev;
    if (record.size() != sizeof(ev)) {
        return false;
    }
    std::memcpy(&ev, record.data(), sizeof(ev));
    if (ev.hdr.type != MT_EV_SERVER_TXN || ev.hdr.size != sizeof(ev) || ev.op < MT_TXN_BEGIN ||
        ev.op > MT_TXN_END_ROLLBACK) {
        return false;
    }
    if (open_.size() >= kMaxOpen && !open_.contains(ev.thread_id)) {
        open_.clear();
        last_.clear();
    }
    Open &o = open_[ev.thread_id];
    auto finish = [&](bool committed, uint64_t end_ns) {
        o.t.end_ns = end_ns;
        o.t.committed = committed;
        o.t.isolation = ev.isolation;
        o.t.read_only = ev.read_only != 0;
        ended_++;
        if (!o.t.autocommit) {
            last_[ev.thread_id] = Last{o.t.event_id, o.t.start_ns, o.t.end_ns};
        }
        ended(o.t);
        o.open = false;
    };
    if (ev.op == MT_TXN_BEGIN) {
        // A transaction still open here is committed by trans_begin itself.
        if (o.open) {
            finish(true, ev.hdr.ts_ns);
        }
        o.t = Transaction{};
        o.t.thread_id = ev.thread_id;
        o.t.tid = ev.hdr.tid;
        o.t.start_ns = ev.hdr.ts_ns;
        o.t.autocommit = false;
        o.t.isolation = ev.isolation;
        o.t.read_only = ev.read_only != 0;
        o.t.event_id = take_id_(ev.thread_id);
        o.open = true;
        return true;
    }
    const bool committed = ev.op == MT_TXN_COMMIT || ev.op == MT_TXN_END_COMMIT;
    const bool held_open = (ev.option_bits & multi_mask_) != 0;
    if (ev.op == MT_TXN_END_COMMIT || ev.op == MT_TXN_END_ROLLBACK) {
        // The whole transaction: an explicit one, or one autocommit off
        // opened (from its first statement's commit). With nothing open
        // (COMMIT under autocommit, the implicit commit before a DDL
        // statement outside a transaction) it is no transaction.
        if (o.open) {
            finish(committed, ev.hdr.ts_ns);
        }
        return true;
    }
    if (held_open) {
        // A statement's commit inside a transaction; under autocommit off
        // the first one opens it, from that statement's start.
        if (!o.open && (ev.option_bits & begin_mask_) == 0) {
            o.t = Transaction{};
            o.t.thread_id = ev.thread_id;
            o.t.tid = ev.hdr.tid;
            o.t.start_ns =
                ev.stmt_start_us ? (ev.stmt_start_us - start_shift_us_) * 1000 : ev.hdr.ts_ns;
            o.t.autocommit = false;
            o.t.event_id = take_id_(ev.thread_id);
            o.open = true;
        }
        return true;
    }
    // Autocommit: this statement's commit is its transaction's end; it
    // began with the statement.
    o.t = Transaction{};
    o.t.thread_id = ev.thread_id;
    o.t.tid = ev.hdr.tid;
    o.t.start_ns = ev.stmt_start_us ? (ev.stmt_start_us - start_shift_us_) * 1000 : ev.hdr.ts_ns;
    if (o.t.start_ns > ev.hdr.ts_ns) {
        o.t.start_ns = ev.hdr.ts_ns;
    }
    o.t.autocommit = true;
    o.t.statements = 1;
    o.t.event_id = take_id_(ev.thread_id);
    finish(committed, ev.hdr.ts_ns);
    return true;
}

uint64_t Transactions::nest(const Statement &st,
                            const std::function<void(const Transaction &)> &ended) {
    XaStatement xa;
    const bool is_xa = parse_xa(st.text, &xa);
    if (auto it = open_.find(st.thread_id); it != open_.end() && it->second.open) {
        Transaction &t = it->second.t;
        if (is_xa && xa.verb == "START" && !st.failed() && t.start_ns >= st.start_ns) {
            // The transaction XA START began (its trans_begin call).
            t.xa_state = "ACTIVE";
            t.xid_gtrid = xa.gtrid;
            t.xid_bqual = xa.bqual;
            t.xid_format_id = xa.format_id;
            return 0;
        }
        if (is_xa && !t.xa_state.empty() && !st.failed() && st.start_ns >= t.start_ns) {
            if (xa.verb == "END") {
                t.xa_state = "IDLE";
            } else if (xa.verb == "PREPARE") {
                t.xa_state = "PREPARED";
            } else if (xa.verb == "COMMIT" || xa.verb == "ROLLBACK") {
                t.committed = xa.verb == "COMMIT";
                // Both servers' performance_schema say ROLLBACK ONLY.
                t.xa_state = t.committed ? "COMMITTED" : "ROLLBACK ONLY";
                t.end_ns = st.end_ns;
                ended_++;
                last_[st.thread_id] = Last{t.event_id, t.start_ns, t.end_ns};
                it->second.open = false;
                ended(t);
                return t.event_id;
            }
        }
        if (st.start_ns >= t.start_ns) {
            t.statements++;
            return t.event_id;
        }
        return 0;  // BEGIN itself: it started before its transaction
    }
    // COMMIT or ROLLBACK: began inside the transaction it ended.
    if (auto it = last_.find(st.thread_id); it != last_.end()) {
        const Last &l = it->second;
        if (st.start_ns >= l.start_ns && st.start_ns <= l.end_ns) {
            return l.event_id;
        }
    }
    return 0;
}

namespace {

// One XID part at `i`: 'string', "string", X'hex' / 0xhex (kept as written)
// or a number; false when there is none.
bool xid_part(std::string_view s, size_t &i, std::string *out) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) {
        i++;
    }
    if (i >= s.size()) {
        return false;
    }
    const char c = s[i];
    if (c == '\'' || c == '"') {
        out->clear();
        for (i++; i < s.size(); i++) {
            if (s[i] == '\\' && i + 1 < s.size()) {
                out->push_back(s[++i]);
            } else if (s[i] == c && i + 1 < s.size() && s[i + 1] == c) {
                out->push_back(c);
                i++;
            } else if (s[i] == c) {
                i++;
                return true;
            } else {
                out->push_back(s[i]);
            }
        }
        return false;  // unterminated
    }
    size_t j = i;
    if ((c == 'X' || c == 'x') && j + 1 < s.size() && s[j + 1] == '\'') {
        const size_t end = s.find('\'', j + 2);
        if (end == std::string_view::npos) {
            return false;
        }
        j = end + 1;
    } else {
        while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '-')) {
            j++;
        }
    }
    if (j == i) {
        return false;
    }
    out->assign(s.substr(i, j - i));
    i = j;
    return true;
}

bool skip_comma(std::string_view s, size_t &i) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) {
        i++;
    }
    if (i < s.size() && s[i] == ',') {
        i++;
        return true;
    }
    return false;
}

std::string upper_word(std::string_view s, size_t &i) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) {
        i++;
    }
    std::string w;
    while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) {
        w += static_cast<char>(std::toupper(static_cast<unsigned char>(s[i])));
        i++;
    }
    return w;
}

}  // namespace

bool parse_xa(std::string_view sql, XaStatement *out) {
    size_t i = 0;
    if (upper_word(sql, i) != "XA") {
        return false;
    }
    XaStatement x;
    x.verb = upper_word(sql, i);
    if (x.verb == "BEGIN") {
        x.verb = "START";
    }
    if (x.verb != "START" && x.verb != "END" && x.verb != "PREPARE" && x.verb != "COMMIT" &&
        x.verb != "ROLLBACK" && x.verb != "RECOVER") {
        return false;
    }
    if (x.verb != "RECOVER" && xid_part(sql, i, &x.gtrid)) {
        x.has_xid = true;
        std::string part;
        if (skip_comma(sql, i) && xid_part(sql, i, &x.bqual) && skip_comma(sql, i) &&
            xid_part(sql, i, &part)) {
            char *end = nullptr;
            const long long v = std::strtoll(part.c_str(), &end, 0);
            if (end != nullptr && *end == '\0') {
                x.format_id = v;
            }
        }
    }
    *out = std::move(x);
    return true;
}

Result<void> attach_transaction_probes(::server *skel, const ServerTarget &target,
                                       std::vector<bpf::Link> &links) {
    const elf::ElfFile &file = *target.file;
    for (auto [prog, prefix] : {
             std::tuple{skel->progs.server_txn_begin, "_Z11trans_beginP3THDj"},
             std::tuple{skel->progs.server_txn_commit, "_Z15ha_commit_transP3THDb"},
             std::tuple{skel->progs.server_txn_rollback, "_Z17ha_rollback_transP3THDb"},
             std::tuple{skel->progs.server_txn_end_commit, "_Z12trans_commitP3THD"},
             std::tuple{skel->progs.server_txn_end_commit, "_Z21trans_commit_implicitP3THD"},
             std::tuple{skel->progs.server_txn_end_rollback, "_Z14trans_rollbackP3THD"},
             std::tuple{skel->progs.server_txn_end_rollback, "_Z23trans_rollback_implicitP3THD"},
         }) {
        auto sym = find_by_prefix(file, prefix);
        if (!sym) {
            return Error{ENOTSUP,
                         std::string("--transactions: no ") + prefix + "... in this server build"};
        }
        auto site = entry_probe_site(file, *sym);
        if (!site) {
            return site.error();
        }
        auto l = bpf::attach_uprobe(prog, target.pid, target.exe, site->offset, prefix);
        if (!l) {
            return l.error();
        }
        links.push_back(std::move(l).value());
    }
    return {};
}

}  // namespace mysqltrace::server
