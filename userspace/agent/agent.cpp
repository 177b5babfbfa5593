// SPDX-License-Identifier: GPL-2.0-only
#include "agent/agent.h"

#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cctype>
#include <csignal>
#include <filesystem>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>
#include <tuple>
#include <utility>

#include "agent/control_socket.h"
#include "agent/metrics.h"
#include "agent/metrics_server.h"
#include "bpf/handles.h"
#include "doctor/trace_plan.h"
#include "server/hooks.h"
#include "server/server_target.h"
#include "trace/reader_priority.h"
#include "trace/trace_loop.h"

namespace mysqltrace::agent {

namespace {

int pidfd_open(pid_t pid) {
    return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

std::optional<uint64_t> start_ticks_now(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) {
        return std::nullopt;
    }
    return parse_stat_start_ticks(line);
}

// Epoll tags: the signal fd, the rescan timer, then two per attached server
// (its rings, its pidfd) from its serial number; the control socket's last.
constexpr uint64_t kSignalTag = 0, kTimerTag = 1, kServerBase = 2, kControlTag = UINT64_MAX;

class Agent {
  public:
    Agent(const AgentOptions &opts, std::ostream &log) : opts_(opts), log_(log) {
        // What a reload reads the file over: the built-in defaults and the
        // command line, never the settings of the file read before.
        base_ = agent_defaults();
        base_.command_line = opts.command_line;
        base_.duration_s = opts.duration_s;
        base_.verbose = opts.verbose;
    }
    Result<void> run();

  private:
    struct Attached {
        std::unique_ptr<TracedServer> server;
        bpf::Fd pidfd;
        ServerSettings settings;
    };

    // One whole line, written at once: a reader of the log (journald, a
    // test) never sees half of it.
    void say(const std::string &line) { log_ << ("mysqltrace: " + line + "\n") << std::flush; }
    bool add(int fd, uint64_t tag);
    bool set_timer();
    bool wanted(const ProcessLabels &labels) const;
    void reload();
    void rescan();
    // The serial of its attachment, or nothing (said why). `replacing`: the
    // serial of the same server's attachment with the settings before,
    // which a failure leaves as it is (reattach()).
    std::optional<uint64_t> attach(const ProcessLabels &labels,
                                   std::optional<uint64_t> replacing = std::nullopt);
    void reattach(uint64_t serial);
    void refuse(const ProcessLabels &labels, const std::string &why, bool attaching = false);
    void detach(uint64_t serial, const char *why, TracedServer *heir = nullptr);
    void drain_all();
    // `work()`, run on a thread of its own while this one drains the
    // attached servers' rings: analysing and attaching a server takes 0.1 s
    // to a few seconds, longer than a busy server's rings hold its records.
    template <class F>
    auto draining_meanwhile(F work) -> decltype(work());
    std::string snapshot() const;
    std::string metrics_text();

    AgentOptions opts_, base_;
    std::ostream &log_;
    bpf::Fd ep_, timer_;
    std::unique_ptr<ControlSocket> control_;
    std::map<uint64_t, Attached> attached_;  // by serial
    std::set<ProcessId> traced_, refused_, waiting_;
    // Servers the configuration leaves alone (enabled = no), with the
    // labels a reload matches its sections against again.
    std::map<ProcessId, ServerLabels> disabled_;
    uint64_t next_serial_ = 0;
    uint64_t attached_total_ = 0;
    // /metrics: its server renders on its own threads while this loop runs.
    // The loop holds mu_ for each of its rounds (drains, attaches,
    // detaches), so a page renders between two rounds, from a consistent
    // state. Rendering 500 classes takes a few ms (docs/agent.md), which
    // the rings absorb.
    std::mutex mu_;
    std::unique_ptr<MetricsServer> metrics_;
    uint64_t detached_total_ = 0, refused_analysis_ = 0, refused_attach_ = 0;
    double last_render_s_ = 0;
};

bool Agent::add(int fd, uint64_t tag) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    return ::epoll_ctl(ep_.get(), EPOLL_CTL_ADD, fd, &ev) == 0;
}

bool Agent::set_timer() {
    itimerspec period{};
    period.it_interval.tv_sec = opts_.rescan_ms / 1000;
    period.it_interval.tv_nsec = static_cast<long>(opts_.rescan_ms % 1000) * 1'000'000;
    period.it_value = period.it_interval;
    return ::timerfd_settime(timer_.get(), 0, &period, nullptr) == 0;
}

// Not one of ours when --socket-prefix names other servers' sockets.
bool Agent::wanted(const ProcessLabels &labels) const {
    return opts_.socket_prefix.empty() ||
           std::ranges::any_of(labels.sockets, [&](const std::string &s) {
               return s.starts_with(opts_.socket_prefix);
           });
}

void Agent::refuse(const ProcessLabels &labels, const std::string &why, bool attaching) {
    refused_.insert(labels.id);
    (attaching ? refused_attach_ : refused_analysis_)++;
    say("not tracing pid=" + std::to_string(labels.id.pid) + " (" + labels.exe + "): " + why);
}

std::optional<uint64_t> Agent::attach(const ProcessLabels &labels,
                                      std::optional<uint64_t> replacing) {
    const pid_t pid = labels.id.pid;
    // Tracing with the settings before goes on: not a server refused.
    auto fail = [&](const std::string &why, bool attaching) {
        if (replacing) {
            say("pid=" + std::to_string(pid) + ": cannot attach with the new settings (" + why +
                "): tracing goes on with the settings before");
        } else {
            refuse(labels, why, attaching);
        }
    };
    auto resolved = draining_meanwhile([&labels] { return resolve_traced_server(labels); });
    if (!resolved) {
        if (resolved.error().code != ESRCH) {  // else gone meanwhile
            fail(resolved.error().message, false);
        }
        return std::nullopt;
    }
    bpf::Fd pidfd(pidfd_open(pid));
    // The pidfd and what was analysed must be the process that was listed.
    if (!pidfd.valid() || start_ticks_now(pid) != labels.id.start_ticks) {
        return std::nullopt;
    }
    const ServerLabels sl = resolved->labels;
    std::string matched;
    const ServerSettings settings = settings_for(opts_, sl, &matched);
    if (!settings.enabled) {
        say("not tracing pid=" + std::to_string(pid) + " (" + labels.exe +
            "): disabled by the configuration (" + (matched.empty() ? "[agent]" : matched) + ")");
        disabled_.emplace(labels.id, sl);
        return std::nullopt;
    }
    std::vector<std::string> notes;
    const TracedServer *before = replacing ? attached_.at(*replacing).server.get() : nullptr;
    auto traced = draining_meanwhile([&] {
        return TracedServer::start(sl, std::move(resolved->target), settings.opts, notes, before);
    });
    if (!traced) {
        if (start_ticks_now(pid) != labels.id.start_ticks) {
            say("pid=" + std::to_string(pid) + " exited while being attached");
            return std::nullopt;
        }
        fail(traced.error().message, true);
        return std::nullopt;
    }
    const uint64_t serial = next_serial_++;
    Attached a{std::move(traced).value(), std::move(pidfd), settings};
    if (!add(a.server->epoll_fd(), kServerBase + 2 * serial) ||
        !add(a.pidfd.get(), kServerBase + 2 * serial + 1)) {
        fail("cannot watch it: " + std::string(strerror(errno)), true);
        return std::nullopt;
    }
    traced_.insert(labels.id);
    attached_total_++;
    // Said once the probes are in: every statement that starts after this
    // line is traced.
    say("attached " + describe(a.server->labels()) + " dir=" + a.server->dir() +
        " formats=" + formats_of(settings.opts) +
        (settings.opts.otlp.empty() ? "" : " otlp=" + settings.opts.otlp) +
        " probes=" + std::to_string(a.server->probe_count()) + " (" + a.server->path_note() + ")");
    for (const auto &n : notes) {
        say("pid=" + std::to_string(pid) + ": " + n);
    }
    attached_.emplace(serial, std::move(a));
    return serial;
}

// The new probes go in before the old come out: a statement that ends
// while the server is attached again is traced once, not lost in between
// nor written twice. The attachment before writes what ends before the cut;
// the heir, each connection's statements after the last one it wrote
// (TracedServer::track_kept). Both probes of one statement fire one after
// the other, each taking its own time: a cut by time alone would lose or
// double the statement it falls between.
void Agent::reattach(uint64_t serial) {
    TracedServer &before = *attached_.at(serial).server;
    const ProcessId id = before.labels().process.id;
    // Its listeners may have changed since; gone: nothing to attach.
    auto fresh = read_process_labels(id);
    std::optional<uint64_t> now;
    if (fresh) {
        before.track_kept(true);
        now = attach(*fresh, serial);
    }
    if (!now) {
        before.track_kept(false);
        if (!fresh || start_ticks_now(id.pid) != id.start_ticks) {
            detach(serial, "server exited");
        } else if (disabled_.count(id) != 0) {
            detach(serial, "disabled by the configuration");
        }
        return;  // else failed: the attachment before goes on
    }
    const uint64_t cut = bpf::monotonic_ns();
    TracedServer &heir = *attached_.at(*now).server;
    heir.keep_from(cut);
    before.keep_until(cut);
    detach(serial, "settings changed", &heir);
    traced_.insert(id);
}

void Agent::rescan() {
    auto found = find_server_processes();
    const std::set<ProcessId> now(found.begin(), found.end());
    for (auto *set : {&refused_, &waiting_}) {
        std::erase_if(*set, [&](const ProcessId &id) { return now.count(id) == 0; });
    }
    std::erase_if(disabled_, [&](const auto &d) { return now.count(d.first) == 0; });
    for (const auto &id : found) {
        if (traced_.count(id) || refused_.count(id) || disabled_.count(id)) {
            continue;
        }
        auto labels = read_process_labels(id);
        if (!labels) {
            continue;  // gone
        }
        // A server that does not listen yet (starting, or a bootstrap run
        // such as mariadb-install-db's) runs no client's statements.
        if (!labels->listening()) {
            if (waiting_.insert(id).second && opts_.verbose > 0) {
                say("pid=" + std::to_string(id.pid) + " (" + labels->exe + ") does not listen yet");
            }
            continue;
        }
        waiting_.erase(id);
        if (!wanted(*labels)) {
            continue;  // not one of ours: looked at again next time, unattached
        }
        attach(*labels);
    }
}

// A configuration that does not load changes nothing: the servers go on
// with the last one that did.
void Agent::reload() {
    if (opts_.config_path.empty()) {
        say("SIGHUP: no configuration file to read again (started without --config)");
        return;
    }
    auto loaded = load_agent_config(opts_.config_path, base_);
    std::error_code ec;
    if (loaded && loaded->defaults.opts.output_dir != opts_.defaults.opts.output_dir) {
        std::filesystem::create_directories(loaded->defaults.opts.output_dir, ec);
        if (ec || !std::filesystem::is_directory(loaded->defaults.opts.output_dir)) {
            loaded =
                Error{ec.value(), "cannot create output_dir " + loaded->defaults.opts.output_dir +
                                      (ec ? ": " + ec.message() : ": not a directory")};
        }
    }
    if (!loaded) {
        say("SIGHUP: " + loaded.error().message +
            "; going on with the configuration loaded before");
        return;
    }
    AgentOptions old = std::exchange(opts_, std::move(loaded).value());
    say("SIGHUP: read " + opts_.config_path + " again");
    if (opts_.rescan_ms != old.rescan_ms) {
        say("rescan_ms " + std::to_string(old.rescan_ms) + " -> " +
            std::to_string(opts_.rescan_ms) + (set_timer() ? "" : ": cannot set the timer"));
    }
    if (opts_.socket_prefix != old.socket_prefix) {
        say("socket_prefix '" + old.socket_prefix + "' -> '" + opts_.socket_prefix + "'");
    }
    // Their listeners are the agent's own, opened at its start: a page may
    // be rendering now, under the lock this reload holds.
    for (auto [key, was, now] :
         {std::tuple{"metrics_listen", &old.metrics_listen, &opts_.metrics_listen},
          std::tuple{"control_socket", &old.control_socket, &opts_.control_socket}}) {
        if (*now != *was) {
            say(std::string(key) + " '" + *was + "' -> '" + *now +
                "': takes effect when the agent starts again (systemctl restart mysqltrace)");
            *now = *was;
        }
    }
    std::vector<uint64_t> serials;
    for (const auto &[serial, a] : attached_) {
        serials.push_back(serial);
    }
    for (uint64_t serial : serials) {
        auto &a = attached_.at(serial);
        const ServerLabels labels = a.server->labels();
        const std::string pid = "pid=" + std::to_string(labels.process.id.pid);
        if (!wanted(labels.process)) {
            say(pid + ": not under socket_prefix '" + opts_.socket_prefix + "' any more");
            detach(serial, "socket_prefix changed");
            continue;
        }
        std::string matched;
        const ServerSettings now = settings_for(opts_, labels, &matched);
        if (now == a.settings) {
            continue;
        }
        const std::string sections = matched.empty() ? "[agent]" : matched;
        if (!now.enabled) {
            say(pid + ": disabled by the configuration (" + sections + "): detaching");
            detach(serial, "disabled by the configuration");
            disabled_.emplace(labels.process.id, labels);
            continue;
        }
        say(pid + ": settings changed (" + changed_settings(a.settings, now) + ") by " + sections +
            ": attaching again");
        reattach(serial);
    }
    // Servers left alone: attached by the rescan below if enabled now.
    for (auto it = disabled_.begin(); it != disabled_.end();) {
        std::string matched;
        if (settings_for(opts_, it->second, &matched).enabled) {
            say("pid=" + std::to_string(it->first.pid) + ": enabled by the configuration (" +
                (matched.empty() ? "[agent]" : matched) + "): attaching");
            it = disabled_.erase(it);
        } else {
            ++it;
        }
    }
    rescan();
}

void Agent::detach(uint64_t serial, const char *why, TracedServer *heir) {
    auto it = attached_.find(serial);
    if (it == attached_.end()) {
        return;
    }
    auto &a = it->second;
    ::epoll_ctl(ep_.get(), EPOLL_CTL_DEL, a.server->epoll_fd(), nullptr);
    ::epoll_ctl(ep_.get(), EPOLL_CTL_DEL, a.pidfd.get(), nullptr);
    // Its probes out before its last drain, which then ends, on a thread
    // of their own (a probe on a perf link takes ~0.1 s to come out) while
    // every server's rings are read, its own too.
    draining_meanwhile([&a] { a.server->detach_probes(); });
    const std::string totals = a.server->finish(heir);
    const pid_t pid = a.server->labels().process.id.pid;
    traced_.erase(a.server->labels().process.id);
    attached_.erase(it);  // probes, links, maps and rings go with the tracer
    detached_total_++;
    say("detached pid=" + std::to_string(pid) + " (" + why + "): " + totals);
}

template <class F>
auto Agent::draining_meanwhile(F work) -> decltype(work()) {
    std::future<decltype(work())> job;
    try {
        job = std::async(std::launch::async, work);
    } catch (const std::system_error &) {
        return work();  // no thread to be had: the rings wait
    }
    while (job.wait_for(std::chrono::milliseconds(2)) != std::future_status::ready) {
        drain_all();
    }
    return job.get();
}

void Agent::drain_all() {
    for (auto &[serial, a] : attached_) {
        if (auto polled = a.server->poll(); !polled) {
            say("pid=" + std::to_string(a.server->labels().process.id.pid) + ": " +
                polled.error().message);
        }
    }
}

std::string Agent::snapshot() const {
    top::Snapshot s;
    s.now_ns = bpf::monotonic_ns();
    for (const auto &[serial, a] : attached_) {
        s.servers.push_back(snapshot_of(*a.server));
    }
    return top::to_json_text(s);
}

std::string Agent::metrics_text() {
    AgentSample a;
    a.process = read_process_sample();
    std::lock_guard lock(mu_);
    const uint64_t t0 = bpf::monotonic_ns();
    std::vector<ServerSample> servers;
    for (const auto &[serial, at] : attached_) {
        servers.push_back(sample_of(*at.server));
    }
    a.attaches = attached_total_;
    a.detaches = detached_total_;
    a.refused_analysis = refused_analysis_;
    a.refused_attach = refused_attach_;
    a.refused_now = refused_.size();
    a.last_render_seconds = last_render_s_;
    std::string text = render_metrics(servers, a);
    last_render_s_ = static_cast<double>(bpf::monotonic_ns() - t0) / 1e9;
    return text;
}

Result<void> Agent::run() {
    trace::block_stop_signals();
    sigset_t mask;
    sigemptyset(&mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        sigaddset(&mask, sig);
    }
    bpf::Fd sigfd(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
    timer_ = bpf::Fd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
    ep_ = bpf::Fd(::epoll_create1(EPOLL_CLOEXEC));
    if (!sigfd.valid() || !timer_.valid() || !ep_.valid()) {
        return make_error(errno, "cannot set up the event loop");
    }
    if (!set_timer() || !add(sigfd.get(), kSignalTag) || !add(timer_.get(), kTimerTag)) {
        return make_error(errno, "cannot set up the event loop");
    }
    const std::string &output_dir = opts_.defaults.opts.output_dir;
    std::error_code ec;
    std::filesystem::create_directories(output_dir, ec);
    if (ec || !std::filesystem::is_directory(output_dir)) {
        return Error{ec.value(), "cannot create output_dir " + output_dir +
                                     (ec ? ": " + ec.message() : ": not a directory")};
    }
    if (!opts_.control_socket.empty()) {
        auto control = ControlSocket::open(opts_.control_socket);
        if (!control) {
            return control.error();
        }
        control_ = std::move(control).value();
        if (!add(control_->fd(), kControlTag)) {
            return make_error(errno, "cannot watch the control socket");
        }
        say("control socket " + opts_.control_socket + " (mysqltrace top reads it)");
    }
    if (!opts_.metrics_listen.empty()) {
        auto m = MetricsServer::start(opts_.metrics_listen, [this] { return metrics_text(); });
        if (!m) {
            return m.error();
        }
        metrics_ = std::move(m).value();
        say("metrics at " + metrics_->url());
    }
    say("agent watching for mysqld/mariadbd every " + std::to_string(opts_.rescan_ms) +
        " ms; files under " + output_dir +
        (opts_.config_path.empty() ? "" : "; configuration " + opts_.config_path) +
        "; Ctrl-C to stop");
    const uint64_t start = bpf::monotonic_ns();
    std::unique_lock lock(mu_);
    rescan();
    lock.unlock();
    const uint64_t end =
        opts_.duration_s > 0 ? start + static_cast<uint64_t>(opts_.duration_s * 1e9) : UINT64_MAX;
    uint64_t next_tick = start + 1'000'000'000;
    // This thread drains every server's rings: it takes priority while it
    // falls behind, and at the start (trace/reader_priority.h).
    auto priority = trace::ReaderPriority::for_this_thread({});
    if (auto started = priority.start(bpf::monotonic_ns()); !started) {
        return started.error();  // never: only a fixed value can fail
    }
    bool stop = false;
    const char *stop_why = "agent stopped";
    while (!stop) {
        epoll_event evs[16];
        const int n = ::epoll_wait(ep_.get(), evs, 16, 100);
        if (n < 0 && errno != EINTR) {
            return make_error(errno, "waiting for events failed");
        }
        const std::lock_guard round(mu_);
        std::vector<uint64_t> exited;
        for (int i = 0; i < n; i++) {
            const uint64_t tag = evs[i].data.u64;
            if (tag == kSignalTag) {
                signalfd_siginfo si{};
                while (::read(sigfd.get(), &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
                    if (si.ssi_signo == SIGHUP) {
                        if (!stop) {
                            reload();
                        }
                    } else {
                        stop = true;
                        stop_why = si.ssi_signo == SIGINT ? "interrupted" : "terminated";
                    }
                }
            } else if (tag == kTimerTag) {
                // Drained so that epoll stops reporting it; a short or failed
                // read (EAGAIN: already drained) changes nothing: rescan anyway.
                uint64_t expirations = 0;
                if (::read(timer_.get(), &expirations, sizeof(expirations)) < 0) {
                    expirations = 0;
                }
                if (!stop) {
                    rescan();
                }
            } else if (tag == kControlTag) {
                control_->serve([this] {
                    drain_all();  // statements ended just before the request
                    return snapshot();
                });
            } else if ((tag - kServerBase) % 2 == 1) {
                exited.push_back((tag - kServerBase) / 2);
            }
        }
        double fill = 0;
        for (const auto &[serial, a] : attached_) {
            fill = std::max(fill, a.server->ring_fill());
        }
        const int was = priority.nice();
        priority.check(fill, bpf::monotonic_ns());
        if (priority.nice() != was) {
            say("reader " + std::string(priority.nice() < was ? "behind its rings" : "keeping up") +
                ": now at nice " + std::to_string(priority.nice()));
        }
        drain_all();
        for (uint64_t serial : exited) {
            detach(serial, "server exited");
        }
        const uint64_t now = bpf::monotonic_ns();
        if (now >= end) {
            stop = true;
            stop_why = "duration reached";
        }
        if (now >= next_tick) {
            for (auto &[serial, a] : attached_) {
                a.server->tick();
            }
            next_tick = now + 1'000'000'000;
        }
    }
    metrics_.reset();  // the last page served; nothing else renders from here
    // The probe at a statement's end fires just after its client has the
    // reply: a stop sent on seeing it must not lose that statement.
    const uint64_t grace_end = bpf::monotonic_ns() + 50'000'000;
    while (bpf::monotonic_ns() < grace_end) {
        drain_all();
        ::usleep(5000);
    }
    while (!attached_.empty()) {
        detach(attached_.begin()->first, stop_why);
    }
    priority.finish(bpf::monotonic_ns());
    if (const std::string note = priority.note(false); !note.empty()) {
        say(note.substr(std::string("mysqltrace: ").size()));
    }
    say(std::string("agent stopped (") + stop_why + "): " + std::to_string(attached_total_) +
        " server(s) attached, " + std::to_string(refused_.size()) +
        " running server(s) not traced" +
        (disabled_.empty()
             ? ""
             : ", " + std::to_string(disabled_.size()) + " left alone by the configuration"));
    return {};
}

}  // namespace

Result<void> run_agent(const AgentOptions &opts, std::ostream &log) {
    Agent agent(opts, log);
    return agent.run();
}

}  // namespace mysqltrace::agent
