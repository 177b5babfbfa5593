// SPDX-License-Identifier: GPL-2.0-only
#include "agent/discovery.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace mysqltrace::agent {

namespace {

std::optional<std::string> slurp(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::optional<std::string> read_link(const std::string &path) {
    char buf[4096];
    const ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf));
    if (n <= 0) {
        return std::nullopt;
    }
    return std::string(buf, static_cast<size_t>(n));
}

bool all_hex(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isxdigit(static_cast<unsigned char>(c)) != 0;
    });
}

bool is_container_id(std::string_view s) {
    return s.size() == 64 && all_hex(s);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    size_t start = 0;
    for (;;) {
        const size_t end = s.find(sep, start);
        out.push_back(s.substr(start, end == std::string_view::npos ? end : end - start));
        if (end == std::string_view::npos) {
            return out;
        }
        start = end + 1;
    }
}

// Whitespace-separated fields of one line.
std::vector<std::string_view> fields(std::string_view line) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) {
            i++;
        }
        const size_t start = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
            i++;
        }
        if (i > start) {
            out.push_back(line.substr(start, i - start));
        }
    }
    return out;
}

template <typename T>
std::optional<T> number(std::string_view s, int base = 10) {
    T v{};
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc() || end != s.data() + s.size()) {
        return std::nullopt;
    }
    return v;
}

// One path component as a container's cgroup: "<prefix><id><suffix>".
std::optional<Container> container_component(std::string_view c, std::string_view parent) {
    struct Shape {
        std::string_view prefix, suffix, runtime;
    };
    static constexpr Shape kShapes[] = {
        {"docker-", ".scope", "docker"},
        {"libpod-", ".scope", "podman"},
        {"libpod-", "", "podman"},  // cgroupfs driver: /libpod_parent/libpod-<id>
        {"cri-containerd-", ".scope", "containerd"},
        {"crio-", ".scope", "cri-o"},
    };
    for (const auto &s : kShapes) {
        if (c.size() == s.prefix.size() + 64 + s.suffix.size() && c.starts_with(s.prefix) &&
            c.ends_with(s.suffix)) {
            auto id = c.substr(s.prefix.size(), 64);
            if (is_container_id(id)) {
                return Container{std::string(s.runtime), std::string(id)};
            }
        }
    }
    // cgroupfs drivers: a bare id under docker/ or a Kubernetes pod.
    if (is_container_id(c)) {
        if (parent == "docker") {
            return Container{"docker", std::string(c)};
        }
        if (parent.starts_with("pod")) {
            return Container{"kubernetes", std::string(c)};
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<uint64_t> parse_stat_start_ticks(std::string_view stat) {
    const size_t paren = stat.rfind(')');
    if (paren == std::string_view::npos) {
        return std::nullopt;
    }
    // After ") ": field 3 (state) on; start time is field 22.
    auto f = fields(stat.substr(paren + 1));
    if (f.size() < 20) {
        return std::nullopt;
    }
    return number<uint64_t>(f[19]);
}

bool is_server_executable(std::string_view exe_path) {
    constexpr std::string_view kDeleted = " (deleted)";
    if (exe_path.ends_with(kDeleted)) {
        exe_path.remove_suffix(kDeleted.size());
    }
    const size_t slash = exe_path.rfind('/');
    const std::string_view base =
        slash == std::string_view::npos ? exe_path : exe_path.substr(slash + 1);
    return base == "mysqld" || base == "mariadbd";
}

std::optional<Container> container_of(std::string_view cgroup_path) {
    auto parts = split(cgroup_path, '/');
    for (size_t i = parts.size(); i-- > 0;) {
        const std::string_view parent = i > 0 ? parts[i - 1] : std::string_view();
        if (auto c = container_component(parts[i], parent)) {
            return c;
        }
    }
    return std::nullopt;
}

std::string systemd_unit_of(std::string_view cgroup_path) {
    auto parts = split(cgroup_path, '/');
    for (size_t i = parts.size(); i-- > 0;) {
        if (parts[i].size() > 8 && parts[i].ends_with(".service")) {
            return std::string(parts[i]);
        }
    }
    return {};
}

CgroupInfo parse_proc_cgroup(std::string_view text) {
    CgroupInfo info;
    std::string unified, systemd, first;
    for (auto line : split(text, '\n')) {
        // hierarchy-ID:controller-list:path; the path may hold ':'.
        const size_t a = line.find(':');
        const size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
        if (b == std::string_view::npos) {
            continue;
        }
        const std::string_view id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
        const std::string_view path = line.substr(b + 1);
        if (!info.container) {
            info.container = container_of(path);
        }
        if (id == "0" && controllers.empty()) {
            unified = path;
        } else if (controllers == "name=systemd") {
            systemd = path;
        } else if (first.empty() && path != "/") {
            first = path;
        }
    }
    if (!unified.empty() && unified != "/") {
        info.path = unified;
    } else if (!systemd.empty() && systemd != "/") {
        info.path = systemd;
    } else if (!first.empty()) {
        info.path = first;
    } else {
        info.path = !unified.empty() ? unified : systemd;
    }
    info.unit = systemd_unit_of(info.path);
    return info;
}

std::vector<TcpListener> parse_tcp_listeners(std::string_view text, bool ipv6) {
    std::vector<TcpListener> out;
    constexpr std::string_view kListen = "0A";
    for (auto line : split(text, '\n')) {
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
        auto f = fields(line);
        if (f.size() < 10 || !f[0].ends_with(':') || f[3] != kListen) {
            continue;
        }
        const size_t colon = f[1].find(':');
        if (colon == std::string_view::npos) {
            continue;
        }
        const std::string_view addr = f[1].substr(0, colon);
        auto port = number<uint16_t>(f[1].substr(colon + 1), 16);
        auto inode = number<uint64_t>(f[9]);
        if (!port || !inode || addr.size() != (ipv6 ? 32u : 8u) || !all_hex(addr)) {
            continue;
        }
        // The kernel prints each 32-bit word of the address as a host-order
        // number.
        uint32_t words[4] = {};
        for (size_t w = 0; w < addr.size() / 8; w++) {
            words[w] = *number<uint32_t>(addr.substr(w * 8, 8), 16);
        }
        char buf[INET6_ADDRSTRLEN] = {};
        ::inet_ntop(ipv6 ? AF_INET6 : AF_INET, words, buf, sizeof(buf));
        out.push_back({buf, *port, *inode});
    }
    return out;
}

std::vector<UnixListener> parse_unix_listeners(std::string_view text) {
    std::vector<UnixListener> out;
    constexpr uint32_t kAcceptCon = 0x10000;  // __SO_ACCEPTCON: listen() was called
    for (auto line : split(text, '\n')) {
        // Num RefCount Protocol Flags Type St Inode [Path]
        auto f = fields(line);
        if (f.size() < 8 || !f[0].ends_with(':')) {
            continue;
        }
        auto flags = number<uint32_t>(f[3], 16);
        auto inode = number<uint64_t>(f[6]);
        if (!flags || !inode || (*flags & kAcceptCon) == 0) {
            continue;
        }
        // A path with spaces: everything after the inode's field.
        const size_t at = static_cast<size_t>(f[7].data() - line.data());
        out.push_back({std::string(line.substr(at)), *inode});
    }
    return out;
}

std::optional<uint64_t> parse_socket_link(std::string_view link) {
    constexpr std::string_view kPrefix = "socket:[";
    if (!link.starts_with(kPrefix) || !link.ends_with(']')) {
        return std::nullopt;
    }
    return number<uint64_t>(link.substr(kPrefix.size(), link.size() - kPrefix.size() - 1));
}

std::vector<ProcessId> find_server_processes(const std::string &proc_root) {
    std::vector<ProcessId> out;
    DIR *d = ::opendir(proc_root.c_str());
    if (d == nullptr) {
        return out;
    }
    while (dirent *e = ::readdir(d)) {
        auto pid = number<pid_t>(e->d_name);
        if (!pid || *pid <= 0) {
            continue;
        }
        const std::string dir = proc_root + "/" + e->d_name;
        auto exe = read_link(dir + "/exe");
        if (!exe || !is_server_executable(*exe)) {
            continue;
        }
        auto stat = slurp(dir + "/stat");
        auto start = stat ? parse_stat_start_ticks(*stat) : std::nullopt;
        if (start) {
            out.push_back({*pid, *start});
        }
    }
    ::closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

void read_listeners(ProcessLabels &labels, const std::string &proc_root) {
    const std::string dir = proc_root + "/" + std::to_string(labels.id.pid);
    std::set<uint64_t> inodes;
    if (DIR *d = ::opendir((dir + "/fd").c_str())) {
        while (dirent *e = ::readdir(d)) {
            if (e->d_name[0] == '.') {
                continue;
            }
            if (auto link = read_link(dir + "/fd/" + e->d_name)) {
                if (auto inode = parse_socket_link(*link)) {
                    inodes.insert(*inode);
                }
            }
        }
        ::closedir(d);
    }
    std::set<uint16_t> ports;
    for (bool v6 : {false, true}) {
        if (auto text = slurp(dir + (v6 ? "/net/tcp6" : "/net/tcp"))) {
            for (const auto &l : parse_tcp_listeners(*text, v6)) {
                if (inodes.count(l.inode)) {
                    ports.insert(l.port);
                }
            }
        }
    }
    labels.ports.assign(ports.begin(), ports.end());
    labels.sockets.clear();
    if (auto text = slurp(dir + "/net/unix")) {
        for (const auto &l : parse_unix_listeners(*text)) {
            if (inodes.count(l.inode)) {
                labels.sockets.push_back(l.path);
            }
        }
    }
    std::sort(labels.sockets.begin(), labels.sockets.end());
}

std::optional<ProcessLabels> read_process_labels(const ProcessId &id,
                                                 const std::string &proc_root) {
    const std::string dir = proc_root + "/" + std::to_string(id.pid);
    ProcessLabels labels;
    labels.id = id;
    auto exe = read_link(dir + "/exe");
    auto cgroup = slurp(dir + "/cgroup");
    if (!exe || !cgroup) {
        return std::nullopt;
    }
    labels.exe = *exe;
    labels.cgroup = parse_proc_cgroup(*cgroup);
    read_listeners(labels, proc_root);
    // Read last: what was read belongs to this process only if it is still
    // the one that had the pid.
    auto stat = slurp(dir + "/stat");
    if (!stat || parse_stat_start_ticks(*stat) != id.start_ticks) {
        return std::nullopt;
    }
    return labels;
}

}  // namespace mysqltrace::agent
