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

}  // namespace

void append_json_string(std::string &out, std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    out += '"';
    size_t i = 0;
    while (i < s.size()) {
        size_t run = i;
        while (run < s.size() && copies_verbatim(static_cast<unsigned char>(s[run]))) {
            run++;
        }
        out.append(s.data() + i, run - i);
        i = run;
        if (i == s.size()) {
            break;
        }
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            size_t bad = 0;
            const size_t len = utf8_sequence(s, i, bad);
            if (len) {
                out.append(s.data() + i, len);
                i += len;
            } else {
                out += kReplacement;
                i += bad;
            }
            continue;
        }
        out += '\\';
        switch (c) {
            case '"':
                out += '"';
                break;
            case '\\':
                out += '\\';
                break;
            case '\b':
                out += 'b';
                break;
            case '\t':
                out += 't';
                break;
            case '\n':
                out += 'n';
                break;
            case '\f':
                out += 'f';
                break;
            case '\r':
                out += 'r';
                break;
            default:
                out += "u00";
                out += hex[c >> 4];
                out += hex[c & 0xF];
                break;
        }
        i++;
    }
    out += '"';
}

}  // namespace mysqltrace::output
