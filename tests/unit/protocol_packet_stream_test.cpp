// SPDX-License-Identifier: GPL-2.0-only
// Packet reassembly: framing, 16 MiB continuation, compression, gaps.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <string>
#include <vector>

#include "protocol/packet_stream.h"
#include "unit/protocol_fixture.h"

namespace mysqltrace::protocol {
namespace {

using Bytes = std::vector<uint8_t>;

using fixture::packet;

Bytes text(const std::string &s) {
    return Bytes(s.begin(), s.end());
}

Bytes cat(std::initializer_list<Bytes> parts) {
    Bytes out;
    for (const auto &p : parts) {
        out.insert(out.end(), p.begin(), p.end());
    }
    return out;
}

// One compressed frame; deflated unless store is set.
Bytes frame(uint8_t seq, const Bytes &inner, bool store = false) {
    Bytes body;
    uint32_t ulen = 0;
    if (store) {
        body = inner;
    } else {
        uLongf n = compressBound(inner.size());
        body.resize(n);
        EXPECT_EQ(compress(body.data(), &n, inner.data(), inner.size()), Z_OK);
        body.resize(n);
        ulen = static_cast<uint32_t>(inner.size());
    }
    // Appended byte by byte: GCC 12 at -O2 misreads an insert after a braced
    // initialiser (-Warray-bounds).
    Bytes out;
    out.reserve(7 + body.size());
    const uint32_t clen = static_cast<uint32_t>(body.size());
    for (int i = 0; i < 3; ++i) {
        out.push_back(static_cast<uint8_t>(clen >> (8 * i)));
    }
    out.push_back(seq);
    for (int i = 0; i < 3; ++i) {
        out.push_back(static_cast<uint8_t>(ulen >> (8 * i)));
    }
    out.insert(out.end(), body.begin(), body.end());
    return out;
}

Bytes bytes(const Payload &p) {
    return Bytes(p.begin(), p.end());
}

std::vector<Packet> drain(PacketStream &s) {
    std::vector<Packet> out;
    Packet p;
    while (s.next(p)) {
        p.payload.own();  // kept past the stream's next use
        out.push_back(std::move(p));
    }
    return out;
}

void feed(PacketStream &s, const Bytes &b, uint64_t ts = 1) {
    s.feed(b.data(), b.size(), b.size(), ts);
}

TEST(PacketStream, ReadsAPacketWholeInOneChunkInPlace) {
    PacketStream s;
    Bytes in = cat({packet(0, text("\x03select 1")), packet(1, text("ab"))});
    s.feed_borrowed(in.data(), in.size(), in.size(), 1);
    Packet p;
    ASSERT_TRUE(s.next(p));
    EXPECT_TRUE(p.payload.borrowed());
    EXPECT_EQ(p.payload.data(), in.data() + 4);
    EXPECT_EQ(bytes(p.payload), text("\x03select 1"));
    EXPECT_EQ(p.wire_bytes, 13u);
    // A copy owns its bytes; own() copies them in place.
    Packet copy = p;
    EXPECT_FALSE(copy.payload.borrowed());
    EXPECT_EQ(bytes(copy.payload), text("\x03select 1"));
    p.payload.own();
    EXPECT_FALSE(p.payload.borrowed());
    in[4] = 'X';
    EXPECT_EQ(bytes(p.payload), text("\x03select 1"));
    EXPECT_EQ(bytes(copy.payload), text("\x03select 1"));
    ASSERT_TRUE(s.next(p));
    EXPECT_EQ(p.payload.data(), in.data() + 17);
    EXPECT_EQ(p.seq, 1u);
    s.keep_pending();
    EXPECT_FALSE(s.next(p));
    EXPECT_TRUE(p.payload.empty());
}

TEST(PacketStream, ReadsInPlaceUpToTheKeepLimit) {
    PacketStream s(4);
    Bytes in = packet(0, text("\x03select 1"));
    s.feed_borrowed(in.data(), in.size(), in.size(), 1);
    Packet p;
    ASSERT_TRUE(s.next(p));
    EXPECT_TRUE(p.payload.borrowed());
    EXPECT_EQ(p.length, 9u);
    EXPECT_EQ(bytes(p.payload), text("\x03sel"));
    EXPECT_TRUE(p.truncated());
}

TEST(PacketStream, AssemblesAPacketSplitAcrossChunks) {
    // The first chunk is gone before the packet completes: its bytes are
    // copied, and the packet is read from a buffer of its own.
    PacketStream s;
    Bytes in = packet(0, text("\x03select 1"));
    Bytes first(in.begin(), in.begin() + 7);
    Bytes second(in.begin() + 7, in.end());
    s.feed_borrowed(first.data(), first.size(), first.size(), 1);
    Packet p;
    EXPECT_FALSE(s.next(p));
    s.keep_pending();
    std::fill(first.begin(), first.end(), 0);
    s.feed_borrowed(second.data(), second.size(), second.size(), 2);
    ASSERT_TRUE(s.next(p));
    EXPECT_FALSE(p.payload.borrowed());
    EXPECT_EQ(bytes(p.payload), text("\x03select 1"));
    EXPECT_EQ(p.ts_first_ns, 1u);
    EXPECT_EQ(p.ts_last_ns, 2u);
}

TEST(PacketStream, SplitsPacketsOfOneChunk) {
    PacketStream s;
    feed(s, cat({packet(0, text("\x03select 1")), packet(1, text("ab")), packet(2, {})}), 7);
    auto ps = drain(s);
    ASSERT_EQ(ps.size(), 3u);
    EXPECT_EQ(ps[0].length, 9u);
    EXPECT_EQ(ps[0].seq, 0);
    EXPECT_EQ(bytes(ps[0].payload), text("\x03select 1"));
    EXPECT_EQ(ps[0].wire_bytes, 13u);
    EXPECT_EQ(ps[0].ts_first_ns, 7u);
    EXPECT_EQ(ps[1].seq, 1);
    EXPECT_EQ(bytes(ps[1].payload), text("ab"));
    EXPECT_EQ(ps[2].length, 0u);
    EXPECT_EQ(ps[2].seq, 2);
    EXPECT_FALSE(ps[0].truncated());
    EXPECT_EQ(s.stats().packets, 3u);
}

TEST(PacketStream, ReassemblesAcrossByteSizedChunks) {
    PacketStream s;
    Bytes wire = cat({packet(0, text("hello")), packet(1, text("world!"))});
    std::vector<Packet> ps;
    for (size_t i = 0; i < wire.size(); ++i) {
        s.feed(&wire[i], 1, 1, 100 + i);
        auto got = drain(s);
        ps.insert(ps.end(), got.begin(), got.end());
    }
    ASSERT_EQ(ps.size(), 2u);
    EXPECT_EQ(bytes(ps[0].payload), text("hello"));
    EXPECT_EQ(ps[0].ts_first_ns, 100u);
    EXPECT_EQ(ps[0].ts_last_ns, 108u);
    EXPECT_EQ(bytes(ps[1].payload), text("world!"));
}

TEST(PacketStream, JoinsContinuationPacketsBeyond16MiB) {
    const size_t kMax = 0xFFFFFF;
    PacketStream s(1000);  // keep only a prefix: memory stays bounded
    Bytes first(4 + kMax, 'x');
    first[0] = first[1] = first[2] = 0xFF;
    first[3] = 0;
    first[4] = 0x03;
    Bytes second = packet(1, text("tail"));
    // Fed in 1 MiB pieces, as a capture would.
    Bytes wire = cat({first, second});
    for (size_t off = 0; off < wire.size(); off += 1 << 20) {
        size_t n = std::min<size_t>(1 << 20, wire.size() - off);
        s.feed(wire.data() + off, n, n, off);
    }
    auto ps = drain(s);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(ps[0].length, kMax + 4);
    EXPECT_EQ(ps[0].physical_packets, 2u);
    EXPECT_EQ(ps[0].seq, 0);
    EXPECT_EQ(ps[0].payload.size(), 1000u);
    EXPECT_EQ(ps[0].payload[0], 0x03);
    EXPECT_TRUE(ps[0].truncated());
    EXPECT_FALSE(ps[0].gap);
    EXPECT_EQ(ps[0].wire_bytes, kMax + 4 + 8);
}

TEST(PacketStream, ExactMultipleOf16MiBEndsWithEmptyPacket) {
    const size_t kMax = 0xFFFFFF;
    PacketStream s(16);
    Bytes first(4 + kMax, 'y');
    first[0] = first[1] = first[2] = 0xFF;
    first[3] = 5;
    feed(s, cat({first, packet(6, {}), packet(0, text("next"))}));
    auto ps = drain(s);
    ASSERT_EQ(ps.size(), 2u);
    EXPECT_EQ(ps[0].length, kMax);
    EXPECT_EQ(ps[0].physical_packets, 2u);
    EXPECT_EQ(ps[0].seq, 5);
    EXPECT_EQ(bytes(ps[1].payload), text("next"));
}

TEST(PacketStream, GapInsidePayloadKeepsSyncAndMarksPacket) {
    PacketStream s;
    Bytes p1 = packet(0, text("\x03SELECT 'a long string that the snap length cut'"));
    Bytes p2 = packet(1, text("after"));
    // Copy only the first 12 bytes of p1; the rest of p1 was on the wire.
    s.feed(p1.data(), 12, p1.size(), 1);
    feed(s, p2, 2);
    auto ps = drain(s);
    ASSERT_EQ(ps.size(), 2u);
    EXPECT_TRUE(ps[0].gap);
    EXPECT_TRUE(ps[0].truncated());
    EXPECT_EQ(ps[0].length, p1.size() - 4);
    EXPECT_EQ(bytes(ps[0].payload), text("\x03SELECT "));
    EXPECT_EQ(bytes(ps[1].payload), text("after"));
    EXPECT_TRUE(s.synced());
    EXPECT_EQ(s.stats().gap_bytes, p1.size() - 12);
}

TEST(PacketStream, GapOverAHeaderStopsUntilResync) {
    PacketStream s;
    Bytes wire = cat({packet(0, text("one")), packet(1, text("two")), packet(2, text("three"))});
    // The copy ends inside the second packet's header.
    s.feed(wire.data(), 9, wire.size(), 1);
    auto ps = drain(s);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(bytes(ps[0].payload), text("one"));
    EXPECT_FALSE(s.synced());
    // Never resynchronises by itself, whatever comes next.
    feed(s, packet(0, text("ignored")));
    EXPECT_TRUE(drain(s).empty());
    EXPECT_GT(s.stats().skipped_bytes, 0u);
    s.resync();
    feed(s, packet(0, text("fresh")));
    ps = drain(s);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(bytes(ps[0].payload), text("fresh"));
}

TEST(PacketStream, GapEndingExactlyAtPacketEndKeepsSync) {
    PacketStream s;
    Bytes p1 = packet(0, text("0123456789"));
    s.feed(p1.data(), 6, p1.size(), 1);
    feed(s, packet(1, text("ok")));
    auto ps = drain(s);
    ASSERT_EQ(ps.size(), 2u);
    EXPECT_EQ(bytes(ps[0].payload), text("01"));
    EXPECT_TRUE(ps[0].gap);
    EXPECT_EQ(bytes(ps[1].payload), text("ok"));
    EXPECT_TRUE(s.synced());
}

TEST(PacketStream, GapInsideContinuationChainReportsUnknownLength) {
    const size_t kMax = 0xFFFFFF;
    PacketStream s(64);
    Bytes first(4 + kMax, 'z');
    first[0] = first[1] = first[2] = 0xFF;
    first[3] = 0;
    // The continuation's header is lost with the rest of the chunk.
    s.feed(first.data(), first.size(), first.size() + 100, 1);
    auto ps = drain(s);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_FALSE(ps[0].length_known);
    EXPECT_TRUE(ps[0].gap);
    EXPECT_FALSE(s.synced());
    // Framing stopped at the continuation's header; what follows is counted.
    EXPECT_EQ(s.lost_at(), 4 + kMax);
    EXPECT_EQ(ps[0].wire_bytes, 4 + kMax);
    s.feed(first.data(), 10, 5000, 2);
    EXPECT_EQ(s.offset(), first.size() + 100 + 5000);
    EXPECT_TRUE(drain(s).empty());
}

TEST(PacketStream, LostAtIsWhereTheSwallowedHeaderBegan) {
    Bytes a = packet(0, text("0123456789"));  // 14 bytes
    Bytes b = packet(1, text("abcdef"));      // 10 bytes
    Bytes both = cat({a, b});
    {
        // The gap covers the end of a and the whole header of b.
        PacketStream s;
        feed(s, Bytes(3, 0));  // an earlier packet's worth of offset: 3 bytes
        s.resync();
        EXPECT_FALSE(s.lost_at());
        s.feed(both.data(), 8, both.size(), 1);
        auto ps = drain(s);
        ASSERT_EQ(ps.size(), 1u);
        EXPECT_EQ(ps[0].length, 10u);
        EXPECT_FALSE(s.synced());
        EXPECT_EQ(s.lost_at(), 3 + a.size());
    }
    {
        // Two bytes of b's header were copied, then the gap.
        PacketStream s;
        s.feed(both.data(), a.size() + 2, both.size(), 1);
        auto ps = drain(s);
        ASSERT_EQ(ps.size(), 1u);
        EXPECT_FALSE(s.synced());
        EXPECT_EQ(s.lost_at(), a.size());
        EXPECT_EQ(s.stats().skipped_bytes, b.size());
        s.resync();
        EXPECT_FALSE(s.lost_at());
    }
}

TEST(PacketStream, DecompressesFramesHoldingSeveralPackets) {
    PacketStream s;
    s.set_compressed(true);
    Bytes inner =
        cat({packet(1, Bytes(300, 'a')), packet(2, text("bb")), packet(3, Bytes(100, 'c'))});
    feed(s, frame(0, inner));
    auto ps = drain(s);
    ASSERT_EQ(ps.size(), 3u);
    EXPECT_EQ(bytes(ps[0].payload), Bytes(300, 'a'));
    EXPECT_EQ(bytes(ps[1].payload), text("bb"));
    EXPECT_EQ(bytes(ps[2].payload), Bytes(100, 'c'));
    EXPECT_EQ(s.stats().frames, 1u);
    EXPECT_EQ(s.stats().inflate_errors, 0u);
}

TEST(PacketStream, PacketMaySpanCompressedFramesAndStoredFrames) {
    PacketStream s;
    s.set_compressed(true);
    Bytes inner = packet(0, text("\x03SELECT 'spans two frames'"));
    Bytes a(inner.begin(), inner.begin() + 10);
    Bytes b(inner.begin() + 10, inner.end());
    Bytes wire = cat({frame(0, a, true), frame(1, b)});
    for (uint8_t c : wire) {
        s.feed(&c, 1, 1, 1);
    }
    auto ps = drain(s);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(bytes(ps[0].payload), text("\x03SELECT 'spans two frames'"));
    EXPECT_EQ(s.stats().frames, 2u);
}

TEST(PacketStream, CompressionSwitchesExactlyAfterTheReturnedPacket) {
    // The last handshake packet and the first compressed frame arrive in one
    // chunk; the caller switches after seeing the former.
    PacketStream s;
    Bytes ok = packet(2, Bytes{0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00});
    Bytes compressed = frame(0, packet(1, text("row")));
    feed(s, cat({ok, compressed}));
    Packet p;
    ASSERT_TRUE(s.next(p));
    EXPECT_EQ(p.length, 7u);
    s.set_compressed(true);
    ASSERT_TRUE(s.next(p));
    EXPECT_EQ(bytes(p.payload), text("row"));
    EXPECT_FALSE(s.next(p));
}

TEST(PacketStream, GapInsideCompressedFrameBecomesInnerGap) {
    PacketStream s;
    s.set_compressed(true);
    Bytes big(5000, 0);
    for (size_t i = 0; i < big.size(); ++i) {
        big[i] = static_cast<uint8_t>(i * 7 + i / 13);
    }
    Bytes f1 = frame(0, packet(1, big));
    Bytes f2 = frame(1, packet(2, text("next")));
    // Half of the first frame's body is missing.
    size_t copied = 7 + (f1.size() - 7) / 2;
    s.feed(f1.data(), copied, f1.size(), 1);
    feed(s, f2, 2);
    auto ps = drain(s);
    ASSERT_EQ(ps.size(), 2u);
    EXPECT_EQ(ps[0].length, big.size());
    EXPECT_TRUE(ps[0].gap);
    EXPECT_TRUE(ps[0].truncated());
    EXPECT_LT(ps[0].payload.size(), big.size());
    EXPECT_TRUE(std::equal(ps[0].payload.begin(), ps[0].payload.end(), big.begin()));
    EXPECT_EQ(bytes(ps[1].payload), text("next"));
    EXPECT_TRUE(s.synced());
}

TEST(PacketStream, CorruptCompressedFrameLosesSyncWithoutGuessing) {
    PacketStream s;
    s.set_compressed(true);
    Bytes inner = packet(0, Bytes(200, 'q'));
    Bytes bad = frame(0, inner);
    for (size_t i = 9; i < bad.size(); ++i) {
        bad[i] ^= 0x5A;
    }
    feed(s, cat({bad, frame(1, packet(1, text("good")))}));
    // The inner packet header was in the corrupt part: where the next packet
    // starts is unknown, so nothing more is decoded.
    EXPECT_TRUE(drain(s).empty());
    EXPECT_FALSE(s.synced());
    EXPECT_EQ(s.stats().inflate_errors, 1u);
}

TEST(PacketStream, DesyncDropsInputUntilResync) {
    PacketStream s;
    s.desync();
    feed(s, packet(0, text("lost")));
    EXPECT_TRUE(drain(s).empty());
    EXPECT_EQ(s.stats().skipped_bytes, 8u);
    s.resync();
    feed(s, packet(0, text("kept")));
    auto ps = drain(s);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_EQ(bytes(ps[0].payload), text("kept"));
}

}  // namespace
}  // namespace mysqltrace::protocol
