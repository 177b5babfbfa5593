// SPDX-License-Identifier: GPL-2.0-only
#include "protocol/packet_stream.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>

#include "protocol/byte_reader.h"
#include "protocol/constants.h"

namespace mysqltrace::protocol {

// One decompressor per stream, reset at every frame: each frame is a
// complete zlib stream or zstd frame of its own.
struct PacketStream::Inflater {
    z_stream zs{};
    bool initialised = false;
    ZSTD_DCtx *zd = nullptr;  // created at the first zstd frame
    bool done = false;        // the frame's zlib stream or zstd frame has ended

    Inflater() { initialised = inflateInit(&zs) == Z_OK; }
    ~Inflater() {
        if (initialised) {
            inflateEnd(&zs);
        }
        ZSTD_freeDCtx(zd);
    }
    Inflater(const Inflater &) = delete;
    Inflater &operator=(const Inflater &) = delete;
    void reset() {
        done = false;
        if (initialised) {
            inflateReset(&zs);
        }
        if (zd != nullptr) {
            ZSTD_DCtx_reset(zd, ZSTD_reset_session_only);
        }
    }
    bool start_zstd() {
        if (zd == nullptr) {
            zd = ZSTD_createDCtx();
        }
        return zd != nullptr;
    }
};

namespace {
// First byte of a zstd frame's magic number (0xFD2FB528, little-endian).
constexpr uint8_t kZstdMagic0 = 0x28;

// Up to N objects a thread's streams no longer use, kept for its next
// streams. Objects given back after the thread's pool is gone (by streams
// destroyed later, static ones) are not kept: the caller frees them.
template <typename T, size_t N>
class Spares {
  public:
    // One kept object moved into out; false when none is kept.
    static bool take(T &out) {
        alive() = true;
        Pool &p = pool();
        if (p.n == 0) {
            return false;
        }
        out = std::move(p.kept[--p.n]);
        return true;
    }
    // v moved into the pool; false when there is no room (v is untouched).
    static bool give(T &v) {
        if (!alive() || pool().n == N) {
            return false;
        }
        Pool &p = pool();
        p.kept[p.n++] = std::move(v);
        return true;
    }

  private:
    struct Pool {
        T kept[N]{};
        size_t n = 0;
        ~Pool() { alive() = false; }
    };
    // Trivially destructible, so it can be read after the pool is gone.
    static bool &alive() {
        thread_local bool a = false;
        return a;
    }
    static Pool &pool() {
        thread_local Pool p;
        return p;
    }
};

// Decompressors of closed streams, kept for the next compressed connection
// the thread decodes: setting up a zlib and a zstd context (tens of KiB each)
// costs more than decoding a short session. Every frame resets them.
using InflaterSpares = Spares<std::unique_ptr<PacketStream::Inflater>, 8>;

// Payload buffers no stream holds any more (of closed streams, and those a
// stream had no room for), kept for the thread's next packets: a short
// connection then allocates none. Big buffers are not kept.
constexpr size_t kBufferMax = 16384;
// What a new buffer starts with: most packets fit, so it is not grown byte
// range by byte range.
constexpr size_t kBufferStart = 256;
using BufferSpares = Spares<std::vector<uint8_t>, 32>;

// Takes v's buffer into the pool if there is room, else frees it.
void give_buffer(std::vector<uint8_t> &v) {
    if (v.capacity() > 0 && v.capacity() <= kBufferMax) {
        v.clear();
        BufferSpares::give(v);
    }
    std::vector<uint8_t>().swap(v);
}

// An empty buffer for v, which has none.
void take_buffer(std::vector<uint8_t> &v) {
    if (!BufferSpares::take(v)) {
        v.reserve(kBufferStart);
    }
}

PacketStream::Inflater *take_inflater() {
    std::unique_ptr<PacketStream::Inflater> inf;
    if (!InflaterSpares::take(inf)) {
        inf = std::make_unique<PacketStream::Inflater>();
    }
    return inf.release();
}

}  // namespace

void PacketStream::InflaterDone::operator()(Inflater *inf) const noexcept {
    std::unique_ptr<Inflater> owned(inf);
    InflaterSpares::give(owned);  // freed here when not kept
}

PacketStream::PacketStream(size_t max_keep) : max_keep_(max_keep) {}
PacketStream::~PacketStream() {
    give_buffer(spare_);
    give_buffer(cur_.payload.buffer());
}
PacketStream::PacketStream(PacketStream &&) noexcept = default;
PacketStream &PacketStream::operator=(PacketStream &&) noexcept = default;

void PacketStream::feed(const uint8_t *data, size_t copied, size_t true_len, uint64_t ts_ns) {
    feed_borrowed(data, copied, true_len, ts_ns);
    keep_pending();
}

void PacketStream::feed_borrowed(const uint8_t *data, size_t copied, size_t true_len,
                                 uint64_t ts_ns) {
    if (copied > true_len) {
        true_len = copied;
    }
    const uint64_t start = stats_.bytes;
    stats_.bytes += true_len;
    stats_.gap_bytes += true_len - copied;
    if (!synced_) {
        stats_.skipped_bytes += true_len;
        return;
    }
    Chunk &c = pending_.emplace_back();
    c.data = data;
    c.size = copied;
    c.gap = true_len - copied;
    c.start = start;
    c.ts_ns = ts_ns;
}

void PacketStream::keep_pending() {
    for (auto &c : pending_) {
        if (c.data != c.owned.data()) {
            c.owned.assign(c.data, c.data + c.size);
            c.data = c.owned.data();
        }
    }
}

size_t PacketStream::pending_bytes() const {
    size_t n = 0;
    for (const auto &c : pending_) {
        n += c.size - c.pos;
    }
    return n;
}

void PacketStream::recycle(Packet &p) {
    p.payload.reset();
    std::vector<uint8_t> &buf = p.payload.buffer();
    if (buf.capacity() == 0) {
        return;
    }
    // Big buffers are not kept: a stream holds at most a few KiB spare.
    if (buf.capacity() > spare_.capacity() && buf.capacity() <= kBufferMax) {
        spare_.swap(buf);
        if (buf.capacity() == 0) {
            return;  // spare_ had none: the usual case, nothing to give back
        }
    }
    give_buffer(buf);
}

bool PacketStream::next(Packet &out) {
    // Its bytes may be read in place in a chunk about to be dropped.
    out.payload.reset();
    while (true) {
        if (!ready_.empty()) {
            recycle(out);
            out = std::move(ready_.front());
            ready_.pop_front();
            ++stats_.packets;
            return true;
        }
        if (pending_.empty()) {
            return false;
        }
        Chunk &c = pending_.front();
        if (!synced_) {
            stats_.skipped_bytes += (c.size - c.pos) + c.gap;
            pending_.pop_front();
            continue;
        }
        if (c.pos < c.size) {
            const uint8_t *p = c.data + c.pos;
            size_t n = c.size - c.pos;
            in_offset_ = c.start + c.pos;
            if (compressed_) {
                consume_frames(p, n, c.ts_ns);
                c.pos += n;
            } else {
                // A packet the bytes complete goes straight to out, not
                // through ready_ (consume() stops after one).
                deliver_ = &out;
                c.pos += consume(p, n, c.ts_ns);
                if (deliver_ == nullptr) {
                    ++stats_.packets;
                    return true;
                }
                deliver_ = nullptr;
            }
            continue;
        }
        if (c.gap > 0) {
            uint64_t g = c.gap;
            c.gap = 0;
            uint64_t at = c.start + c.size;
            if (compressed_) {
                frames_gap(g, c.ts_ns, at);
            } else {
                consume_gap(g, c.ts_ns, at);
            }
            continue;
        }
        pending_.pop_front();
    }
}

void PacketStream::set_compressed(bool on) {
    if (on == compressed_) {
        return;
    }
    compressed_ = on;
    in_frame_ = false;
    fhdr_have_ = 0;
    if (on && !inflater_) {
        inflater_.reset(take_inflater());
    }
}

void PacketStream::reset_state() {
    hdr_have_ = 0;
    in_payload_ = false;
    remaining_ = 0;
    continues_ = false;
    building_ = false;
    hole_ = false;
    cur_ = Packet{};
    fhdr_have_ = 0;
    in_frame_ = false;
    frame_remaining_ = 0;
    frame_ulen_ = 0;
    frame_out_ = 0;
    frame_broken_ = false;
}

void PacketStream::desync() {
    for (const auto &c : pending_) {
        stats_.skipped_bytes += (c.size - c.pos) + c.gap;
    }
    pending_.clear();
    ready_.clear();
    reset_state();
    synced_ = false;
    lost_at_.reset();
}

void PacketStream::resync() {
    for (const auto &c : pending_) {
        stats_.skipped_bytes += (c.size - c.pos) + c.gap;
    }
    pending_.clear();
    ready_.clear();
    reset_state();
    synced_ = true;
    lost_at_.reset();
}

void PacketStream::lose_sync(uint64_t skipped, uint64_t at) {
    stats_.skipped_bytes += skipped;
    lost_at_ = at;
    ++stats_.sync_losses;
    if (building_) {
        // What was assembled so far is still worth reporting, but its end
        // (and so its length) is unknown.
        cur_.gap = true;
        cur_.length_known = false;
        cur_.payload.use_buffer();
        ready_.push_back(std::move(cur_));
    }
    // Input still queued is counted as skipped by next(); it must not be
    // freed here because next() may be iterating over it.
    reset_state();
    synced_ = false;
}

size_t PacketStream::consume(const uint8_t *p, size_t n, uint64_t ts_ns) {
    size_t i = 0;
    while (i < n) {
        if (!in_payload_) {
            const uint8_t *hdr = p + i;
            if (hdr_have_ == 0 && n - i >= 4) {
                // The whole header in this chunk (nearly always): read in
                // place, without a copy of variable size.
                hdr_ts_ns_ = ts_ns;
                i += 4;
            } else {
                if (hdr_have_ == 0) {
                    hdr_ts_ns_ = ts_ns;
                    hdr_offset_ = in_offset_ + i;
                }
                size_t take = std::min(n - i, 4 - hdr_have_);
                std::memcpy(hdr_ + hdr_have_, p + i, take);
                hdr_have_ += take;
                i += take;
                if (hdr_have_ < 4) {
                    break;
                }
                hdr_have_ = 0;
                hdr = hdr_;
            }
            uint32_t len = le24(hdr);
            if (!building_ && deliver_ != nullptr && len != kMaxPacketPayload && n - i >= len) {
                // The whole packet is in this chunk, which outlives the
                // caller's look at it: read in place, not copied.
                cur_.length = len;
                cur_.seq = hdr[3];
                cur_.physical_packets = 1;
                cur_.payload.borrow(p + i, std::min<size_t>(len, max_keep_));
                cur_.gap = false;
                cur_.length_known = true;
                cur_.ts_first_ns = hdr_ts_ns_;
                cur_.wire_bytes = 4 + static_cast<uint64_t>(len);
                i += len;
                finish_packet(ts_ns);
                return i;
            }
            if (!building_) {
                // Every field set here: cur_ was moved out by finish_packet()
                // (its payload is empty) or reset.
                cur_.length = 0;
                cur_.seq = hdr[3];
                cur_.physical_packets = 0;
                std::vector<uint8_t> &buf = cur_.payload.buffer();
                buf.swap(spare_);
                buf.clear();
                if (buf.capacity() == 0) {
                    take_buffer(buf);
                }
                cur_.gap = false;
                cur_.length_known = true;
                cur_.ts_first_ns = hdr_ts_ns_;
                cur_.wire_bytes = 0;
                building_ = true;
                hole_ = false;
            }
            cur_.physical_packets++;
            cur_.length += len;
            cur_.wire_bytes += 4 + static_cast<uint64_t>(len);
            cur_.ts_last_ns = ts_ns;
            remaining_ = len;
            continues_ = len == kMaxPacketPayload;
            in_payload_ = true;
            if (len == 0) {
                in_payload_ = false;
                if (!continues_) {
                    finish_packet(ts_ns);
                    return i;
                }
            }
            continue;
        }
        size_t take = std::min<size_t>(n - i, remaining_);
        std::vector<uint8_t> &buf = cur_.payload.buffer();
        if (!hole_ && buf.size() < max_keep_) {
            size_t keep = std::min(take, max_keep_ - buf.size());
            buf.insert(buf.end(), p + i, p + i + keep);
        }
        i += take;
        remaining_ -= static_cast<uint32_t>(take);
        cur_.ts_last_ns = ts_ns;
        if (remaining_ == 0) {
            in_payload_ = false;
            if (!continues_) {
                finish_packet(ts_ns);
                return i;
            }
        }
    }
    return i;
}

void PacketStream::finish_packet(uint64_t ts_ns) {
    cur_.ts_last_ns = ts_ns;
    if (building_) {
        cur_.payload.use_buffer();  // not read in place
    }
    if (deliver_ != nullptr) {
        recycle(*deliver_);
        *deliver_ = std::move(cur_);
        deliver_ = nullptr;
    } else {
        ready_.push_back(std::move(cur_));
    }
    building_ = false;
    hole_ = false;
}

void PacketStream::consume_gap(uint64_t n, uint64_t ts_ns, uint64_t at) {
    if (in_payload_) {
        uint64_t take = std::min<uint64_t>(n, remaining_);
        remaining_ -= static_cast<uint32_t>(take);
        n -= take;
        at += take;
        cur_.gap = true;
        hole_ = true;
        cur_.ts_last_ns = ts_ns;
        if (remaining_ == 0) {
            in_payload_ = false;
            if (!continues_) {
                finish_packet(ts_ns);
            }
        }
    }
    if (n > 0) {
        // The captured bytes of a header cut by the gap are lost with it.
        uint64_t partial = 0;
        if (compressed_) {
            at = fhdr_offset_;
        } else if (hdr_have_ > 0) {
            partial = hdr_have_;
            at = hdr_offset_;
        }
        lose_sync(n + partial, at);
    }
}

void PacketStream::consume_frames(const uint8_t *p, size_t n, uint64_t ts_ns) {
    size_t i = 0;
    while (i < n && synced_) {
        if (!in_frame_) {
            if (fhdr_have_ == 0) {
                fhdr_offset_ = in_offset_ + i;
            }
            size_t take = std::min(n - i, 7 - fhdr_have_);
            std::memcpy(fhdr_ + fhdr_have_, p + i, take);
            fhdr_have_ += take;
            i += take;
            if (fhdr_have_ < 7) {
                break;
            }
            fhdr_have_ = 0;
            frame_remaining_ = le24(fhdr_);
            frame_ulen_ = le24(fhdr_ + 4);
            frame_out_ = 0;
            frame_broken_ = false;
            frame_started_ = false;
            frame_zstd_ = false;
            in_frame_ = true;
            ++stats_.frames;
            if (frame_ulen_ != 0) {
                inflater_->reset();
                if (!inflater_->initialised) {
                    frame_broken_ = true;
                }
            }
            if (frame_remaining_ == 0) {
                end_frame(ts_ns);
            }
            continue;
        }
        size_t take = std::min<size_t>(n - i, frame_remaining_);
        frame_payload(p + i, take, ts_ns);
        i += take;
        frame_remaining_ -= static_cast<uint32_t>(take);
        if (frame_remaining_ == 0 && synced_) {
            end_frame(ts_ns);
        }
    }
    if (!synced_) {
        stats_.skipped_bytes += n - i;
    }
}

void PacketStream::frame_payload(const uint8_t *p, size_t n, uint64_t ts_ns) {
    if (frame_broken_ || n == 0) {
        return;
    }
    if (frame_ulen_ == 0) {
        frame_out_ += n;
        feed_inner(p, n, ts_ns);
        return;
    }
    Inflater &inf = *inflater_;
    if (inf.done) {
        return;
    }
    if (!frame_started_) {
        frame_started_ = true;
        frame_zstd_ = p[0] == kZstdMagic0;
        if (frame_zstd_ && !inf.start_zstd()) {
            frame_broken_ = true;
            return;
        }
    }
    if (frame_zstd_) {
        zstd_payload(p, n, ts_ns);
        return;
    }
    uint8_t out[16384];
    inf.zs.next_in = const_cast<Bytef *>(p);
    inf.zs.avail_in = static_cast<uInt>(n);
    while (inf.zs.avail_in > 0 && !inf.done) {
        inf.zs.next_out = out;
        inf.zs.avail_out = sizeof(out);
        int rc = inflate(&inf.zs, Z_NO_FLUSH);
        size_t produced = sizeof(out) - inf.zs.avail_out;
        // Never let a corrupt frame produce more than it announced.
        size_t allowed = frame_out_ < frame_ulen_ ? frame_ulen_ - frame_out_ : 0;
        size_t use = std::min(produced, allowed);
        frame_out_ += use;
        if (use > 0) {
            feed_inner(out, use, ts_ns);
        }
        if (!synced_) {
            return;
        }
        if (rc == Z_STREAM_END) {
            inf.done = true;
        } else if (rc != Z_OK || produced > allowed) {
            frame_broken_ = true;
            ++stats_.inflate_errors;
            return;
        } else if (produced == 0 && inf.zs.avail_in > 0 && inf.zs.avail_out > 0) {
            frame_broken_ = true;
            ++stats_.inflate_errors;
            return;
        }
    }
}

void PacketStream::zstd_payload(const uint8_t *p, size_t n, uint64_t ts_ns) {
    Inflater &inf = *inflater_;
    uint8_t out[16384];
    ZSTD_inBuffer in{p, n, 0};
    while (in.pos < in.size && !inf.done) {
        ZSTD_outBuffer o{out, sizeof(out), 0};
        size_t rc = ZSTD_decompressStream(inf.zd, &o, &in);
        // Never let a corrupt frame produce more than it announced.
        size_t allowed = frame_out_ < frame_ulen_ ? frame_ulen_ - frame_out_ : 0;
        size_t use = std::min(o.pos, allowed);
        frame_out_ += use;
        if (use > 0) {
            feed_inner(out, use, ts_ns);
        }
        if (!synced_) {
            return;
        }
        if (ZSTD_isError(rc) || o.pos > allowed) {
            frame_broken_ = true;
            ++stats_.inflate_errors;
            return;
        }
        if (rc == 0) {
            inf.done = true;
        } else if (o.pos == 0 && in.pos < in.size) {
            frame_broken_ = true;
            ++stats_.inflate_errors;
            return;
        }
    }
}

void PacketStream::end_frame(uint64_t ts_ns) {
    in_frame_ = false;
    if (frame_ulen_ != 0 && frame_out_ < frame_ulen_ && synced_) {
        // The frame did not yield what it announced (lost or corrupt bytes):
        // the packet layer sees the shortfall as a gap of known size.
        if (!frame_broken_) {
            ++stats_.inflate_errors;
        }
        uint64_t missing = frame_ulen_ - frame_out_;
        frame_out_ = frame_ulen_;
        consume_gap(missing, ts_ns, fhdr_offset_);
    }
}

void PacketStream::frames_gap(uint64_t n, uint64_t ts_ns, uint64_t at) {
    if (in_frame_) {
        uint64_t take = std::min<uint64_t>(n, frame_remaining_);
        frame_remaining_ -= static_cast<uint32_t>(take);
        n -= take;
        at += take;
        if (frame_ulen_ == 0) {
            frame_out_ += take;
            consume_gap(take, ts_ns, at);
        } else {
            frame_broken_ = true;
        }
        if (frame_remaining_ == 0 && synced_) {
            end_frame(ts_ns);
        }
    }
    if (n > 0 && synced_) {
        uint64_t partial = fhdr_have_;
        lose_sync(n + partial, partial > 0 ? fhdr_offset_ : at);
    }
}

void PacketStream::feed_inner(const uint8_t *p, size_t n, uint64_t ts_ns) {
    size_t i = 0;
    while (i < n && synced_) {
        i += consume(p + i, n - i, ts_ns);
    }
}

}  // namespace mysqltrace::protocol
