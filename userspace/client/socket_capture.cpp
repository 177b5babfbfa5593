// SPDX-License-Identifier: GPL-2.0-only
#include "client/socket_capture.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <system_error>
#include <thread>

#include <bpf/bpf.h>

#include "bpf/tracefs.h"
#include "bpf/uprobe_multi.h"
#include "client.skel.h"
#include "client/go_tls.h"
#include "client/java_agent.h"
#include "client/tls_probes.h"
#include "proc/maps.h"

namespace mysqltrace::client {

namespace {

// MYSQLTRACE_ATTACH_PAUSE_MS in the environment: a pause after each syscall
// tracepoint is attached. Tests use it to widen the time in which some of
// them are attached and others not, as a tracer that loses its CPU there.
std::chrono::milliseconds attach_pause() {
    const char *v = std::getenv("MYSQLTRACE_ATTACH_PAUSE_MS");
    return std::chrono::milliseconds(v != nullptr ? std::atoi(v) : 0);
}

}  // namespace

Result<std::unique_ptr<SocketCapture>> SocketCapture::attach(const CaptureOptions &opts,
                                                             CaptureSinks sinks) {
    for (pid_t pid : opts.pids) {
        if (!proc::process_exists(pid)) {
            return Error{ESRCH, "no such process: " + std::to_string(pid)};
        }
    }
    std::unique_ptr<SocketCapture> c(new SocketCapture());
    c->sinks_ = std::move(sinks);
    c->skel_ = ::client::open();
    if (c->skel_ == nullptr) {
        return make_error(errno, "cannot open the client BPF object");
    }
    c->skel_->rodata->snaplen = std::min<uint32_t>(opts.snaplen, MT_MAX_SNAPLEN);
    c->skel_->rodata->follow_forks = opts.follow_forks ? 1 : 0;
    c->skel_->rodata->mt_wakeup_bytes = bpf::wakeup_bytes(opts.ring);
    if (opts.pids.size() == 1 && !opts.follow_forks) {
        c->skel_->rodata->single_tgid = static_cast<__u32>(opts.pids[0]);
    }
    if (auto r = bpf::size_scratch_slots(c->skel_->obj); !r) {
        return r.error();
    }
    const bool shim = !opts.shim_path.empty();
    // Go programs: found before the load, which fixes go_tls.
    std::vector<GoTlsFunction> go_funcs;
    if (!shim && opts.tls) {
        for (pid_t pid : opts.pids) {
            auto scan = find_go_tls_functions(pid);
            if (!scan) {
                return scan.error();
            }
            for (auto &f : scan->functions) {
                go_funcs.push_back(std::move(f));
            }
            for (auto &w : scan->warnings) {
                c->tls_warnings_.push_back(std::move(w));
            }
        }
        c->skel_->rodata->go_tls = go_funcs.empty() ? 0 : 1;
        // One link for all the TLS probes of a program in a file: a perf
        // link per probe waits out RCU grace periods as it detaches, one
        // probe after another (~0.1 s each), when the trace ends.
        c->multi_ = bpf::uprobe_multi_supported();
        if (c->multi_) {
            for (bpf_program *prog :
                 {c->skel_->progs.client_tls_enter, c->skel_->progs.client_tls_exit,
                  c->skel_->progs.client_go_tls_enter, c->skel_->progs.client_go_tls_ret}) {
                bpf::prepare_uprobe_multi(prog);
            }
        }
    }
    // The syscall probes: the per-syscall tracepoints (section
    // "tracepoint/syscalls/..."), attached here by id, the exit ones
    // tail-calling client_exit_worker, or the two raw tracepoints. The shim
    // reports the I/O itself: then neither.
    const auto syscalls = bpf::choose_syscall_programs(c->skel_->obj, !shim, "", &c->notes_);
    if (int err = ::client::load(c->skel_); err != 0) {
        return make_error(err, "cannot load the client BPF programs");
    }
    if (!syscalls.per_syscall.empty()) {
        const uint32_t key = 0;
        const int worker = bpf_program__fd(c->skel_->progs.client_exit_worker);
        if (bpf_map_update_elem(bpf_map__fd(c->skel_->maps.exit_worker), &key, &worker, BPF_ANY) !=
            0) {
            return make_error(errno, "cannot hand the syscall exit tracepoints their worker");
        }
    }
    SocketCapture *self = c.get();
    auto rings = bpf::RingSet::create(
        c->skel_->obj, opts.ring, [self](std::span<const uint8_t> rec) { self->on_record(rec); });
    if (!rings) {
        return rings.error();
    }
    c->rings_ = std::move(rings).value();
    for (pid_t pid : opts.pids) {
        uint32_t key = static_cast<uint32_t>(pid);
        uint8_t one = 1;
        if (bpf_map_update_elem(bpf_map__fd(c->skel_->maps.mt_pids), &key, &one, BPF_ANY) != 0) {
            return make_error(errno, "cannot add pid " + std::to_string(pid) + " to the filter");
        }
    }
    // The programs record nothing until capture_started is set below, once
    // all of them are attached.
    const auto pause = attach_pause();
    for (const auto &[p, id] : syscalls.per_syscall) {
        auto l = bpf::attach_tracepoint_id(p, id);
        if (!l) {
            return l.error();
        }
        c->links_.emplace_back(*l);
        if (pause.count() > 0) {
            std::this_thread::sleep_for(pause);
        }
    }
    if (int err = ::client::attach(c->skel_); err != 0) {
        return make_error(err, "cannot attach the socket syscall tracepoints");
    }
    if (shim) {
        if (auto r = c->attach_shim(opts.shim_path, opts.shim_api); !r) {
            return r.error();
        }
    } else if (opts.tls) {
        for (pid_t pid : opts.pids) {
            if (auto r = c->attach_tls(pid); !r) {
                return r.error();
            }
        }
        if (auto r = c->attach_go_tls(go_funcs); !r) {
            return r.error();
        }
        for (pid_t pid : opts.pids) {
            if (auto r = c->attach_java(pid, opts.java_agent); !r) {
                return r.error();
            }
        }
    }
    // Every probe is in place: the capture starts, for all calls at once.
    __atomic_store_n(&c->skel_->bss->capture_started, 1, __ATOMIC_RELEASE);
    return c;
}

Result<void> SocketCapture::attach_uprobes(bpf_program *prog, pid_t pid, const std::string &path,
                                           const std::vector<uint64_t> &offsets,
                                           const std::vector<uint64_t> &cookies, bool retprobe,
                                           const std::string &what) {
    if (multi_) {
        auto l = bpf::attach_uprobe_multi(prog, pid, path, offsets, cookies, retprobe);
        if (!l) {
            return l.error();
        }
        multi_links_.push_back(std::move(l).value());
        return {};
    }
    for (size_t i = 0; i < offsets.size(); i++) {
        auto l = bpf::attach_uprobe(prog, pid, path, offsets[i], what, retprobe, cookies[i]);
        if (!l) {
            return l.error();
        }
        links_.push_back(std::move(l).value());
    }
    return {};
}

namespace {

// The probes of one file: offsets, their cookies, the functions' names.
struct FileProbes {
    std::string path;
    std::vector<uint64_t> offsets, cookies;
    std::string names;  // "SSL_read, SSL_write", for an error
    std::string last;
    void add(uint64_t offset, uint64_t cookie, const std::string &name) {
        offsets.push_back(offset);
        cookies.push_back(cookie);
        if (name != last) {
            names += (names.empty() ? "" : ", ") + name;
            last = name;
        }
    }
};

FileProbes &file_probes(std::vector<FileProbes> &files, const std::string &path) {
    for (auto &f : files) {
        if (f.path == path) {
            return f;
        }
    }
    return files.emplace_back(FileProbes{path, {}, {}, {}, {}});
}

}  // namespace

Result<void> SocketCapture::attach_tls(pid_t pid) {
    auto funcs = find_tls_functions(pid);
    if (!funcs) {
        return funcs.error();
    }
    std::vector<FileProbes> files;
    for (const auto &f : *funcs) {
        file_probes(files, f.path).add(f.site.offset, f.func, f.symbol);
        tls_probes_.push_back(f.symbol + " in " + f.path + " on `" + f.site.instruction + "` (" +
                              elf::probe_cost_name(f.site.cost) + ")");
    }
    for (const auto &file : files) {
        for (bool ret : {false, true}) {
            bpf_program *prog = ret ? skel_->progs.client_tls_exit : skel_->progs.client_tls_enter;
            if (auto r = attach_uprobes(prog, pid, file.path, file.offsets, file.cookies, ret,
                                        file.names);
                !r) {
                return r;
            }
        }
    }
    return {};
}

Result<void> SocketCapture::attach_go_tls(const std::vector<GoTlsFunction> &funcs) {
    // For the traced process only: other processes running the same
    // executable would pay for the single-stepped probes too. The returns
    // are plain uprobes on the RET instructions (bpf/client_go.bpf.h).
    std::map<pid_t, std::pair<std::vector<FileProbes>, std::vector<FileProbes>>> by_pid;
    for (const auto &f : funcs) {
        auto &[entries, returns] = by_pid[f.pid];
        file_probes(entries, f.path).add(f.entry.offset, f.func, f.symbol);
        for (const auto &ret : f.returns) {
            file_probes(returns, f.path).add(ret.offset, f.func, f.symbol);
        }
        tls_probes_.push_back(f.symbol + " in " + f.path + " (by " + f.found_by + ") on `" +
                              f.entry.instruction + "` (" + elf::probe_cost_name(f.entry.cost) +
                              ") and its " + std::to_string(f.returns.size()) +
                              " RET instructions (" + elf::probe_cost_name(f.returns.front().cost) +
                              ")");
    }
    for (const auto &[pid, files] : by_pid) {
        for (const auto &[prog, list] :
             {std::pair{skel_->progs.client_go_tls_enter, &files.first},
              std::pair{skel_->progs.client_go_tls_ret, &files.second}}) {
            for (const auto &file : *list) {
                if (auto r = attach_uprobes(prog, pid, file.path, file.offsets, file.cookies, false,
                                            file.names);
                    !r) {
                    return r;
                }
            }
        }
    }
    return {};
}

Result<void> SocketCapture::attach_java(pid_t pid, bool load_agent) {
    auto lib = find_java_probes(pid);
    if (!lib) {
        return lib.error();
    }
    const std::string who = "JVM " + std::to_string(pid);
    const std::string unseen = "; the cleartext of its TLS connections is not seen";
    std::string how = "loaded by the JVM";
    if (!*lib) {
        if (!is_jvm(pid)) {
            return {};
        }
        if (!load_agent) {
            tls_warnings_.push_back(who + " has no mysqltrace Java agent (--no-java-agent)" +
                                    unseen);
            return {};
        }
        auto files = java_agent_files();
        if (!files) {
            tls_warnings_.push_back(who + ": " + files.error().message + unseen);
            return {};
        }
        auto loaded =
            load_java_agent(pid, files->jar, "lib=" + files->library, std::chrono::seconds(10));
        if (!loaded) {
            tls_warnings_.push_back(loaded.error().message + unseen);
            return {};
        }
        lib = find_java_probes(pid);
        if (!lib || !*lib) {
            tls_warnings_.push_back(who + " loaded the agent but has not mapped " +
                                    kJavaProbesLibrary + unseen);
            return {};
        }
        how = "the agent loaded by mysqltrace through the attach mechanism";
    }
    const std::string &path = **lib;
    const std::pair<bpf_program *, const char *> probes[] = {
        {skel_->progs.client_java_tls_enter, MT_USDT_JAVA_TLS_ENTER},
        {skel_->progs.client_java_tls_exit, MT_USDT_JAVA_TLS_EXIT},
    };
    for (const auto &[prog, name] : probes) {
        bpf_link *l =
            bpf_program__attach_usdt(prog, pid, path.c_str(), MT_USDT_PROVIDER, name, nullptr);
        if (l == nullptr) {
            return make_error(errno, std::string("cannot attach to the USDT probe ") +
                                         MT_USDT_PROVIDER + ":" + name + " of " + path);
        }
        links_.emplace_back(l);
    }
    tls_probes_.push_back("the JDK's TLS sockets, through the probes of " + path + " in " + who +
                          " (" + how + ")");
    return {};
}

Result<void> SocketCapture::attach_shim(const std::string &path, bool api) {
    const std::pair<bpf_program *, const char *> probes[] = {
        {skel_->progs.client_shim_io, MT_USDT_IO},
        {skel_->progs.client_shim_api_begin, MT_USDT_API_BEGIN},
        {skel_->progs.client_shim_api_end, MT_USDT_API_END},
        {skel_->progs.client_shim_trace_event, MT_USDT_TRACE_EVENT},
    };
    for (const auto &[prog, name] : probes) {
        if (!api && prog != skel_->progs.client_shim_io) {
            continue;  // unattached probes cost the shim nothing: their semaphores stay 0
        }
        // Every process that maps the shim gets the probe; the pid filter in
        // BPF keeps the traced ones.
        bpf_link *l =
            bpf_program__attach_usdt(prog, -1, path.c_str(), MT_USDT_PROVIDER, name, nullptr);
        if (l == nullptr) {
            return make_error(errno, std::string("cannot attach to the USDT probe ") +
                                         MT_USDT_PROVIDER + ":" + name + " of " + path);
        }
        links_.emplace_back(l);
    }
    return {};
}

SocketCapture::~SocketCapture() {
    // Removing a syscall tracepoint or a uprobe on a perf link waits out RCU
    // grace periods under one kernel lock, one after another (~65 ms a
    // tracepoint, ~105 ms a uprobe here): the 15 tracepoints take ~1 s. An
    // uprobe_multi link waits without that lock, so the TLS links go on a
    // thread of their own meanwhile.
    std::thread multi;
    if (!multi_links_.empty()) {
        try {
            multi = std::thread([this] { multi_links_.clear(); });
        } catch (const std::system_error &) {
            multi_links_.clear();
        }
    }
    links_.clear();
    if (multi.joinable()) {
        multi.join();
    }
    rings_.reset();
    if (skel_ != nullptr) {
        ::client::destroy(skel_);
    }
}

void SocketCapture::set_verdict(uint64_t sock, uint8_t state) {
    bpf_map_update_elem(bpf_map__fd(skel_->maps.mt_socks), &sock, &state, BPF_ANY);
}

void SocketCapture::on_record(std::span<const uint8_t> rec) {
    mt_event_header hdr;
    std::memcpy(&hdr, rec.data(), sizeof(hdr));
    if (hdr.type == MT_EV_PROC && rec.size() == sizeof(mt_proc_event)) {
        mt_proc_event ev;
        std::memcpy(&ev, rec.data(), sizeof(ev));
        if (ev.op == MT_PROC_EXIT && sinks_.on_exit) {
            sinks_.on_exit(ev.hdr.pid, ev.hdr.ts_ns);
        } else if (ev.op == MT_PROC_FORK && sinks_.on_fork) {
            sinks_.on_fork(ev.hdr.pid, ev.child);
        }
        return;
    }
    if (hdr.type == MT_EV_API) {
        ApiRecord a;
        if (!decode_api_record(rec, &a)) {
            undecodable_++;
        } else if (sinks_.on_api) {
            sinks_.on_api(a);
        }
        return;
    }
    SockRecord r;
    if (!decode_sock_record(rec, &r)) {
        undecodable_++;
        return;
    }
    if (sinks_.on_sock) {
        sinks_.on_sock(r);
    }
}

}  // namespace mysqltrace::client
