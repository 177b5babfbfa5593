// SPDX-License-Identifier: GPL-2.0-only
// One JSON object per line, written straight into a reused buffer: the
// per-event nlohmann tree (allocation per key and value, the ordered map,
// the destructor, dump_escaped) was ~60% of the tracer's CPU on a busy
// server with --format json (shared/FACTS.md section 8). The bytes are the
// ones nlohmann's dump(-1, ' ', false, error_handler_t::replace) gives for
// the same keys and values, so outputs did not change when renderers moved
// over: integers in decimal, strings escaped as it escapes them (control
// characters as \u00xx, ill-formed UTF-8 replaced by U+FFFD per maximal
// invalid sequence), no white space.
#pragma once

#include <charconv>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace mysqltrace::output {

// Appends `s` as a JSON string (quotes included).
void append_json_string(std::string &out, std::string_view s);

// The room put_json_string() may need for a string of n bytes: 6 for a
// control character (\u00xx), at most 3 for any other byte (U+FFFD for an
// ill-formed one), and the quotes.
constexpr size_t json_string_room(size_t n) {
    return 6 * n + 2;
}
// The same bytes as append_json_string() into `d`, which has room for
// json_string_room(s.size()); returns how many were written. For the short
// strings of a line put together in a FlatWriter.
size_t put_json_string(char *d, std::string_view s);

// Keys are literals the caller spells right: they are not escaped.
class JsonWriter {
  public:
    explicit JsonWriter(std::string &out) : out_(out) {}
    // Going on with an object whose last value `out` already ends with.
    JsonWriter(std::string &out, bool after_value) : out_(out), comma_(after_value) {}

    void begin_object() {
        separate();
        out_ += '{';
        comma_ = false;
    }
    void end_object() {
        out_ += '}';
        comma_ = true;
    }
    void begin_array() {
        separate();
        out_ += '[';
        comma_ = false;
    }
    void end_array() {
        out_ += ']';
        comma_ = true;
    }
    // The key of the next value, begin_object() or begin_array().
    void key(std::string_view k) {
        char buf[kShortKey + 4];
        if (k.size() > kShortKey) {
            separate();
            out_ += '"';
            out_ += k;
            out_.append("\":", 2);
        } else {
            // One append: this runs for every field of every event.
            out_.append(buf, put_key(buf, k));
        }
        comma_ = false;
    }

    void null() { scalar("null"); }
    void value(std::string_view s) {
        separate();
        append_json_string(out_, s);
        comma_ = true;
    }
    void value(const char *s) { value(std::string_view(s)); }
    void value(const std::string &s) { value(std::string_view(s)); }
    template <std::integral T>
    void value(T v) {
        if constexpr (std::same_as<T, bool>) {
            scalar(v ? "true" : "false");
        } else {
            separate();
            char buf[24];
            const auto r = std::to_chars(buf, buf + sizeof(buf), v);
            out_.append(buf, r.ptr);
            comma_ = true;
        }
    }

    // Shortest text that reads back as `v`; null when it is not finite.
    void value(double v) {
        if (!std::isfinite(v)) {
            null();
            return;
        }
        separate();
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof(buf), v);
        out_.append(buf, r.ptr);
        comma_ = true;
    }

    // key(k) then value(v).
    template <typename T>
    void field(std::string_view k, const T &v) {
        key(k);
        value(v);
    }
    // The same for an integer, in one append.
    template <std::integral T>
    requires(!std::same_as<T, bool>) void field(std::string_view k, const T &v) {
        char buf[kShortKey + 4 + 24];
        if (k.size() > kShortKey) {
            key(k);
            value(v);
            return;
        }
        size_t n = put_key(buf, k);
        n = static_cast<size_t>(std::to_chars(buf + n, buf + sizeof(buf), v).ptr - buf);
        out_.append(buf, n);
        comma_ = true;
    }
    void null_field(std::string_view k) {
        key(k);
        null();
    }
    // The string, or null when it is empty (performance_schema's NULL for
    // an unknown schema, message, ...).
    void string_or_null(std::string_view k, std::string_view v) {
        key(k);
        if (v.empty()) {
            null();
        } else {
            value(v);
        }
    }

  private:
    // Keys up to this long are put together on the stack.
    static constexpr size_t kShortKey = 60;

    // `,"k":` (the comma when a value came before) into buf; its length.
    size_t put_key(char *buf, std::string_view k) const {
        size_t n = 0;
        buf[n] = ',';
        n += comma_ ? 1 : 0;
        buf[n++] = '"';
        std::memcpy(buf + n, k.data(), k.size());
        n += k.size();
        buf[n++] = '"';
        buf[n++] = ':';
        return n;
    }
    void separate() {
        if (comma_) {
            out_ += ',';
        }
    }
    void scalar(std::string_view text) {
        separate();
        out_ += text;
        comma_ = true;
    }

    std::string &out_;
    bool comma_ = false;  // a value came before in the current container
};

// A line whose fields are known in advance, put together on the stack and
// appended in few copies: a key is a literal that holds its quotes, comma
// and colon (",\"KEY\":"), so each field is a copy of constant size and a
// to_chars, where JsonWriter pays an append per field. For the lines
// written once per statement; the bytes are JsonWriter's.
class FlatWriter {
  public:
    explicit FlatWriter(std::string &out) : out_(out) {}
    ~FlatWriter() { flush(); }
    FlatWriter(const FlatWriter &) = delete;
    FlatWriter &operator=(const FlatWriter &) = delete;

    // Text written as it is: keys, punctuation, null.
    template <size_t N>
    void lit(const char (&s)[N]) {
        static_assert(N - 1 <= kCap);
        room(N - 1);
        std::memcpy(buf_ + n_, s, N - 1);
        n_ += N - 1;
    }
    // s without its first `skip` bytes (0 or 1): a key with its comma, or
    // the first key without it, in one copy of constant size (the bytes
    // past the end are the literal's NUL, and are overwritten next).
    template <size_t N>
    void lit_skip(const char (&s)[N], size_t skip) {
        static_assert(N - 1 <= kCap && N >= 2);
        room(N - 1);
        std::memcpy(buf_ + n_, s + (skip != 0 ? 1 : 0), N - 1);
        n_ += N - 1 - (skip != 0 ? 1 : 0);
    }
    template <std::integral T>
    requires(!std::same_as<T, bool>) void num(T v) {
        room(24);
        n_ = static_cast<size_t>(std::to_chars(buf_ + n_, buf_ + kCap, v).ptr - buf_);
    }
    // JSON text already rendered (a string with its quotes, say).
    void raw(std::string_view s) {
        if (s.size() > kCap / 4) {
            flush();
            out_.append(s);
            return;
        }
        room(s.size());
        std::memcpy(buf_ + n_, s.data(), s.size());
        n_ += s.size();
    }
    // Room for k bytes written in place, then advance() by those written:
    // for text made straight into the line (a timestamp).
    char *space(size_t k) {
        room(k);
        return buf_ + n_;
    }
    void advance(size_t n) { n_ += n; }
    // `s` as a JSON string: in the line's buffer when short, as most are.
    void str(std::string_view s) {
        if (s.size() <= kShortString) {
            room(json_string_room(s.size()));
            n_ += put_json_string(buf_ + n_, s);
            return;
        }
        flush();
        append_json_string(out_, s);
    }
    void flush() {
        out_.append(buf_, n_);
        n_ = 0;
    }

  private:
    static constexpr size_t kCap = 1024;
    static constexpr size_t kShortString = 128;
    static_assert(json_string_room(kShortString) <= kCap);
    void room(size_t k) {
        if (n_ + k > kCap) {
            flush();
        }
    }
    std::string &out_;
    size_t n_ = 0;
    char buf_[kCap];
};

}  // namespace mysqltrace::output
