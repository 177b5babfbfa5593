// SPDX-License-Identifier: GPL-2.0-only
// The neutral model the stage machine emits and the renderers consume.
// Stage and event names and their order are those of MySQL's WL#6226
// (include/mysql/plugin_trace.h), so a trace reads like the output of the
// client library's own protocol trace plugin.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mysqltrace::protocol {

enum class Stage : uint8_t {
    connecting,
    wait_for_init_packet,
    authenticate,
    ssl_negotiation,
    ready_for_command,
    wait_for_packet,
    wait_for_result,
    wait_for_field_def,
    wait_for_row,
    file_request,
    wait_for_ps_description,
    wait_for_param_def,
    disconnected,
};

enum class TraceEvent : uint8_t {
    error,
    connecting,
    connected,
    disconnected,
    send_ssl_request,
    ssl_connect,
    ssl_connected,
    init_packet_received,
    auth_plugin,
    send_auth_response,
    send_auth_data,
    authenticated,
    send_command,
    send_file,
    read_packet,
    packet_received,
    packet_sent,
};

// "WAIT_FOR_RESULT", "PACKET_RECEIVED".
const char *stage_name(Stage stage);
const char *event_name(TraceEvent event);

enum class Direction : uint8_t { client_to_server, server_to_client };

// A named value a client sent with a statement: MySQL 8's query attributes
// (CLIENT_QUERY_ATTRIBUTES; `query_attributes` in the mysql CLI,
// mysql_bind_param() in the C API). value is in display form: strings
// quoted, numbers plain, NULL as NULL.
struct QueryAttribute {
    std::string name;
    std::string value;
    bool operator==(const QueryAttribute &) const = default;
};
// Where bytes were captured: the socket (wire bytes, TLS records once TLS is
// on) or the cleartext side of the client's TLS library.
enum class Source : uint8_t { socket, tls_cleartext };

// An event's detail lines: a vector of strings whose lines keep their
// buffers when it is cleared, so that an event object reused for the next
// event (the stage machine's) builds its lines without allocating and
// without moving strings in and out of a pool. Reads like a vector.
class Lines {
  public:
    using value_type = std::string;
    using iterator = std::vector<std::string>::iterator;
    using const_iterator = std::vector<std::string>::const_iterator;

    Lines() = default;
    Lines(std::initializer_list<std::string> lines) : lines_(lines), n_(lines_.size()) {}
    // A copy holds the lines only, not the kept buffers.
    Lines(const Lines &o) : lines_(o.begin(), o.end()), n_(o.n_) {}
    Lines &operator=(const Lines &o) {
        if (this != &o) {
            lines_.assign(o.begin(), o.end());
            n_ = o.n_;
        }
        return *this;
    }
    // A moved-from Lines is empty (n_ follows its lines).
    Lines(Lines &&o) noexcept : lines_(std::move(o.lines_)), n_(std::exchange(o.n_, 0)) {
        o.lines_.clear();
    }
    Lines &operator=(Lines &&o) noexcept {
        if (this != &o) {  // a self-move would empty lines_ and keep n_
            lines_ = std::move(o.lines_);
            n_ = std::exchange(o.n_, 0);
            o.lines_.clear();
        }
        return *this;
    }
    Lines &operator=(std::initializer_list<std::string> lines) {
        lines_ = lines;
        n_ = lines_.size();
        return *this;
    }

    iterator begin() { return lines_.begin(); }
    iterator end() { return lines_.begin() + static_cast<std::ptrdiff_t>(n_); }
    const_iterator begin() const { return lines_.begin(); }
    const_iterator end() const { return lines_.begin() + static_cast<std::ptrdiff_t>(n_); }
    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    const std::string &operator[](size_t i) const { return lines_[i]; }
    std::string &operator[](size_t i) { return lines_[i]; }
    const std::string &at(size_t i) const {
        if (i >= n_) {
            throw std::out_of_range("Lines::at");
        }
        return lines_[i];
    }
    const std::string &front() const { return lines_[0]; }
    const std::string &back() const { return lines_[n_ - 1]; }

    // A new empty last line, in a kept buffer when there is one.
    std::string &emplace_back() {
        if (n_ < lines_.size()) {
            std::string &line = lines_[n_++];
            if (line.capacity() > kKeepBytes) [[unlikely]] {
                give_back(line);
            }
            line.clear();
            return line;
        }
        ++n_;
        return lines_.emplace_back();
    }
    void push_back(std::string line) { emplace_back() = std::move(line); }
    // line before the others.
    void push_front(std::string line) {
        push_back(std::move(line));
        std::rotate(begin(), end() - 1, end());
    }
    // No lines; their buffers stay for the next ones, but for lines past
    // kKeepLines and (when next used) a line that grew past kKeepBytes (a
    // long statement), so that a rare large event does not hold its memory
    // for good.
    void clear() {
        if (lines_.size() > kKeepLines) [[unlikely]] {
            trim();
        }
        n_ = 0;
    }
    static constexpr size_t kKeepBytes = 4096;
    static constexpr size_t kKeepLines = 16;

    bool operator==(const Lines &o) const { return std::equal(begin(), end(), o.begin(), o.end()); }
    bool operator==(const std::vector<std::string> &o) const {
        return std::equal(begin(), end(), o.begin(), o.end());
    }

  private:
    [[gnu::noinline, gnu::cold]] static void give_back(std::string &line) {
        std::string().swap(line);
    }
    [[gnu::noinline, gnu::cold]] void trim() { lines_.resize(kKeepLines); }

    std::vector<std::string> lines_;  // the first n_ are the lines
    size_t n_ = 0;
};

struct ProtocolEvent {
    uint64_t conn = 0;  // the tracer's connection id, given by the capture side
    uint64_t ts_ns = 0;
    uint32_t pid = 0;
    uint32_t tid = 0;
    Stage stage = Stage::connecting;  // the stage the event happened in
    TraceEvent event = TraceEvent::error;

    // Fields below are set only where they apply.
    std::optional<uint8_t> command;  // SEND_COMMAND, and events of the command's reply
    // "COM_QUERY": static storage (mysql::command_name_view, or a literal),
    // so that naming an event copies nothing.
    std::string_view command_name;
    std::optional<std::string> sql;  // redacted unless show_secrets
    // The statement's true length in bytes, set when sql holds only its start
    // (cut by the capture or by the keep limit).
    std::optional<uint64_t> sql_bytes;
    std::optional<uint32_t> statement_id;
    std::vector<QueryAttribute> query_attributes;  // sent with the statement, in order
    std::optional<uint64_t> bytes;                 // payload length of the packet (true length)
    std::optional<uint8_t> seq;
    bool truncated = false;        // bytes of the packet were not captured
    std::vector<uint8_t> packet;   // payload prefix for hex dumps (only if asked for)
    bool packet_redacted = false;  // packet withheld because it holds secrets

    std::optional<uint16_t> error_code;
    std::string sqlstate;
    std::string error_message;

    std::optional<uint64_t> affected_rows;
    std::optional<uint64_t> last_insert_id;
    std::optional<uint16_t> warnings;
    std::optional<uint16_t> status_flags;
    std::optional<uint64_t> column_count;
    std::optional<uint64_t> row_count;  // rows of the result set so far (row packets, end)

    std::string auth_plugin;
    std::string user;
    std::string database;
    std::string server_version;
    std::optional<uint32_t> server_connection_id;

    Lines details;  // human-readable lines
    // Reported verbatim by the client library's own WL#6226 trace plugin
    // (the shim's trace_event probe), not rebuilt from the wire.
    bool from_library = false;
};

enum class CommandResult : uint8_t {
    ok,          // OK packet
    error,       // ERR packet
    rows,        // one or more result sets
    reply,       // a reply that is neither (COM_STATISTICS's string)
    no_reply,    // the command has none (COM_QUIT, COM_STMT_CLOSE, ...)
    incomplete,  // the connection closed or the capture lost the reply
};
const char *command_result_name(CommandResult r);  // "OK", "ERR", "ROWS", ...

// One per command, when its reply has been read.
struct CommandSummary {
    uint64_t conn = 0;
    uint32_t pid = 0;
    uint32_t tid = 0;
    uint64_t ts_start_ns = 0;  // command sent
    uint64_t ts_end_ns = 0;    // last packet of the reply
    uint8_t command = 0;
    // Static storage (mysql::command_name_view, or a literal): a summary is
    // made per command, and a name of 16 bytes or more was an allocation.
    std::string_view command_name;
    std::optional<std::string> sql;
    std::optional<uint64_t> sql_bytes;  // as in ProtocolEvent
    std::optional<uint32_t> statement_id;
    std::vector<QueryAttribute> query_attributes;
    CommandResult result = CommandResult::incomplete;
    uint64_t rows = 0;  // rows of all result sets
    uint64_t result_sets = 0;
    std::optional<uint64_t> affected_rows;
    std::optional<uint16_t> error_code;
    std::string error_message;
    uint64_t bytes_sent = 0;  // MySQL packet bytes (headers included, uncompressed)
    uint64_t bytes_received = 0;
    // Time the client spent waiting for the server: from each client send
    // (the command, the end of a LOCAL INFILE upload) to the first reply
    // packet that followed it.
    uint64_t server_wait_ns = 0;
};

// A MySQL C API call seen by the shim (`mysqltrace run`), reported when it
// returns: the call's boundaries, its handle and, on failure, the library's
// own error.
struct ApiCall {
    uint64_t conn = 0;  // the connection it worked on; 0 if none is known
    uint32_t pid = 0;
    uint32_t tid = 0;
    std::string_view func;  // "mysql_real_query": names are static text
    uint64_t handle = 0;
    uint64_t ts_begin_ns = 0;
    uint64_t ts_end_ns = 0;
    int64_t ret = 0;  // 0 success, 1 failure; mysql_stmt_fetch: its own value
    bool failed = false;
    std::optional<uint16_t> error_code;
    std::string sqlstate;
    std::string error_message;
    std::optional<uint32_t> server_thread_id;  // mysql_thread_id() after the call
    std::optional<std::string> arg;            // statement or schema (redacted unless asked)
    std::optional<uint64_t> arg_bytes;         // its true length when arg holds only its start
    uint64_t server_wait_ns = 0;               // of the call's time, spent waiting for the server
};

}  // namespace mysqltrace::protocol
