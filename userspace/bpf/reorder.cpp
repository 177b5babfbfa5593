// SPDX-License-Identifier: GPL-2.0-only
#include "bpf/reorder.h"

#include <algorithm>

namespace mysqltrace::bpf {

ReorderBuffer::ReorderBuffer(size_t lanes) : lanes_(std::max<size_t>(lanes, 1)) {}

void ReorderBuffer::push(size_t lane_index, uint64_t ts, std::span<const uint8_t> record) {
    lane_index = std::min(lane_index, lanes_.size() - 1);
    std::unique_ptr<Bytes> bytes;
    if (free_.empty()) {
        bytes = std::make_unique<Bytes>();
    } else {
        bytes = std::move(free_.back());
        free_.pop_back();
    }
    bytes->assign(record.begin(), record.end());
    Lane &lane = lanes_[lane_index];
    Entry e{ts, seq_++, std::move(bytes)};
    pending_++;
    if (lane.empty() || lane.back().ts <= ts) {
        bool new_head = lane.empty();
        lane.push_back(std::move(e));
        if (new_head) {
            heads_.push(Head{ts, lane.front().seq, lane_index});
        }
        return;
    }
    // Overtaken on its own CPU: sort it in. Later sequence numbers stay
    // behind earlier ones of the same timestamp.
    auto at = std::upper_bound(lane.begin(), lane.end(), ts,
                               [](uint64_t t, const Entry &x) { return t < x.ts; });
    bool new_head = at == lane.begin();
    lane.insert(at, std::move(e));
    if (new_head) {
        heads_.push(Head{lane.front().ts, lane.front().seq, lane_index});
    }
}

}  // namespace mysqltrace::bpf
