// SPDX-License-Identifier: GPL-2.0-only
#include "doctor/doctor.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>

#include <bpf/bpf.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bpf/handles.h"
#include "elf/probe_site.h"
#include "proc/kernel.h"
#include "proc/maps.h"
#include "selftest/self_probe.h"
#include "selftest/targets.h"

namespace mysqltrace::doctor {

namespace {

// Kernel 6.2 is the oldest with everything the client, run and server
// commands use: BPF ring buffers (5.8), BTF raw tracepoints, BPF cookies on
// uprobes (5.15) and the bpf_rdonly_cast kfunc (6.2). uprobe_multi links
// (calls, exact stages, table I/O) need 6.6; the client's TLS probes use
// them there and a perf link per probe before.
constexpr int kMinMajor = 6;
constexpr int kMinMinor = 2;

constexpr int kCapDacReadSearch = 2;
constexpr int kCapSysAdmin = 21;
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

Check ok(std::string name, std::string detail) {
    return Check{std::move(name), Status::ok, std::move(detail), {}};
}

Check fail(std::string name, std::string detail, std::string remedy) {
    return Check{std::move(name), Status::fail, std::move(detail), std::move(remedy)};
}

Check check_kernel() {
    const auto k = proc::kernel_release();
    if (k.at_least(kMinMajor, kMinMinor)) {
        return ok("kernel version", k.release);
    }
    return fail("kernel version", k.release + " is older than 6.2",
                "use a kernel >= 6.2 (BPF ring buffers, BTF tracepoints, uprobe cookies, "
                "typed kernel reads)");
}

Check check_btf() {
    const char *path = "/sys/kernel/btf/vmlinux";
    struct stat st {};
    if (stat(path, &st) != 0) {
        return fail("kernel BTF", std::string(path) + ": " + std::strerror(errno),
                    "use a kernel built with CONFIG_DEBUG_INFO_BTF=y");
    }
    if (access(path, R_OK) != 0) {
        return fail("kernel BTF", std::string(path) + " is not readable",
                    "run as root or make BTF readable");
    }
    return ok("kernel BTF", std::string(path) + " (" + std::to_string(st.st_size >> 10) + " KiB)");
}

uint64_t effective_caps() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("CapEff:", 0) == 0) {
            return std::stoull(line.substr(7), nullptr, 16);
        }
    }
    return 0;
}

Check check_privileges() {
    uint64_t caps = effective_caps();
    auto has = [caps](int cap) { return (caps >> cap) & 1u; };
    std::string who = geteuid() == 0 ? "root" : "uid " + std::to_string(geteuid());
    bool admin = has(kCapSysAdmin);
    std::vector<std::string> missing;
    if (!has(kCapBpf) && !admin) {
        missing.push_back("CAP_BPF");
    }
    if (!has(kCapPerfmon) && !admin) {
        missing.push_back("CAP_PERFMON");
    }
    if (!has(kCapDacReadSearch)) {
        missing.push_back("CAP_DAC_READ_SEARCH");
    }
    if (missing.empty()) {
        return ok("privileges",
                  who + (admin ? " with CAP_SYS_ADMIN" : " with CAP_BPF, CAP_PERFMON"));
    }
    std::string list;
    for (const auto &m : missing) {
        list += (list.empty() ? "" : ", ") + m;
    }
    return fail("privileges", who + " lacks " + list,
                "run as root (sudo mysqltrace ...) or grant " + list);
}

Check check_map(const char *name, bpf_map_type type, uint32_t key, uint32_t value, uint32_t entries,
                const char *what) {
    int fd = bpf_map_create(type, "mt_doctor", key, value, entries, nullptr);
    if (fd < 0) {
        int e = errno;
        std::string remedy =
            e == EPERM ? "run as root or grant CAP_BPF" : "this kernel lacks " + std::string(what);
        return fail(name, std::string("map creation failed: ") + std::strerror(e), remedy);
    }
    bpf::Fd owner(fd);
    return ok(name, std::string(what) + " created");
}

// Counts the records of one probe kind and checks they are exactly the
// arguments 0..n-1 in order.
std::string verify(const std::vector<mt_selftest_event> &events, uint32_t source, int n,
                   const bpf::RingStats &st, bool *good) {
    uint64_t next = 0;
    int count = 0;
    bool ordered = true;
    for (const auto &ev : events) {
        if (ev.source != source) {
            continue;
        }
        count++;
        if (ev.arg != next++) {
            ordered = false;
        }
    }
    *good = count == n && ordered && st.dropped == 0;
    std::string s =
        std::to_string(count) + "/" + std::to_string(n) + " events through per-CPU rings";
    s += ", " + std::to_string(st.dropped) + " drops";
    if (!ordered) {
        s += ", out of order";
    }
    return s;
}

struct ProbeChecks {
    Check load;
    Check uprobe;
    Check usdt;
    Check syscall;
};

ProbeChecks check_probes(const DoctorOptions &opts) {
    const std::string fix_priv = "run as root or grant CAP_BPF and CAP_PERFMON";
    ProbeChecks r;
    selftest::SelfProbeOptions so;
    so.target_tgid = getpid();
    so.target_syscall = SYS_getppid;
    so.ring.bytes_per_cpu = 256 * 1024;
    auto probe = selftest::SelfProbe::load(so);
    if (!probe) {
        std::string fix =
            probe.error().code == EPERM ? fix_priv : "run with -vv to see the verifier log";
        r.load = fail("BPF program load", probe.error().message, fix);
        r.uprobe = fail("uprobe attach + delivery", "not tried: programs did not load", fix);
        r.usdt = fail("USDT attach + delivery", "not tried: programs did not load", fix);
        r.syscall = fail("syscall tracepoint", "not tried: programs did not load", fix);
        return r;
    }
    auto &p = *probe;
    r.load = ok("BPF program load",
                "3 programs verified, " + std::to_string(p->cpu_count()) + " per-CPU ring buffers");

    // uprobe on our own assembly function, located through /proc/self/maps.
    auto addr = reinterpret_cast<uint64_t>(&mysqltrace_selftest_target);
    auto loc = proc::locate_address(getpid(), addr);
    auto site = elf::place_entry_probe(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(addr), 16), 0);
    Result<void> att = loc ? p->attach_uprobe(getpid(), loc->path, loc->offset + site.offset, 1)
                           : Result<void>(loc.error());
    if (!att) {
        r.uprobe = fail(
            "uprobe attach + delivery", att.error().message,
            att.error().code == EPERM ? fix_priv : "check /sys/bus/event_source/devices/uprobe");
    }
    // USDT probe compiled into this binary.
    Result<void> usdt =
        loc ? p->attach_usdt(getpid(), loc->path, selftest::kUsdtProvider, selftest::kUsdtName, 2)
            : Result<void>(loc.error());
    if (!usdt) {
        r.usdt = fail("USDT attach + delivery", usdt.error().message,
                      usdt.error().code == EPERM ? fix_priv : "check that uprobes work first");
    }
    Result<void> sys = p->attach_syscall();
    if (!sys) {
        r.syscall =
            fail("syscall tracepoint", sys.error().message,
                 sys.error().code == EPERM ? fix_priv : "the kernel needs BTF raw tracepoints");
    }

    for (int i = 0; i < opts.probe_hits; i++) {
        mysqltrace_selftest_target(static_cast<uint64_t>(i));
        selftest::fire_usdt(static_cast<uint64_t>(i));
        syscall(SYS_getppid, static_cast<long>(i));
    }
    auto flushed = p->flush();
    if (!flushed) {
        r.uprobe = r.usdt = r.syscall = fail("ring buffer drain", flushed.error().message,
                                             "report this: the ring buffers could not be read");
        return r;
    }
    const auto st = p->stats();
    const auto &evs = p->events();
    bool good = false;
    if (att) {
        std::string d = verify(evs, MT_SELFTEST_UPROBE, opts.probe_hits, st, &good) +
                        ", probe on `" + site.instruction + "` (" +
                        elf::probe_cost_name(site.cost) + ")";
        r.uprobe = good ? ok("uprobe attach + delivery", d)
                        : fail("uprobe attach + delivery", d, "report this: uprobe hits were lost");
    }
    if (usdt) {
        std::string d = verify(evs, MT_SELFTEST_USDT, opts.probe_hits, st, &good);
        r.usdt = good ? ok("USDT attach + delivery", d)
                      : fail("USDT attach + delivery", d, "report this: USDT hits were lost");
    }
    if (sys) {
        // The syscall's first argument carries the loop counter.
        std::string d = verify(evs, MT_SELFTEST_SYSCALL, opts.probe_hits, st, &good);
        r.syscall = good ? ok("syscall tracepoint", d + ", sys_enter (BTF raw tracepoint)")
                         : fail("syscall tracepoint", d, "report this: tracepoint hits were lost");
    }
    return r;
}

Check check_tracefs() {
    bool mounted = access("/sys/kernel/tracing/events", F_OK) == 0 ||
                   access("/sys/kernel/debug/tracing/events", F_OK) == 0;
    return ok("tracefs/debugfs",
              std::string(mounted ? "mounted" : "not mounted") +
                  "; `client` reads syscall tracepoint ids there (mounts it when absent, "
                  "else uses raw tracepoints)");
}

}  // namespace

std::vector<Check> run_checks(const DoctorOptions &opts) {
    std::vector<Check> checks;
    checks.push_back(check_kernel());
    checks.push_back(check_btf());
    checks.push_back(check_privileges());
    checks.push_back(check_map("bpf() syscall", BPF_MAP_TYPE_ARRAY, 4, 8, 1, "an array map"));
    checks.push_back(
        check_map("ring buffer map", BPF_MAP_TYPE_RINGBUF, 0, 0, 64 * 1024, "a BPF ring buffer"));
    auto probes = check_probes(opts);
    checks.push_back(std::move(probes.load));
    checks.push_back(std::move(probes.uprobe));
    checks.push_back(std::move(probes.usdt));
    checks.push_back(std::move(probes.syscall));
    checks.push_back(check_tracefs());
    return checks;
}

bool all_ok(const std::vector<Check> &checks) {
    return std::all_of(checks.begin(), checks.end(),
                       [](const Check &c) { return c.status == Status::ok; });
}

void print_report(const std::vector<Check> &checks, std::ostream &out) {
    size_t w = 5;
    for (const auto &c : checks) {
        w = std::max(w, c.name.size());
    }
    auto pad = [](const std::string &s, size_t width) {
        return s + std::string(width > s.size() ? width - s.size() : 0, ' ');
    };
    out << pad("CHECK", w) << "  RESULT  DETAIL\n";
    for (const auto &c : checks) {
        out << pad(c.name, w) << "  " << (c.status == Status::ok ? "OK    " : "FAIL  ") << "  "
            << c.detail << "\n";
        if (c.status == Status::fail && !c.remedy.empty()) {
            out << pad("", w) << "          fix: " << c.remedy << "\n";
        }
    }
    size_t failed = static_cast<size_t>(std::count_if(
        checks.begin(), checks.end(), [](const Check &c) { return c.status == Status::fail; }));
    if (failed == 0) {
        out << "All " << checks.size() << " checks passed: this machine can run mysqltrace.\n";
    } else {
        out << failed << " of " << checks.size() << " checks failed.\n";
    }
}

}  // namespace mysqltrace::doctor
