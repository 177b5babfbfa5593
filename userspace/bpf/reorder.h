// SPDX-License-Identifier: GPL-2.0-only
// Merges the records of the per-CPU rings into one timestamp order.
//
// Each CPU's ring is already almost in timestamp order (a record can only be
// overtaken by one reserved on the same CPU between its timestamp and its
// reservation), so records queue per CPU ("lanes"), a rare early arrival is
// sorted into its lane, and a small heap over the lanes' heads picks the next
// record: O(log CPUs) per record, and ordering never touches record bytes.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <queue>
#include <span>
#include <vector>

namespace mysqltrace::bpf {

class ReorderBuffer {
  public:
    explicit ReorderBuffer(size_t lanes);

    // Copies the record in. `lane` >= the lane count goes to the last lane.
    void push(size_t lane, uint64_t ts, std::span<const uint8_t> record);

    // Hands out, oldest first, every record with ts <= up_to_ts, and the
    // oldest ones beyond that while more than `max_pending` are held.
    template <typename Sink>
    void release(uint64_t up_to_ts, size_t max_pending, Sink &&sink) {
        while (!heads_.empty()) {
            const Head h = heads_.top();
            Lane &lane = lanes_[h.lane];
            if (lane.empty() || lane.front().ts != h.ts || lane.front().seq != h.seq) {
                heads_.pop();  // a stale hint: the lane's real head has its own
                continue;
            }
            if (h.ts > up_to_ts && pending_ <= max_pending) {
                break;
            }
            heads_.pop();
            Entry e = std::move(lane.front());
            lane.pop_front();
            pending_--;
            if (!lane.empty()) {
                heads_.push(Head{lane.front().ts, lane.front().seq, h.lane});
            }
            if (e.ts < last_ts_) {
                late_++;
            } else {
                last_ts_ = e.ts;
            }
            sink(std::span<const uint8_t>(e.record->data(), e.record->size()));
            free_.push_back(std::move(e.record));
        }
    }

    size_t pending() const { return pending_; }
    // Records handed out older than one handed out before them (a record
    // that arrived after the reorder window had passed its time).
    uint64_t late() const { return late_; }

  private:
    using Bytes = std::vector<uint8_t>;
    struct Entry {
        uint64_t ts;
        uint64_t seq;
        std::unique_ptr<Bytes> record;
    };
    using Lane = std::deque<Entry>;
    struct Head {
        uint64_t ts;
        uint64_t seq;
        size_t lane;
    };
    struct Later {
        bool operator()(const Head &a, const Head &b) const {
            return a.ts != b.ts ? a.ts > b.ts : a.seq > b.seq;
        }
    };

    std::vector<Lane> lanes_;
    // At least one hint per non-empty lane carries its head's key; hints
    // whose key no longer matches the head are skipped.
    std::priority_queue<Head, std::vector<Head>, Later> heads_;
    std::vector<std::unique_ptr<Bytes>> free_;
    size_t pending_ = 0;
    uint64_t seq_ = 0;
    uint64_t last_ts_ = 0;
    uint64_t late_ = 0;
};

}  // namespace mysqltrace::bpf
