// SPDX-License-Identifier: GPL-2.0-only
#include "top/source.h"

#include <signal.h>

#include <cerrno>
#include <fstream>

#include "agent/control_socket.h"
#include "agent/discovery.h"
#include "agent/traced_server.h"
#include "bpf/ring_set.h"

namespace mysqltrace::top {

namespace {

class AgentSource : public Source {
  public:
    explicit AgentSource(std::string path) : path_(std::move(path)) {}
    Result<Snapshot> snapshot() override {
        auto answer = agent::ask_agent(path_, "snapshot");
        if (!answer) {
            return answer.error();
        }
        return parse_snapshot(*answer);
    }
    std::string describe() const override { return "agent " + path_; }

  private:
    std::string path_;
};

class LocalSource : public Source {
  public:
    explicit LocalSource(std::unique_ptr<agent::TracedServer> server,
                         std::vector<std::string> notes)
        : server_(std::move(server)), notes_(std::move(notes)) {}
    Result<Snapshot> snapshot() override {
        const pid_t pid = server_->labels().process.id.pid;
        if (::kill(pid, 0) != 0 && errno == ESRCH) {
            return Error{ESRCH, "server pid " + std::to_string(pid) + " exited"};
        }
        if (auto polled = poll(); !polled) {
            return polled.error();
        }
        server_->tick();
        Snapshot s;
        s.now_ns = bpf::monotonic_ns();
        s.servers.push_back(agent::snapshot_of(*server_));
        return s;
    }
    int fd() const override { return server_->epoll_fd(); }
    Result<void> poll() override {
        auto polled = server_->poll();
        if (!polled) {
            return polled.error();
        }
        return {};
    }
    std::string describe() const override {
        return "pid " + std::to_string(server_->labels().process.id.pid) + ", " +
               server_->labels().flavour + " " + server_->labels().version;
    }
    std::vector<std::string> notes() const override {
        std::vector<std::string> n = {"attached " + agent::describe(server_->labels()) +
                                      " probes=" + std::to_string(server_->probe_count()) + " (" +
                                      server_->path_note() + ")"};
        n.insert(n.end(), notes_.begin(), notes_.end());
        return n;
    }

  private:
    std::unique_ptr<agent::TracedServer> server_;
    std::vector<std::string> notes_;
};

}  // namespace

Result<std::unique_ptr<Source>> agent_source(const std::string &path) {
    auto first = agent::ask_agent(path, "snapshot");
    if (!first) {
        return first.error();
    }
    if (auto parsed = parse_snapshot(*first); !parsed) {
        return Error{parsed.error().code,
                     "the agent at " + path + " sent no snapshot: " + parsed.error().message};
    }
    return std::unique_ptr<Source>(new AgentSource(path));
}

Result<std::unique_ptr<Source>> attach_source(pid_t pid, bool locks) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::optional<uint64_t> ticks;
    if (std::getline(in, line)) {
        ticks = agent::parse_stat_start_ticks(line);
    }
    if (!ticks) {
        return Error{ESRCH, "no process " + std::to_string(pid)};
    }
    auto labels = agent::read_process_labels(agent::ProcessId{pid, *ticks});
    if (!labels) {
        return Error{ESRCH, "no process " + std::to_string(pid)};
    }
    auto resolved = agent::resolve_traced_server(*labels);
    if (!resolved) {
        return resolved.error();
    }
    agent::TracedServerOptions opts;
    opts.json = false;
    opts.slowlog = false;
    opts.locks = locks;
    std::vector<std::string> notes;
    auto traced = agent::TracedServer::start(std::move(resolved->labels),
                                             std::move(resolved->target), opts, notes);
    if (!traced) {
        return traced.error();
    }
    return std::unique_ptr<Source>(new LocalSource(std::move(traced).value(), std::move(notes)));
}

}  // namespace mysqltrace::top
