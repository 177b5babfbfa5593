// SPDX-License-Identifier: GPL-2.0-only
// Decoders of the packets a client sends: its handshake response and its
// commands, with their parameters (protocol/decode.h).
#include "protocol/decode.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mysql/commands.h"
#include "protocol/constants.h"

namespace mysqltrace::protocol {

namespace {

std::vector<std::pair<std::string, std::string>> decode_attributes(ByteReader &r) {
    std::vector<std::pair<std::string, std::string>> out;
    uint64_t total = r.lenenc_or_fail();
    ByteReader a(r.bytes(std::min<uint64_t>(total, r.remaining())));
    // Clients send about ten (_os, _client_name, _pid, program_name, ...):
    // one allocation instead of a chain of regrowths that move them all.
    if (!a.at_end()) {
        out.reserve(16);
    }
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

std::optional<HandshakeResponse> decode_handshake_response(Bytes payload, bool with_attributes) {
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
    if (with_attributes && (caps & cap::connect_attrs) && !r.at_end()) {
        h.attributes = decode_attributes(r);
    }
    return h;
}

namespace {

// Parameters of COM_STMT_EXECUTE (and MySQL's query attributes): NULL bitmap,
// "types follow" flag, types (with names under CLIENT_QUERY_ATTRIBUTES), then
// the values of the non-NULL parameters. names, when given, receives one name
// per value. out null: the types are bound, the values not read. False when
// the bytes do not hold that many values.
bool decode_params(ByteReader &r, uint64_t count, bool with_names,
                   std::vector<ColumnType> *bound_types, const std::vector<bool> *long_data,
                   size_t max_value, std::vector<std::string> *out,
                   std::vector<std::string> *names = nullptr) {
    if (count == 0 || count > 65535) {
        return count == 0;
    }
    auto bitmap = r.bytes((count + 7) / 8);
    uint8_t new_bound = r.u8();
    if (!r.ok()) {
        return false;
    }
    // The types sent now, or those an earlier execute bound (no copy of
    // them). The thread's scratch list: no allocation per execute.
    thread_local std::vector<ColumnType> sent;
    sent.clear();
    const std::vector<ColumnType> *types = &sent;
    std::vector<std::string> type_names;
    if (new_bound) {
        for (uint64_t i = 0; i < count; ++i) {
            uint8_t type = r.u8();
            uint8_t flags = r.u8();
            sent.push_back({type, (flags & 0x80) != 0});
            if (with_names) {
                type_names.push_back(r.lenenc_str());
            }
        }
        if (!r.ok()) {
            return false;
        }
        if (bound_types != nullptr) {
            *bound_types = sent;
            types = bound_types;
        }
    } else if (bound_types != nullptr && bound_types->size() == count) {
        types = bound_types;
    } else {
        return false;
    }
    if (out == nullptr) {
        return true;
    }
    if (names != nullptr) {
        type_names.resize(count);
    }
    for (uint64_t i = 0; i < count; ++i) {
        if (names != nullptr) {
            names->push_back(type_names[i]);
        }
        // Values sent with COM_STMT_SEND_LONG_DATA are not repeated here
        // (libmariadb also flags them NULL in the bitmap).
        if (long_data != nullptr && i < long_data->size() && (*long_data)[i]) {
            out->emplace_back("<long data>");
            continue;
        }
        if (bitmap[i / 8] & (1u << (i % 8))) {
            out->emplace_back("NULL");
            continue;
        }
        if (!append_binary_value(out->emplace_back(), r, (*types)[i], max_value)) {
            out->pop_back();
            return false;
        }
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
    if (!decode_params(r, n, true, nullptr, nullptr, max_value, &values, &names) || !r.ok() ||
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

bool decode_command(Command &c, Bytes payload, uint64_t capabilities,
                    std::optional<uint16_t> param_count, std::vector<ColumnType> *param_types,
                    const std::vector<bool> *long_data, size_t max_value, bool param_values) {
    // c back to a new command's defaults, but for the room of its parameter
    // list: the executes of a prepared statement then allocate none.
    std::vector<std::string> params = std::move(c.params);
    params.clear();
    c = Command{};
    c.params = std::move(params);
    if (payload.empty()) {
        return false;
    }
    c.code = payload[0];
    c.name = mysql::command_name_view(c.code);
    ByteReader r(payload.subspan(1));
    switch (c.code) {
        case com::query:
            if ((capabilities & cap::query_attributes) &&
                !decode_query_attributes(r, max_value, c.attributes)) {
                c.attributes.clear();
                c.attributes_undecodable = true;
                return true;
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
                decode_params(r, n, true, param_types, long_data, max_value, &values, &names);
                for (size_t i = 0; i < values.size(); ++i) {
                    if (param_count && i >= *param_count && !names[i].empty()) {
                        c.attributes.push_back({std::move(names[i]), std::move(values[i])});
                    } else {
                        c.params.push_back(std::move(values[i]));
                    }
                }
            } else if (param_count && *param_count > 0) {
                decode_params(r, *param_count, false, param_types, long_data, max_value,
                              param_values ? &c.params : nullptr);
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
    return true;
}

std::optional<Command> decode_command(Bytes payload, uint64_t capabilities,
                                      std::optional<uint16_t> param_count,
                                      std::vector<ColumnType> *param_types,
                                      const std::vector<bool> *long_data, size_t max_value,
                                      bool param_values) {
    Command c;
    if (!decode_command(c, payload, capabilities, param_count, param_types, long_data, max_value,
                        param_values)) {
        return std::nullopt;
    }
    return c;
}

}  // namespace mysqltrace::protocol
