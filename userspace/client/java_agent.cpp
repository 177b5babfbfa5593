// SPDX-License-Identifier: GPL-2.0-only
#include "client/java_agent.h"

#include <cerrno>
#include <filesystem>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mysqltrace/java_agent_path.h"
#include "proc/maps.h"
#include "bpf/handles.h"
#include "util/fd_io.h"

namespace mysqltrace::client {

namespace {

std::string basename_of(const std::string &path) {
    auto at = path.rfind('/');
    return at == std::string::npos ? path : path.substr(at + 1);
}

// A field of /proc/PID/status ("NSpid", "SigCgt"), or empty.
std::string status_field(pid_t pid, const std::string &name) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.starts_with(name + ":")) {
            auto v = line.substr(name.size() + 1);
            v.erase(0, v.find_first_not_of(" \t"));
            return v;
        }
    }
    return {};
}

// A NUL-separated /proc/PID file (cmdline, environ) as strings.
std::vector<std::string> proc_strings(pid_t pid, const char *name) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/" + name, std::ios::binary);
    std::vector<std::string> out;
    std::string s;
    while (std::getline(in, s, '\0')) {
        out.push_back(s);
    }
    return out;
}

// True when the JVM was told not to attach: on its command line or in the
// variables the launcher reads options from. A SIGQUIT would then print a
// thread dump on its stdout instead.
bool attach_disabled(pid_t pid) {
    constexpr std::string_view kOff = "-XX:+DisableAttachMechanism";
    for (const auto &a : proc_strings(pid, "cmdline")) {
        if (a == kOff) {
            return true;
        }
    }
    for (const auto &e : proc_strings(pid, "environ")) {
        if ((e.starts_with("JAVA_TOOL_OPTIONS=") || e.starts_with("JDK_JAVA_OPTIONS=") ||
             e.starts_with("_JAVA_OPTIONS=")) &&
            e.find(kOff) != std::string::npos) {
            return true;
        }
    }
    return false;
}

bool exists(const std::string &path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

bool is_jvm(pid_t pid) {
    auto maps = proc::read_maps(pid);
    if (!maps) {
        return false;
    }
    for (const auto &m : *maps) {
        if (basename_of(m.path) == "libjvm.so") {
            return true;
        }
    }
    return false;
}

Result<std::optional<std::string>> find_java_probes(pid_t pid) {
    auto maps = proc::read_maps(pid);
    if (!maps) {
        return maps.error();
    }
    for (const auto &m : *maps) {
        if (basename_of(m.path) == kJavaProbesLibrary && m.perms.find('x') != std::string::npos) {
            auto path = proc::mapped_file(pid, m);
            if (!path) {
                return path.error();
            }
            return std::optional<std::string>(std::move(path).value());
        }
    }
    return std::optional<std::string>();
}

Result<JavaAgentFiles> java_agent_files() {
    if (!MYSQLTRACE_JAVA_AGENT_BUILT) {
        return Error{ENOENT, "this mysqltrace was built without its Java agent (no JDK)"};
    }
    // A build tree's: java/ beside the binary's directory (userspace/).
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::string build =
        ec ? std::string("/nonexistent") : (self.parent_path().parent_path() / "java").string();
    const std::string jars = MYSQLTRACE_JAVA_JAR_INSTALL_DIR;
    const JavaAgentFiles candidates[] = {
        {build + "/mysqltrace-agent.jar", build + "/" + kJavaProbesLibrary},
        {jars + "/mysqltrace-agent.jar", MYSQLTRACE_JAVA_LIBRARY_INSTALL_PATH},
    };
    for (const auto &c : candidates) {
        const std::string dir = c.jar.substr(0, c.jar.rfind('/'));
        if (exists(c.jar) && exists(dir + "/mysqltrace-probes.jar") && exists(c.library)) {
            return c;
        }
    }
    return Error{ENOENT,
                 "mysqltrace's Java agent is not installed (mysqltrace-agent.jar and "
                 "mysqltrace-probes.jar in " +
                     jars + ", " + MYSQLTRACE_JAVA_LIBRARY_INSTALL_PATH + ")"};
}

Result<void> load_java_agent(pid_t pid, const std::string &jar, const std::string &options,
                             std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const std::string who = "JVM " + std::to_string(pid);
    // The JVM names its files by its own pid, the last of NSpid (a
    // container's), in its own /tmp.
    std::string nspid = status_field(pid, "NSpid");
    if (nspid.empty()) {
        return Error{ESRCH, who + ": cannot read /proc/" + std::to_string(pid) + "/status"};
    }
    nspid = nspid.substr(
        nspid.find_last_of(" \t") == std::string::npos ? 0 : nspid.find_last_of(" \t") + 1);
    const std::string tmp = "/proc/" + std::to_string(pid) + "/root/tmp";
    const std::string sock_path = tmp + "/.java_pid" + nspid;
    if (!exists(sock_path)) {
        if (attach_disabled(pid)) {
            return Error{EPERM, who + " was started with -XX:+DisableAttachMechanism"};
        }
        // SIGQUIT starts the attach listener only in a JVM that catches it
        // (not one started with -Xrs, nor one still starting up): anywhere
        // else it would end the process.
        const std::string caught = status_field(pid, "SigCgt");
        if (caught.empty() || (std::stoull(caught, nullptr, 16) & (1ull << (SIGQUIT - 1))) == 0) {
            return Error{EPERM, who +
                                    " does not catch SIGQUIT (started with -Xrs, or not yet "
                                    "started), so its attach listener cannot be started"};
        }
        const std::string trigger = tmp + "/.attach_pid" + nspid;
        int t = ::open(trigger.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (t < 0 && errno != EEXIST) {
            return make_error(errno, who + ": cannot create " + trigger);
        }
        const bool ours = t >= 0;
        if (ours) {
            ::close(t);
        }
        ::kill(pid, SIGQUIT);
        while (!exists(sock_path) && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (ours) {
            ::unlink(trigger.c_str());
        }
        if (!exists(sock_path)) {
            return Error{ETIMEDOUT,
                         who + " did not start its attach listener (" + sock_path + ") in time"};
        }
    }
    bpf::Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
        return make_error(errno, "socket");
    }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (sock_path.size() >= sizeof(addr.sun_path)) {
        return Error{ENAMETOOLONG, sock_path + ": path too long for a unix socket"};
    }
    std::memcpy(addr.sun_path, sock_path.c_str(), sock_path.size() + 1);
    if (::connect(fd.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0) {
        return make_error(errno, who + ": cannot connect to its attach listener " + sock_path);
    }
    // Protocol 1: "1", the command, then exactly three arguments, each
    // NUL-terminated. load: the library, whether its name is a path, and
    // its options (for "instrument": the jar and the agent's options).
    std::string req = std::string("1") + '\0' + "load" + '\0' + "instrument" + '\0' + "false" +
                      '\0' + jar + (options.empty() ? "" : "=" + options) + '\0';
    if (int e = write_all(fd.get(), req); e != 0) {
        return make_error(e, who + ": cannot send the load command");
    }
    std::string reply;
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd p{fd.get(), POLLIN, 0};
        int r = ::poll(&p, 1, left.count() > 0 ? static_cast<int>(left.count()) : 0);
        if (r == 0) {
            return Error{ETIMEDOUT, who + ": no answer from the agent's agentmain in time"};
        }
        if (r < 0 && errno == EINTR) {
            continue;
        }
        char buf[512];
        ssize_t n = ::read(fd.get(), buf, sizeof(buf));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        reply.append(buf, static_cast<size_t>(n));
    }
    // "0\n" (the command ran), then the agent's result: 0, or an error.
    std::istringstream in(reply);
    std::string command_status, agent_status;
    std::getline(in, command_status);
    std::getline(in, agent_status);
    if (command_status != "0" || (agent_status != "0" && agent_status != "return code: 0")) {
        std::string shown = reply;
        for (auto &c : shown) {
            if (c == '\n') {
                c = ' ';
            }
        }
        return Error{
            EINVAL, who + " did not load " + jar + ": " + shown + "(the JVM's stderr may say why)"};
    }
    return {};
}

}  // namespace mysqltrace::client
