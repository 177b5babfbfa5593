// SPDX-License-Identifier: GPL-2.0-only
// The agent's local control socket: a unix stream socket, root's alone
// (mode 0600; statement texts are sensitive), served from the agent's own
// event loop. A client connects, sends one request line and reads one
// answer until the agent closes the connection:
//   snapshot   every traced server's labels and statement classes, the
//              JSON document of top/snapshot.h (`mysqltrace top` reads it)
// Anything else is answered {"error": "..."}.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/traced_server.h"
#include "bpf/handles.h"
#include "top/snapshot.h"
#include "util/result.h"

namespace mysqltrace::agent {

inline constexpr const char *kDefaultControlSocket = "/run/mysqltrace/agent.sock";

// A traced server's part of a snapshot.
top::ServerSnapshot snapshot_of(const TracedServer &server);

class ControlSocket {
  public:
    // Listens on `path`, its directory made (mode 0700) when missing. A
    // socket there that nothing answers on (left by an agent that died) is
    // replaced; one that answers is an error, as is any other file.
    static Result<std::unique_ptr<ControlSocket>> open(const std::string &path);
    ~ControlSocket();

    const std::string &path() const { return path_; }
    // Readable when a client is to be accepted, read or written to.
    int fd() const { return ep_.get(); }
    // Does what is ready without blocking; `snapshot` makes the answer to a
    // snapshot request. A client still connected after 5 s is dropped at
    // the next call; past 16 clients the oldest is.
    void serve(const std::function<std::string()> &snapshot);

  private:
    struct Client {
        bpf::Fd fd;
        std::string in, out;
        size_t sent = 0;
        uint64_t since_ns = 0;
    };
    ControlSocket() = default;
    void accept_all();
    void on_client(int fd, const std::function<std::string()> &snapshot);
    void drop(int fd);

    bpf::Fd ep_, listen_;
    std::string path_;
    ino_t inode_ = 0;
    std::map<int, Client> clients_;
};

// The answer of the agent at `path` to `request` (one line, no newline),
// read until it closes the connection; an error a person understands when
// no agent answers.
Result<std::string> ask_agent(const std::string &path, const std::string &request,
                              int timeout_ms = 5000);

}  // namespace mysqltrace::agent
