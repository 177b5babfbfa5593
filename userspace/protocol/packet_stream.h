// SPDX-License-Identifier: GPL-2.0-only
// One direction of one connection: captured byte chunks in, MySQL packets
// out.
//
// Framing: 3-byte little-endian payload length + 1-byte sequence id. A
// payload of exactly 0xFFFFFF bytes continues in the next physical packet;
// the logical packet ends with the first shorter one (possibly empty), so one
// Packet can describe more than 16 MiB.
//
// Compression (CLIENT_COMPRESS or MySQL 8's CLIENT_ZSTD_COMPRESSION_ALGORITHM,
// switched on by the caller once the handshake is over): each frame has a
// 7-byte header (3-byte compressed length, 1-byte sequence, 3-byte
// uncompressed length). An uncompressed length of 0 means the frame is stored
// as is; otherwise its body is one zlib stream or one zstd frame, told apart
// by its first byte (zstd's magic starts with 0x28; zlib's header, as every
// MySQL and MariaDB build writes it, with 0x78). The frames carry a byte
// stream of ordinary packets that need not be aligned to frame boundaries, so
// decompressed bytes feed the same packet parser.
//
// Gaps: the capture may say "N more bytes existed here but were not copied".
// They are skipped by length: a packet whose payload lost bytes is delivered
// with gap set and only the bytes before the hole kept. When a gap swallows a
// header there is no way to know where the next packet starts; the stream
// then stops (synced() is false) and discards input until resync(), which
// the caller issues at a chunk boundary it has other reasons to trust (never
// by scanning for something that looks like a header). lost_at() says
// where the bytes stopped making sense, so that the caller can still count
// what followed (a 17 MiB statement whose continuation header was lost still
// has a known size once its end is known).
//
// Memory: at most max_keep payload bytes are kept per logical packet (the
// true length is always reported), plus the input of chunks not yet parsed;
// parsing is lazy so that the caller can switch compression exactly after
// the packet that ends the handshake, even if more bytes follow in the same
// chunk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace mysqltrace::protocol {

// A packet's kept payload bytes. A packet that lies whole in one chunk of
// uncompressed input (nearly every packet) is read in place, in the bytes
// the stream was fed: those stay valid until the stream is used again
// (next(), feed(), keep_pending(), desync()), and own() copies them for a
// caller that keeps the packet longer. Packets that span chunks, continue
// past 16 MiB or come out of a compressed frame are assembled in a buffer
// of the payload's own. A copy owns its bytes; a move keeps them in place.
class Payload {
  public:
    Payload() = default;
    Payload(const Payload &o) : buf_(o.begin(), o.end()) { use_buffer(); }
    Payload &operator=(const Payload &o) {
        if (this != &o) {
            buf_.assign(o.begin(), o.end());
            use_buffer();
        }
        return *this;
    }
    Payload(Payload &&o) noexcept : data_(o.data_), size_(o.size_), buf_(std::move(o.buf_)) {
        o.reset();
    }
    Payload &operator=(Payload &&o) noexcept {
        if (this != &o) {
            data_ = o.data_;
            size_ = o.size_;
            buf_ = std::move(o.buf_);
            o.reset();
        }
        return *this;
    }

    const uint8_t *data() const { return data_; }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    uint8_t operator[](size_t i) const { return data_[i]; }
    const uint8_t *begin() const { return data_; }
    const uint8_t *end() const { return data_ + size_; }
    operator std::span<const uint8_t>() const { return {data_, size_}; }

    // The bytes are read in place, not in the payload's buffer.
    bool borrowed() const { return size_ > 0 && data_ != buf_.data(); }
    // Copies bytes read in place into the payload's buffer.
    void own() {
        if (borrowed()) {
            buf_.assign(data_, data_ + size_);
            use_buffer();
        }
    }

    // For the stream that assembles it.
    void borrow(const uint8_t *p, size_t n) {
        data_ = p;
        size_ = n;
    }
    std::vector<uint8_t> &buffer() { return buf_; }
    void use_buffer() {
        data_ = buf_.data();
        size_ = buf_.size();
    }
    // No bytes; the buffer is kept.
    void reset() {
        data_ = nullptr;
        size_ = 0;
    }

  private:
    const uint8_t *data_ = nullptr;
    size_t size_ = 0;
    std::vector<uint8_t> buf_;
};

struct Packet {
    uint64_t length = 0;            // true payload length of the logical packet
    uint8_t seq = 0;                // sequence id of its first physical packet
    uint32_t physical_packets = 0;  // > 1 for packets of 16 MiB and more
    Payload payload;                // the payload's first bytes, up to the keep cap
    bool gap = false;               // the capture lost bytes of this packet
    bool length_known = true;       // false if sync was lost inside a continuation chain
    uint64_t ts_first_ns = 0;       // chunk holding its first header byte
    uint64_t ts_last_ns = 0;        // chunk that completed it
    uint64_t wire_bytes = 0;        // headers + payload, before compression

    bool truncated() const { return payload.size() < length; }
};

// A queue that keeps its buffer: a vector read from a head index, emptied
// (and filled again from its start) once everything in it was read. Unlike a
// std::deque it allocates nothing until used, and nothing more once warm.
template <typename T>
class Fifo {
  public:
    bool empty() const { return head_ == items_.size(); }
    size_t size() const { return items_.size() - head_; }
    T &front() { return items_[head_]; }
    void pop_front() {
        if (++head_ == items_.size()) {
            clear();
        }
    }
    T &emplace_back() { return items_.emplace_back(); }
    void push_back(T &&v) { items_.push_back(std::move(v)); }
    void clear() {
        items_.clear();
        head_ = 0;
    }
    auto begin() { return items_.begin() + static_cast<ptrdiff_t>(head_); }
    auto end() { return items_.end(); }
    auto begin() const { return items_.begin() + static_cast<ptrdiff_t>(head_); }
    auto end() const { return items_.end(); }

  private:
    std::vector<T> items_;
    size_t head_ = 0;
};

struct PacketStreamStats {
    uint64_t bytes = 0;          // bytes fed, including missing ones
    uint64_t gap_bytes = 0;      // bytes reported missing by the capture
    uint64_t skipped_bytes = 0;  // bytes discarded while not synced
    uint64_t packets = 0;
    uint64_t frames = 0;          // compressed frames
    uint64_t inflate_errors = 0;  // frames that did not decompress
    uint64_t sync_losses = 0;
};

class PacketStream {
  public:
    static constexpr size_t kDefaultMaxKeep = 1 << 20;

    explicit PacketStream(size_t max_keep = kDefaultMaxKeep);
    ~PacketStream();
    PacketStream(PacketStream &&) noexcept;
    PacketStream &operator=(PacketStream &&) noexcept;
    PacketStream(const PacketStream &) = delete;
    PacketStream &operator=(const PacketStream &) = delete;

    // data[0..copied) were captured; true_len - copied more bytes followed
    // on the wire but were not copied.
    void feed(const uint8_t *data, size_t copied, size_t true_len, uint64_t ts_ns);
    // The same without copying: data must stay valid until keep_pending(),
    // which copies what next() has not consumed yet. For a caller that reads
    // the packets right after feeding them, as the stage machine does.
    void feed_borrowed(const uint8_t *data, size_t copied, size_t true_len, uint64_t ts_ns);
    void keep_pending();

    // Parses just enough pending input to return the next complete packet.
    // out's payload is emptied first, also when it returns false (its
    // buffer is kept for a later packet); a packet returned may be read in
    // place (see Payload).
    bool next(Packet &out);
    // Takes a packet's payload buffer for a later packet.
    void recycle(Packet &p);

    // Takes effect at the first byte not yet returned by next().
    void set_compressed(bool on);
    bool compressed() const { return compressed_; }

    bool synced() const { return synced_; }
    // Drops pending input and partial state and stops until resync().
    void desync();
    // Drops pending input and partial state; the next byte fed starts a
    // packet (or a compressed frame) header.
    void resync();
    // Bytes fed but not yet parsed.
    size_t pending_bytes() const;
    // Bytes fed so far, gaps and skipped bytes included: the stream offset
    // of the next byte fed.
    uint64_t offset() const { return stats_.bytes; }
    // While not synced after a loss: the stream offset of the first byte no
    // packet accounts for (the header the capture swallowed, or its first
    // captured bytes). Every byte fed from there on is unframed. In a
    // compressed stream it is where the frame holding the loss began.
    // Unset after desync()/resync() and before any loss.
    std::optional<uint64_t> lost_at() const { return lost_at_; }

    const PacketStreamStats &stats() const { return stats_; }

    // A zlib and zstd decompressor (packet_stream.cpp). Closed streams give
    // theirs back to a pool of the thread's for the next one.
    struct Inflater;
    struct InflaterDone {
        void operator()(Inflater *inf) const noexcept;
    };

  private:
    struct Chunk {
        const uint8_t *data = nullptr;  // owned's, or the caller's (feed_borrowed)
        size_t size = 0;
        std::vector<uint8_t> owned;
        size_t pos = 0;
        uint64_t gap = 0;    // missing bytes after data
        uint64_t start = 0;  // stream offset of data[0]
        uint64_t ts_ns = 0;
    };

    // Packet layer. consume() stops after completing one packet so the
    // caller can look at it before the next byte is interpreted.
    size_t consume(const uint8_t *p, size_t n, uint64_t ts_ns);
    // at: stream offset of the gap's first byte.
    void consume_gap(uint64_t n, uint64_t ts_ns, uint64_t at);
    void finish_packet(uint64_t ts_ns);
    // Compressed frame layer: consumes everything it is given.
    void consume_frames(const uint8_t *p, size_t n, uint64_t ts_ns);
    void frames_gap(uint64_t n, uint64_t ts_ns, uint64_t at);
    void frame_payload(const uint8_t *p, size_t n, uint64_t ts_ns);
    void zstd_payload(const uint8_t *p, size_t n, uint64_t ts_ns);
    void end_frame(uint64_t ts_ns);
    void feed_inner(const uint8_t *p, size_t n, uint64_t ts_ns);
    // at: stream offset of the first unframed byte (in a compressed stream,
    // of the frame holding it).
    void lose_sync(uint64_t skipped, uint64_t at);
    void reset_state();

    size_t max_keep_;
    bool compressed_ = false;
    bool synced_ = true;
    std::optional<uint64_t> lost_at_;
    uint64_t in_offset_ = 0;  // stream offset of the bytes being consumed
    Fifo<Chunk> pending_;
    Fifo<Packet> ready_;
    std::vector<uint8_t> spare_;  // a payload buffer for the next packet
    PacketStreamStats stats_;

    // Packet layer state.
    uint8_t hdr_[4] = {};
    size_t hdr_have_ = 0;
    uint64_t hdr_ts_ns_ = 0;   // chunk that held the header's first byte
    uint64_t hdr_offset_ = 0;  // stream offset of the header's first byte
    bool in_payload_ = false;
    uint32_t remaining_ = 0;  // payload bytes left in the current physical packet
    bool continues_ = false;  // current physical packet has length 0xFFFFFF
    bool building_ = false;   // cur_ holds a started logical packet
    bool hole_ = false;       // cur_ lost bytes; stop appending to its payload
    Packet cur_;
    // While next() runs consume() on uncompressed bytes: where
    // finish_packet() puts the packet, instead of ready_ (then cleared).
    Packet *deliver_ = nullptr;

    // Frame layer state.
    uint8_t fhdr_[7] = {};
    uint64_t fhdr_offset_ = 0;  // stream offset of the current frame's header
    size_t fhdr_have_ = 0;
    bool in_frame_ = false;
    uint32_t frame_remaining_ = 0;
    uint32_t frame_ulen_ = 0;
    uint64_t frame_out_ = 0;
    bool frame_broken_ = false;
    bool frame_started_ = false;  // the body's first byte (which codec) was seen
    bool frame_zstd_ = false;
    std::unique_ptr<Inflater, InflaterDone> inflater_;
};

}  // namespace mysqltrace::protocol
