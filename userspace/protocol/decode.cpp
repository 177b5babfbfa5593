// SPDX-License-Identifier: GPL-2.0-only
// Decoders of the packets a server sends (greeting, auth switch, OK, ERR,
// EOF, result sets and their rows, COM_STMT_PREPARE's OK) and the helpers
// both directions share; the client's are in decode_client.cpp.
#include "protocol/decode.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "protocol/constants.h"

namespace mysqltrace::protocol {

namespace {

bool is_numeric_type(uint8_t t) {
    switch (t) {
        case field_type::decimal:
        case field_type::newdecimal:
        case field_type::tiny:
        case field_type::short_:
        case field_type::long_:
        case field_type::longlong:
        case field_type::int24:
        case field_type::float_:
        case field_type::double_:
        case field_type::year:
            return true;
        default:
            return false;
    }
}

template <typename T>
void append_number(std::string &out, T v) {
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), v);
    out.append(buf, res.ptr);
}

}  // namespace

bool is_client_command(uint8_t command) {
    return command <= com::reset_connection || command == com::stmt_bulk_execute;
}

std::string field_type_name(uint8_t type) {
    switch (type) {
        case field_type::decimal:
            return "DECIMAL";
        case field_type::tiny:
            return "TINY";
        case field_type::short_:
            return "SHORT";
        case field_type::long_:
            return "LONG";
        case field_type::float_:
            return "FLOAT";
        case field_type::double_:
            return "DOUBLE";
        case field_type::null:
            return "NULL";
        case field_type::timestamp:
            return "TIMESTAMP";
        case field_type::longlong:
            return "LONGLONG";
        case field_type::int24:
            return "INT24";
        case field_type::date:
            return "DATE";
        case field_type::time:
            return "TIME";
        case field_type::datetime:
            return "DATETIME";
        case field_type::year:
            return "YEAR";
        case field_type::newdate:
            return "NEWDATE";
        case field_type::varchar:
            return "VARCHAR";
        case field_type::bit:
            return "BIT";
        case field_type::timestamp2:
            return "TIMESTAMP2";
        case field_type::datetime2:
            return "DATETIME2";
        case field_type::time2:
            return "TIME2";
        case field_type::json:
            return "JSON";
        case field_type::newdecimal:
            return "NEWDECIMAL";
        case field_type::enum_:
            return "ENUM";
        case field_type::set:
            return "SET";
        case field_type::tiny_blob:
            return "TINY_BLOB";
        case field_type::medium_blob:
            return "MEDIUM_BLOB";
        case field_type::long_blob:
            return "LONG_BLOB";
        case field_type::blob:
            return "BLOB";
        case field_type::var_string:
            return "VAR_STRING";
        case field_type::string:
            return "STRING";
        case field_type::geometry:
            return "GEOMETRY";
        default:
            return "TYPE_" + std::to_string(type);
    }
}

namespace {

void append_quoted(std::string &out, std::string_view s, size_t max_len) {
    out += '\'';
    const size_t n = std::min(s.size(), max_len);
    // Runs without a quote or backslash go in whole, found by memchr: every
    // text value of a shown row passes here, and the byte loop this replaces
    // was 5% of decoding the sysbench recordings. Each character's next
    // place is looked up again only once the run passes it.
    const char *p = s.data();
    const char *end = p + n;
    auto next = [&](char c, const char *from) {
        const void *at = std::memchr(from, c, static_cast<size_t>(end - from));
        return at != nullptr ? static_cast<const char *>(at) : end;
    };
    const char *quote = next('\'', p);
    const char *backslash = next('\\', p);
    while (true) {
        const char *j = std::min(quote, backslash);
        out.append(p, static_cast<size_t>(j - p));
        if (j == end) {
            break;
        }
        out += '\\';
        out += *j;
        p = j + 1;
        if (j == quote) {
            quote = next('\'', p);
        } else {
            backslash = next('\\', p);
        }
    }
    out += '\'';
    if (s.size() > max_len) {
        out += "...";
    }
}

}  // namespace

std::string quote_value(std::string_view s, size_t max_len) {
    std::string out;
    append_quoted(out, s, max_len);
    return out;
}

std::optional<Greeting> decode_greeting(Bytes payload) {
    ByteReader r(payload);
    Greeting g;
    g.protocol_version = r.u8();
    if (!r.ok() || g.protocol_version != 10) {
        return std::nullopt;
    }
    g.server_version = r.nul_str();
    g.connection_id = r.u32();
    r.skip(8);  // first part of the scramble
    r.skip(1);  // filler
    uint64_t caps = r.u16();
    if (!r.ok()) {
        return std::nullopt;
    }
    g.auth_data_len = 8;
    if (r.at_end()) {
        g.capabilities = caps;
        return g;
    }
    g.charset = r.u8();
    g.status = r.u16();
    caps |= static_cast<uint64_t>(r.u16()) << 16;
    uint8_t auth_len = r.u8();
    r.skip(6);
    uint32_t ext = r.u32();
    if (!r.ok()) {
        return std::nullopt;
    }
    if ((caps & cap::mysql) == 0) {
        g.mariadb = true;
        caps |= static_cast<uint64_t>(ext) << 32;
    }
    g.capabilities = caps;
    if (caps & cap::secure_connection) {
        // 12 more scramble bytes and a NUL: max(13, auth_len - 8).
        size_t part2 = std::max<int>(13, static_cast<int>(auth_len) - 8);
        part2 = std::min(part2, r.remaining());
        r.skip(part2);
        g.auth_data_len += part2 > 0 ? part2 - 1 : 0;
    }
    if ((caps & cap::plugin_auth) && !r.at_end()) {
        g.auth_plugin = r.nul_str();
    }
    return g;
}

std::optional<AuthSwitch> decode_auth_switch(Bytes payload) {
    if (payload.empty() || payload[0] != 0xFE) {
        return std::nullopt;
    }
    AuthSwitch a;
    if (payload.size() == 1) {
        a.old_password = true;
        a.plugin = "mysql_old_password";
        return a;
    }
    ByteReader r(payload.subspan(1));
    a.plugin = r.nul_str();
    a.data_len = r.remaining();
    // The scramble is sent NUL-terminated; the NUL is not plugin data.
    if (a.data_len > 0 && payload.back() == 0) {
        --a.data_len;
    }
    return a;
}

std::optional<OkPacket> decode_ok(Bytes payload, uint64_t capabilities) {
    if (payload.empty() || (payload[0] != 0x00 && payload[0] != 0xFE)) {
        return std::nullopt;
    }
    ByteReader r(payload.subspan(1));
    OkPacket ok;
    ok.eof_header = payload[0] == 0xFE;
    ok.affected_rows = r.lenenc_or_fail();
    ok.last_insert_id = r.lenenc_or_fail();
    if (capabilities & cap::protocol_41) {
        ok.status = r.u16();
        ok.warnings = r.u16();
    } else if (capabilities & cap::transactions) {
        ok.status = r.u16();
    }
    if (!r.ok()) {
        return std::nullopt;
    }
    if (r.at_end()) {
        return ok;
    }
    (void)capabilities;
    // The protocol documents info as string<EOF> without CLIENT_SESSION_TRACK,
    // but both servers length-prefix it either way (and clients read it so).
    ByteReader info = r;
    uint64_t n = info.lenenc_or_fail();
    if (info.ok() && n <= info.remaining()) {
        ok.info = info.str(n);
    } else {
        ok.info = r.rest_str();
    }
    return ok;
}

std::optional<ErrPacket> decode_err(Bytes payload) {
    if (payload.empty() || payload[0] != 0xFF) {
        return std::nullopt;
    }
    ByteReader r(payload.subspan(1));
    ErrPacket e;
    e.code = r.u16();
    if (!r.ok()) {
        return std::nullopt;
    }
    if (e.code == kProgressErrorCode) {
        ProgressReport p;
        r.skip(1);  // number of strings; always 1
        p.stage = r.u8();
        p.max_stage = r.u8();
        p.progress = r.u24();
        p.info = r.lenenc_str();
        if (!r.ok()) {
            p.info.clear();
        }
        e.progress = std::move(p);
        return e;
    }
    if (r.peek() == '#' && r.remaining() >= 6) {
        r.skip(1);
        e.sqlstate = r.str(5);
    }
    e.message = r.rest_str();
    return e;
}

bool is_eof_packet(Bytes payload, uint64_t true_length) {
    return !payload.empty() && payload[0] == 0xFE && true_length < 9;
}

std::optional<EofPacket> decode_eof(Bytes payload) {
    if (payload.empty() || payload[0] != 0xFE) {
        return std::nullopt;
    }
    EofPacket e;
    if (payload.size() >= 5) {
        ByteReader r(payload.subspan(1));
        e.warnings = r.u16();
        e.status = r.u16();
    }
    return e;
}

std::optional<ColumnCount> decode_column_count(Bytes payload) {
    ByteReader r(payload);
    auto n = r.lenenc();
    if (!r.ok() || !n || *n == 0) {
        return std::nullopt;
    }
    ColumnCount c;
    c.count = *n;
    if (r.remaining() == 1) {
        c.metadata_follows = r.u8() != 0;
    } else if (r.remaining() > 1) {
        return std::nullopt;
    }
    return c;
}

std::optional<ColumnDef> decode_column_def(Bytes payload, bool extended_metadata) {
    ByteReader r(payload);
    ColumnDef c;
    r.lenenc_view();  // catalog, always "def"
    c.schema = r.lenenc_view();
    c.table = r.lenenc_view();
    c.org_table = r.lenenc_view();
    c.name = r.lenenc_view();
    c.org_name = r.lenenc_view();
    if (!r.ok()) {
        return std::nullopt;
    }
    // MariaDB's extended type info sits between the names and the fixed part,
    // whose length is always 0x0C; use that to notice the extension even when
    // the capability exchange was not seen.
    if (extended_metadata || r.peek() != 0x0C) {
        r.lenenc_view();
    }
    uint64_t fixed_len = r.lenenc_or_fail();
    if (!r.ok() || fixed_len < 10) {
        return std::nullopt;
    }
    c.charset = r.u16();
    c.length = r.u32();
    c.type = r.u8();
    c.flags = r.u16();
    c.decimals = r.u8();
    if (!r.ok()) {
        return std::nullopt;
    }
    return c;
}

std::optional<PrepareOk> decode_prepare_ok(Bytes payload) {
    if (payload.size() < 9 || payload[0] != 0x00) {
        return std::nullopt;
    }
    ByteReader r(payload.subspan(1));
    PrepareOk p;
    p.statement_id = r.u32();
    p.columns = r.u16();
    p.params = r.u16();
    if (r.remaining() >= 3) {
        r.skip(1);
        p.warnings = r.u16();
    }
    return p;
}

std::optional<RowValues> decode_text_row(Bytes payload, size_t max_value,
                                         const std::vector<ColumnType> *types) {
    ByteReader r(payload);
    RowValues values;
    while (!r.at_end()) {
        auto v = r.lenenc_str_or_null();
        if (!r.ok()) {
            return std::nullopt;
        }
        size_t i = values.size();
        if (!v) {
            values.emplace_back("NULL");
        } else if (types != nullptr && i < types->size() && is_numeric_type((*types)[i].type)) {
            values.push_back(v->substr(0, max_value));
        } else {
            values.push_back(quote_value(*v, max_value));
        }
    }
    return values;
}

bool append_text_row(std::string &out, Bytes payload, size_t max_value,
                     const std::vector<ColumnType> *types) {
    const size_t start = out.size();
    ByteReader r(payload);
    size_t i = 0;
    while (!r.at_end()) {
        if (i > 0) {
            out += ", ";
        }
        if (r.peek() == 0xFB) {
            r.u8();
            out += "NULL";
        } else {
            const std::string_view v = r.lenenc_view();
            if (!r.ok()) {
                out.resize(start);
                return false;
            }
            if (types != nullptr && i < types->size() && is_numeric_type((*types)[i].type)) {
                out.append(v.substr(0, max_value));
            } else {
                append_quoted(out, v, max_value);
            }
        }
        ++i;
    }
    return true;
}

bool append_binary_value(std::string &out, ByteReader &r, ColumnType t, size_t max_value) {
    const size_t start = out.size();
    switch (t.type) {
        case field_type::null:
            out += "NULL";
            break;
        case field_type::tiny: {
            uint8_t v = r.u8();
            t.is_unsigned ? append_number(out, v) : append_number(out, static_cast<int8_t>(v));
            break;
        }
        case field_type::short_:
        case field_type::year: {
            uint16_t v = r.u16();
            t.is_unsigned ? append_number(out, v) : append_number(out, static_cast<int16_t>(v));
            break;
        }
        case field_type::long_:
        case field_type::int24: {
            uint32_t v = r.u32();
            t.is_unsigned ? append_number(out, v) : append_number(out, static_cast<int32_t>(v));
            break;
        }
        case field_type::longlong: {
            uint64_t v = r.u64();
            t.is_unsigned ? append_number(out, v) : append_number(out, static_cast<int64_t>(v));
            break;
        }
        case field_type::float_:
            append_number(out, std::bit_cast<float>(r.u32()));
            break;
        case field_type::double_:
            append_number(out, std::bit_cast<double>(r.u64()));
            break;
        case field_type::date:
        case field_type::datetime:
        case field_type::timestamp:
        case field_type::newdate:
        case field_type::datetime2:
        case field_type::timestamp2: {
            uint8_t len = r.u8();
            ByteReader v(r.bytes(len));
            unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
            uint32_t micro = 0;
            if (len >= 4) {
                year = v.u16();
                month = v.u8();
                day = v.u8();
            }
            if (len >= 7) {
                hour = v.u8();
                minute = v.u8();
                second = v.u8();
            }
            if (len >= 11) {
                micro = v.u32();
            }
            char buf[64];
            int n = std::snprintf(buf, sizeof(buf), "'%04u-%02u-%02u", year, month, day);
            if (t.type != field_type::date && t.type != field_type::newdate) {
                n += std::snprintf(buf + n, sizeof(buf) - n, " %02u:%02u:%02u", hour, minute,
                                   second);
                if (len >= 11) {
                    n += std::snprintf(buf + n, sizeof(buf) - n, ".%06u", micro);
                }
            }
            std::snprintf(buf + n, sizeof(buf) - n, "'");
            out += buf;
            break;
        }
        case field_type::time:
        case field_type::time2: {
            uint8_t len = r.u8();
            ByteReader v(r.bytes(len));
            bool negative = false;
            uint64_t hours = 0;
            unsigned minute = 0, second = 0;
            uint32_t micro = 0;
            if (len >= 8) {
                negative = v.u8() != 0;
                hours = static_cast<uint64_t>(v.u32()) * 24;
                hours += v.u8();
                minute = v.u8();
                second = v.u8();
            }
            if (len >= 12) {
                micro = v.u32();
            }
            char buf[64];
            int n = std::snprintf(buf, sizeof(buf), "'%s%02llu:%02u:%02u", negative ? "-" : "",
                                  static_cast<unsigned long long>(hours), minute, second);
            if (len >= 12) {
                n += std::snprintf(buf + n, sizeof(buf) - n, ".%06u", micro);
            }
            std::snprintf(buf + n, sizeof(buf) - n, "'");
            out += buf;
            break;
        }
        default: {
            const std::string_view s = r.lenenc_view();
            if (!r.ok()) {
                break;
            }
            if (t.type == field_type::decimal || t.type == field_type::newdecimal) {
                out.append(s.substr(0, max_value));
            } else {
                append_quoted(out, s, max_value);
            }
            break;
        }
    }
    if (!r.ok()) {
        out.resize(start);
        return false;
    }
    return true;
}

std::optional<std::string> decode_binary_value(ByteReader &r, ColumnType t, size_t max_value) {
    std::string out;
    if (!append_binary_value(out, r, t, max_value)) {
        return std::nullopt;
    }
    return out;
}

namespace {

// Calls value(i, r) for each column of a binary row, r being at the value,
// or null(i) where the NULL bitmap says so; false when the row is not one.
template <typename Value, typename Null>
bool walk_binary_row(Bytes payload, size_t columns, Value value, Null null) {
    if (payload.empty() || payload[0] != 0x00) {
        return false;
    }
    ByteReader r(payload.subspan(1));
    // The NULL bitmap of binary rows starts at bit 2.
    auto bitmap = r.bytes((columns + 7 + 2) / 8);
    if (!r.ok()) {
        return false;
    }
    for (size_t i = 0; i < columns; ++i) {
        size_t bit = i + 2;
        if (bitmap[bit / 8] & (1u << (bit % 8))) {
            null(i);
        } else if (!value(i, r)) {
            return false;
        }
    }
    return true;
}

}  // namespace

std::optional<RowValues> decode_binary_row(Bytes payload, const std::vector<ColumnType> &columns,
                                           size_t max_value) {
    RowValues values;
    const bool ok = walk_binary_row(
        payload, columns.size(),
        [&](size_t i, ByteReader &r) {
            return append_binary_value(values.emplace_back(), r, columns[i], max_value);
        },
        [&](size_t) { values.emplace_back("NULL"); });
    if (!ok) {
        return std::nullopt;
    }
    return values;
}

bool append_binary_row(std::string &out, Bytes payload, const std::vector<ColumnType> &columns,
                       size_t max_value) {
    const size_t start = out.size();
    auto sep = [&](size_t i) {
        if (i > 0) {
            out += ", ";
        }
    };
    const bool ok = walk_binary_row(
        payload, columns.size(),
        [&](size_t i, ByteReader &r) {
            sep(i);
            return append_binary_value(out, r, columns[i], max_value);
        },
        [&](size_t i) {
            sep(i);
            out += "NULL";
        });
    if (!ok) {
        out.resize(start);
    }
    return ok;
}

std::optional<std::string> decode_local_infile_request(Bytes payload) {
    if (payload.empty() || payload[0] != 0xFB) {
        return std::nullopt;
    }
    return ByteReader::to_string(payload.subspan(1));
}

}  // namespace mysqltrace::protocol
