// SPDX-License-Identifier: GPL-2.0-only
#include "bpf/reorder.h"

#include <algorithm>
#include <cstring>

namespace mysqltrace::bpf {

ReorderBuffer::ReorderBuffer(size_t lanes) : lanes_(std::max<size_t>(lanes, 1)) {}

ReorderBuffer::~ReorderBuffer() {
    for (auto &lane : lanes_) {
        for (auto &e : lane) {
            unref(e.chunk);
        }
    }
    delete current_;
    for (Chunk *c : free_chunks_) {
        delete c;
    }
}

uint8_t *ReorderBuffer::place(size_t n, Chunk *&chunk) {
    if (n > kChunkBytes / 4) {
        // A large record (a long statement text): a chunk of its own.
        chunk = new Chunk{std::make_unique<uint8_t[]>(n), n, n, 1};
        return chunk->data.get();
    }
    if (current_ != nullptr && current_->live == 0) {
        current_->used = 0;  // everything in it was handed out
    }
    if (current_ == nullptr || current_->used + n > current_->size) {
        // The full chunk goes when its last record does (unref).
        if (free_chunks_.empty()) {
            current_ = new Chunk{std::make_unique<uint8_t[]>(kChunkBytes), kChunkBytes, 0, 0};
        } else {
            current_ = free_chunks_.back();
            free_chunks_.pop_back();
        }
    }
    chunk = current_;
    uint8_t *at = current_->data.get() + current_->used;
    current_->used += n;
    current_->live++;
    return at;
}

void ReorderBuffer::unref(Chunk *chunk) {
    if (--chunk->live != 0 || chunk == current_) {
        return;
    }
    if (chunk->size == kChunkBytes && free_chunks_.size() < kFreeChunks) {
        chunk->used = 0;
        free_chunks_.push_back(chunk);
    } else {
        delete chunk;
    }
}

void ReorderBuffer::push(size_t lane_index, uint64_t ts, std::span<const uint8_t> record) {
    lane_index = std::min(lane_index, lanes_.size() - 1);
    Chunk *chunk = nullptr;
    uint8_t *bytes = place(record.size(), chunk);
    if (!record.empty()) {
        std::memcpy(bytes, record.data(), record.size());
    }
    Lane &lane = lanes_[lane_index];
    Entry e{ts, seq_++, chunk, bytes, record.size()};
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
