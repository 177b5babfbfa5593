// SPDX-License-Identifier: GPL-2.0-only
// The WL#6226 stage machine of one client connection, fed with captured
// bytes from any source.
//
// It reports what MySQL's client library would report to a protocol trace
// plugin: each event together with the stage it happened in, following the
// transitions that libmysql's test trace plugin checks. Because it watches
// bytes instead of living in the library, it differs where it must:
//   - READ_PACKET is reported just before the PACKET_RECEIVED it belongs to,
//     timestamped when the previous event happened (when the client could
//     start waiting);
//   - commands a client sends before the previous reply has been read
//     (MariaDB's prepare+execute in one go) are queued and their replies are
//     matched in order; SEND_COMMAND is always reported in
//     READY_FOR_COMMAND, as libmysql does;
//   - after an SSL request the socket carries TLS records, which are counted
//     and ignored; the cleartext captured from the TLS library takes over,
//     and the first cleartext seen marks SSL_CONNECTED;
//   - a connection first seen mid-stream (or whose capture lost a packet
//     header) resynchronises at the next client write that starts with a
//     plausible command packet with sequence 0; nothing is reported before
//     that, and the skipped bytes are counted;
//   - the two directions are independent byte streams, so a lost header
//     costs only its own direction when the protocol says where that
//     direction picks up again:
//       * in a client upload (a command packet of 16 MiB or more, which a
//         0xFFFFFF physical packet announces, or LOCAL INFILE data) the
//         server answers only once the whole upload has arrived, and the
//         client sends nothing else meanwhile. The upload ends at the first
//         reply packet that belongs to it (or at the client's next command
//         write, for commands without a reply); its true size is the byte
//         count the capture reports, so its events come out exactly as if
//         nothing had been lost, apart from the bytes the capture did not
//         copy (if the connection ends first, lower bounds are reported).
//         The client stream resynchronises at its next command write.
//       * in a reply (a row longer than the snap length) the rest of the
//         reply is skipped; the client's next command ends it, the command
//         is reported INCOMPLETE with the bytes that were skipped, and the
//         server stream resynchronises at the server's next write.
//     Anything else (a header lost between commands, a reply lost while a
//     cut upload waits for it, a reply lost with more commands pending)
//     loses the whole connection as above.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/classify.h"
#include "protocol/decode.h"
#include "protocol/event.h"
#include "protocol/packet_stream.h"
#include "protocol/wl6226_util.h"

namespace mysqltrace::protocol {

struct TracerOptions {
    bool show_secrets = false;  // auth data, change-user data, password literals
    bool keep_packets = false;  // copy payload bytes into events (hex dumps)
    size_t max_dump_bytes = 4096;
    size_t max_packet_keep = PacketStream::kDefaultMaxKeep;
    size_t max_value_len = 64;     // per value in detail lines
    size_t max_rows_shown = 20;    // rows per result set whose values are shown
    size_t max_statements = 4096;  // prepared statements remembered per connection
    size_t max_pending_commands = 64;
    // false when nobody reads what events say (`mysqltrace client
    // --summary-only`): the event callback still runs once per event, but
    // each carries only conn, ts_ns, pid, tid, stage and event; no detail
    // line is built. Command summaries and stats are the same either way.
    bool event_contents = true;
};

// The event is the tracer's (reused for later events): valid only during
// the call; a consumer that keeps it copies it.
using EventCallback = std::function<void(const ProtocolEvent &)>;
using SummaryCallback = std::function<void(const CommandSummary &)>;

struct ConnectionStats {
    uint64_t bytes_client = 0;  // everything fed, per direction
    uint64_t bytes_server = 0;
    uint64_t tls_record_bytes = 0;  // socket bytes ignored because TLS carries them
    uint64_t skipped_bytes = 0;     // bytes not decoded while out of sync
    uint64_t gap_bytes = 0;         // bytes the capture reported but did not copy
    uint64_t packets_client = 0;
    uint64_t packets_server = 0;
    uint64_t events = 0;
    uint64_t commands = 0;
    uint64_t resyncs = 0;
    uint64_t sync_losses = 0;
    uint64_t compressed_frames = 0;
    uint64_t inflate_errors = 0;
};

class ConnectionTracer {
  public:
    ConnectionTracer(uint64_t conn, TracerOptions options, EventCallback on_event,
                     SummaryCallback on_summary = {});
    ~ConnectionTracer();
    ConnectionTracer(const ConnectionTracer &) = delete;
    ConnectionTracer &operator=(const ConnectionTracer &) = delete;

    // connect() entered: CONNECTING.
    void on_connect(uint64_t ts_ns, uint32_t pid, uint32_t tid);
    // connect() succeeded: CONNECTED. Implied by the first bytes if missing.
    void on_connected(uint64_t ts_ns, uint32_t pid, uint32_t tid);
    // Bytes read (server_to_client) or written (client_to_server) by the
    // client; true_len - copied bytes followed but were not copied.
    void feed(Direction dir, Source src, const uint8_t *data, size_t copied, size_t true_len,
              uint64_t ts_ns, uint32_t pid, uint32_t tid);
    // An error the client itself detected (from the shim: the library's error
    // number, SQLSTATE and message; code 0 when only the message is known).
    void on_error(uint64_t ts_ns, uint32_t pid, uint32_t tid, int code, std::string_view sqlstate,
                  std::string_view message);
    void on_close(uint64_t ts_ns, uint32_t pid, uint32_t tid);

    Stage stage() const { return stage_; }
    bool synced() const { return synced_; }
    bool tls() const { return tls_; }
    ConnectionStats stats() const;

  private:
    struct Statement {
        uint16_t params = 0;
        uint16_t columns = 0;
        std::vector<ColumnType> column_types;
        std::vector<ColumnType> param_types;
        std::vector<bool> long_data;        // parameters sent with SEND_LONG_DATA
        std::optional<std::string> sql;     // already redacted unless show_secrets
        std::optional<uint64_t> sql_bytes;  // true length when sql is cut
    };
    struct PendingCommand {
        uint8_t code = 0;
        Stage after_send = Stage::ready_for_command;
        uint64_t wait_start_ns = 0;  // client waiting since; 0 when not
        bool sql_redacted = false;   // its statement had secrets: so may its parse error
        CommandSummary summary;
    };
    struct Ctx {
        uint64_t ts_ns;
        uint32_t pid;
        uint32_t tid;
    };
    // A client upload whose packet framing the capture lost (see the top of
    // this file). Its events wait until its end, and so its size, is known.
    struct CutUpload {
        bool file = false;             // LOCAL INFILE data, not one command packet
        std::optional<Packet> packet;  // the part framed before the loss
        Source src = Source::socket;
        uint64_t lost_at = 0;     // client stream offset where framing was lost
        bool exact = true;        // uncompressed: stream bytes are packet bytes
        uint64_t ts_lost_ns = 0;  // the write in which framing was lost
        uint64_t ts_last_ns = 0;  // the client's last write since
        uint32_t pid = 0;
        uint32_t tid = 0;
    };
    // A reply whose packet framing the capture lost.
    struct LostReply {
        Source src = Source::socket;
        uint64_t lost_at = 0;  // server stream offset where framing was lost
        bool exact = true;
    };

    PacketStream &stream(Direction dir, Source src);
    void drain(Direction dir, Source src, const Ctx &ctx);
    void drain_packets(PacketStream &s, Packet &p, Direction dir, Source src, const Ctx &ctx);
    void handle_server_packet(Packet &p, const Ctx &ctx);
    void handle_client_packet(Packet &p, const Ctx &ctx);
    void handle_command(Packet &p, const Ctx &ctx);
    void handle_auth_client_packet(Packet &p, const Ctx &ctx);
    // SEND_COMMAND's detail lines.
    void describe_command(ProtocolEvent &ev, const Command &c, const Packet &p,
                          const Statement *stmt);
    void add_attributes_line(ProtocolEvent &ev, const std::vector<QueryAttribute> &attributes);

    // Stage handlers for a server packet; ev is the PACKET_RECEIVED event
    // still to be emitted (they emit it, then any follow-up events).
    void server_init_packet(Packet &p, ProtocolEvent &ev);
    void server_authenticate(Packet &p, ProtocolEvent &ev);
    void server_result(Packet &p, ProtocolEvent &ev);
    void server_field_def(Packet &p, ProtocolEvent &ev);
    void server_param_def(Packet &p, ProtocolEvent &ev);
    void server_row(Packet &p, ProtocolEvent &ev);
    void server_ps_description(Packet &p, ProtocolEvent &ev);

    void fill_error(ProtocolEvent &ev, const ErrPacket &err);
    void fill_ok(ProtocolEvent &ev, const OkPacket &ok);
    void end_of_rows(Packet &p, ProtocolEvent &ev);
    void after_metadata();
    void params_done();
    void finish_prepare();
    void infer_deprecate_eof(const Packet &p);

    // The next of the thread's event objects (wl6226_events.cpp), cleared:
    // it stays valid until three more events are made on the thread, by any
    // tracer (no handler holds one longer).
    ProtocolEvent &make_event(TraceEvent event, Stage stage, uint64_t ts_ns, const Ctx &ctx);
    ProtocolEvent &packet_event(TraceEvent event, Stage stage, const Packet &p, const Ctx &ctx,
                                uint64_t ts_ns);
    // READ_PACKET, timestamped when the previous event happened: only the
    // command is left to set.
    ProtocolEvent &read_packet_event(Stage stage, const Ctx &ctx);
    void attach_packet(ProtocolEvent &ev, const Packet &p, bool secret);
    void emit(ProtocolEvent &ev);
    // Appends a detail line to ev made of parts (strings or integers) and
    // returns it for more; with event_contents off, a scratch line nobody
    // reads. Lines reuse the buffers of earlier events' lines (of any tracer
    // on the thread).
    template <typename... Parts>
    std::string &add_line(ProtocolEvent &ev, const Parts &...parts) {
        std::string &line = new_line(ev);
        (detail::append_part(line, parts), ...);
        return line;
    }
    std::string &new_line(ProtocolEvent &ev);

    PendingCommand *head() { return commands_.empty() ? nullptr : &commands_.front(); }
    void activate_head();
    void complete_head(CommandResult result, uint64_t ts_ns);
    void flush_commands(CommandResult result, uint64_t ts_ns);
    // Keeps the room of a summary's text (done with) for a later execute's.
    void keep_sql_room(CommandSummary &sum);
    void lose_sync();
    void resync_at_command(CommandFraming framing, Source src, const Ctx &ctx);
    // A stream stopped framing packets: lose only its direction when the
    // protocol allows, else the whole connection.
    void stream_lost(Direction dir, Source src, const Ctx &ctx);
    // Keeps a packet cut by a lost header if it starts a client upload.
    bool take_cut_upload(Packet &p, Source src, const Ctx &ctx);
    // ended: the upload is known to be over (a reply or a next command came).
    void finish_cut_upload(bool ended);
    void finish_cut_file(CutUpload &u, uint64_t unframed, bool ended);
    void end_lost_reply();
    void enable_compression();
    uint64_t caps() const;  // negotiated, or assumed when the handshake was not seen
    // caps() for decoding this command packet, with CLIENT_QUERY_ATTRIBUTES
    // inferred from it when the handshake was not seen.
    uint64_t command_caps(const Packet &p);
    void remember_statement(uint32_t id, Statement st);

    uint64_t conn_;
    TracerOptions options_;
    EventCallback on_event_;
    SummaryCallback on_summary_;

    Stage stage_ = Stage::connecting;
    bool synced_ = false;
    bool ever_synced_ = false;
    bool connect_seen_ = false;
    bool closed_ = false;
    bool emitted_any_ = false;
    bool tls_ = false;
    bool server_resync_pending_ = false;
    // One direction out of sync while the other goes on (see the top).
    bool client_lost_ = false;  // client stream waits for its next command write
    std::optional<CutUpload> cut_upload_;
    std::optional<LostReply> server_lost_;
    std::string pending_note_;  // prepended to the details of the next event
    uint64_t last_ts_ = 0;

    PacketStream socket_client_;
    PacketStream socket_server_;
    PacketStream tls_client_;
    PacketStream tls_server_;

    // Handshake.
    bool handshake_seen_ = false;
    uint64_t server_caps_ = 0;
    uint64_t client_caps_ = 0;
    std::optional<bool> deprecate_eof_;
    // CLIENT_QUERY_ATTRIBUTES: from the handshake, or inferred from the first
    // COM_QUERY (or execute) of a connection joined mid-stream.
    std::optional<bool> query_attributes_;
    std::string greeting_plugin_;
    std::string announced_plugin_;
    std::string server_version_;
    uint32_t server_conn_id_ = 0;
    int auth_writes_ = 0;  // client packets sent in the current auth exchange
    // caching_sha2_password's full authentication: what the client's next
    // auth data is (the password in clear over a secure transport, a request
    // for the server's RSA key, or the password encrypted with that key).
    enum class Sha2Step : uint8_t { none, full_auth, key_received };
    Sha2Step sha2_step_ = Sha2Step::none;
    std::string describe_sha2_data(const Packet &p);
    bool change_user_auth_ = false;

    // Commands and the reply being read.
    // A Fifo, not a std::deque: a deque node holds one PendingCommand, so
    // each command would allocate one. A pointer to the head stays valid
    // until the next command is queued.
    Fifo<PendingCommand> commands_;
    // The command packet being read (handle_command), kept for the room of
    // its parameter list.
    Command command_;
    std::string spare_sql_;  // see keep_sql_room
    uint64_t col_remaining_ = 0;
    uint64_t param_remaining_ = 0;
    uint16_t prep_columns_ = 0;
    bool in_prepare_ = false;
    bool field_list_ = false;
    bool binary_rows_ = false;
    uint64_t rows_in_set_ = 0;
    std::vector<ColumnType> result_types_;
    std::optional<uint32_t> prepared_id_;  // statement being described
    Statement prepared_;
    std::map<uint32_t, Statement> statements_;
    std::optional<uint32_t> last_prepared_id_;

    ConnectionStats stats_;
};

}  // namespace mysqltrace::protocol
