// SPDX-License-Identifier: GPL-2.0-only
// What the delivery path and one probe hit cost, measured with the selftest
// BPF object (bpf/selftest.bpf.c) that `mysqltrace doctor` proves delivery
// with. Prints markdown tables; `--json FILE` also writes the numbers for
// bench/report.py. A benchmark: it never asserts on speed, and exits non-zero
// only when it could not measure.
//
//   pipeline_bench rate [--rates R,R,...] [--seconds S] [--source usdt|syscall]
//                       [--ring-kib K] [--output PATH] [--json FILE]
//       A forked producer, pinned to one CPU, fires the USDT probe
//       mysqltrace_selftest:ping (or getppid under the sys_enter tracepoint)
//       at each target rate (0: as fast as it can) for S seconds. This
//       process, pinned to another CPU, drains the per-CPU rings through
//       RingSet and trace::run_loop, as every tracing command does, and
//       renders one text line per event to PATH (default /dev/null). Per
//       rate: events fired, delivered and dropped (the BPF side's count),
//       whether fired == delivered + dropped holds exactly, and the CPU the
//       consumer used.
//   pipeline_bench probe-cost [--hits N] [--reps R] [--json FILE]
//       ns per hit, on one CPU, of a uprobe on an emulated `push %rbp` whose
//       program filters the hit out (the uprobe floor) or writes one record;
//       the same for a USDT site (1-byte nop) and the sys_enter raw
//       tracepoint; a plain syscall for scale.
//   pipeline_bench prog-stats --pid PID
//       run_cnt and run_time_ns of every BPF program process PID holds, as
//       JSON, with the uprobe/USDT ones (kprobe-type programs) summed apart
//       (counted only while kernel BPF statistics are on).
//   pipeline_bench stats-on
//       Turns kernel BPF run-time statistics on until killed: BPF_ENABLE_STATS
//       ties them to this process, so they go off when it dies, however.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bpf/handles.h"
#include "bpf/libbpf_log.h"
#include "bpf/ring_set.h"
#include "mysqltrace/abi/event.h"
#include "output/clock.h"
#include "output/output_file.h"
#include "selftest.skel.h"
#include "server/server_target.h"
#include "proc/maps.h"
#include "selftest.skel.h"
#include "selftest/self_probe.h"
#include "selftest/targets.h"
#include "trace/trace_loop.h"

namespace {

using namespace mysqltrace;
using json = nlohmann::json;

enum class Source { usdt, syscall };

uint64_t now_ns() {
    return bpf::monotonic_ns();
}

double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto s = [](const timeval &tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
    return s(ru.ru_utime) + s(ru.ru_stime);
}

bool pin_to_cpu(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set) == 0;
}

std::string self_exe() {
    std::error_code ec;
    auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : p.string();
}

void write_json(const std::string &path, const json &j) {
    if (path.empty()) {
        return;
    }
    std::ofstream out(path);
    out << j.dump(2) << "\n";
}

// ---- rate ----

void append_number(std::string &s, uint64_t v) {
    char b[24];
    const char *end = std::to_chars(b, b + sizeof(b), v).ptr;
    s.append(b, static_cast<size_t>(end - b));
}

struct RateArgs {
    std::vector<double> rates = {100e3, 250e3, 500e3, 750e3, 1e6, 1.5e6, 2e6, 3e6, 0};
    double seconds = 3;
    std::string source = "usdt";
    uint64_t ring_kib = 4096;
    std::string output = "/dev/null";
    std::string json_path;
    int producer_cpu = 0;
    int consumer_cpu = 1;
    bool stop_when_short = true;
};

struct StepResult {
    double target = 0;   // events/s asked for; 0: unthrottled
    double seconds = 0;  // the producer's firing time
    uint64_t fired = 0;
    uint64_t produced = 0;   // records written into a ring (BPF count)
    uint64_t dropped = 0;    // records lost (BPF count)
    uint64_t delivered = 0;  // records rendered
    uint64_t missing = 0;    // gaps in the delivered sequence numbers
    uint64_t out_of_order = 0;
    uint64_t foreign = 0;
    double consumer_cpu = 0;  // seconds of CPU this process used while draining
    double wall = 0;          // seconds from go to the last record rendered
    bool exact() const {
        return fired == delivered + dropped && produced == delivered && missing == dropped &&
               out_of_order == 0 && foreign == 0;
    }
    double rate() const { return seconds > 0 ? static_cast<double>(fired) / seconds : 0; }
};

void fire(Source src, uint64_t i) {
    if (src == Source::usdt) {
        selftest::fire_usdt(i);
    } else {
        syscall(SYS_getppid, static_cast<long>(i));
    }
}

// The child: waits for the go byte, fires at `rate` for `seconds` in bursts
// of at most 64 between clock reads, reports {fired, elapsed_ns}.
[[noreturn]] void producer(int go_fd, int result_fd, Source src, double rate, double seconds,
                           int cpu) {
    pin_to_cpu(cpu);
    char c = 0;
    if (read(go_fd, &c, 1) != 1) {
        _exit(1);
    }
    constexpr uint64_t kBurst = 64;
    uint64_t fired = 0;
    const uint64_t start = now_ns();
    const uint64_t end = start + static_cast<uint64_t>(seconds * 1e9);
    for (;;) {
        const uint64_t t = now_ns();
        if (t >= end) {
            break;
        }
        uint64_t due = fired + kBurst;
        if (rate > 0) {
            due = std::min(due, static_cast<uint64_t>(static_cast<double>(t - start) * rate / 1e9));
        }
        while (fired < due) {
            fire(src, fired++);
        }
    }
    uint64_t res[2] = {fired, now_ns() - start};
    _exit(write(result_fd, res, sizeof(res)) == static_cast<ssize_t>(sizeof(res)) ? 0 : 1);
}

// Loads and attaches the selftest object directly rather than through
// SelfProbe, whose sink keeps every record in memory: at millions of events
// a second this sink renders them instead, like a tracing command.
Result<StepResult> run_step(const RateArgs &a, Source src, double rate) {
    int go[2], res[2];
    if (pipe2(go, O_CLOEXEC) != 0 || pipe2(res, O_CLOEXEC) != 0) {
        return make_error(errno, "pipe");
    }
    const pid_t child = fork();
    if (child < 0) {
        return make_error(errno, "fork");
    }
    if (child == 0) {
        close(go[1]);
        close(res[0]);
        producer(go[0], res[1], src, rate, a.seconds, a.producer_cpu);
    }
    close(go[0]);
    close(res[1]);
    bpf::Fd go_w(go[1]), res_r(res[0]);
    auto reap = [child] {
        kill(child, SIGKILL);
        waitpid(child, nullptr, 0);
    };

    std::unique_ptr<::selftest, bpf::SkeletonDeleter<::selftest>> skel(::selftest::open());
    if (!skel) {
        reap();
        return make_error(errno, "cannot open the selftest BPF object");
    }
    skel->rodata->target_tgid = static_cast<__u32>(child);
    skel->rodata->target_syscall = src == Source::syscall ? SYS_getppid : -1;
    if (int err = ::selftest::load(skel.get()); err != 0) {
        reap();
        return make_error(err, "cannot load the selftest BPF programs");
    }
    auto out = output::OutputFile::open(a.output);
    if (!out) {
        reap();
        return out.error();
    }
    StepResult r;
    r.target = rate;
    uint64_t next = 0;
    output::Clock clock;
    std::string line;
    bpf::RingOptions ro;
    ro.bytes_per_cpu = a.ring_kib << 10;
    auto rings = bpf::RingSet::create(skel->obj, ro, [&](std::span<const uint8_t> rec) {
        mt_selftest_event ev;
        if (rec.size() != sizeof(ev)) {
            r.foreign++;
            return;
        }
        std::memcpy(&ev, rec.data(), sizeof(ev));
        if (ev.hdr.type != MT_EV_SELFTEST) {
            r.foreign++;
            return;
        }
        r.delivered++;
        if (ev.arg >= next) {
            r.missing += ev.arg - next;
            next = ev.arg + 1;
        } else {
            r.out_of_order++;
        }
        // "HH:MM:SS.uuuuuu PID/TID mysqltrace_selftest:ping(ARG)"
        line.clear();
        clock.append_wall(ev.hdr.ts_ns, line);
        line += ' ';
        append_number(line, ev.hdr.pid);
        line += '/';
        append_number(line, ev.hdr.tid);
        line += " mysqltrace_selftest:ping(";
        append_number(line, ev.arg);
        line += ")\n";
        (*out)->write(line);
    });
    if (!rings) {
        reap();
        return rings.error();
    }
    bpf::Link link;
    if (src == Source::usdt) {
        bpf_usdt_opts o{};
        o.sz = sizeof(o);
        link.reset(bpf_program__attach_usdt(skel->progs.selftest_usdt, child, self_exe().c_str(),
                                            selftest::kUsdtProvider, selftest::kUsdtName, &o));
    } else {
        link.reset(bpf_program__attach(skel->progs.selftest_sys_enter));
    }
    if (!link) {
        const int e = errno;
        reap();
        return make_error(e, "cannot attach the selftest probe");
    }

    const double cpu0 = cpu_seconds();
    const uint64_t t0 = now_ns();
    if (write(go_w.get(), "g", 1) != 1) {
        reap();
        return make_error(errno, "cannot start the producer");
    }
    trace::LoopOptions lo;
    lo.targets = {child};
    auto stop = trace::run_loop(**rings, lo);
    auto flushed = (*rings)->flush();
    (*out)->flush();
    r.wall = static_cast<double>(now_ns() - t0) / 1e9;
    r.consumer_cpu = cpu_seconds() - cpu0;
    int status = 0;
    waitpid(child, &status, 0);
    uint64_t got[2] = {0, 0};
    const bool reported = read(res_r.get(), got, sizeof(got)) == static_cast<ssize_t>(sizeof(got));
    if (!stop || !flushed) {
        return !stop ? stop.error() : flushed.error();
    }
    if (!reported || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        return Error{EIO, "the producer did not report"};
    }
    r.fired = got[0];
    r.seconds = static_cast<double>(got[1]) / 1e9;
    r.missing += r.fired > next ? r.fired - next : 0;
    const auto st = (*rings)->stats();
    r.produced = st.produced;
    r.dropped = st.dropped;
    return r;
}

std::string fmt_rate(double r) {
    char b[32];
    if (r >= 1e6) {
        std::snprintf(b, sizeof(b), "%.2fM", r / 1e6);
    } else {
        std::snprintf(b, sizeof(b), "%.0fk", r / 1e3);
    }
    return b;
}

int cmd_rate(const RateArgs &a) {
    const Source src = a.source == "syscall" ? Source::syscall : Source::usdt;
    const int ncpu = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    RateArgs args = a;
    if (ncpu < 2) {
        args.producer_cpu = args.consumer_cpu = 0;
    }
    pin_to_cpu(args.consumer_cpu);
    const char *what = src == Source::usdt ? "USDT mysqltrace_selftest:ping (1-byte nop)"
                                           : "getppid under the sys_enter raw tracepoint";
    std::printf(
        "Producer: %s, pinned to CPU %d. Consumer: RingSet + trace loop + one text line per "
        "event to %s, pinned to CPU %d. %.1f s per rate, %llu KiB ring per CPU.\n\n",
        what, args.producer_cpu, args.output.c_str(), args.consumer_cpu, args.seconds,
        static_cast<unsigned long long>(args.ring_kib));
    std::printf(
        "| target/s | fired/s | fired | delivered | dropped | fired = delivered + dropped | "
        "consumer CPU |\n|---|---|---|---|---|---|---|\n");
    std::fflush(stdout);
    json steps = json::array();
    // Throttled rates in increasing order, then the unthrottled one if asked:
    // once the producer falls short of a target, higher targets would only
    // repeat that row.
    std::vector<double> order;
    for (double r : args.rates) {
        if (r > 0) {
            order.push_back(r);
        }
    }
    std::sort(order.begin(), order.end());
    const bool unthrottled =
        std::find(args.rates.begin(), args.rates.end(), 0.0) != args.rates.end();
    bool short_of_target = false;
    auto step = [&](double rate) {
        auto r = run_step(args, src, rate);
        if (!r) {
            std::fprintf(stderr, "pipeline_bench: %s\n", r.error().message.c_str());
            return false;
        }
        const double cpu = r->wall > 0 ? r->consumer_cpu / r->wall * 100 : 0;
        std::printf("| %s | %s | %llu | %llu | %llu | %s | %.0f%% |\n",
                    rate > 0 ? fmt_rate(rate).c_str() : "max", fmt_rate(r->rate()).c_str(),
                    static_cast<unsigned long long>(r->fired),
                    static_cast<unsigned long long>(r->delivered),
                    static_cast<unsigned long long>(r->dropped), r->exact() ? "yes" : "NO", cpu);
        std::fflush(stdout);
        steps.push_back({{"target", rate},
                         {"seconds", r->seconds},
                         {"fired", r->fired},
                         {"produced", r->produced},
                         {"delivered", r->delivered},
                         {"dropped", r->dropped},
                         {"missing", r->missing},
                         {"out_of_order", r->out_of_order},
                         {"foreign", r->foreign},
                         {"exact", r->exact()},
                         {"rate", r->rate()},
                         {"consumer_cpu_pct", cpu}});
        short_of_target = rate > 0 && r->rate() < 0.9 * rate;
        return true;
    };
    for (double rate : order) {
        if (!step(rate)) {
            return 1;
        }
        if (short_of_target && args.stop_when_short) {
            break;
        }
    }
    if (unthrottled && !step(0)) {
        return 1;
    }
    write_json(args.json_path, {{"source", args.source},
                                {"seconds", args.seconds},
                                {"ring_kib", args.ring_kib},
                                {"producer_cpu", args.producer_cpu},
                                {"consumer_cpu", args.consumer_cpu},
                                {"steps", steps}});
    return 0;
}

// ---- probe-cost ----

enum class Target { function, usdt, syscall };

// This thread's CPU time, not the wall clock: a trap is spent in the thread's
// own context, and other work on a busy machine then does not count.
uint64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

__attribute__((noinline)) double ns_per_call(Target t, uint64_t n) {
    const uint64_t t0 = thread_cpu_ns();
    for (uint64_t i = 0; i < n; i++) {
        switch (t) {
            case Target::function:
                mysqltrace_selftest_target(i);
                break;
            case Target::usdt:
                selftest::fire_usdt(i);
                break;
            case Target::syscall:
                syscall(SYS_getppid, static_cast<long>(i));
                break;
        }
    }
    return static_cast<double>(thread_cpu_ns() - t0) / static_cast<double>(n);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

struct CostArgs {
    uint64_t hits = 100000;
    int reps = 5;
    int cpu = 0;
    std::string json_path;
};

struct Variant {
    const char *key;
    const char *what;
    Target target;
    bool record;  // the program writes one record per hit
};

int cmd_probe_cost(const CostArgs &a) {
    pin_to_cpu(a.cpu);
    auto addr = reinterpret_cast<uint64_t>(&mysqltrace_selftest_target);
    auto loc = proc::locate_address(getpid(), addr);
    if (!loc) {
        std::fprintf(stderr, "pipeline_bench: %s\n", loc.error().message.c_str());
        return 1;
    }
    const Variant variants[] = {
        {"uprobe_floor", "uprobe on `push %rbp` (emulated), program filters the hit out",
         Target::function, false},
        {"uprobe_record", "uprobe on `push %rbp`, program writes one 40-byte record",
         Target::function, true},
        {"usdt_floor", "USDT site (1-byte nop), program filters the hit out", Target::usdt, false},
        {"usdt_record", "USDT site, program writes one record", Target::usdt, true},
        {"syscall_floor", "sys_enter raw tracepoint on getppid, program filters it out",
         Target::syscall, false},
        {"syscall_record", "sys_enter raw tracepoint on getppid, one record", Target::syscall,
         true},
    };
    std::vector<double> bare_fn, bare_usdt, bare_sys;
    for (int i = 0; i < a.reps; i++) {
        bare_fn.push_back(ns_per_call(Target::function, a.hits));
        bare_usdt.push_back(ns_per_call(Target::usdt, a.hits));
        bare_sys.push_back(ns_per_call(Target::syscall, a.hits));
    }
    const double none[] = {median(bare_fn), median(bare_usdt), median(bare_sys)};
    std::printf(
        "Per hit, in the firing thread's CPU time on one CPU, %llu hits x %d repetitions "
        "(median), minus the same loop without the probe.\n\n| probe | ns per hit | x uprobe floor "
        "|\n|---|---|---|\n",
        static_cast<unsigned long long>(a.hits), a.reps);
    json out = {{"hits", a.hits}, {"reps", a.reps}};
    out["bare_function_ns"] = none[0];
    out["usdt_site_untraced_ns"] = none[1];
    out["syscall_ns"] = none[2];
    double floor = 0;
    for (const auto &v : variants) {
        selftest::SelfProbeOptions so;
        so.target_tgid = v.record ? getpid() : 0;  // pid 0 never runs a probe
        so.target_syscall = v.target == Target::syscall && v.record ? SYS_getppid : -1;
        // Every record of a repetition fits: nothing is consumed while timing.
        so.ring.bytes_per_cpu = std::max<uint64_t>(a.hits * 64, 1u << 20);
        auto p = selftest::SelfProbe::load(so);
        if (!p) {
            std::fprintf(stderr, "pipeline_bench: %s\n", p.error().message.c_str());
            return 1;
        }
        Result<void> att = {};
        switch (v.target) {
            case Target::function:
                att = (*p)->attach_uprobe(getpid(), loc->path, loc->offset, 1);
                break;
            case Target::usdt:
                att = (*p)->attach_usdt(getpid(), loc->path, selftest::kUsdtProvider,
                                        selftest::kUsdtName, 2);
                break;
            case Target::syscall:
                att = (*p)->attach_syscall();
                break;
        }
        if (!att) {
            std::fprintf(stderr, "pipeline_bench: %s\n", att.error().message.c_str());
            return 1;
        }
        std::vector<double> t;
        for (int i = 0; i < a.reps; i++) {
            t.push_back(ns_per_call(v.target, a.hits));
            if (auto f = (*p)->flush(); !f) {
                std::fprintf(stderr, "pipeline_bench: %s\n", f.error().message.c_str());
                return 1;
            }
        }
        const double cost = median(t) - none[static_cast<int>(v.target)];
        if (std::string(v.key) == "uprobe_floor") {
            floor = cost;
        }
        const auto st = (*p)->stats();
        const uint64_t want = v.record ? a.hits * static_cast<uint64_t>(a.reps) : 0;
        const bool complete = (*p)->events().size() == want && st.dropped == 0;
        std::printf("| %s%s | %.0f | %.2f |\n", v.what, complete ? "" : " (records lost!)", cost,
                    floor > 0 ? cost / floor : 0.0);
        out[v.key] = {{"ns", cost}, {"what", v.what}, {"complete", complete}};
    }
    std::printf("| plain getppid syscall, for scale | %.0f | %.2f |\n", none[2],
                floor > 0 ? none[2] / floor : 0.0);
    write_json(a.json_path, out);
    return 0;
}

// ---- prog-stats / stats-on ----

int cmd_prog_stats(pid_t pid) {
    std::set<uint32_t> ids;
    std::error_code ec;
    const std::string dir = "/proc/" + std::to_string(pid) + "/fdinfo";
    for (const auto &e : std::filesystem::directory_iterator(dir, ec)) {
        std::ifstream in(e.path());
        std::string line;
        while (std::getline(in, line)) {
            // Program fds and link fds both name their program this way.
            if (line.rfind("prog_id:", 0) == 0) {
                ids.insert(static_cast<uint32_t>(std::stoul(line.substr(8))));
            }
        }
    }
    if (ec) {
        std::fprintf(stderr, "pipeline_bench: %s: %s\n", dir.c_str(), ec.message().c_str());
        return 1;
    }
    json progs = json::array();
    uint64_t cnt = 0, ns = 0, uprobe_cnt = 0, uprobe_ns = 0;
    for (uint32_t id : ids) {
        bpf::Fd fd(bpf_prog_get_fd_by_id(id));
        if (!fd.valid()) {
            continue;
        }
        bpf_prog_info info{};
        uint32_t len = sizeof(info);
        if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0) {
            continue;
        }
        cnt += info.run_cnt;
        ns += info.run_time_ns;
        // uprobes and USDT probes run kprobe-type programs: each run is a trap.
        const bool uprobe = info.type == BPF_PROG_TYPE_KPROBE;
        if (uprobe) {
            uprobe_cnt += info.run_cnt;
            uprobe_ns += info.run_time_ns;
        }
        progs.push_back({{"id", id},
                         {"name", info.name},
                         {"type", info.type},
                         {"uprobe", uprobe},
                         {"run_cnt", info.run_cnt},
                         {"run_time_ns", info.run_time_ns}});
    }
    std::cout << json{{"pid", pid},
                      {"run_cnt", cnt},
                      {"run_time_ns", ns},
                      {"uprobe_run_cnt", uprobe_cnt},
                      {"uprobe_run_time_ns", uprobe_ns},
                      {"programs", progs}}
              << "\n";
    return 0;
}

int cmd_stats_on() {
    int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (fd < 0) {
        std::fprintf(stderr, "pipeline_bench: cannot enable BPF statistics: %s\n",
                     std::strerror(errno));
        return 1;
    }
    std::printf("on\n");
    std::fflush(stdout);
    for (;;) {
        pause();
    }
}

// ---- floor ----

// The one-trap floor: selftest_count on the entry of the server's
// log_slow_statement, where `mysqltrace server` takes its one probe per
// statement, until SIGINT or SIGTERM.
int cmd_floor(pid_t pid) {
    auto target = mysqltrace::server::resolve_server(pid);
    if (!target || !target->statement_end_site) {
        std::fprintf(
            stderr, "pipeline_bench: %s\n",
            target ? "no log_slow_statement entry to probe" : target.error().message.c_str());
        return 1;
    }
    ::selftest *skel = ::selftest::open();
    if (skel == nullptr) {
        std::fprintf(stderr, "pipeline_bench: cannot open the selftest BPF object\n");
        return 1;
    }
    skel->rodata->target_tgid = static_cast<__u32>(pid);
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    int rc = 1;
    bpf_link *l = nullptr;
    if (::selftest::load(skel) != 0) {
        std::fprintf(stderr, "pipeline_bench: cannot load the selftest BPF object\n");
    } else if ((l = bpf_program__attach_uprobe(skel->progs.selftest_count, false, pid,
                                               target->exe.c_str(),
                                               target->statement_end_site->offset)) == nullptr) {
        std::fprintf(stderr, "pipeline_bench: cannot attach to log_slow_statement: %s\n",
                     std::strerror(errno));
    } else {
        std::fprintf(stderr,
                     "pipeline_bench: one counting probe on log_slow_statement of pid %d; "
                     "Ctrl-C to stop\n",
                     pid);
        int sig = 0;
        sigwait(&stop, &sig);
        rc = 0;
    }
    bpf_link__destroy(l);
    ::selftest::destroy(skel);
    return rc;
}

}  // namespace

int main(int argc, char **argv) {
    CLI::App app{"Pipeline limits and per-probe costs of mysqltrace's delivery path"};
    app.require_subcommand(1);
    RateArgs ra;
    auto *rate = app.add_subcommand("rate", "Events/s through the rings at controlled rates");
    rate->add_option("--rates", ra.rates, "Target events/s, 0 for unthrottled")->delimiter(',');
    rate->add_option("--seconds", ra.seconds, "Firing time per rate");
    rate->add_option("--source", ra.source)->check(CLI::IsMember({"usdt", "syscall"}));
    rate->add_option("--ring-kib", ra.ring_kib, "Ring buffer per CPU")
        ->check(CLI::Range(4, 1 << 20));
    rate->add_option("--output", ra.output, "Where rendered lines go");
    rate->add_option("--json", ra.json_path);
    rate->add_option("--producer-cpu", ra.producer_cpu);
    rate->add_option("--consumer-cpu", ra.consumer_cpu);
    rate->add_flag("!--all-rates", ra.stop_when_short,
                   "Go on stepping up after the producer fell short of a target");
    CostArgs ca;
    auto *cost = app.add_subcommand("probe-cost", "ns per probe hit vs the uprobe floor");
    cost->add_option("--hits", ca.hits)->check(CLI::Range(1000, 10000000));
    cost->add_option("--reps", ca.reps)->check(CLI::Range(1, 100));
    cost->add_option("--cpu", ca.cpu);
    cost->add_option("--json", ca.json_path);
    pid_t pid = 0;
    auto *stats = app.add_subcommand("prog-stats", "BPF run counts of a process's programs");
    stats->add_option("--pid", pid)->required();
    auto *on = app.add_subcommand("stats-on", "Kernel BPF statistics on until killed");
    pid_t floor_pid = 0;
    auto *floor_cmd = app.add_subcommand(
        "floor", "One counting uprobe on a server's log_slow_statement until SIGINT");
    floor_cmd->add_option("--pid", floor_pid)->required();
    CLI11_PARSE(app, argc, argv);
    mysqltrace::bpf::set_libbpf_verbosity(0);
    if (rate->parsed()) {
        return cmd_rate(ra);
    }
    if (cost->parsed()) {
        return cmd_probe_cost(ca);
    }
    if (stats->parsed()) {
        return cmd_prog_stats(pid);
    }
    if (on->parsed()) {
        return cmd_stats_on();
    }
    if (floor_cmd->parsed()) {
        return cmd_floor(floor_pid);
    }
    return 2;
}
