// SPDX-License-Identifier: GPL-2.0-only
#include "agent/control_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "bpf/ring_set.h"

namespace mysqltrace::agent {

namespace {

constexpr size_t kMaxClients = 16;
constexpr size_t kMaxRequest = 256;
constexpr uint64_t kClientTimeoutNs = 5'000'000'000;

Result<sockaddr_un> address_of(const std::string &path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
        return Error{ENAMETOOLONG, "control socket path '" + path + "' is empty or longer than " +
                                       std::to_string(sizeof(addr.sun_path) - 1) + " bytes"};
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    return addr;
}

// 0 when something listens at `addr`, else the connect's errno.
int try_connect(const sockaddr_un &addr) {
    bpf::Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
        return errno;
    }
    return ::connect(fd.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof(addr)) == 0
               ? 0
               : errno;
}

std::string error_json(const std::string &message) {
    return "{\"error\":\"" + message + "\"}\n";
}

}  // namespace

top::ServerSnapshot snapshot_of(const TracedServer &server) {
    top::ServerSnapshot s;
    const auto &l = server.labels();
    s.name = server_dir_name(l);
    s.pid = l.process.id.pid;
    s.flavour = l.flavour;
    s.version = l.version;
    s.statements = server.stats().statements();
    s.errors = server.stats().errors();
    s.dropped = server.ring_stats().dropped;
    s.undecodable = server.tracer().undecodable();
    s.classes = top::snapshot_classes(server.stats());
    s.locks = server.locks();
    s.lock_waits = server.live_lock_waits(bpf::monotonic_ns());
    return s;
}

Result<std::unique_ptr<ControlSocket>> ControlSocket::open(const std::string &path) {
    auto addr = address_of(path);
    if (!addr) {
        return addr.error();
    }
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (!dir.empty() && !std::filesystem::exists(dir)) {
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        if (ec || ::chmod(dir.c_str(), 0700) != 0) {
            return Error{ec ? ec.value() : errno, "cannot create the control socket's directory " +
                                                      dir.string() +
                                                      (ec ? ": " + ec.message() : "")};
        }
    }
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            return Error{EEXIST, "control socket " + path + " exists and is not a socket"};
        }
        const int err = try_connect(*addr);
        if (err == 0) {
            return Error{EADDRINUSE, "another agent answers on " + path +
                                         " (give this one its own --control-socket)"};
        }
        // Nothing listens: a dead agent's socket.
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
            return make_error(errno, "cannot remove the stale control socket " + path);
        }
    }
    std::unique_ptr<ControlSocket> c(new ControlSocket());
    c->path_ = path;
    c->listen_ = bpf::Fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    c->ep_ = bpf::Fd(::epoll_create1(EPOLL_CLOEXEC));
    if (!c->listen_.valid() || !c->ep_.valid()) {
        return make_error(errno, "cannot create the control socket");
    }
    // Made with the process's umask (connecting needs write permission,
    // which 022 leaves to the owner alone), then narrowed to 0600.
    if (::bind(c->listen_.get(), reinterpret_cast<const sockaddr *>(&*addr), sizeof(*addr)) != 0) {
        return make_error(errno, "cannot bind the control socket " + path);
    }
    if (::chmod(path.c_str(), 0600) != 0 || ::lstat(path.c_str(), &st) != 0 ||
        ::listen(c->listen_.get(), 16) != 0) {
        const int err = errno;
        ::unlink(path.c_str());
        return make_error(err, "cannot listen on the control socket " + path);
    }
    c->inode_ = st.st_ino;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = c->listen_.get();
    if (::epoll_ctl(c->ep_.get(), EPOLL_CTL_ADD, c->listen_.get(), &ev) != 0) {
        return make_error(errno, "cannot watch the control socket");
    }
    return c;
}

ControlSocket::~ControlSocket() {
    // Removed only while it is still ours (not a later agent's).
    struct stat st {};
    if (!path_.empty() && ::lstat(path_.c_str(), &st) == 0 && st.st_ino == inode_) {
        ::unlink(path_.c_str());
    }
}

void ControlSocket::drop(int fd) {
    ::epoll_ctl(ep_.get(), EPOLL_CTL_DEL, fd, nullptr);
    clients_.erase(fd);
}

void ControlSocket::accept_all() {
    while (true) {
        bpf::Fd fd(::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!fd.valid()) {
            return;  // EAGAIN: none left
        }
        // Root's socket already; a process of another user that got a
        // descriptor to it is refused anyway.
        ucred cred{};
        socklen_t len = sizeof(cred);
        if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
            (cred.uid != 0 && cred.uid != ::geteuid())) {
            continue;
        }
        if (clients_.size() >= kMaxClients) {
            drop(clients_.begin()->first);
        }
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd.get();
        if (::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) {
            continue;
        }
        const int key = fd.get();
        Client c;
        c.fd = std::move(fd);
        c.since_ns = bpf::monotonic_ns();
        clients_.emplace(key, std::move(c));
    }
}

void ControlSocket::on_client(int fd, const std::function<std::string()> &snapshot) {
    auto it = clients_.find(fd);
    if (it == clients_.end()) {
        return;
    }
    Client &c = it->second;
    if (c.out.empty()) {
        char buf[kMaxRequest];
        const ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            drop(fd);
            return;
        }
        if (n > 0) {
            c.in.append(buf, static_cast<size_t>(n));
        }
        const size_t nl = c.in.find('\n');
        if (nl == std::string::npos) {
            if (c.in.size() >= kMaxRequest) {
                c.out = error_json("request line too long");
            } else {
                return;
            }
        } else {
            std::string request = c.in.substr(0, nl);
            if (!request.empty() && request.back() == '\r') {
                request.pop_back();
            }
            c.out = request == "snapshot" ? snapshot() + "\n"
                                          : error_json("unknown request (known: snapshot)");
        }
        epoll_event ev{};
        ev.events = EPOLLOUT;
        ev.data.fd = fd;
        ::epoll_ctl(ep_.get(), EPOLL_CTL_MOD, fd, &ev);
    }
    while (c.sent < c.out.size()) {
        const ssize_t n = ::send(fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) {
                return;  // EPOLLOUT tells when there is room
            }
            break;
        }
        c.sent += static_cast<size_t>(n);
    }
    drop(fd);
}

void ControlSocket::serve(const std::function<std::string()> &snapshot) {
    epoll_event evs[16];
    const int n = ::epoll_wait(ep_.get(), evs, 16, 0);
    for (int i = 0; i < n; i++) {
        if (evs[i].data.fd == listen_.get()) {
            accept_all();
        } else {
            on_client(evs[i].data.fd, snapshot);
        }
    }
    const uint64_t now = bpf::monotonic_ns();
    std::vector<int> old;
    for (const auto &[fd, c] : clients_) {
        if (now - c.since_ns > kClientTimeoutNs) {
            old.push_back(fd);
        }
    }
    for (int fd : old) {
        drop(fd);
    }
}

Result<std::string> ask_agent(const std::string &path, const std::string &request, int timeout_ms) {
    auto addr = address_of(path);
    if (!addr) {
        return addr.error();
    }
    bpf::Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
        return make_error(errno, "cannot create a socket");
    }
    if (::connect(fd.get(), reinterpret_cast<const sockaddr *>(&*addr), sizeof(*addr)) != 0) {
        const int err = errno;
        if (err == ENOENT || err == ECONNREFUSED) {
            return Error{
                err, "no agent at " + path + ": start one with `mysqltrace agent` or use --pid"};
        }
        if (err == EACCES || err == EPERM) {
            return Error{err, "cannot connect to the agent at " + path +
                                  ": permission denied (its socket is root's alone)"};
        }
        return make_error(err, "cannot connect to the agent at " + path);
    }
    const std::string line = request + "\n";
    if (::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(line.size())) {
        return make_error(errno, "cannot send to the agent at " + path);
    }
    std::string answer;
    char buf[65536];
    while (true) {
        pollfd p{fd.get(), POLLIN, 0};
        const int ready = ::poll(&p, 1, timeout_ms);
        if (ready == 0) {
            return Error{ETIMEDOUT, "the agent at " + path + " did not answer within " +
                                        std::to_string(timeout_ms) + " ms"};
        }
        if (ready < 0) {
            if (errno == EINTR) {
                continue;
            }
            return make_error(errno, "waiting for the agent at " + path);
        }
        const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return make_error(errno, "reading from the agent at " + path);
        }
        if (n == 0) {
            break;
        }
        answer.append(buf, static_cast<size_t>(n));
    }
    return answer;
}

}  // namespace mysqltrace::agent
