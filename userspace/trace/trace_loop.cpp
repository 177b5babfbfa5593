// SPDX-License-Identifier: GPL-2.0-only
#include "trace/trace_loop.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>

#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bpf/handles.h"
#include "trace/reader_priority.h"

namespace mysqltrace::trace {

const char *stop_reason_text(StopReason r) {
    switch (r) {
        case StopReason::signal:
            return "interrupted";
        case StopReason::duration:
            return "duration reached";
        case StopReason::targets_exited:
            return "traced process exited";
    }
    return "?";
}

std::string drop_summary(const bpf::RingStats &st) {
    std::string s = std::to_string(st.dropped) + " records dropped";
    if (st.dropped == 0) {
        return s;
    }
    const uint64_t full = st.dropped - st.busy_drops;
    s += " (";
    if (full > 0) {
        s += std::to_string(full) + " with ring buffers full: raise --ring-kib";
    }
    if (st.busy_drops > 0) {
        s += std::string(full > 0 ? "; " : "") + std::to_string(st.busy_drops) +
             " with every scratch slot of a CPU in use";
    }
    return s + ")";
}

namespace {

sigset_t stop_signals() {
    sigset_t mask;
    sigemptyset(&mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        sigaddset(&mask, sig);
    }
    return mask;
}

}  // namespace

void block_stop_signals() {
    const sigset_t mask = stop_signals();
    sigprocmask(SIG_BLOCK, &mask, nullptr);
}

namespace {

int pidfd_open(pid_t pid) {
    return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}

Result<StopReason> loop_until_stopped(bpf::RingSet &rings, const LoopOptions &opts,
                                      ReaderPriority &priority) {
    if (auto started = priority.start(bpf::monotonic_ns()); !started) {
        return started.error();
    }
    const sigset_t mask = stop_signals();
    sigprocmask(SIG_BLOCK, &mask, nullptr);
    bpf::Fd sigfd(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
    bpf::Fd ep(epoll_create1(EPOLL_CLOEXEC));
    if (!sigfd.valid() || !ep.valid()) {
        return make_error(errno, "cannot set up the event loop");
    }
    auto add = [&](int fd, uint64_t tag) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = tag;
        return epoll_ctl(ep.get(), EPOLL_CTL_ADD, fd, &ev);
    };
    constexpr uint64_t kRings = 0, kSignal = 1, kTargetBase = 2;
    if (add(rings.epoll_fd(), kRings) != 0 || add(sigfd.get(), kSignal) != 0) {
        return make_error(errno, "cannot set up the event loop");
    }
    for (auto *more : opts.more_rings) {
        if (add(more->epoll_fd(), kRings) != 0) {
            return make_error(errno, "cannot set up the event loop");
        }
    }
    std::vector<bpf::Fd> pidfds;
    size_t alive = 0;
    for (size_t i = 0; i < opts.targets.size(); i++) {
        bpf::Fd fd(pidfd_open(opts.targets[i]));
        if (!fd.valid()) {
            if (errno == ESRCH) {
                continue;  // already gone
            }
            return make_error(errno, "cannot watch pid " + std::to_string(opts.targets[i]));
        }
        if (add(fd.get(), kTargetBase + i) != 0) {
            return make_error(errno, "cannot watch pid " + std::to_string(opts.targets[i]));
        }
        pidfds.push_back(std::move(fd));
        alive++;
    }
    std::vector<bool> exited(opts.targets.size(), false);
    if (!opts.targets.empty() && alive == 0) {
        return StopReason::targets_exited;
    }

    const uint64_t start = bpf::monotonic_ns();
    const uint64_t end =
        opts.duration_s > 0 ? start + static_cast<uint64_t>(opts.duration_s * 1e9) : UINT64_MAX;
    uint64_t next_tick = start + 1'000'000'000;
    for (;;) {
        uint64_t now = bpf::monotonic_ns();
        if (now >= end) {
            return StopReason::duration;
        }
        int timeout = opts.tick_ms;
        if (end != UINT64_MAX) {
            uint64_t left_ms = (end - now) / 1'000'000 + 1;
            timeout = static_cast<int>(std::min<uint64_t>(left_ms, static_cast<uint64_t>(timeout)));
        }
        epoll_event evs[8];
        int n = epoll_wait(ep.get(), evs, 8, timeout);
        if (n < 0 && errno != EINTR) {
            return make_error(errno, "waiting for events failed");
        }
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64;
            if (tag == kSignal) {
                signalfd_siginfo si{};
                while (read(sigfd.get(), &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
                    if (!opts.on_signal || opts.on_signal(static_cast<int>(si.ssi_signo))) {
                        return StopReason::signal;
                    }
                }
                continue;
            }
            if (tag >= kTargetBase && !exited[tag - kTargetBase]) {
                exited[tag - kTargetBase] = true;
                if (--alive == 0) {
                    return StopReason::targets_exited;
                }
            }
        }
        // Behind its producers? Asked before draining, when the rings show it.
        // Or while it was at work since the last wakeup.
        double fill = rings.take_fill();
        for (auto *more : opts.more_rings) {
            fill = std::max(fill, more->take_fill());
        }
        priority.check(fill, bpf::monotonic_ns());
        // Drain without waiting: the rings' epoll set was polled above.
        auto polled = rings.poll(0);
        if (!polled) {
            return polled.error();
        }
        for (auto *more : opts.more_rings) {
            if (auto p = more->poll(0); !p) {
                return p.error();
            }
        }
        if (opts.all_exited && opts.all_exited()) {
            return StopReason::targets_exited;
        }
        now = bpf::monotonic_ns();
        if (opts.on_tick && now >= next_tick) {
            opts.on_tick();
            next_tick = now + 1'000'000'000;
        }
    }
}

}  // namespace

Result<StopReason> run_loop(bpf::RingSet &rings, const LoopOptions &opts) {
    auto priority = ReaderPriority::for_this_thread(opts.reader_nice);
    auto stop = loop_until_stopped(rings, opts, priority);
    priority.finish(bpf::monotonic_ns());
    if (const std::string note = priority.note(); !note.empty()) {
        std::fprintf(stderr, "%s\n", note.c_str());
    }
    if (!stop || *stop == StopReason::targets_exited || opts.grace_ms <= 0) {
        return stop;
    }
    const uint64_t until = bpf::monotonic_ns() + static_cast<uint64_t>(opts.grace_ms) * 1'000'000;
    for (uint64_t now = bpf::monotonic_ns(); now < until; now = bpf::monotonic_ns()) {
        const int wait_ms =
            opts.more_rings.empty()
                ? static_cast<int>((until - now) / 1'000'000 + 1)
                : std::min<int>(10, static_cast<int>((until - now) / 1'000'000 + 1));
        auto polled = rings.poll(wait_ms);
        if (!polled) {
            return polled.error();
        }
        for (auto *more : opts.more_rings) {
            if (auto p = more->poll(0); !p) {
                return p.error();
            }
        }
    }
    return stop;
}

}  // namespace mysqltrace::trace
