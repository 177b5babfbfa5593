// SPDX-License-Identifier: GPL-2.0-only
// Merges the records of the per-CPU rings into one timestamp order.
//
// Each CPU's ring is already almost in timestamp order (a record can only be
// overtaken by one reserved on the same CPU between its timestamp and its
// reservation), so records queue per CPU ("lanes"), a rare early arrival is
// sorted into its lane, and a small heap over the lanes' heads picks the next
// record: O(log CPUs) per record, and ordering never touches record bytes.
//
// Record bytes are copied into 64 KiB chunks one after another, not into a
// buffer of their own: at ~100,000 records/s a heap buffer per record was
// a cache miss per record on its way in (the recycled buffer's header) and
// another on its way out. A chunk goes back to a small free list once its
// last record is handed out.
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
    ~ReorderBuffer();
    ReorderBuffer(const ReorderBuffer &) = delete;
    ReorderBuffer &operator=(const ReorderBuffer &) = delete;

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
            sink(std::span<const uint8_t>(e.data, e.size));
            unref(e.chunk);
        }
    }

    size_t pending() const { return pending_; }
    // Records handed out older than one handed out before them (a record
    // that arrived after the reorder window had passed its time).
    uint64_t late() const { return late_; }

  private:
    struct Chunk {
        std::unique_ptr<uint8_t[]> data;
        size_t size = 0;
        size_t used = 0;
        size_t live = 0;  // records in it not handed out yet
    };
    struct Entry {
        uint64_t ts;
        uint64_t seq;
        Chunk *chunk;
        const uint8_t *data;
        size_t size;
    };
    static constexpr size_t kChunkBytes = 64 << 10;
    static constexpr size_t kFreeChunks = 16;  // kept for reuse (1 MiB)
    // Room for `n` bytes, and the chunk that holds it (its live count raised).
    uint8_t *place(size_t n, Chunk *&chunk);
    // A record of `chunk` was handed out.
    void unref(Chunk *chunk);
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
    Chunk *current_ = nullptr;  // being filled
    std::vector<Chunk *> free_chunks_;
    size_t pending_ = 0;
    uint64_t seq_ = 0;
    uint64_t last_ts_ = 0;
    uint64_t late_ = 0;
};

}  // namespace mysqltrace::bpf
