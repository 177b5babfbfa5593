// SPDX-License-Identifier: GPL-2.0-only
// Loads bpf/client.bpf.c for a set of client processes and delivers their
// socket I/O (and forks/exits, and in shim mode API calls) in timestamp order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <sys/types.h>

#include "bpf/handles.h"
#include "bpf/ring_set.h"
#include "client/sock_record.h"
#include "util/result.h"

struct client;

namespace mysqltrace::client {

struct CaptureOptions {
    std::vector<pid_t> pids;
    uint32_t snaplen = 16384;
    bool follow_forks = false;
    bool tls = true;  // probe TLS libraries for cleartext
    // With tls: load mysqltrace's Java agent into traced JVMs that lack it
    // (client/java_agent.h).
    bool java_agent = true;
    // Non-empty: `mysqltrace run` mode. The processes have this shim
    // preloaded; its USDT probes replace the syscall and TLS probes.
    std::string shim_path;
    bool shim_api = true;  // also the API call probes (two hits per call)
    bpf::RingOptions ring;
};

struct CaptureSinks {
    std::function<void(const SockRecord &)> on_sock;
    std::function<void(uint32_t pid, uint64_t ts_ns)> on_exit;
    std::function<void(uint32_t parent, uint32_t child)> on_fork;
    std::function<void(const ApiRecord &)> on_api;  // shim mode
};

class SocketCapture {
  public:
    static Result<std::unique_ptr<SocketCapture>> attach(const CaptureOptions &opts,
                                                         CaptureSinks sinks);
    ~SocketCapture();

    // The kernel's verdict on a socket (enum mt_sock_state).
    void set_verdict(uint64_t sock, uint8_t state);
    bpf::RingSet &rings() { return *rings_; }
    // TLS functions probed, "SSL_read in /usr/lib/.../libssl.so.3 on `push rbp` (emulated)".
    const std::vector<std::string> &tls_probes() const { return tls_probes_; }
    // Processes whose TLS cleartext cannot be seen, and why (a stripped Go
    // binary whose function table is not read, ...).
    const std::vector<std::string> &tls_warnings() const { return tls_warnings_; }
    uint64_t undecodable() const { return undecodable_; }
    // What the user should know about how the capture was set up: a tracefs
    // mount, a fallback to the raw syscall tracepoints.
    const std::vector<std::string> &notes() const { return notes_; }

  private:
    SocketCapture() = default;
    void on_record(std::span<const uint8_t> rec);
    Result<void> attach_tls(pid_t pid);
    Result<void> attach_go_tls(const std::vector<struct GoTlsFunction> &funcs);
    // `prog` at each offset of `path` in process `pid`, identified by the
    // cookie at the same index: one uprobe_multi link where the kernel has
    // them, else one perf link per offset. `what` names the functions for an
    // error.
    Result<void> attach_uprobes(bpf_program *prog, pid_t pid, const std::string &path,
                                const std::vector<uint64_t> &offsets,
                                const std::vector<uint64_t> &cookies, bool retprobe,
                                const std::string &what);
    Result<void> attach_java(pid_t pid, bool load_agent);
    Result<void> attach_shim(const std::string &path, bool api);

    ::client *skel_ = nullptr;
    std::unique_ptr<bpf::RingSet> rings_;
    CaptureSinks sinks_;
    std::vector<bpf::Link> links_;
    // The TLS uprobes, a link per program and file (bpf/uprobe_multi.h), on
    // kernels that have them.
    bool multi_ = false;
    std::vector<bpf::Fd> multi_links_;
    std::vector<std::string> tls_probes_;
    std::vector<std::string> tls_warnings_;
    std::vector<std::string> notes_;
    uint64_t undecodable_ = 0;
};

}  // namespace mysqltrace::client
