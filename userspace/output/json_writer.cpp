// SPDX-License-Identifier: GPL-2.0-only
#include "output/json_writer.h"

namespace mysqltrace::output {

namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Bytes that need more than copying: control characters, `"`, `\` and
// anything not ASCII (checked for well-formed UTF-8).
constexpr bool copies_verbatim(unsigned char c) {
    return c >= 0x20 && c != '"' && c != '\\' && c < 0x80;
}

// Length of the well-formed UTF-8 sequence at s[i] (lead byte >= 0x80), or
// 0 when it is ill-formed; `bad` is then how many bytes the replacement
// stands for: the lead byte alone when it cannot start a sequence, else the
// bytes up to the first that cannot continue it (that one is read again),
// as nlohmann's decoder (Bjoern Hoehrmann's DFA) and Unicode's "maximal
// subpart" rule do.
size_t utf8_sequence(std::string_view s, size_t i, size_t &bad) {
    const auto lead = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (lead >= 0xC2 && lead <= 0xDF) {
        len = 2;
    } else if (lead == 0xE0) {
        len = 3, lo = 0xA0;  // no overlong forms
    } else if (lead == 0xED) {
        len = 3, hi = 0x9F;  // no surrogates
    } else if (lead >= 0xE1 && lead <= 0xEF) {
        len = 3;
    } else if (lead == 0xF0) {
        len = 4, lo = 0x90;
    } else if (lead >= 0xF1 && lead <= 0xF3) {
        len = 4;
    } else if (lead == 0xF4) {
        len = 4, hi = 0x8F;  // nothing above U+10FFFF
    } else {
        bad = 1;
        return 0;
    }
    for (size_t k = 1; k < len; k++) {
        if (i + k >= s.size()) {
            bad = k;  // cut short at the end
            return 0;
        }
        const auto c = static_cast<unsigned char>(s[i + k]);
        if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) {
            bad = k;
            return 0;
        }
    }
    return len;
}

// The escape of an ASCII byte that is not copied verbatim (a control
// character, `"` or `\`) into d; its length, 2 or 6.
size_t put_escape(char *d, unsigned char c) {
    static constexpr char hex[] = "0123456789abcdef";
    d[0] = '\\';
    switch (c) {
        case '"':
            d[1] = '"';
            return 2;
        case '\\':
            d[1] = '\\';
            return 2;
        case '\b':
            d[1] = 'b';
            return 2;
        case '\t':
            d[1] = 't';
            return 2;
        case '\n':
            d[1] = 'n';
            return 2;
        case '\f':
            d[1] = 'f';
            return 2;
        case '\r':
            d[1] = 'r';
            return 2;
        default:
            std::memcpy(d + 1, "u00", 3);
            d[4] = hex[c >> 4];
            d[5] = hex[c & 0xF];
            return 6;
    }
}

// Whether any of x's 8 bytes is not copied verbatim: below 0x20 (x - 0x20..
// borrows into its high bit; exact as a yes/no, since a borrow from a lower
// byte starts at a byte below 0x20 itself), `"` or `\` (x ^ c.. holds a
// zero byte), or 0x80 and above.
bool needs_care(uint64_t x) {
    constexpr uint64_t kOnes = 0x0101010101010101ULL;
    constexpr uint64_t kHigh = 0x8080808080808080ULL;
    const uint64_t quote = x ^ ('"' * kOnes);
    const uint64_t slash = x ^ ('\\' * kOnes);
    return (((x - 0x20 * kOnes) & ~x) | ((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash) |
            x) &
           kHigh;
}

}  // namespace

void append_json_string(std::string &out, std::string_view s) {
    // Written in place by put_json_string(), then cut to what it wrote: one
    // escaping loop for both.
    const size_t at = out.size();
    out.resize(at + json_string_room(s.size()));
    out.resize(at + put_json_string(out.data() + at, s));
}

size_t put_json_string(char *out, std::string_view s) {
    char *d = out;
    *d++ = '"';
    size_t i = 0;
    while (i < s.size()) {
        // Eight bytes at a time while they need no care: most of a trace's
        // strings are plain ASCII.
        if (i + 8 <= s.size()) {
            uint64_t x;
            std::memcpy(&x, s.data() + i, 8);
            if (!needs_care(x)) {
                std::memcpy(d, &x, 8);
                d += 8;
                i += 8;
                continue;
            }
        }
        const auto c = static_cast<unsigned char>(s[i]);
        if (copies_verbatim(c)) {
            *d++ = static_cast<char>(c);
            i++;
        } else if (c >= 0x80) {
            size_t bad = 0;
            const size_t len = utf8_sequence(s, i, bad);
            if (len) {
                std::memcpy(d, s.data() + i, len);
                d += len;
                i += len;
            } else {
                std::memcpy(d, kReplacement, 3);
                d += 3;
                i += bad;
            }
        } else {
            d += put_escape(d, c);
            i++;
        }
    }
    *d++ = '"';
    return static_cast<size_t>(d - out);
}

}  // namespace mysqltrace::output
