// SPDX-License-Identifier: GPL-2.0-only
// Bounds-checked little-endian reading of protocol payloads. Captured packets
// can be cut short or be garbage, so every read may fail; a failed read
// leaves the reader in a sticky failed state and returns an empty value, so a
// decoder can read a whole structure and check ok() once at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace mysqltrace::protocol {

// Little-endian integers at p, for callers that have checked the bytes are
// there (a packet header, a payload of known length).
inline uint32_t le24(const uint8_t *p) {
    return p[0] | (p[1] << 8) | (p[2] << 16);
}
inline uint32_t le32(const uint8_t *p) {
    return le24(p) | (static_cast<uint32_t>(p[3]) << 24);
}

class ByteReader {
  public:
    explicit ByteReader(std::span<const uint8_t> data) : data_(data) {}

    bool ok() const { return ok_; }
    size_t pos() const { return pos_; }
    size_t remaining() const { return ok_ ? data_.size() - pos_ : 0; }
    bool at_end() const { return remaining() == 0; }
    std::span<const uint8_t> rest() const {
        return ok_ ? data_.subspan(pos_) : std::span<const uint8_t>{};
    }

    uint64_t fixed(size_t n) {
        if (!need(n)) {
            return 0;
        }
        uint64_t v = 0;
        for (size_t i = 0; i < n; ++i) {
            v |= static_cast<uint64_t>(data_[pos_ + i]) << (8 * i);
        }
        pos_ += n;
        return v;
    }
    uint8_t u8() { return static_cast<uint8_t>(fixed(1)); }
    uint16_t u16() { return static_cast<uint16_t>(fixed(2)); }
    uint32_t u24() { return static_cast<uint32_t>(fixed(3)); }
    uint32_t u32() { return static_cast<uint32_t>(fixed(4)); }
    uint64_t u64() { return fixed(8); }

    uint8_t peek() const { return ok_ && pos_ < data_.size() ? data_[pos_] : 0; }

    // Length-encoded integer. 0xFB is "NULL" in rows and is reported as
    // nullopt without failing the reader; 0xFF is never valid.
    std::optional<uint64_t> lenenc() {
        if (!need(1)) {
            return std::nullopt;
        }
        uint8_t first = data_[pos_++];
        switch (first) {
            case 0xFB:
                return std::nullopt;
            case 0xFC:
                return fixed(2);
            case 0xFD:
                return fixed(3);
            case 0xFE:
                return fixed(8);
            case 0xFF:
                ok_ = false;
                return std::nullopt;
            default:
                return first;
        }
    }
    uint64_t lenenc_or_fail() {
        auto v = lenenc();
        if (!v) {
            ok_ = false;
            return 0;
        }
        return *v;
    }

    std::span<const uint8_t> bytes(uint64_t n) {
        if (!need(n)) {
            return {};
        }
        auto s = data_.subspan(pos_, static_cast<size_t>(n));
        pos_ += static_cast<size_t>(n);
        return s;
    }
    void skip(uint64_t n) { (void)bytes(n); }

    std::string str(uint64_t n) { return to_string(bytes(n)); }
    // Length-encoded string; a NULL marker yields an empty string.
    std::string lenenc_str() { return str(lenenc_or_fail()); }
    // A length-encoded string as a view of the payload (empty on failure).
    std::string_view lenenc_view() {
        std::span<const uint8_t> b = bytes(lenenc_or_fail());
        return {reinterpret_cast<const char *>(b.data()), b.size()};
    }
    std::optional<std::string> lenenc_str_or_null() {
        if (ok_ && pos_ < data_.size() && data_[pos_] == 0xFB) {
            ++pos_;
            return std::nullopt;
        }
        return lenenc_str();
    }
    // NUL-terminated string; without a terminator it takes the rest (some
    // servers omit the NUL after the last field of a packet).
    std::string nul_str() {
        if (!ok_) {
            return {};
        }
        size_t start = pos_;
        const size_t left = data_.size() - pos_;
        const void *nul = left > 0 ? std::memchr(data_.data() + pos_, 0, left) : nullptr;
        pos_ = nul != nullptr
                   ? static_cast<size_t>(static_cast<const uint8_t *>(nul) - data_.data())
                   : data_.size();
        std::string s(reinterpret_cast<const char *>(data_.data() + start), pos_ - start);
        if (pos_ < data_.size()) {
            ++pos_;
        }
        return s;
    }
    std::string rest_str() { return str(remaining()); }

    static std::string to_string(std::span<const uint8_t> s) {
        return std::string(reinterpret_cast<const char *>(s.data()), s.size());
    }

  private:
    bool need(uint64_t n) {
        if (!ok_ || n > data_.size() - pos_) {
            ok_ = false;
            return false;
        }
        return true;
    }

    std::span<const uint8_t> data_;
    size_t pos_ = 0;
    bool ok_ = true;
};

}  // namespace mysqltrace::protocol
