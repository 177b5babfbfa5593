// SPDX-License-Identifier: GPL-2.0-only
#include "protocol/decode.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "mysql/commands.h"
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
std::string number(T v) {
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), v);
    return std::string(buf, res.ptr);
}

std::vector<std::pair<std::string, std::string>> decode_attributes(ByteReader &r) {
    std::vector<std::pair<std::string, std::string>> out;
    uint64_t total = r.lenenc_or_fail();
    ByteReader a(r.bytes(std::min<uint64_t>(total, r.remaining())));
    while (a.ok() && !a.at_end()) {
        std::string k = a.lenenc_str();
        std::string v = a.lenenc_str();
        if (!a.ok()) {
            break;
        }
        out.emplace_back(std::move(k), std::move(v));
    }
    return out;
}

std::vector<uint8_t> to_vector(Bytes b) {
    return std::vector<uint8_t>(b.begin(), b.end());
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

std::string quote_value(std::string_view s, size_t max_len) {
    std::string out = "'";
    size_t n = std::min(s.size(), max_len);
    for (size_t i = 0; i < n; ++i) {
        if (s[i] == '\'' || s[i] == '\\') {
            out += '\\';
        }
        out += s[i];
    }
    out += '\'';
    if (s.size() > max_len) {
        out += "...";
    }
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

std::optional<HandshakeResponse> decode_handshake_response(Bytes payload) {
    ByteReader r(payload);
    HandshakeResponse h;
    if (payload.size() < 2) {
        return std::nullopt;
    }
    uint16_t low = static_cast<uint16_t>(payload[0] | (payload[1] << 8));
    if ((low & cap::protocol_41) == 0) {
        h.protocol_41 = false;
        h.capabilities = r.u16();
        h.max_packet = r.u24();
        if (!r.ok()) {
            return std::nullopt;
        }
        if (r.at_end()) {
            h.ssl_request = (h.capabilities & cap::ssl) != 0;
            return h;
        }
        h.user = r.nul_str();
        h.auth_response = to_vector(r.rest());
        return h;
    }
    uint64_t caps = r.u32();
    h.max_packet = r.u32();
    h.charset = r.u8();
    r.skip(19);
    uint32_t ext = r.u32();
    if (!r.ok()) {
        return std::nullopt;
    }
    if ((caps & cap::mysql) == 0) {
        caps |= static_cast<uint64_t>(ext) << 32;
    }
    h.capabilities = caps;
    if (r.at_end()) {
        h.ssl_request = (caps & cap::ssl) != 0;
        return h;
    }
    h.user = r.nul_str();
    if (caps & cap::plugin_auth_lenenc_data) {
        h.auth_response = to_vector(r.bytes(r.lenenc_or_fail()));
    } else if (caps & cap::secure_connection) {
        h.auth_response = to_vector(r.bytes(r.u8()));
    } else {
        std::string s = r.nul_str();
        h.auth_response.assign(s.begin(), s.end());
    }
    if ((caps & cap::connect_with_db) && !r.at_end()) {
        h.database = r.nul_str();
    }
    if ((caps & cap::plugin_auth) && !r.at_end()) {
        h.auth_plugin = r.nul_str();
    }
    if ((caps & cap::connect_attrs) && !r.at_end()) {
        h.attributes = decode_attributes(r);
    }
    return h;
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
    r.lenenc_str();  // catalog, always "def"
    c.schema = r.lenenc_str();
    c.table = r.lenenc_str();
    c.org_table = r.lenenc_str();
    c.name = r.lenenc_str();
    c.org_name = r.lenenc_str();
    if (!r.ok()) {
        return std::nullopt;
    }
    // MariaDB's extended type info sits between the names and the fixed part,
    // whose length is always 0x0C; use that to notice the extension even when
    // the capability exchange was not seen.
    if (extended_metadata || r.peek() != 0x0C) {
        r.lenenc_str();
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

std::optional<std::string> decode_binary_value(ByteReader &r, ColumnType t, size_t max_value) {
    std::string out;
    switch (t.type) {
        case field_type::null:
            return std::string("NULL");
        case field_type::tiny: {
            uint8_t v = r.u8();
            out = t.is_unsigned ? number(v) : number(static_cast<int8_t>(v));
            break;
        }
        case field_type::short_:
        case field_type::year: {
            uint16_t v = r.u16();
            out = t.is_unsigned ? number(v) : number(static_cast<int16_t>(v));
            break;
        }
        case field_type::long_:
        case field_type::int24: {
            uint32_t v = r.u32();
            out = t.is_unsigned ? number(v) : number(static_cast<int32_t>(v));
            break;
        }
        case field_type::longlong: {
            uint64_t v = r.u64();
            out = t.is_unsigned ? number(v) : number(static_cast<int64_t>(v));
            break;
        }
        case field_type::float_: {
            float f = std::bit_cast<float>(r.u32());
            out = number(f);
            break;
        }
        case field_type::double_: {
            double d = std::bit_cast<double>(r.u64());
            out = number(d);
            break;
        }
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
            out = buf;
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
            out = buf;
            break;
        }
        default: {
            std::string s = r.lenenc_str();
            if (t.type == field_type::decimal || t.type == field_type::newdecimal) {
                out = s.substr(0, max_value);
            } else {
                out = quote_value(s, max_value);
            }
            break;
        }
    }
    if (!r.ok()) {
        return std::nullopt;
    }
    return out;
}

std::optional<RowValues> decode_binary_row(Bytes payload, const std::vector<ColumnType> &columns,
                                           size_t max_value) {
    if (payload.empty() || payload[0] != 0x00) {
        return std::nullopt;
    }
    ByteReader r(payload.subspan(1));
    // The NULL bitmap of binary rows starts at bit 2.
    auto bitmap = r.bytes((columns.size() + 7 + 2) / 8);
    if (!r.ok()) {
        return std::nullopt;
    }
    RowValues values;
    for (size_t i = 0; i < columns.size(); ++i) {
        size_t bit = i + 2;
        if (bitmap[bit / 8] & (1u << (bit % 8))) {
            values.emplace_back("NULL");
            continue;
        }
        auto v = decode_binary_value(r, columns[i], max_value);
        if (!v) {
            return std::nullopt;
        }
        values.push_back(std::move(*v));
    }
    return values;
}

std::optional<std::string> decode_local_infile_request(Bytes payload) {
    if (payload.empty() || payload[0] != 0xFB) {
        return std::nullopt;
    }
    return ByteReader::to_string(payload.subspan(1));
}

namespace {

// Parameters of COM_STMT_EXECUTE (and MySQL's query attributes): NULL bitmap,
// "types follow" flag, types (with names under CLIENT_QUERY_ATTRIBUTES), then
// the values of the non-NULL parameters. names, when given, receives one name
// per value. False when the bytes do not hold that many values.
bool decode_params(ByteReader &r, uint64_t count, bool with_names,
                   std::vector<ColumnType> *bound_types, const std::vector<bool> *long_data,
                   size_t max_value, std::vector<std::string> &out,
                   std::vector<std::string> *names = nullptr) {
    if (count == 0 || count > 65535) {
        return count == 0;
    }
    auto bitmap = r.bytes((count + 7) / 8);
    uint8_t new_bound = r.u8();
    if (!r.ok()) {
        return false;
    }
    std::vector<ColumnType> types;
    std::vector<std::string> type_names;
    if (new_bound) {
        for (uint64_t i = 0; i < count; ++i) {
            uint8_t type = r.u8();
            uint8_t flags = r.u8();
            types.push_back({type, (flags & 0x80) != 0});
            if (with_names) {
                type_names.push_back(r.lenenc_str());
            }
        }
        if (!r.ok()) {
            return false;
        }
        if (bound_types != nullptr) {
            *bound_types = types;
        }
    } else if (bound_types != nullptr && bound_types->size() == count) {
        types = *bound_types;
    } else {
        return false;
    }
    type_names.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
        if (names != nullptr) {
            names->push_back(type_names[i]);
        }
        // Values sent with COM_STMT_SEND_LONG_DATA are not repeated here
        // (libmariadb also flags them NULL in the bitmap).
        if (long_data != nullptr && i < long_data->size() && (*long_data)[i]) {
            out.emplace_back("<long data>");
            continue;
        }
        if (bitmap[i / 8] & (1u << (i % 8))) {
            out.emplace_back("NULL");
            continue;
        }
        auto v = decode_binary_value(r, types[i], max_value);
        if (!v) {
            return false;
        }
        out.push_back(std::move(*v));
    }
    return true;
}

// COM_QUERY's attribute block under CLIENT_QUERY_ATTRIBUTES: parameter
// count, parameter set count (always 1), then the parameters with names.
bool decode_query_attributes(ByteReader &r, size_t max_value, std::vector<QueryAttribute> &out) {
    uint64_t n = r.lenenc_or_fail();
    uint64_t sets = r.lenenc_or_fail();
    if (!r.ok() || sets != 1) {
        return false;
    }
    std::vector<std::string> values;
    std::vector<std::string> names;
    if (!decode_params(r, n, true, nullptr, nullptr, max_value, values, &names) || !r.ok() ||
        values.size() != n) {
        return false;
    }
    for (size_t i = 0; i < values.size(); ++i) {
        out.push_back({std::move(names[i]), std::move(values[i])});
    }
    return true;
}

// One row of COM_STMT_BULK_EXECUTE: an indicator byte before each value.
bool decode_bulk_row(ByteReader &r, const std::vector<ColumnType> &types, size_t max_value,
                     std::vector<std::string> *out) {
    for (const auto &t : types) {
        uint8_t indicator = r.u8();
        if (!r.ok()) {
            return false;
        }
        switch (indicator) {
            case 0: {
                auto v = decode_binary_value(r, t, max_value);
                if (!v) {
                    return false;
                }
                if (out != nullptr) {
                    out->push_back(std::move(*v));
                }
                break;
            }
            case 1:
                if (out != nullptr) {
                    out->emplace_back("NULL");
                }
                break;
            case 2:
                if (out != nullptr) {
                    out->emplace_back("DEFAULT");
                }
                break;
            case 3:
                if (out != nullptr) {
                    out->emplace_back("IGNORE");
                }
                break;
            default:
                return false;
        }
    }
    return true;
}

}  // namespace

std::optional<bool> infer_query_attributes(Bytes payload) {
    if (payload.size() < 2 || payload[0] != com::query) {
        return std::nullopt;
    }
    ByteReader r(payload.subspan(1));
    std::vector<QueryAttribute> attrs;
    if (payload.size() >= 3 && decode_query_attributes(r, 0, attrs)) {
        return true;
    }
    // Statement text starts with a printable character, white space or a
    // UTF-8 lead byte; the attribute block starts with its count, almost
    // always a small number.
    const uint8_t b = payload[1];
    if (b >= 0x20 || b == '\t' || b == '\n' || b == '\r' || b == '\f' || b == '\v') {
        return false;
    }
    return std::nullopt;
}

std::optional<Command> decode_command(Bytes payload, uint64_t capabilities,
                                      std::optional<uint16_t> param_count,
                                      std::vector<ColumnType> *param_types,
                                      const std::vector<bool> *long_data, size_t max_value) {
    if (payload.empty()) {
        return std::nullopt;
    }
    Command c;
    c.code = payload[0];
    c.name = mysql::command_name(c.code);
    ByteReader r(payload.subspan(1));
    switch (c.code) {
        case com::query:
            if ((capabilities & cap::query_attributes) &&
                !decode_query_attributes(r, max_value, c.attributes)) {
                c.attributes.clear();
                c.attributes_undecodable = true;
                return c;
            }
            c.sql = r.rest_str();
            break;
        case com::stmt_prepare:
            c.sql = r.rest_str();
            break;
        case com::stmt_execute: {
            c.statement_id = r.u32();
            c.flags = r.u8();
            c.iterations = r.u32();
            if (!r.ok()) {
                break;
            }
            // MySQL 8 with query attributes may announce the count itself.
            bool count_follows = (capabilities & cap::query_attributes) &&
                                 ((param_count && *param_count > 0) || (c.flags & 0x08));
            if (count_follows) {
                // The count covers the statement's parameters and then the
                // named query attributes.
                uint64_t n = r.lenenc_or_fail();
                std::vector<std::string> values;
                std::vector<std::string> names;
                decode_params(r, n, true, param_types, long_data, max_value, values, &names);
                for (size_t i = 0; i < values.size(); ++i) {
                    if (param_count && i >= *param_count && !names[i].empty()) {
                        c.attributes.push_back({std::move(names[i]), std::move(values[i])});
                    } else {
                        c.params.push_back(std::move(values[i]));
                    }
                }
            } else if (param_count && *param_count > 0) {
                decode_params(r, *param_count, false, param_types, long_data, max_value, c.params);
            }
            break;
        }
        case com::stmt_bulk_execute: {
            c.statement_id = r.u32();
            uint16_t flags = r.u16();
            c.flags = static_cast<uint8_t>(flags);
            if (!r.ok() || !param_count || *param_count == 0) {
                break;
            }
            std::vector<ColumnType> types;
            if (flags & 0x80) {  // STMT_BULK_FLAG_SEND_TYPES_TO_SERVER
                for (uint16_t i = 0; i < *param_count; ++i) {
                    uint8_t type = r.u8();
                    uint8_t tflags = r.u8();
                    types.push_back({type, (tflags & 0x80) != 0});
                }
                if (r.ok() && param_types != nullptr) {
                    *param_types = types;
                }
            } else if (param_types != nullptr && param_types->size() == *param_count) {
                types = *param_types;
            }
            if (!r.ok() || types.empty()) {
                break;
            }
            uint32_t rows = 0;
            while (!r.at_end()) {
                if (!decode_bulk_row(r, types, max_value, rows == 0 ? &c.params : nullptr)) {
                    break;
                }
                ++rows;
            }
            c.iterations = rows;
            break;
        }
        case com::stmt_fetch:
            c.statement_id = r.u32();
            c.fetch_rows = r.u32();
            break;
        case com::stmt_close:
        case com::stmt_reset:
            c.statement_id = r.u32();
            break;
        case com::stmt_send_long_data:
            c.statement_id = r.u32();
            c.param_id = r.u16();
            c.data_len = r.remaining();
            break;
        case com::init_db:
        case com::create_db:
        case com::drop_db:
            c.argument = r.rest_str();
            break;
        case com::field_list: {
            c.argument = r.nul_str();
            std::string wild = r.rest_str();
            if (!wild.empty()) {
                c.argument += " " + wild;
            }
            break;
        }
        case com::process_kill:
            c.argument = std::to_string(r.u32());
            break;
        case com::set_option: {
            uint16_t opt = r.u16();
            c.argument = opt == 0   ? "MULTI_STATEMENTS_ON"
                         : opt == 1 ? "MULTI_STATEMENTS_OFF"
                                    : std::to_string(opt);
            break;
        }
        case com::refresh:
            c.argument = std::to_string(r.u8());
            break;
        case com::change_user: {
            c.user = r.nul_str();
            if (capabilities & cap::secure_connection) {
                c.auth_response = to_vector(r.bytes(r.u8()));
            } else {
                std::string s = r.nul_str();
                c.auth_response.assign(s.begin(), s.end());
            }
            c.auth_response_len = c.auth_response.size();
            c.database = r.nul_str();
            if (r.remaining() >= 2) {
                r.u16();  // character set
            }
            if ((capabilities & cap::plugin_auth) && !r.at_end()) {
                c.auth_plugin = r.nul_str();
            }
            c.argument = c.user;
            break;
        }
        case com::binlog_dump: {
            uint32_t pos = r.u32();
            r.u16();  // flags
            r.u32();  // server id
            c.argument = r.rest_str() + ":" + std::to_string(pos);
            break;
        }
        default:
            break;
    }
    return c;
}

}  // namespace mysqltrace::protocol
