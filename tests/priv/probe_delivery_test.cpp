// SPDX-License-Identifier: GPL-2.0-only
// A uprobe, a USDT probe and a syscall tracepoint each deliver exactly the
// hits of the traced process through the per-CPU rings: no more (other
// processes are filtered in the kernel), no fewer, in order, drops counted.
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "priv/priv.h"
#include "proc/maps.h"
#include "selftest/self_probe.h"
#include "selftest/targets.h"

namespace {

using mysqltrace::selftest::SelfProbe;
using mysqltrace::selftest::SelfProbeOptions;

std::unique_ptr<SelfProbe> load(pid_t target, long syscall_nr = -1, uint64_t ring_bytes = 1 << 20) {
    SelfProbeOptions o;
    o.target_tgid = target;
    o.target_syscall = syscall_nr;
    o.ring.bytes_per_cpu = ring_bytes;
    auto p = SelfProbe::load(o);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
    return p.ok() ? std::move(p).value() : nullptr;
}

void attach_self_uprobe(SelfProbe &p) {
    auto addr = reinterpret_cast<uint64_t>(&mysqltrace_selftest_target);
    auto loc = mysqltrace::proc::locate_address(getpid(), addr);
    ASSERT_TRUE(loc.ok()) << loc.error().message;
    auto r = p.attach_uprobe(getpid(), loc->path, loc->offset, 7);
    ASSERT_TRUE(r.ok()) << r.error().message;
}

void pin_to_cpu(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(set), &set), 0);
}

// A usdt_fire child: we write "N\n" to fire N probes and read "done N" back.
class FireProgram {
  public:
    FireProgram() {
        int in[2], out[2];
        if (pipe(in) != 0 || pipe(out) != 0) {
            return;
        }
        pid_ = fork();
        if (pid_ == 0) {
            dup2(in[0], 0);
            dup2(out[1], 1);
            close(in[1]);
            close(out[0]);
            execl(path().c_str(), "usdt_fire", static_cast<char *>(nullptr));
            _exit(127);
        }
        close(in[0]);
        close(out[1]);
        to_ = fdopen(in[1], "w");
        from_ = fdopen(out[0], "r");
        EXPECT_EQ(read_line(), "ready");
    }
    ~FireProgram() {
        if (to_ != nullptr) {
            fclose(to_);
        }
        if (from_ != nullptr) {
            fclose(from_);
        }
        if (pid_ > 0) {
            int status = 0;
            waitpid(pid_, &status, 0);
        }
    }
    static std::string path() { return std::string(MYSQLTRACE_TESTPROGS_DIR) + "/usdt_fire"; }
    pid_t pid() const { return pid_; }
    void fire(int n) {
        fprintf(to_, "%d\n", n);
        fflush(to_);
    }
    std::string read_line() {
        char buf[64] = {};
        if (fgets(buf, sizeof(buf), from_) == nullptr) {
            return "<eof>";
        }
        std::string s(buf);
        if (!s.empty() && s.back() == '\n') {
            s.pop_back();
        }
        return s;
    }

  private:
    pid_t pid_ = -1;
    FILE *to_ = nullptr;
    FILE *from_ = nullptr;
};

TEST(ProbeDelivery, UprobeExactCountFromTwoCpusInTimestampOrder) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto p = load(getpid());
    ASSERT_TRUE(p);
    attach_self_uprobe(*p);
    if (HasFatalFailure()) {
        return;
    }
    const int kPerThread = 500;
    const int cpus = std::min(2, p->cpu_count());
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; t++) {
        threads.emplace_back([t, cpus] {
            pin_to_cpu(t % cpus);
            for (int i = 0; i < kPerThread; i++) {
                mysqltrace_selftest_target(static_cast<uint64_t>(t * 100000 + i));
            }
        });
    }
    for (auto &th : threads) {
        th.join();
    }
    ASSERT_TRUE(p->flush().ok());

    const auto &evs = p->events();
    ASSERT_EQ(evs.size(), 2u * kPerThread);
    std::map<uint32_t, int> per_cpu;
    std::map<uint64_t, uint64_t> next_arg;  // per thread: args arrive in call order
    uint64_t last_ts = 0;
    for (const auto &ev : evs) {
        EXPECT_EQ(ev.source, static_cast<uint32_t>(MT_SELFTEST_UPROBE));
        EXPECT_EQ(ev.cookie, 7u);
        EXPECT_EQ(ev.hdr.pid, static_cast<uint32_t>(getpid()));
        EXPECT_GE(ev.hdr.ts_ns, last_ts);
        last_ts = ev.hdr.ts_ns;
        per_cpu[ev.hdr.cpu]++;
        uint64_t thread = ev.arg / 100000;
        EXPECT_EQ(ev.arg % 100000, next_arg[thread]++);
    }
    if (cpus == 2) {
        EXPECT_EQ(per_cpu[0], kPerThread);
        EXPECT_EQ(per_cpu[1], kPerThread);
    }
    auto st = p->stats();
    EXPECT_EQ(st.produced, 2u * kPerThread);
    EXPECT_EQ(st.delivered, 2u * kPerThread);
    EXPECT_EQ(st.dropped, 0u);
    EXPECT_EQ(st.late, 0u);
    EXPECT_EQ(st.malformed, 0u);
    EXPECT_EQ(p->foreign_records(), 0u);
}

TEST(ProbeDelivery, UsdtInTestProgramOnlyTracedPid) {
    MYSQLTRACE_REQUIRE_ROOT();
    FireProgram traced, other;
    auto p = load(traced.pid());
    ASSERT_TRUE(p);
    // Attached for every process: the in-kernel pid filter must drop `other`.
    auto r = p->attach_usdt(-1, FireProgram::path(), "mysqltrace_test", "fire", 3);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const int kHits = 1000;
    traced.fire(kHits);
    other.fire(kHits);
    EXPECT_EQ(traced.read_line(), "done 1000");
    EXPECT_EQ(other.read_line(), "done 1000");
    ASSERT_TRUE(p->flush().ok());

    const auto &evs = p->events();
    ASSERT_EQ(evs.size(), static_cast<size_t>(kHits));
    for (int i = 0; i < kHits; i++) {
        EXPECT_EQ(evs[i].source, static_cast<uint32_t>(MT_SELFTEST_USDT));
        EXPECT_EQ(evs[i].hdr.pid, static_cast<uint32_t>(traced.pid()));
        EXPECT_EQ(evs[i].arg, static_cast<uint64_t>(i));
        EXPECT_EQ(evs[i].cookie, 3u);
    }
    EXPECT_EQ(p->stats().dropped, 0u);
    EXPECT_EQ(p->foreign_records(), 0u);
}

TEST(ProbeDelivery, SyscallTracepointOnlyOwnPid) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto p = load(getpid(), SYS_getppid);
    ASSERT_TRUE(p);
    ASSERT_TRUE(p->attach_syscall().ok());
    const int kCalls = 1000;
    pid_t child = fork();
    if (child == 0) {
        // Same syscall from another process: must not be counted.
        for (int i = 0; i < kCalls; i++) {
            syscall(SYS_getppid, 5000000L + i);
        }
        _exit(0);
    }
    for (int i = 0; i < kCalls; i++) {
        syscall(SYS_getppid, static_cast<long>(i));
    }
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(p->flush().ok());

    const auto &evs = p->events();
    ASSERT_EQ(evs.size(), static_cast<size_t>(kCalls));
    for (int i = 0; i < kCalls; i++) {
        EXPECT_EQ(evs[i].source, static_cast<uint32_t>(MT_SELFTEST_SYSCALL));
        EXPECT_EQ(evs[i].arg, static_cast<uint64_t>(i));
        EXPECT_EQ(evs[i].hdr.pid, static_cast<uint32_t>(getpid()));
    }
    EXPECT_EQ(p->stats().dropped, 0u);
}

TEST(ProbeDelivery, FullRingCountsEveryDrop) {
    MYSQLTRACE_REQUIRE_ROOT();
    // One page per CPU holds only a few dozen records: most hits must be
    // dropped, and every one of them counted.
    auto p = load(getpid(), -1, 4096);
    ASSERT_TRUE(p);
    attach_self_uprobe(*p);
    if (HasFatalFailure()) {
        return;
    }
    const uint64_t kHits = 10000;
    std::thread t([] {
        pin_to_cpu(0);
        for (uint64_t i = 0; i < kHits; i++) {
            mysqltrace_selftest_target(i);
        }
    });
    t.join();
    ASSERT_TRUE(p->flush().ok());
    auto st = p->stats();
    EXPECT_GT(st.dropped, 0u);
    EXPECT_EQ(st.delivered + st.dropped, kHits);
    EXPECT_EQ(st.produced, st.delivered);
    EXPECT_EQ(st.dropped_per_cpu.at(0), st.dropped);
    EXPECT_EQ(p->events().size(), st.delivered);
    // What survived is the first hits, in order.
    for (size_t i = 0; i < p->events().size(); i++) {
        EXPECT_EQ(p->events()[i].arg, i);
    }
}

}  // namespace
