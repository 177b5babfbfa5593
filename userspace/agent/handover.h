// SPDX-License-Identifier: GPL-2.0-only
// Which of a server's two attachments writes a statement while both are in:
// a reload attaches the new settings (the heir) before it detaches the old
// (Agent::reattach), and each statement that ends meanwhile must be written
// once. Each probe of a hit takes its own timestamp, one after the other, so
// a cut by time alone loses or doubles the statement whose two timestamps
// fall on either side of it. The attachment before writes what ended before
// the cut and records here the last query id it wrote per connection; the
// heir writes a connection's statements after that one. A connection's
// statements run one after another, each with a query id of its own.
#pragma once

#include <cstdint>
#include <unordered_map>

namespace mysqltrace::agent {

class Handover {
  public:
    // The attachment before wrote this statement of connection `thread_id`.
    void wrote(uint64_t thread_id, uint64_t query_id);
    // Whether the heir writes a statement: its connection's after the last
    // the attachment before wrote, or, without a query id (a build whose
    // query ids are not known), one that ended at or after `cut_ns`.
    bool heir_writes(uint64_t thread_id, uint64_t query_id, uint64_t end_ns, uint64_t cut_ns) const;
    bool empty() const { return last_.empty(); }
    void clear() { last_.clear(); }

  private:
    std::unordered_map<uint64_t, uint64_t> last_;  // by THD::thread_id
};

}  // namespace mysqltrace::agent
