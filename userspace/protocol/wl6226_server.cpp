// SPDX-License-Identifier: GPL-2.0-only
// The server half of the stage machine: what each reply packet means in
// the stage it arrives in, and where it leads.
#include <algorithm>
#include <cstdio>

#include "protocol/constants.h"
#include "protocol/wl6226.h"
#include "protocol/wl6226_util.h"
#include "sql/redact.h"

namespace mysqltrace::protocol {

using detail::hex64;
using detail::join;
using detail::kMaxColumns;

void ConnectionTracer::fill_error(ProtocolEvent &ev, const ErrPacket &err) {
    PendingCommand *h = head();
    std::string message = err.message;
    if (h != nullptr && h->sql_redacted) {
        sql::redact_error_message(&message);
    }
    ev.error_code = err.code;
    if (options_.event_contents) {
        ev.sqlstate = err.sqlstate;
        ev.error_message = message;
        if (err.sqlstate.empty()) {
            add_line(ev, "Server error ", err.code, ": ", message);
        } else {
            add_line(ev, "Server error ", err.code, " (", err.sqlstate, "): ", message);
        }
    }
    if (h != nullptr) {
        h->summary.error_code = err.code;
        h->summary.error_message = std::move(message);
    }
}

void ConnectionTracer::fill_ok(ProtocolEvent &ev, const OkPacket &ok) {
    ev.affected_rows = ok.affected_rows;
    ev.last_insert_id = ok.last_insert_id;
    ev.warnings = ok.warnings;
    ev.status_flags = ok.status;
    add_line(ev, "OK from server; affected rows: ", ok.affected_rows);
    if (ok.last_insert_id != 0 || ok.warnings != 0) {
        add_line(ev, "last insert id: ", ok.last_insert_id, "; warnings: ", ok.warnings);
    }
    if (!ok.info.empty() && handshake_seen_) {
        add_line(ev, "info: ", ok.info);
    }
    if (PendingCommand *h = head()) {
        h->summary.affected_rows = h->summary.affected_rows.value_or(0) + ok.affected_rows;
    }
}

void ConnectionTracer::infer_deprecate_eof(const Packet &p) {
    if (deprecate_eof_ || p.payload.empty() || p.payload[0] == 0xFF) {
        return;
    }
    // A classic EOF is exactly 5 bytes; the OK that replaces it under
    // CLIENT_DEPRECATE_EOF is at least 7, and a row or column definition
    // never starts with 0xFE at these lengths.
    const bool eof = p.payload[0] == 0xFE && p.length == 5;
    if (stage_ == Stage::wait_for_field_def && !field_list_ && col_remaining_ == 0) {
        deprecate_eof_ = !eof;
        if (!eof) {
            after_metadata();
        }
    } else if (stage_ == Stage::wait_for_param_def && param_remaining_ == 0) {
        deprecate_eof_ = !eof;
        if (!eof) {
            params_done();
        }
    }
}

void ConnectionTracer::handle_server_packet(Packet &p, const Ctx &ctx) {
    PendingCommand *h = head();
    if (h != nullptr) {
        h->summary.bytes_received += p.wire_bytes;
        if (h->wait_start_ns != 0) {
            if (p.ts_first_ns > h->wait_start_ns) {
                h->summary.server_wait_ns += p.ts_first_ns - h->wait_start_ns;
            }
            h->wait_start_ns = 0;
        }
    }
    if (stage_ == Stage::disconnected || stage_ == Stage::ssl_negotiation) {
        return;
    }
    if (h != nullptr) {
        infer_deprecate_eof(p);
        h = head();
    }
    const Stage st = stage_;
    ProtocolEvent &rp = read_packet_event(st, ctx);
    if (h != nullptr) {
        rp.command = h->code;
        if (options_.event_contents) {
            rp.command_name = h->summary.command_name;
        }
    }
    emit(rp);

    ProtocolEvent &ev = packet_event(TraceEvent::packet_received, st, p, ctx, p.ts_last_ns);
    if (h != nullptr) {
        ev.command = h->code;
        ev.command_name = h->summary.command_name;
    }
    if (p.payload.empty()) {
        if (p.length == 0) {
            add_line(ev, "empty packet");
            emit(ev);
            return;
        }
        add_line(ev, "packet contents not captured");
        emit(ev);
        lose_sync();
        return;
    }
    const uint8_t b0 = p.payload[0];
    if (b0 == 0xFF && st != Stage::wait_for_init_packet) {
        auto err = decode_err(p.payload);
        if (err && err->progress) {
            // MariaDB progress report: informational, the command goes on.
            const ProgressReport &pr = *err->progress;
            char buf[64];
            std::snprintf(buf, sizeof(buf), "%.3f%%", pr.progress / 1000.0);
            add_line(ev, "Progress: stage ", pr.stage, " of ", pr.max_stage, " '", pr.info, "' ",
                     std::string_view(buf));
            attach_packet(ev, p, false);
            emit(ev);
            return;
        }
    }
    switch (st) {
        case Stage::wait_for_init_packet:
            server_init_packet(p, ev);
            return;
        case Stage::authenticate:
            server_authenticate(p, ev);
            return;
        case Stage::wait_for_result:
            server_result(p, ev);
            return;
        case Stage::wait_for_field_def:
            server_field_def(p, ev);
            return;
        case Stage::wait_for_param_def:
            server_param_def(p, ev);
            return;
        case Stage::wait_for_row:
            server_row(p, ev);
            return;
        case Stage::wait_for_ps_description:
            server_ps_description(p, ev);
            return;
        case Stage::wait_for_packet: {
            attach_packet(ev, p, false);
            if (b0 == 0xFF) {
                if (auto err = decode_err(p.payload)) {
                    fill_error(ev, *err);
                }
                emit(ev);
                complete_head(CommandResult::error, p.ts_last_ns);
                return;
            }
            add_line(ev, std::string_view(reinterpret_cast<const char *>(p.payload.data()),
                                          p.payload.size()));
            emit(ev);
            complete_head(CommandResult::reply, p.ts_last_ns);
            return;
        }
        case Stage::file_request:
        case Stage::ready_for_command:
        default: {
            attach_packet(ev, p, false);
            if (b0 == 0xFF) {
                if (auto err = decode_err(p.payload)) {
                    fill_error(ev, *err);
                }
                if (st == Stage::file_request) {
                    emit(ev);
                    complete_head(CommandResult::error, p.ts_last_ns);
                    return;
                }
            }
            add_line(ev, "unsolicited packet from the server");
            emit(ev);
            return;
        }
    }
}

void ConnectionTracer::server_init_packet(Packet &p, ProtocolEvent &ev) {
    Ctx ctx{ev.ts_ns, ev.pid, ev.tid};
    attach_packet(ev, p, false);
    const uint8_t b0 = p.payload[0];
    if (b0 == 10) {
        if (auto g = decode_greeting(p.payload)) {
            emit(ev);
            server_caps_ = g->capabilities;
            greeting_plugin_ = g->auth_plugin;
            server_version_ = g->server_version;
            server_conn_id_ = g->connection_id;
            ProtocolEvent &init = packet_event(TraceEvent::init_packet_received,
                                               Stage::wait_for_init_packet, p, ctx, p.ts_last_ns);
            init.server_version = g->server_version;
            init.server_connection_id = g->connection_id;
            init.auth_plugin = g->auth_plugin;
            add_line(init, "Server version: ", g->server_version);
            add_line(init, "Connection id: ", g->connection_id);
            if (!g->auth_plugin.empty()) {
                add_line(init, "Auth plugin: ", g->auth_plugin);
            }
            add_line(init, "Server capabilities: ", detail::Hex64{g->capabilities},
                     g->mariadb ? " (MariaDB)" : "");
            attach_packet(init, p, false);
            emit(init);
            stage_ = Stage::authenticate;
            auth_writes_ = 0;
            change_user_auth_ = false;
            sha2_step_ = Sha2Step::none;
            return;
        }
    }
    if (b0 == 0xFF) {
        if (auto err = decode_err(p.payload)) {
            fill_error(ev, *err);
        }
        emit(ev);
        stage_ = Stage::disconnected;
        return;
    }
    add_line(ev, "not a MySQL protocol 10 greeting");
    emit(ev);
    lose_sync();
}

void ConnectionTracer::server_authenticate(Packet &p, ProtocolEvent &ev) {
    Ctx ctx{ev.ts_ns, ev.pid, ev.tid};
    const uint8_t b0 = p.payload[0];
    switch (b0) {
        case 0x00: {
            attach_packet(ev, p, false);
            if (auto ok = decode_ok(p.payload, caps())) {
                ev.status_flags = ok->status;
                ev.warnings = ok->warnings;
            }
            add_line(ev, "OK from server");
            emit(ev);
            ProtocolEvent &auth =
                make_event(TraceEvent::authenticated, Stage::authenticate, p.ts_last_ns, ctx);
            emit(auth);
            stage_ = Stage::ready_for_command;
            if (change_user_auth_) {
                complete_head(CommandResult::ok, p.ts_last_ns);
            } else {
                // Compression starts with the first packet after the
                // handshake, in both directions.
                enable_compression();
            }
            return;
        }
        case 0xFF: {
            attach_packet(ev, p, false);
            if (auto err = decode_err(p.payload)) {
                fill_error(ev, *err);
            }
            emit(ev);
            if (change_user_auth_) {
                complete_head(CommandResult::error, p.ts_last_ns);
            } else {
                stage_ = Stage::disconnected;
            }
            return;
        }
        case 0xFE: {
            attach_packet(ev, p, true);
            auto sw = decode_auth_switch(p.payload);
            std::string plugin = sw ? sw->plugin : std::string();
            add_line(ev, "Auth switch request: plugin ", plugin, ", ", sw ? sw->data_len : 0,
                     " bytes of data");
            emit(ev);
            sha2_step_ = Sha2Step::none;
            if (!plugin.empty()) {
                announced_plugin_ = plugin;
                ProtocolEvent &ap =
                    make_event(TraceEvent::auth_plugin, Stage::authenticate, p.ts_last_ns, ctx);
                ap.auth_plugin = plugin;
                add_line(ap, "Using authentication plugin: ", plugin);
                emit(ap);
            }
            return;
        }
        case 0x01: {
            attach_packet(ev, p, true);
            std::string &line = add_line(ev, "Auth more data: ", p.length - 1, " bytes");
            // caching_sha2_password's one-byte verdicts, and the public key
            // it sends a client that asked for it (PEM, not a secret).
            static constexpr std::string_view kPem = "-----BEGIN PUBLIC KEY-----";
            const std::string_view body(reinterpret_cast<const char *>(p.payload.data()) + 1,
                                        p.payload.size() - 1);
            if (p.length == 2 && p.payload.size() == 2 && p.payload[1] == 3) {
                line += " (fast authentication succeeded)";
                sha2_step_ = Sha2Step::none;
            } else if (p.length == 2 && p.payload.size() == 2 && p.payload[1] == 4) {
                line += " (full authentication required)";
                sha2_step_ = Sha2Step::full_auth;
            } else if (body.starts_with(kPem)) {
                line += " (the server's RSA public key)";
                sha2_step_ = Sha2Step::key_received;
            }
            emit(ev);
            return;
        }
        default:
            attach_packet(ev, p, true);
            add_line(ev, "unexpected packet during authentication");
            emit(ev);
            return;
    }
}

void ConnectionTracer::server_result(Packet &p, ProtocolEvent &ev) {
    PendingCommand *h = head();
    attach_packet(ev, p, false);
    const uint8_t b0 = p.payload[0];
    switch (b0) {
        case 0xFF: {
            if (auto err = decode_err(p.payload)) {
                fill_error(ev, *err);
            }
            emit(ev);
            complete_head(CommandResult::error, p.ts_last_ns);
            return;
        }
        case 0x00: {
            auto ok = decode_ok(p.payload, caps());
            if (!ok) {
                add_line(ev, "malformed OK packet");
                emit(ev);
                complete_head(CommandResult::ok, p.ts_last_ns);
                return;
            }
            fill_ok(ev, *ok);
            if (h != nullptr && h->code == com::reset_connection) {
                // The server dropped the session's prepared statements.
                statements_.clear();
            }
            if (ok->status & status::more_results_exist) {
                add_line(ev, "Expecting next result set");
                emit(ev);
                return;
            }
            emit(ev);
            complete_head(CommandResult::ok, p.ts_last_ns);
            return;
        }
        case 0xFE: {
            if (auto eof = decode_eof(p.payload)) {
                ev.warnings = eof->warnings;
                ev.status_flags = eof->status;
            }
            add_line(ev, "EOF from server");
            emit(ev);
            complete_head(CommandResult::ok, p.ts_last_ns);
            return;
        }
        case 0xFB: {
            std::string file = decode_local_infile_request(p.payload).value_or("");
            add_line(ev, "Server requests file: ", file);
            emit(ev);
            stage_ = Stage::file_request;
            return;
        }
        default:
            break;
    }
    auto cc = decode_column_count(p.payload);
    if (!cc) {
        add_line(ev, "unexpected packet (not a result set header)");
        emit(ev);
        return;
    }
    ev.column_count = cc->count;
    add_line(ev, "Expecting result set with ", cc->count, " columns");
    if (cc->metadata_follows && !*cc->metadata_follows) {
        add_line(ev, "column definitions skipped (client caches them)");
    }
    emit(ev);
    if (h != nullptr) {
        h->summary.result_sets++;
    }
    rows_in_set_ = 0;
    result_types_.clear();
    stage_ = Stage::wait_for_field_def;
    if (cc->metadata_follows && !*cc->metadata_follows) {
        if (h != nullptr && h->summary.statement_id) {
            auto it = statements_.find(*h->summary.statement_id);
            if (it != statements_.end()) {
                result_types_ = it->second.column_types;
            }
        }
        col_remaining_ = 0;
        if (deprecate_eof_.value_or(false)) {
            after_metadata();
        }
        return;
    }
    col_remaining_ = cc->count;
}

void ConnectionTracer::after_metadata() {
    if (in_prepare_) {
        finish_prepare();
        complete_head(CommandResult::ok, last_ts_);
        return;
    }
    stage_ = Stage::wait_for_row;
    rows_in_set_ = 0;
}

void ConnectionTracer::params_done() {
    if (prep_columns_ > 0) {
        stage_ = Stage::wait_for_field_def;
        col_remaining_ = prep_columns_;
        result_types_.clear();
        return;
    }
    finish_prepare();
    complete_head(CommandResult::ok, last_ts_);
}

void ConnectionTracer::server_field_def(Packet &p, ProtocolEvent &ev) {
    attach_packet(ev, p, false);
    const uint8_t b0 = p.payload[0];
    if (b0 == 0xFF) {
        if (auto err = decode_err(p.payload)) {
            fill_error(ev, *err);
        }
        emit(ev);
        complete_head(CommandResult::error, p.ts_last_ns);
        return;
    }
    if (b0 == 0xFE && p.length < kMaxPacketPayload) {
        uint16_t st = 0;
        if (auto eof = decode_eof(p.payload)) {
            ev.warnings = eof->warnings;
            ev.status_flags = eof->status;
            st = eof->status;
        }
        add_line(ev, "No more fields");
        if (field_list_ || in_prepare_) {
            emit(ev);
            complete_head(CommandResult::ok, p.ts_last_ns);
            return;
        }
        if (st & status::cursor_exists) {
            // A cursor was opened: rows come later, one COM_STMT_FETCH at a time.
            add_line(ev, "Cursor opened");
            emit(ev);
            complete_head(CommandResult::rows, p.ts_last_ns);
            return;
        }
        add_line(ev, "Reading result set rows");
        emit(ev);
        stage_ = Stage::wait_for_row;
        rows_in_set_ = 0;
        return;
    }
    auto def = decode_column_def(p.payload, (caps() & cap::mariadb_extended_metadata) != 0);
    // No server sends more than 4096 columns; do not let a broken stream grow
    // this without bound.
    const bool room = result_types_.size() < kMaxColumns;
    if (def) {
        if (room) {
            result_types_.push_back({def->type, (def->flags & kColumnFlagUnsigned) != 0});
        }
    }
    if (def && options_.event_contents) {
        std::string &line = add_line(ev, "Field: ");
        const size_t at = line.size();
        if (!def->table.empty()) {
            line += def->table;
            line += '.';
        }
        line += def->name;
        // An expression's column is named by its text: SELECT AES_ENCRYPT(x, 'key').
        if (!options_.show_secrets && sql::may_hold_secret(std::string_view(line).substr(at))) {
            std::string name = line.substr(at);
            sql::redact_in_place(&name);
            line.resize(at);
            line += name;
        }
        line += ' ';
        line += field_type_name(def->type);
    } else if (!def) {
        if (room) {
            result_types_.push_back({field_type::string, false});
        }
        add_line(ev, "Received next field definition");
    }
    if (!field_list_ && col_remaining_ > 0) {
        --col_remaining_;
    }
    emit(ev);
    if (!field_list_ && col_remaining_ == 0 && deprecate_eof_.value_or(false)) {
        after_metadata();
    }
}

void ConnectionTracer::server_param_def(Packet &p, ProtocolEvent &ev) {
    attach_packet(ev, p, false);
    const uint8_t b0 = p.payload[0];
    if (b0 == 0xFF) {
        if (auto err = decode_err(p.payload)) {
            fill_error(ev, *err);
        }
        emit(ev);
        complete_head(CommandResult::error, p.ts_last_ns);
        return;
    }
    if (b0 == 0xFE && p.length < 9) {
        add_line(ev, "No more parameters");
        emit(ev);
        params_done();
        return;
    }
    auto def = decode_column_def(p.payload, (caps() & cap::mariadb_extended_metadata) != 0);
    if (def) {
        add_line(ev, "Parameter: ", field_type_name(def->type));
    } else {
        add_line(ev, "Received next parameter description");
    }
    if (param_remaining_ > 0) {
        --param_remaining_;
    }
    emit(ev);
    if (param_remaining_ == 0 && deprecate_eof_.value_or(false)) {
        params_done();
    }
}

void ConnectionTracer::end_of_rows(Packet &p, ProtocolEvent &ev) {
    uint16_t st = 0;
    // Under CLIENT_DEPRECATE_EOF rows end with an OK packet led by 0xFE.
    if (deprecate_eof_.value_or(false) || p.length > 5) {
        if (auto ok = decode_ok(p.payload, caps())) {
            ev.warnings = ok->warnings;
            ev.status_flags = ok->status;
            st = ok->status;
            if (ok->affected_rows != 0) {
                ev.affected_rows = ok->affected_rows;
            }
        }
    } else if (auto eof = decode_eof(p.payload)) {
        ev.warnings = eof->warnings;
        ev.status_flags = eof->status;
        st = eof->status;
    }
    ev.row_count = rows_in_set_;
    add_line(ev, "End of data; ", rows_in_set_, " rows");
    if (st & status::more_results_exist) {
        add_line(ev, "Expecting next result set");
        emit(ev);
        stage_ = Stage::wait_for_result;
        return;
    }
    emit(ev);
    complete_head(CommandResult::rows, p.ts_last_ns);
}

void ConnectionTracer::server_row(Packet &p, ProtocolEvent &ev) {
    PendingCommand *h = head();
    attach_packet(ev, p, false);
    const uint8_t b0 = p.payload[0];
    if (b0 == 0xFF) {
        if (auto err = decode_err(p.payload)) {
            fill_error(ev, *err);
        }
        emit(ev);
        complete_head(CommandResult::error, p.ts_last_ns);
        return;
    }
    // A text row can start with 0xFE only when its first value is longer
    // than 16 MiB, which makes the whole packet longer than that too.
    if (b0 == 0xFE && p.length < kMaxPacketPayload) {
        end_of_rows(p, ev);
        return;
    }
    ++rows_in_set_;
    if (h != nullptr) {
        h->summary.rows++;
    }
    ev.row_count = rows_in_set_;
    const bool replication =
        h != nullptr && (h->code == com::binlog_dump || h->code == com::binlog_dump_gtid ||
                         h->code == com::table_dump);
    const bool shown = options_.event_contents && rows_in_set_ <= options_.max_rows_shown &&
                       !replication && !p.truncated();
    if (shown && !binary_rows_) {
        std::string &line = add_line(ev, "Row: ");
        if (!append_text_row(line, p.payload, options_.max_value_len, &result_types_)) {
            line = "Received next row";
        }
    } else if (shown && result_types_.empty()) {
        // A binary row cannot be read without its columns' types. They are
        // missing when the server skipped the column definitions (the
        // client caches them) for a statement prepared before the trace
        // began, where a row would otherwise show as an empty "Row: ".
        add_line(ev, "Received next row (", p.length,
                 " bytes; column types unknown: the statement was prepared before the trace "
                 "began)");
    } else if (shown) {
        std::string &line = add_line(ev, "Row: ");
        if (!append_binary_row(line, p.payload, result_types_, options_.max_value_len)) {
            line = "Received next row";
        }
    } else if (p.truncated()) {
        if (p.gap) {
            add_line(ev, "Received next row (cut by the capture)");
        } else {
            add_line(ev, "Received next row (", p.length, " bytes, not all kept)");
        }
    }
    emit(ev);
}

void ConnectionTracer::server_ps_description(Packet &p, ProtocolEvent &ev) {
    PendingCommand *h = head();
    attach_packet(ev, p, false);
    const uint8_t b0 = p.payload[0];
    if (b0 == 0xFF) {
        if (auto err = decode_err(p.payload)) {
            fill_error(ev, *err);
        }
        emit(ev);
        complete_head(CommandResult::error, p.ts_last_ns);
        return;
    }
    auto po = b0 == 0x00 ? decode_prepare_ok(p.payload) : std::nullopt;
    if (!po) {
        add_line(ev, "Wrong PS description");
        emit(ev);
        complete_head(CommandResult::incomplete, p.ts_last_ns);
        return;
    }
    ev.statement_id = po->statement_id;
    ev.column_count = po->columns;
    ev.warnings = po->warnings;
    add_line(ev, "Prepared statement ", po->statement_id, "; params: ", po->params,
             ", cols: ", po->columns);
    emit(ev);
    if (h != nullptr) {
        h->summary.statement_id = po->statement_id;
    }
    prepared_ = Statement{};
    prepared_.params = po->params;
    prepared_.columns = po->columns;
    prepared_.sql = h != nullptr ? h->summary.sql : std::nullopt;
    prepared_.sql_bytes = h != nullptr ? h->summary.sql_bytes : std::nullopt;
    prepared_id_ = po->statement_id;
    last_prepared_id_ = po->statement_id;
    in_prepare_ = true;
    param_remaining_ = po->params;
    prep_columns_ = po->columns;
    result_types_.clear();
    if (po->params > 0) {
        stage_ = Stage::wait_for_param_def;
    } else if (po->columns > 0) {
        stage_ = Stage::wait_for_field_def;
        col_remaining_ = po->columns;
    } else {
        finish_prepare();
        complete_head(CommandResult::ok, p.ts_last_ns);
    }
}

}  // namespace mysqltrace::protocol
