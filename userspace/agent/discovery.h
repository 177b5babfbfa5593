// SPDX-License-Identifier: GPL-2.0-only
// How `mysqltrace agent` finds the servers of a host: every process whose
// executable is a mysqld or mariadbd, with what /proc says about it (its
// cgroup, the container and systemd unit that cgroup names, the TCP ports
// and unix sockets it listens on). What the server is (flavour, version) is
// learnt from its binary by server/server_target.h, not here.
//
// The parsers take the text of a /proc file, so they are tested on real
// shapes without the processes that make them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <sys/types.h>

namespace mysqltrace::agent {

// One process, even after its pid is reused: the pid and its start time
// (field 22 of /proc/PID/stat, clock ticks since boot).
struct ProcessId {
    pid_t pid = 0;
    uint64_t start_ticks = 0;
    bool operator==(const ProcessId &) const = default;
    auto operator<=>(const ProcessId &) const = default;
};

// Field 22 of a /proc/PID/stat line (the command name may hold spaces and
// parentheses: fields are counted after its last ')').
std::optional<uint64_t> parse_stat_start_ticks(std::string_view stat);

// A server executable's name: "mysqld" or "mariadbd" (also the name of a
// binary replaced on disk, " (deleted)").
bool is_server_executable(std::string_view exe_path);

// The container a cgroup path names, where it names one.
struct Container {
    std::string runtime;  // "docker", "podman", "containerd", "cri-o"
    std::string id;       // 64 hex digits
};
// docker-<id>.scope (systemd driver), /docker/<id> (cgroupfs driver),
// libpod-<id>.scope and /libpod_parent/libpod-<id> (podman),
// cri-containerd-<id>.scope and crio-<id>.scope (Kubernetes with the
// systemd driver), /kubepods/<qos>/pod<uid>/<id> (cgroupfs driver). The
// innermost one wins (a container in a container). Conmon's scopes are not
// containers.
std::optional<Container> container_of(std::string_view cgroup_path);

// The systemd unit a cgroup path names: its innermost *.service component
// ("" when none, e.g. a container's scope).
std::string systemd_unit_of(std::string_view cgroup_path);

// The cgroup path of a /proc/PID/cgroup text: the unified hierarchy's
// ("0::/path"), or on a v1-only host systemd's (name=systemd), or the first
// one that is not the root. Container ids are looked for in every line.
struct CgroupInfo {
    std::string path;
    std::optional<Container> container;
    std::string unit;
};
CgroupInfo parse_proc_cgroup(std::string_view text);

// A socket in /proc/PID/net/tcp or tcp6 that listens.
struct TcpListener {
    std::string address;  // "127.0.0.1", "::", "::ffff:127.0.0.1"
    uint16_t port = 0;
    uint64_t inode = 0;
};
// The LISTEN rows of a /proc/net/tcp (ipv6 false) or tcp6 (true) text.
std::vector<TcpListener> parse_tcp_listeners(std::string_view text, bool ipv6);

struct UnixListener {
    std::string path;  // "@name" for an abstract socket
    uint64_t inode = 0;
};
// The listening rows (__SO_ACCEPTCON) with a name of a /proc/net/unix text.
std::vector<UnixListener> parse_unix_listeners(std::string_view text);

// The socket inodes of "socket:[N]" fd link targets.
std::optional<uint64_t> parse_socket_link(std::string_view link);

// What /proc says about one server process.
struct ProcessLabels {
    ProcessId id;
    std::string exe;  // the executable's path as the process sees it
    CgroupInfo cgroup;
    std::vector<uint16_t> ports;       // TCP ports it listens on, sorted, unique
    std::vector<std::string> sockets;  // unix socket paths it listens on
    bool listening() const { return !ports.empty() || !sockets.empty(); }
};

// Every process on the host whose executable is a server's (by name).
std::vector<ProcessId> find_server_processes(const std::string &proc_root = "/proc");

// Its labels; nullopt when the process is gone (or another one has its pid).
std::optional<ProcessLabels> read_process_labels(const ProcessId &id,
                                                 const std::string &proc_root = "/proc");

// The listening ports and sockets of `id` alone (its sockets' inodes looked
// up in its network namespace's tables).
void read_listeners(ProcessLabels &labels, const std::string &proc_root = "/proc");

}  // namespace mysqltrace::agent
