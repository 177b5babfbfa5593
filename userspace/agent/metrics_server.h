// SPDX-License-Identifier: GPL-2.0-only
// The HTTP server of `mysqltrace agent --metrics-listen`: GET /metrics
// answers with what a render function returns (agent/metrics.h), on
// threads of its own, never the agent's event loop. cpp-httplib (Debian's
// libcpp-httplib) does the HTTP.
//
// A scrape storm cannot take more than this: two worker threads, and when
// both are busy the accepting thread serves the connection itself, so no
// further connection is accepted meanwhile (the kernel's listen backlog
// holds or refuses them). No queue of accepted sockets grows, so the
// agent's file descriptors, which attaching a server needs, stay its own.
// Reads and writes time out after 5 s.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "util/result.h"

namespace mysqltrace::agent {

// "HOST:PORT" ("127.0.0.1:9104", "[::1]:9104", "localhost:9104"; ":9104"
// for every address), split; an error names what is wrong.
struct ListenAddress {
    std::string host;  // as given, without brackets; "0.0.0.0" for ":PORT"
    uint16_t port = 0;
};
Result<ListenAddress> parse_listen_address(const std::string &text);

class MetricsServer {
  public:
    // Binds (port 0: one the kernel picks) and starts serving. A bind
    // failure is an error naming the address and errno.
    static Result<std::unique_ptr<MetricsServer>> start(const std::string &listen,
                                                        std::function<std::string()> render);
    // Stops serving and joins its threads.
    ~MetricsServer();
    MetricsServer(const MetricsServer &) = delete;
    MetricsServer &operator=(const MetricsServer &) = delete;

    // "http://HOST:PORT/metrics", with the port bound.
    const std::string &url() const { return url_; }
    uint16_t port() const { return port_; }

  private:
    struct Impl;
    MetricsServer() = default;
    std::unique_ptr<Impl> impl_;
    std::string url_;
    uint16_t port_ = 0;
};

}  // namespace mysqltrace::agent
