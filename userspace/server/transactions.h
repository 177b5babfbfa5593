// SPDX-License-Identifier: GPL-2.0-only
// Transactions (server --transactions), as performance_schema's
// events_transactions_* show them, from the records of
// bpf/server_txn.bpf.h: an explicit transaction runs from trans_begin to
// trans_commit or trans_rollback (or their _implicit forms); an autocommit
// statement that used a transactional engine is one transaction, ended by
// its own statement commit (all = 0 while no BEGIN, autocommit off or LOCK
// TABLES holds the transaction open).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "bpf/handles.h"
#include "server/statement.h"
#include "util/result.h"

struct server;

namespace mysqltrace::server {

struct ServerTarget;
struct ThdLayout;

struct Transaction {
    uint64_t thread_id = 0;
    uint32_t tid = 0;
    uint64_t event_id = 0;              // taken from the connection's numbering when it began
    uint64_t start_ns = 0, end_ns = 0;  // CLOCK_MONOTONIC
    bool committed = true;              // else rolled back
    bool autocommit = true;  // one statement's, under autocommit (else BEGIN or autocommit off)
    bool read_only = false;
    uint32_t isolation = 0;   // enum_tx_isolation
    uint64_t statements = 0;  // statements that ran inside it (not BEGIN, COMMIT or ROLLBACK)
    // An XA transaction (XA START): its XID and XA_STATE (ACTIVE, IDLE,
    // PREPARED, COMMITTED, ROLLBACK ONLY), from its XA statements; xa_state
    // "" for any other transaction.
    std::string xa_state, xid_gtrid, xid_bqual;
    int64_t xid_format_id = 1;
    // performance_schema's ISOLATION_LEVEL: "READ UNCOMMITTED" .. "SERIALIZABLE".
    const char *isolation_name() const;
};

class Transactions {
  public:
    // `layout`: the option bits that hold a transaction open; `start_shift_us`:
    // THD::start_utime's clock minus CLOCK_MONOTONIC (0 for MariaDB's);
    // `take_id`: the next EVENT_ID of a connection.
    Transactions(const ThdLayout &layout, int64_t start_shift_us,
                 std::function<uint64_t(uint64_t)> take_id);
    // False when `record` is not a transaction record; else calls `ended`
    // for a transaction it ends.
    bool decode(std::span<const uint8_t> record,
                const std::function<void(const Transaction &)> &ended);
    // A statement as it ends: the EVENT_ID of the transaction it ran in
    // (0: none), counted as one of its statements when that is still open.
    // XA statements move their transaction's XA_STATE; XA COMMIT and XA
    // ROLLBACK end it (no trans_commit/trans_rollback call does): `ended`
    // is called for it then.
    uint64_t nest(const Statement &st, const std::function<void(const Transaction &)> &ended);
    void set_start_shift_us(int64_t v) { start_shift_us_ = v; }
    uint64_t ended() const { return ended_; }

  private:
    struct Open {
        Transaction t;
        bool open = false;
    };
    struct Last {
        uint64_t event_id = 0, start_ns = 0, end_ns = 0;
    };
    uint64_t begin_mask_ = 0, multi_mask_ = 0;
    int64_t start_shift_us_ = 0;
    std::function<uint64_t(uint64_t)> take_id_;
    std::unordered_map<uint64_t, Open> open_;  // by connection
    std::unordered_map<uint64_t, Last> last_;  // the last explicit one that ended
    uint64_t ended_ = 0;
};

// An XA statement's verb and XID: "XA START 'gtrid' [, 'bqual' [, formatID]]"
// (BEGIN for START, X'..' and 0x.. strings, the words JOIN, RESUME, ONE
// PHASE, ... after it ignored). False when `sql` is no XA statement;
// *verb is START, END, PREPARE, COMMIT, ROLLBACK or RECOVER.
struct XaStatement {
    std::string verb, gtrid, bqual;
    int64_t format_id = 1;
    bool has_xid = false;
};
bool parse_xa(std::string_view sql, XaStatement *out);

// THD::start_utime's clock minus CLOCK_MONOTONIC now, in microseconds (0
// when the build's start_utime is monotonic).
int64_t start_clock_shift_us(const ThdLayout &layout);

// Attaches the transaction probes (entries of trans_begin, ha_commit_trans,
// ha_rollback_trans, trans_commit, trans_rollback and their _implicit
// forms); an error names what the build lacks.
Result<void> attach_transaction_probes(::server *skel, const ServerTarget &target,
                                       std::vector<bpf::Link> &links);

}  // namespace mysqltrace::server
