// SPDX-License-Identifier: GPL-2.0-only
// The client half of the stage machine: what each packet the client sends
// means in the stage it is sent in (authentication data, commands, LOCAL
// INFILE data), and which stage the command leads to.
#include <algorithm>
#include <cstdio>

#include "protocol/byte_reader.h"
#include "protocol/constants.h"
#include "sql/redact.h"
#include "protocol/wl6226.h"
#include "protocol/wl6226_util.h"

namespace mysqltrace::protocol {

using detail::hex64;
using detail::join;

namespace {

Stage stage_after_send(uint8_t code) {
    switch (code) {
        case com::stmt_prepare:
            return Stage::wait_for_ps_description;
        case com::stmt_fetch:
        case com::binlog_dump:
        case com::binlog_dump_gtid:
        case com::table_dump:
            // Replication streams are sequences of 0x00-led event packets
            // ended by EOF or ERR: read like rows.
            return Stage::wait_for_row;
        case com::field_list:
            return Stage::wait_for_field_def;
        case com::statistics:
            return Stage::wait_for_packet;
        case com::change_user:
            return Stage::authenticate;
        case com::quit:
        case com::stmt_close:
        case com::stmt_send_long_data:
        case com::register_slave:
            return Stage::ready_for_command;
        default:
            return Stage::wait_for_result;
    }
}

bool has_no_reply(uint8_t code) {
    return stage_after_send(code) == Stage::ready_for_command;
}

bool names_statement(uint8_t code) {
    return code == com::stmt_execute || code == com::stmt_bulk_execute || code == com::stmt_fetch ||
           code == com::stmt_close || code == com::stmt_reset || code == com::stmt_send_long_data;
}

}  // namespace

uint64_t ConnectionTracer::command_caps(const Packet &p) {
    uint64_t c = caps() & ~cap::query_attributes;
    if (!query_attributes_ && !p.payload.empty()) {
        if (p.payload[0] == com::query) {
            std::optional<bool> inferred = infer_query_attributes(p.payload);
            query_attributes_ = inferred;
            if (!inferred && p.payload.size() >= 2) {
                // A control byte where text would start: this one packet is
                // read as attributes (and says so if they do not decode),
                // never shown as a statement.
                return c | cap::query_attributes;
            }
        } else if (p.payload[0] == com::stmt_execute && p.payload.size() >= 6 &&
                   (p.payload[5] & 0x08) != 0) {
            // PARAMETER_COUNT_AVAILABLE exists only with query attributes.
            query_attributes_ = true;
        }
    }
    return query_attributes_.value_or(false) ? c | cap::query_attributes : c;
}

void ConnectionTracer::handle_client_packet(Packet &p, const Ctx &ctx) {
    PendingCommand *h = head();
    switch (stage_) {
        case Stage::authenticate:
            handle_auth_client_packet(p, ctx);
            return;
        case Stage::file_request: {
            if (h != nullptr) {
                h->summary.bytes_sent += p.wire_bytes;
            }
            ProtocolEvent &ev =
                packet_event(TraceEvent::send_file, Stage::file_request, p, ctx, p.ts_first_ns);
            if (h != nullptr) {
                ev.command = h->code;
                ev.command_name = h->summary.command_name;
            }
            attach_packet(ev, p, false);
            emit(ev);
            ProtocolEvent &sent =
                packet_event(TraceEvent::packet_sent, Stage::file_request, p, ctx, p.ts_last_ns);
            add_line(sent, "packet sent: ", p.length, " bytes");
            if (p.length == 0) {
                add_line(sent, "File transfer done");
            }
            emit(sent);
            if (p.length == 0) {
                stage_ = Stage::wait_for_result;
                if (h != nullptr) {
                    h->wait_start_ns = p.ts_last_ns;
                }
            }
            return;
        }
        case Stage::connecting:
        case Stage::wait_for_init_packet: {
            ProtocolEvent &ev = packet_event(TraceEvent::packet_sent, stage_, p, ctx, p.ts_last_ns);
            add_line(ev, "client sent a packet before the server greeting");
            attach_packet(ev, p, true);
            emit(ev);
            return;
        }
        case Stage::ssl_negotiation:
        case Stage::disconnected:
            return;
        default:
            handle_command(p, ctx);
            return;
    }
}

std::string ConnectionTracer::describe_sha2_data(const Packet &p) {
    const Sha2Step step = sha2_step_;
    if (step == Sha2Step::none) {
        return "";
    }
    if (step == Sha2Step::full_auth && p.length == 1 && !p.payload.empty() && p.payload[0] == 2) {
        // The key comes next; the password follows it.
        return " (request for the server's RSA public key)";
    }
    sha2_step_ = Sha2Step::none;
    // Without TLS the client either has the server's key already (an RSA
    // block: 1024 to 4096-bit keys) or trusts the transport (a unix socket)
    // and sends the password in clear, NUL-terminated.
    if (step == Sha2Step::key_received ||
        (!tls_ && (p.length == 128 || p.length == 256 || p.length == 384 || p.length == 512))) {
        return " (password encrypted with the server's RSA public key)";
    }
    return tls_ ? " (password in clear text, inside TLS)"
                : " (password in clear text: the server trusts this transport)";
}

void ConnectionTracer::handle_auth_client_packet(Packet &p, const Ctx &ctx) {
    PendingCommand *h = head();
    if (h != nullptr) {
        h->summary.bytes_sent += p.wire_bytes;
        h->wait_start_ns = p.ts_last_ns;
    }
    if (change_user_auth_ || auth_writes_ > 0) {
        ProtocolEvent &ev =
            packet_event(TraceEvent::send_auth_data, Stage::authenticate, p, ctx, p.ts_first_ns);
        const std::string what = describe_sha2_data(p);
        if (options_.show_secrets) {
            add_line(ev, "Auth data: ", to_hex(p.payload), what);
        } else {
            add_line(ev, "Auth data: ", p.length, " bytes", what);
        }
        attach_packet(ev, p, true);
        emit(ev);
        ProtocolEvent &sent =
            packet_event(TraceEvent::packet_sent, Stage::authenticate, p, ctx, p.ts_last_ns);
        add_line(sent, "packet sent: ", p.length, " bytes");
        emit(sent);
        ++auth_writes_;
        return;
    }

    auto hr = decode_handshake_response(p.payload, options_.event_contents);
    auto announce = [&](const std::string &plugin) {
        if (plugin.empty() || plugin == announced_plugin_) {
            return;
        }
        announced_plugin_ = plugin;
        ProtocolEvent &ev = make_event(TraceEvent::auth_plugin, stage_, p.ts_first_ns, ctx);
        ev.auth_plugin = plugin;
        add_line(ev, "Using authentication plugin: ", plugin);
        emit(ev);
    };
    std::string fallback_plugin =
        greeting_plugin_.empty() ? std::string("mysql_native_password") : greeting_plugin_;

    if (hr && hr->ssl_request) {
        // As libmysqlclient reports it (checked against its own trace plugin,
        // 9.7): no PACKET_SENT for the SSL request, and the auth plugin is
        // announced once TLS is up, with the handshake response.
        client_caps_ = hr->capabilities;
        ProtocolEvent &ev =
            packet_event(TraceEvent::send_ssl_request, Stage::authenticate, p, ctx, p.ts_first_ns);
        add_line(ev, "SSL request; client capabilities: ", detail::Hex64{hr->capabilities});
        attach_packet(ev, p, false);
        emit(ev);
        stage_ = Stage::ssl_negotiation;
        ProtocolEvent &connect =
            make_event(TraceEvent::ssl_connect, Stage::ssl_negotiation, p.ts_last_ns, ctx);
        emit(connect);
        return;
    }

    ProtocolEvent &ev =
        packet_event(TraceEvent::send_auth_response, Stage::authenticate, p, ctx, p.ts_first_ns);
    if (hr) {
        client_caps_ = hr->capabilities;
        handshake_seen_ = true;
        deprecate_eof_ = (caps() & cap::deprecate_eof) != 0;
        query_attributes_ = (caps() & cap::query_attributes) != 0;
        announce(hr->auth_plugin.empty() ? fallback_plugin : hr->auth_plugin);
        ev.user = hr->user;
        ev.database = hr->database;
        ev.auth_plugin = announced_plugin_;
        add_line(ev, "User: ", hr->user);
        if (!hr->database.empty()) {
            add_line(ev, "Database: ", hr->database);
        }
        if (options_.show_secrets) {
            add_line(ev, "Auth response: ", to_hex(hr->auth_response));
        } else {
            add_line(ev, "Auth response: ", hr->auth_response.size(), " bytes");
        }
        add_line(ev, "Client capabilities: ", detail::Hex64{hr->capabilities});
        if (!hr->attributes.empty() && options_.event_contents) {
            detail::append_name_values(
                add_line(ev, "Connection attributes: "), hr->attributes,
                [](const auto &kv) -> const auto & { return kv; });
        }
    } else {
        announce(fallback_plugin);
        add_line(ev, "handshake response not decodable");
    }
    attach_packet(ev, p, true);
    emit(ev);
    ProtocolEvent &sent =
        packet_event(TraceEvent::packet_sent, Stage::authenticate, p, ctx, p.ts_last_ns);
    add_line(sent, "packet sent: ", p.length, " bytes");
    emit(sent);
    auth_writes_ = 1;
}

void ConnectionTracer::handle_command(Packet &p, const Ctx &ctx) {
    if (server_lost_) {
        end_lost_reply();
    }
    // A prepare whose reply may or may not end with an EOF: the client moving
    // on proves there is none (CLIENT_DEPRECATE_EOF).
    if (head() != nullptr && !deprecate_eof_ && in_prepare_ &&
        ((stage_ == Stage::wait_for_field_def && col_remaining_ == 0) ||
         (stage_ == Stage::wait_for_param_def && param_remaining_ == 0 && prep_columns_ == 0))) {
        deprecate_eof_ = true;
        complete_head(CommandResult::ok, p.ts_first_ns);
    }

    std::optional<uint16_t> param_count;
    std::vector<ColumnType> *param_types = nullptr;
    std::vector<bool> *long_data = nullptr;
    Statement *stmt = nullptr;
    if (p.payload.size() >= 5 && names_statement(p.payload[0])) {
        uint32_t id = le32(p.payload.data() + 1);
        auto it = statements_.find(id);
        if (it != statements_.end()) {
            stmt = &it->second;
            param_count = it->second.params;
            param_types = &it->second.param_types;
            long_data = &it->second.long_data;
        }
    }
    // Without event contents nothing shows an execute's parameter values.
    Command *cmd = &command_;
    if (!decode_command(*cmd, p.payload, command_caps(p), param_count, param_types, long_data,
                        options_.max_value_len, options_.event_contents)) {
        ProtocolEvent &ev =
            packet_event(TraceEvent::packet_sent, Stage::ready_for_command, p, ctx, p.ts_last_ns);
        add_line(ev, p.length == 0 ? "empty packet where a command was expected"
                                   : "command packet contents not captured");
        emit(ev);
        return;
    }
    ++stats_.commands;

    PendingCommand pc;
    pc.code = cmd->code;
    pc.after_send = stage_after_send(cmd->code);
    pc.wait_start_ns = p.ts_last_ns;
    CommandSummary &sum = pc.summary;
    sum.conn = conn_;
    sum.pid = ctx.pid;
    sum.tid = ctx.tid;
    sum.ts_start_ns = p.ts_first_ns;
    sum.command = cmd->code;
    sum.command_name = cmd->name;  // static storage: no copy
    sum.statement_id = cmd->statement_id;
    sum.bytes_sent = p.wire_bytes;

    bool secret = cmd->code == com::change_user;
    std::optional<std::string> sql;
    size_t sql_captured = 0;  // bytes of the statement in the payload
    if (cmd->sql) {
        sql_captured = cmd->sql->size();
        sql = std::move(cmd->sql);
        if (!options_.show_secrets) {
            const bool changed = mysqltrace::sql::redact_in_place(&*sql);
            secret = secret || changed;
            pc.sql_redacted = changed;
        }
    }
    // How long the statement really is, when only its start is here.
    std::optional<uint64_t> sql_bytes;
    if (sql && p.truncated() && p.length_known && p.length > 0) {
        // Everything after the command byte and any attribute block.
        sql_bytes = p.length - (p.payload.size() - sql_captured);
    }
    if (stmt != nullptr) {
        // Long data belongs to the next execute; a reset discards it.
        if (cmd->code == com::stmt_send_long_data) {
            if (stmt->long_data.size() <= cmd->param_id) {
                stmt->long_data.resize(cmd->param_id + 1u);
            }
            stmt->long_data[cmd->param_id] = true;
        } else if (cmd->code == com::stmt_execute || cmd->code == com::stmt_reset) {
            stmt->long_data.clear();
        }
    }

    ProtocolEvent &ev =
        packet_event(TraceEvent::send_command, Stage::ready_for_command, p, ctx, p.ts_first_ns);
    ev.command = cmd->code;
    ev.sql_bytes = sql_bytes;
    ev.statement_id = cmd->statement_id;
    // An execute's summary shows its prepared statement's text.
    const bool prepared_text = stmt != nullptr && !sql;
    if (prepared_text) {
        if (stmt->sql) {
            // In the room of an earlier summary's text: an execute allocates
            // nothing for it.
            sum.sql.emplace(std::move(spare_sql_)).assign(*stmt->sql);
        }
        sum.sql_bytes = stmt->sql_bytes;
    } else {
        sum.sql_bytes = sql_bytes;
    }
    if (options_.event_contents) {
        ev.sql = std::move(sql);  // the summary's once the event is out
        ev.command_name = cmd->name;
        ev.query_attributes = cmd->attributes;
        describe_command(ev, *cmd, p, stmt);
    }
    attach_packet(ev, p, secret);

    if (cmd->code == com::change_user && !cmd->auth_plugin.empty()) {
        // libmysql picks the plugin before it sends COM_CHANGE_USER.
        announced_plugin_ = cmd->auth_plugin;
        ProtocolEvent &ap =
            make_event(TraceEvent::auth_plugin, Stage::ready_for_command, p.ts_first_ns, ctx);
        ap.auth_plugin = cmd->auth_plugin;
        add_line(ap, "Using authentication plugin: ", cmd->auth_plugin);
        emit(ap);
    }
    emit(ev);
    if (!prepared_text) {
        // Not copied for the event: moved on from it.
        sum.sql = options_.event_contents ? std::move(ev.sql) : std::move(sql);
    }
    ProtocolEvent &sent =
        packet_event(TraceEvent::packet_sent, Stage::ready_for_command, p, ctx, p.ts_last_ns);
    sent.command = cmd->code;
    if (options_.event_contents) {
        sent.command_name = cmd->name;
    }
    if (p.length_known) {
        add_line(sent, "packet sent: ", p.length, " bytes");
    } else {
        add_line(sent, "packet sent: at least ", p.length,
                 " bytes (the capture lost where it ends)");
    }
    emit(sent);
    // The events are done with the command's attributes.
    sum.query_attributes = std::move(cmd->attributes);

    if (has_no_reply(cmd->code)) {
        sum.result = CommandResult::no_reply;
        sum.ts_end_ns = p.ts_last_ns;
        if (cmd->code == com::stmt_close && cmd->statement_id) {
            statements_.erase(*cmd->statement_id);
        }
        if (on_summary_) {
            on_summary_(sum);
        }
        keep_sql_room(sum);
        return;
    }
    commands_.push_back(std::move(pc));
    if (commands_.size() == 1) {
        activate_head();
    } else if (commands_.size() > options_.max_pending_commands) {
        // More unanswered commands than any client pipelines: the replies
        // were not understood. Give up on the oldest.
        commands_.pop_front();
        activate_head();
    }
}

void ConnectionTracer::add_attributes_line(ProtocolEvent &ev,
                                           const std::vector<QueryAttribute> &attributes) {
    detail::append_name_values(
        add_line(ev, "Query attributes: "), attributes, [](const QueryAttribute &a) {
            return std::pair<std::string_view, std::string_view>(a.name, a.value);
        });
}

void ConnectionTracer::describe_command(ProtocolEvent &ev, const Command &c, const Packet &p,
                                        const Statement *stmt) {
    const Command *cmd = &c;
    const std::string_view label = std::string_view(cmd->name).substr(4);  // without "COM_"
    switch (cmd->code) {
        case com::query:
        case com::stmt_prepare:
            if (cmd->attributes_undecodable) {
                add_line(ev, label,
                         ": (not shown: the query attributes before the statement "
                         "did not decode, so where its text starts is unknown)");
                break;
            }
            {
                std::string &line = add_line(ev, label, ": ");
                if (ev.sql) {
                    line += *ev.sql;
                }
            }
            // How much the capture kept depends on how the kernel split the
            // client's writes; the statement's length does not, so only the
            // latter is said (the keep limit, a setting, is predictable).
            if (!p.length_known) {
                add_line(ev,
                         "statement cut by the capture; its length is unknown "
                         "(at least ",
                         p.length - 1, " bytes)");
            } else if (p.truncated() && p.gap) {
                add_line(ev, "statement cut by the capture; its length is ", p.length - 1,
                         " bytes");
            } else if (p.truncated()) {
                add_line(ev, "statement longer than the keep limit: ", p.payload.size() - 1, " of ",
                         p.length - 1, " bytes kept");
            }
            if (!cmd->attributes.empty()) {
                add_attributes_line(ev, cmd->attributes);
            }
            break;
        case com::stmt_execute:
        case com::stmt_bulk_execute:
        case com::stmt_fetch:
        case com::stmt_close:
        case com::stmt_reset:
        case com::stmt_send_long_data: {
            std::string &line = add_line(ev, label, ": ");
            if (cmd->statement_id == 0xFFFFFFFFu) {
                // MariaDB's "the statement prepared just before" (sent together).
                line += "-1 (the statement prepared just before)";
            } else {
                detail::append_part(line, cmd->statement_id.value_or(0));
            }
            if (cmd->code == com::stmt_fetch) {
                line += ", rows: ";
                detail::append_part(line, cmd->fetch_rows);
            } else if (cmd->code == com::stmt_bulk_execute && cmd->iterations > 0) {
                line += ", rows: ";
                detail::append_part(line, cmd->iterations);
            } else if (cmd->code == com::stmt_send_long_data) {
                // The decoder sees only the captured bytes; the packet knows
                // its true length.
                uint64_t data_len = p.length >= 7 ? p.length - 7 : cmd->data_len;
                line += ", parameter ";
                detail::append_part(line, cmd->param_id);
                line += p.length_known ? ", " : ", at least ";
                detail::append_part(line, data_len);
                line += " bytes";
            }
            if (stmt != nullptr && stmt->sql) {
                add_line(ev, "Statement: ", *stmt->sql);
            } else if (stmt == nullptr && cmd->statement_id && *cmd->statement_id != 0xFFFFFFFFu &&
                       (cmd->code == com::stmt_execute || cmd->code == com::stmt_bulk_execute ||
                        cmd->code == com::stmt_fetch)) {
                // What runs a statement whose prepare went by before the
                // trace began says so, rather than leave its text out unsaid.
                add_line(ev, "Statement: unknown (prepared before the trace began)");
            }
            if (!cmd->params.empty()) {
                detail::append_joined(add_line(ev, "Parameters: "), cmd->params, ", ");
            }
            if (!cmd->attributes.empty()) {
                add_attributes_line(ev, cmd->attributes);
            }
            break;
        }
        case com::change_user:
            ev.user = cmd->user;
            ev.database = cmd->database;
            ev.auth_plugin = cmd->auth_plugin;
            add_line(ev, "CHANGE_USER: ", cmd->user);
            if (!cmd->database.empty()) {
                add_line(ev, "Database: ", cmd->database);
            }
            if (options_.show_secrets) {
                add_line(ev, "Auth response: ", to_hex(cmd->auth_response));
            } else {
                add_line(ev, "Auth response: ", cmd->auth_response_len, " bytes");
            }
            break;
        default:
            if (cmd->argument.empty()) {
                add_line(ev, label);
            } else {
                add_line(ev, label, ": ", cmd->argument);
            }
            break;
    }
}

}  // namespace mysqltrace::protocol
