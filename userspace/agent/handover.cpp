// SPDX-License-Identifier: GPL-2.0-only
#include "agent/handover.h"

#include <algorithm>

namespace mysqltrace::agent {

void Handover::wrote(uint64_t thread_id, uint64_t query_id) {
    uint64_t &last = last_[thread_id];
    last = std::max(last, query_id);
}

bool Handover::heir_writes(uint64_t thread_id, uint64_t query_id, uint64_t end_ns,
                           uint64_t cut_ns) const {
    if (query_id == 0) {
        return end_ns >= cut_ns;
    }
    auto it = last_.find(thread_id);
    return it == last_.end() || query_id > it->second;
}

}  // namespace mysqltrace::agent
