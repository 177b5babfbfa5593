// SPDX-License-Identifier: GPL-2.0-only
#include "server/locks.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <set>
#include <utility>

#include "mysqltrace/abi/event.h"
#include "sql/tables.h"

namespace mysqltrace::server {

namespace {

// The servers' own error numbers for the two incidents (the same in both).
constexpr uint32_t kErLockWaitTimeout = 1205;  // ER_LOCK_WAIT_TIMEOUT
constexpr uint32_t kErLockDeadlock = 1213;     // ER_LOCK_DEADLOCK
// Statements kept per connection to find a blocker's statement.
constexpr size_t kHistory = 32;

// enum_mdl_namespace and enum_mdl_type of each flavour, with the names
// performance_schema.metadata_locks gives them.
constexpr std::array kMariadbNamespaces = {"BACKUP",   "SCHEMA",    "TABLE",
                                           "FUNCTION", "PROCEDURE", "PACKAGE BODY",
                                           "TRIGGER",  "EVENT",     "USER LEVEL LOCK"};
constexpr std::array kMysqlNamespaces = {
    "GLOBAL",      "BACKUP LOCK",     "TABLESPACE",        "SCHEMA",
    "TABLE",       "FUNCTION",        "PROCEDURE",         "TRIGGER",
    "EVENT",       "COMMIT",          "USER LEVEL LOCK",   "LOCKING SERVICE",
    "SRID",        "ACL CACHE",       "COLUMN STATISTICS", "RESOURCE_GROUPS",
    "FOREIGN KEY", "CHECK CONSTRAINT"};
constexpr std::array kMariadbTypes = {"INTENTION_EXCLUSIVE",  "SHARED",
                                      "SHARED_HIGH_PRIO",     "SHARED_READ",
                                      "SHARED_WRITE",         "SHARED_UPGRADABLE",
                                      "SHARED_READ_ONLY",     "SHARED_NO_WRITE",
                                      "SHARED_NO_READ_WRITE", "EXCLUSIVE"};
constexpr std::array kMysqlTypes = {
    "INTENTION_EXCLUSIVE",  "SHARED",           "SHARED_HIGH_PRIO",
    "SHARED_READ",          "SHARED_WRITE",     "SHARED_WRITE_LOW_PRIO",
    "SHARED_UPGRADABLE",    "SHARED_READ_ONLY", "SHARED_NO_WRITE",
    "SHARED_NO_READ_WRITE", "EXCLUSIVE"};

template <size_t N>
std::string pick(const std::array<const char *, N> &names, int i) {
    return i >= 0 && static_cast<size_t>(i) < N ? names[static_cast<size_t>(i)] : "";
}

// Into `s` (its buffer reused: this runs for every statement).
void upper_start_into(std::string &s, std::string_view sql, size_t n) {
    size_t i = 0;
    while (i < sql.size() && std::isspace(static_cast<unsigned char>(sql[i]))) {
        i++;
    }
    s.clear();
    for (; i < sql.size() && s.size() < n; i++) {
        const char c = sql[i];
        s += c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;  // ASCII: keywords
    }
}

std::string upper_start(std::string_view sql, size_t n) {
    std::string s;
    upper_start_into(s, sql, n);
    return s;
}

std::string outcome_of(uint32_t status) {
    switch (status) {
        case MT_LOCK_GRANTED:
            return "GRANTED";
        case MT_LOCK_VICTIM:
            return "DEADLOCK";
        case MT_LOCK_TIMEOUT:
            return "TIMEOUT";
        case MT_LOCK_KILLED:
            return "KILLED";
        default:
            return "";
    }
}

// UPDATE, DELETE, INSERT, REPLACE and SELECT ... FOR UPDATE / FOR SHARE /
// LOCK IN SHARE MODE: the statements that leave InnoDB row locks in their
// transaction (a plain SELECT reads a snapshot).
bool takes_row_locks(const std::string &sql) {
    const std::string head = upper_start(sql, 8);
    if (head.starts_with("UPDATE") || head.starts_with("DELETE") || head.starts_with("INSERT") ||
        head.starts_with("REPLACE")) {
        return true;
    }
    if (!head.starts_with("SELECT")) {
        return false;
    }
    const std::string all = upper_start(sql, sql.size());
    return all.find("FOR UPDATE") != std::string::npos ||
           all.find("FOR SHARE") != std::string::npos ||
           all.find("LOCK IN SHARE MODE") != std::string::npos;
}

// head.starts_with(k), the first letter compared first: most statements
// (SELECT, INSERT, ...) are settled without comparing a word.
bool opens_with(std::string_view head, std::string_view k) {
    return !head.empty() && head[0] == k[0] && head.starts_with(k);
}

// Statements that commit the open transaction before they run (DDL, account
// management, table maintenance, LOCK/UNLOCK TABLES), from the first 17
// bytes upper-cased; a temporary table's CREATE or DROP does not.
bool commits_implicitly(std::string_view head) {
    const auto starts = [&](std::string_view k) { return opens_with(head, k); };
    if (starts("CREATE TEMPORARY") || starts("DROP TEMPORARY")) {
        return false;
    }
    for (std::string_view k : {"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "GRANT", "REVOKE",
                               "LOCK TABLE", "UNLOCK TABLE", "ANALYZE", "OPTIMIZE", "REPAIR"}) {
        if (starts(k)) {
            return true;
        }
    }
    return false;
}

}  // namespace

bool decode_lock_wait(std::span<const uint8_t> rec, LockWait *out) {
    mt_server_lock_wait_event ev;
    if (rec.size() < sizeof(ev)) {
        return false;
    }
    std::memcpy(&ev, rec.data(), sizeof(ev));
    if (ev.hdr.type != MT_EV_SERVER_LOCK_WAIT || ev.n_blockers > MT_MAX_LOCK_BLOCKERS ||
        ev.key_len > MT_MAX_MDL_KEY || (ev.kind != MT_LOCK_METADATA && ev.kind != MT_LOCK_ROW)) {
        return false;
    }
    out->tid = ev.hdr.tid;
    out->start_ns = ev.start_ns;
    out->end_ns = ev.hdr.ts_ns;
    out->thread_id = ev.thread_id;
    out->kind = static_cast<LockKind>(ev.kind);
    out->status = ev.status;
    out->lock_type = ev.lock_type;
    out->lock_duration = ev.lock_duration;
    out->stage = ev.stage;
    out->blockers.assign(ev.blockers, ev.blockers + ev.n_blockers);
    out->blockers_lost = ev.blockers_lost;
    out->searched = (ev.flags & MT_LOCK_SEARCHED) != 0;
    out->granter_tid = ev.granter_tid;
    out->waker_seen = (ev.flags & MT_LOCK_WAKER_SEEN) != 0;
    out->open = (ev.flags & MT_LOCK_OPEN) != 0;
    if (ev.query_len <= MT_MAX_LOCK_QUERY) {
        out->query.assign(ev.query, ev.query_len);
        out->query_cut = ev.query_len + 1u >= MT_MAX_LOCK_QUERY;
    }
    out->key.assign(ev.key, ev.key + ev.key_len);
    return true;
}

bool decode_lock_edge(std::span<const uint8_t> rec, LockEdge *out) {
    mt_server_lock_edge_event ev;
    if (rec.size() < sizeof(ev)) {
        return false;
    }
    std::memcpy(&ev, rec.data(), sizeof(ev));
    if (ev.hdr.type != MT_EV_SERVER_LOCK_EDGE) {
        return false;
    }
    out->ts_ns = ev.hdr.ts_ns;
    out->thread_id = ev.thread_id;
    out->blocker = ev.blocker;
    return true;
}

bool parse_mdl_key(std::span<const uint8_t> key, int *ns, std::string *schema, std::string *name) {
    if (key.size() < 8) {
        return false;
    }
    const size_t length = key[0] | (key[1] << 8);
    const size_t db_len = key[2] | (key[3] << 8);
    int found = -1;
    for (size_t at = 4; at <= 8; at += 2) {
        // namespace, schema, NUL, name, NUL: `length` bytes in all.
        if (length < db_len + 3 || at + length > key.size()) {
            continue;
        }
        const uint8_t *p = key.data() + at;
        if (p[0] >= 32 || p[1 + db_len] != 0 || p[length - 1] != 0 ||
            std::memchr(p + 1, 0, db_len) != nullptr ||
            std::memchr(p + 2 + db_len, 0, length - db_len - 3) != nullptr) {
            continue;
        }
        if (found >= 0) {
            return false;  // ambiguous
        }
        found = static_cast<int>(at);
    }
    if (found < 0) {
        return false;
    }
    const uint8_t *p = key.data() + found;
    *ns = p[0];
    schema->assign(reinterpret_cast<const char *>(p + 1), db_len);
    name->assign(reinterpret_cast<const char *>(p + 2 + db_len), length - db_len - 3);
    return true;
}

std::string mdl_object_type(int ns, bool mysql8) {
    return mysql8 ? pick(kMysqlNamespaces, ns) : pick(kMariadbNamespaces, ns);
}

std::string mdl_lock_type(int type, bool mysql8) {
    return mysql8 ? pick(kMysqlTypes, type) : pick(kMariadbTypes, type);
}

LockTracker::LockTracker(bool mysql8, std::function<std::string(uint64_t)> stage_name)
    : mysql8_(mysql8), stage_name_(std::move(stage_name)) {}

void LockTracker::on_record(std::span<const uint8_t> rec) {
    LockWait w;
    LockEdge e;
    if (decode_lock_wait(rec, &w)) {
        // A thread waits for one lock at a time: its end closes its open wait.
        std::erase_if(open_, [&](const LockWait &o) { return o.tid == w.tid && o.kind == w.kind; });
        if (w.open) {
            open_.push_back(std::move(w));
        } else {
            pending_.push_back(std::move(w));
        }
    } else if (decode_lock_edge(rec, &e)) {
        edges_[e.thread_id].push_back(e);
    } else {
        undecodable_++;
    }
}

Blocker LockTracker::blocker(uint64_t id, uint64_t at_ns) const {
    Blocker b;
    b.thread_id = id;
    auto it = conns_.find(id);
    if (it == conns_.end()) {
        return b;
    }
    // Its statement running when the wait began, or else its last one before.
    for (auto s = it->second.rbegin(); s != it->second.rend(); ++s) {
        if (s->start_ns <= at_ns) {
            b.sql = s->sql;
            b.trx_start_ns = s->trx_start_ns;
            break;
        }
    }
    return b;
}

LockWaitReport LockTracker::report(const LockWait &w, const Statement *waiter, uint32_t error) {
    static const std::string none;
    const std::string &waiter_sql = waiter ? waiter->text : none;
    LockWaitReport r;
    r.wait = w;
    r.waiter_sql = waiter_sql;
    r.outcome = outcome_of(w.status);
    if (r.outcome.empty() || r.outcome == "GRANTED") {
        if (error == kErLockWaitTimeout) {
            r.outcome = "TIMEOUT";
        } else if (error == kErLockDeadlock) {
            r.outcome = "DEADLOCK";
        } else if (r.outcome.empty() && !waiter_sql.empty() && error == 0) {
            r.outcome = "GRANTED";
        }
    }
    // The connection whose release granted the lock held it last.
    auto granter = conn_of_tid_.find(w.granter_tid);
    const bool granted_by =
        w.granter_tid != 0 && w.granter_tid != w.tid && granter != conn_of_tid_.end();
    std::vector<uint64_t> ids = w.blockers;
    if (w.kind == LockKind::metadata) {
        int ns = -1;
        if (parse_mdl_key(w.key, &ns, &r.schema, &r.name)) {
            r.object_type = mdl_object_type(ns, mysql8_);
        }
        r.lock_type = mdl_lock_type(w.lock_type, mysql8_);
        // enum_mdl_duration: the same in both servers.
        static constexpr std::array kDurations = {"STATEMENT", "TRANSACTION", "EXPLICIT"};
        r.lock_duration = pick(kDurations, w.lock_duration);
        if (w.stage != 0 && stage_name_) {
            r.stage = stage_name_(w.stage);
        }
        r.blockers_known = w.searched && w.blockers_lost == 0;
        if (granted_by && std::find(ids.begin(), ids.end(), granter->second) == ids.end()) {
            ids.push_back(granter->second);
        }
    } else {
        // The edges InnoDB reported for this waiter up to the wait's end.
        auto it = edges_.find(w.thread_id);
        if (it != edges_.end()) {
            auto &v = it->second;
            auto cut = std::stable_partition(
                v.begin(), v.end(), [&](const LockEdge &e) { return e.ts_ns <= w.end_ns; });
            for (auto e = v.begin(); e != cut; ++e) {
                if (std::find(ids.begin(), ids.end(), e->blocker) == ids.end()) {
                    ids.push_back(e->blocker);
                }
            }
            v.erase(v.begin(), cut);
        }
        r.blockers_known = row_blockers_ || !ids.empty();
        // InnoDB's lock object is not read: the table is the statement's,
        // when it names only one.
        sql::TableName table;
        if (waiter && sql::only_table(waiter->text, waiter->db, !waiter->text_cut, &table)) {
            r.object_type = "TABLE";
            r.schema = table.schema;
            r.name = table.name;
        }
        // Woken by another connection's thread, and granted: that thread's
        // release (a commit, a rollback) let the waiter in. Woken any other
        // way (a timeout, a deadlock victim, a kill), no blocker is known.
        if (w.waker_seen && r.outcome == "GRANTED" && granted_by &&
            std::find(ids.begin(), ids.end(), granter->second) == ids.end()) {
            ids.push_back(granter->second);
            r.blockers_known = true;
        }
    }
    for (uint64_t id : ids) {
        if (id != w.thread_id) {
            r.blockers.push_back(blocker(id, w.start_ns));
        }
    }
    if (w.kind == LockKind::row && r.blockers.empty() && !r.object_type.empty()) {
        r.possible_blockers = possible_blockers(w, r);
    }
    const std::string object =
        r.object_type.empty() ? "" : r.object_type + " " + r.schema + "." + r.name;
    for (const auto &b : r.blockers) {
        auto key = std::make_tuple(b.thread_id, w.thread_id, static_cast<uint32_t>(w.kind), object);
        auto &e = tree_[key];
        e.blocker = b.thread_id;
        e.waiter = w.thread_id;
        e.kind = w.kind;
        e.object = object;
        e.waits++;
        e.wait_ns += w.end_ns > w.start_ns ? w.end_ns - w.start_ns : 0;
        e.blocking_sql = b.sql;
        e.waiting_sql = waiter_sql;
        e.blocking_trx_start_ns = b.trx_start_ns;
        e.last_end_ns = w.end_ns;
    }
    return r;
}

std::vector<Blocker> LockTracker::in_open_transactions(
    const LockWait &w, bool latest, const std::function<bool(const Seen &)> &keep) const {
    std::vector<Blocker> out;
    for (const auto &[id, history] : conns_) {
        // Open now (the waiter's statement is the latest seen to end), and
        // since before the wait began.
        if (id == w.thread_id || history.empty()) {
            continue;
        }
        const uint64_t trx = history.back().trx_start_ns;
        if (trx == 0 || trx > w.start_ns) {
            continue;
        }
        auto in_it = [&](const Seen &s) {
            return s.trx_start_ns == trx && s.start_ns >= trx && s.start_ns <= w.start_ns &&
                   keep(s);
        };
        const Seen *found = nullptr;
        if (latest) {
            auto it = std::find_if(history.rbegin(), history.rend(), in_it);
            found = it == history.rend() ? nullptr : &*it;
        } else {
            auto it = std::find_if(history.begin(), history.end(), in_it);
            found = it == history.end() ? nullptr : &*it;
        }
        if (found != nullptr) {
            out.push_back({id, found->sql, trx});
        }
    }
    return out;
}

bool LockTracker::names_table(const Seen &s, const sql::TableName &table) {
    for (auto t : sql::statement_tables(s.sql)) {
        if (t.schema.empty()) {
            t.schema = s.db;
        }
        if (t == table) {
            return true;
        }
    }
    return false;
}

namespace {

void by_thread_id(std::vector<Blocker> &v) {
    std::sort(v.begin(), v.end(),
              [](const Blocker &a, const Blocker &b) { return a.thread_id < b.thread_id; });
}

}  // namespace

std::vector<Blocker> LockTracker::possible_blockers(const LockWait &w,
                                                    const LockWaitReport &r) const {
    const sql::TableName table{r.schema, r.name};
    auto out = in_open_transactions(
        w, false, [&](const Seen &s) { return takes_row_locks(s.sql) && names_table(s, table); });
    by_thread_id(out);
    return out;
}

void LockTracker::on_statement(const Statement &st) {
    // Its waits ended (a record lost on the way leaves none open).
    std::erase_if(open_,
                  [&](const LockWait &o) { return o.tid == st.tid && o.start_ns <= st.end_ns; });
    // Its waits, oldest first; the last one of a statement that failed with
    // a timeout or a deadlock ended that way.
    std::vector<LockWait> mine;
    std::erase_if(pending_, [&](LockWait &w) {
        const bool ours = w.thread_id != 0 ? w.thread_id == st.thread_id : w.tid == st.tid;
        if (ours && w.end_ns <= st.end_ns) {
            mine.push_back(std::move(w));
            return true;
        }
        return false;
    });
    std::sort(mine.begin(), mine.end(),
              [](const LockWait &a, const LockWait &b) { return a.end_ns < b.end_ns; });
    for (size_t i = 0; i < mine.size(); i++) {
        if (mine[i].thread_id == 0) {
            mine[i].thread_id = st.thread_id;
        }
        const bool last = i + 1 == mine.size();
        ready_.push_back(report(mine[i], &st, last ? st.error : 0));
    }
    if (st.error == kErLockWaitTimeout || st.error == kErLockDeadlock) {
        incidents_.push_back({st.error == kErLockDeadlock ? "deadlock" : "lock_wait_timeout",
                              st.thread_id, st.end_ns, st.error, st.text});
    }
    // What the connection holds from now on.
    conn_of_tid_[st.tid] = st.thread_id;
    auto &h = conns_[st.thread_id];
    uint64_t trx = h.empty() ? 0 : h.back().trx_start_ns;
    upper_start_into(head_, st.text, 17);
    const std::string_view head = head_;
    if (opens_with(head, "BEGIN") || opens_with(head, "START TRANSACTION")) {
        trx = st.start_ns;
    } else if ((opens_with(head, "COMMIT") || opens_with(head, "ROLLBACK")) &&
               upper_start(st.text, 64).find(" TO ") == std::string::npos) {
        trx = 0;
    } else if (st.error == kErLockDeadlock || commits_implicitly(head)) {
        trx = 0;  // the victim's transaction is rolled back; DDL commits
    }
    // The oldest one's strings take the new one's (their buffers reused).
    Seen seen;
    if (h.size() == kHistory) {
        seen = std::move(h.front());
        h.pop_front();
    }
    seen.start_ns = st.start_ns;
    seen.sql.assign(st.text);
    seen.trx_start_ns = trx;
    seen.db.assign(st.db);
    seen.error = st.error;
    h.push_back(std::move(seen));
}

std::vector<LockWaitReport> LockTracker::take_waits(bool all) {
    if (all) {
        std::sort(pending_.begin(), pending_.end(),
                  [](const LockWait &a, const LockWait &b) { return a.end_ns < b.end_ns; });
        for (const auto &w : pending_) {
            ready_.push_back(report(w, nullptr, 0));
        }
        pending_.clear();
    }
    return std::exchange(ready_, {});
}

std::vector<LockIncident> LockTracker::take_incidents() {
    return std::exchange(incidents_, {});
}

std::vector<uint64_t> LockTracker::fast_path_holders(const LockWait &w, const std::string &schema,
                                                     const std::string &name) const {
    // What the request conflicts with among the locks a statement keeps to
    // its transaction's end: any (SHARED_READ, SHARED_WRITE) for EXCLUSIVE
    // and SHARED_NO_READ_WRITE; SHARED_WRITE (a write, a locking read) for
    // SHARED_NO_WRITE and SHARED_READ_ONLY; nothing else is a fast-path lock.
    const std::string type = mdl_lock_type(w.lock_type, mysql8_);
    const bool all = type == "EXCLUSIVE" || type == "SHARED_NO_READ_WRITE";
    const bool writes = type == "SHARED_NO_WRITE" || type == "SHARED_READ_ONLY";
    std::vector<uint64_t> out;
    if (!all && !writes) {
        return out;
    }
    const sql::TableName table{schema, name};
    // A statement that failed may not have opened the table.
    for (const auto &b : in_open_transactions(w, false, [&](const Seen &st) {
             return st.error == 0 && (!writes || takes_row_locks(st.sql)) && names_table(st, table);
         })) {
        out.push_back(b.thread_id);
    }
    return out;
}

std::vector<Blocker> LockTracker::row_lockers(const LockWait &w) const {
    auto out =
        in_open_transactions(w, true, [](const Seen &st) { return takes_row_locks(st.sql); });
    by_thread_id(out);
    return out;
}

std::vector<LiveLockWait> LockTracker::live() const {
    std::vector<const LockWait *> waits;
    for (const auto &w : open_) {
        waits.push_back(&w);
    }
    std::sort(waits.begin(), waits.end(), [](const LockWait *a, const LockWait *b) {
        return std::tie(a->start_ns, a->thread_id) < std::tie(b->start_ns, b->thread_id);
    });
    std::vector<LiveLockWait> out;
    for (const LockWait *w : waits) {
        LiveLockWait base;
        base.waiter = w->thread_id;
        base.kind = w->kind;
        base.start_ns = w->start_ns;
        base.waiter_sql = w->query;
        std::vector<uint64_t> ids = w->blockers;
        std::vector<Blocker> possible;
        if (w->kind == LockKind::metadata) {
            int ns = -1;
            std::string schema, name;
            if (parse_mdl_key(w->key, &ns, &schema, &name)) {
                base.object = mdl_object_type(ns, mysql8_) + " " + schema + "." + name;
                if (mysql8_ && base.object.starts_with("TABLE ")) {
                    for (uint64_t id : fast_path_holders(*w, schema, name)) {
                        if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
                            ids.push_back(id);
                        }
                    }
                }
            }
            base.lock_type = mdl_lock_type(w->lock_type, mysql8_);
            if (w->stage != 0 && stage_name_) {
                base.stage = stage_name_(w->stage);
            }
        } else if (auto it = edges_.find(w->thread_id);
                   row_blockers_ || (it != edges_.end() && !it->second.empty())) {
            // Edges: MySQL's reported ones, MariaDB's trx->lock.wait_trx
            // (or its thd_rpl_deadlock_check ones, with a binary log).
            if (it != edges_.end()) {
                // Those not yet taken by an ended wait's report: this
                // wait's, reported when it was queued or since.
                for (const auto &e : it->second) {
                    if (std::find(ids.begin(), ids.end(), e.blocker) == ids.end()) {
                        ids.push_back(e.blocker);
                    }
                }
            }
        } else {
            possible = row_lockers(*w);
        }
        if (w->kind == LockKind::row) {
            // The one table the waiting statement names, its schema the
            // connection's last one seen.
            auto c = conns_.find(w->thread_id);
            const std::string db =
                c != conns_.end() && !c->second.empty() ? c->second.back().db : "";
            sql::TableName table;
            if (sql::only_table(w->query, db, !w->query_cut, &table) && !table.schema.empty()) {
                base.object = "TABLE " + table.schema + "." + table.name;
            }
        }
        std::sort(ids.begin(), ids.end());
        const size_t first = out.size();
        for (uint64_t id : ids) {
            if (id != 0 && id != w->thread_id) {
                out.push_back(base);
                out.back().blocker = blocker(id, UINT64_MAX);
            }
        }
        for (const auto &b : possible) {
            out.push_back(base);
            out.back().blocker = b;
            out.back().possible = true;
        }
        if (out.size() == first) {
            out.push_back(base);
        }
    }
    return out;
}

void LockTracker::prune(uint64_t before_ns) {
    std::erase_if(conns_, [&](const auto &c) {
        return c.second.empty() ||
               (c.second.back().trx_start_ns == 0 && c.second.back().start_ns < before_ns);
    });
    std::erase_if(conn_of_tid_, [&](const auto &t) { return !conns_.contains(t.second); });
    for (auto &[id, v] : edges_) {
        std::erase_if(v, [&](const LockEdge &e) { return e.ts_ns < before_ns; });
    }
    std::erase_if(edges_, [](const auto &e) { return e.second.empty(); });
    tree_.clear();
}

std::vector<BlockingEdge> LockTracker::tree() const {
    std::set<uint64_t> waiters;
    std::vector<BlockingEdge> out;
    for (const auto &[k, e] : tree_) {
        waiters.insert(e.waiter);
        out.push_back(e);
    }
    // Roots (blockers that waited for no one) first, then by blocker.
    std::stable_sort(out.begin(), out.end(), [&](const BlockingEdge &a, const BlockingEdge &b) {
        const bool ra = !waiters.contains(a.blocker), rb = !waiters.contains(b.blocker);
        if (ra != rb) {
            return ra;
        }
        return std::tie(a.blocker, a.waiter) < std::tie(b.blocker, b.waiter);
    });
    return out;
}

}  // namespace mysqltrace::server
