// SPDX-License-Identifier: GPL-2.0-only
#include "calls/tracer.h"

#include <fnmatch.h>

#include <signal.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <map>

#include <bpf/libbpf.h>

#include "bpf/uprobe_multi.h"
#include "calls.skel.h"
#include "calls/usdt_notes.h"
#include "mysqltrace/abi/event.h"

namespace mysqltrace::calls {

Result<UsdtPlan> plan_usdt(const std::vector<MappedFile> &files,
                           const std::vector<std::string> &specs) {
    UsdtPlan plan;
    if (specs.empty()) {
        return plan;
    }
    std::vector<std::vector<UsdtName>> notes(files.size());
    for (size_t i = 0; i < files.size(); i++) {
        if (auto n = usdt_names(files[i].open_path)) {
            notes[i] = std::move(n).value();
        }
    }
    std::map<std::string, uint32_t> label_index;
    for (const auto &spec : specs) {
        auto colon = spec.find(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) {
            return Error{EINVAL, "--usdt " + spec + ": expected PROVIDER:NAME"};
        }
        const std::string prov = spec.substr(0, colon), name = spec.substr(colon + 1);
        bool found = false;
        for (size_t i = 0; i < files.size(); i++) {
            for (const auto &n : notes[i]) {
                if (::fnmatch(prov.c_str(), n.provider.c_str(), 0) != 0 ||
                    ::fnmatch(name.c_str(), n.name.c_str(), 0) != 0) {
                    continue;
                }
                found = true;
                const std::string label = n.provider + ":" + n.name;
                auto [it, added] =
                    label_index.emplace(label, static_cast<uint32_t>(plan.labels.size()));
                if (added) {
                    plan.labels.push_back(label);
                }
                bool dup = false;
                for (const auto &s : plan.sites) {
                    dup = dup || (s.file == i && s.provider == n.provider && s.name == n.name);
                }
                if (!dup) {
                    plan.sites.push_back(UsdtSite{i, n.provider, n.name, it->second});
                }
            }
        }
        if (!found) {
            return Error{ENOENT, "--usdt " + spec + ": no such USDT probe in the " +
                                     std::to_string(files.size()) +
                                     " files the process maps executable"};
        }
    }
    return plan;
}

Result<std::unique_ptr<CallTracer>> CallTracer::attach(
    const Selection &sel, const UsdtPlan &usdt, const CallTracerOptions &opts,
    std::function<void(const CallRecord &)> sink) {
    std::unique_ptr<CallTracer> t(new CallTracer());
    t->sink_ = std::move(sink);
    // A locked-down kernel refuses bpf_probe_write_user: the stop way then.
    // A process without an unwinder needs no guard.
    std::vector<Guard> ways = {Guard::write, Guard::stop};
    if (sel.guards.empty()) {
        ways = {Guard::none};
    }
    for (Guard way : ways) {
        if (t->skel_ != nullptr) {
            ::calls::destroy(t->skel_);
        }
        t->skel_ = ::calls::open();
        if (t->skel_ == nullptr) {
            return make_error(errno, "cannot open the calls BPF object");
        }
        auto *ro = t->skel_->rodata;
        ro->target_tgid = static_cast<__u32>(opts.pid);
        ro->target_tid = opts.tid;
        ro->record_calls = opts.traps_only ? 0 : 1;
        ro->mt_wakeup_bytes = bpf::wakeup_bytes(opts.ring);
        auto *p = &t->skel_->progs;
        for (bpf_program *prog : {p->calls_entry, p->calls_return, p->calls_unwind,
                                  p->calls_unwind_stop, p->calls_catch, p->calls_catch_note}) {
            bpf::prepare_uprobe_multi(prog);
        }
        bpf_program__set_autoload(p->calls_unwind, way == Guard::write);
        bpf_program__set_autoload(p->calls_catch, way == Guard::write);
        bpf_program__set_autoload(p->calls_unwind_stop, way == Guard::stop);
        bpf_program__set_autoload(p->calls_catch_note, way == Guard::stop);
        int err = ::calls::load(t->skel_);
        if (err == 0) {
            t->guard_ = way;
            break;
        }
        if (way != Guard::write) {
            return make_error(err, "cannot load the calls BPF programs");
        }
    }
    CallTracer *self = t.get();
    auto rings =
        bpf::RingSet::create(t->skel_->obj, opts.ring, [self](std::span<const uint8_t> rec) {
            CallRecord r;
            if (decode_call_record(rec, &r)) {
                self->sink_(r);
            } else {
                self->undecodable_++;
            }
        });
    if (!rings) {
        return rings.error();
    }
    t->rings_ = std::move(rings).value();

    bpf_link *exit_link = bpf_program__attach(t->skel_->progs.calls_thread_exit);
    if (exit_link == nullptr) {
        return make_error(errno, "cannot attach to the sched_process_exit tracepoint");
    }
    t->links_.emplace_back(exit_link);

    if (t->guard_ == Guard::stop) {
        t->fixup_ring_ =
            ring_buffer__new(bpf_map__fd(t->skel_->maps.call_fixups), on_fixup, self, nullptr);
        if (t->fixup_ring_ == nullptr) {
            return make_error(errno, "cannot read the unwinder guard's ring");
        }
        // Signals are for the trace loop's signalfd, never for this thread:
        // it starts with all of them blocked (a mask set in the thread itself
        // would leave a window where a Ctrl-C kills the process).
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        t->fixer_ = std::thread([self] { self->fixer_main(); });
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }
    // The guard goes in before any return probe can replace an address.
    if (t->guard_ != Guard::none) {
        const bool write = t->guard_ == Guard::write;
        auto *p = &t->skel_->progs;
        for (bool catcher : {false, true}) {
            std::map<size_t, std::pair<std::vector<uint64_t>, std::vector<uint64_t>>> sites;
            for (const auto &g : sel.guards) {
                if ((g.unwinder < 0) == catcher) {
                    sites[g.file].first.push_back(g.offset);
                    sites[g.file].second.push_back(static_cast<uint64_t>(catcher ? 0 : g.unwinder));
                }
            }
            for (const auto &[file, oc] : sites) {
                bpf_program *prog = catcher ? (write ? p->calls_catch : p->calls_catch_note)
                                            : (write ? p->calls_unwind : p->calls_unwind_stop);
                auto l = bpf::attach_uprobe_multi(prog, opts.pid, sel.files[file].open_path,
                                                  oc.first, oc.second);
                if (!l) {
                    return l.error();
                }
                t->multi_links_.push_back(std::move(l).value());
            }
        }
    }

    std::map<size_t, std::pair<std::vector<uint64_t>, std::vector<uint64_t>>> by_file;
    for (size_t i = 0; i < sel.functions.size(); i++) {
        auto &[offsets, cookies] = by_file[sel.functions[i].file];
        offsets.push_back(sel.functions[i].site.offset);
        cookies.push_back(i);
    }
    // Returns first: a call entered while only the entry probes were in
    // would stay open with no return ever coming. This way round the window
    // shows at most a few returns whose entry was not seen.
    for (bool ret : {true, false}) {
        for (const auto &[file, oc] : by_file) {
            auto l = bpf::attach_uprobe_multi(
                ret ? t->skel_->progs.calls_return : t->skel_->progs.calls_entry, opts.pid,
                sel.files[file].open_path, oc.first, oc.second, ret);
            if (!l) {
                return l.error();
            }
            t->multi_links_.push_back(std::move(l).value());
        }
    }
    for (const auto &s : usdt.sites) {
        bpf_usdt_opts o{};
        o.sz = sizeof(o);
        o.usdt_cookie = s.annotation;
        const std::string &path = sel.files[s.file].open_path;
        bpf_link *l = bpf_program__attach_usdt(t->skel_->progs.calls_usdt, opts.pid, path.c_str(),
                                               s.provider.c_str(), s.name.c_str(), &o);
        if (l == nullptr) {
            return make_error(errno, "cannot attach to the USDT probe " + s.provider + ":" +
                                         s.name + " of " + sel.files[s.file].path);
        }
        t->links_.emplace_back(l);
    }
    return t;
}

uint64_t CallTracer::fixups_failed() const {
    uint64_t n = fixup_errors_.load();
    if (skel_ != nullptr && skel_->bss != nullptr) {
        n += skel_->bss->fixups_failed;
    }
    return n;
}

int CallTracer::on_fixup(void *ctx, void *data, size_t size) {
    auto *self = static_cast<CallTracer *>(ctx);
    mt_call_fixup fx;
    if (size < sizeof(fx)) {
        self->fixup_errors_++;
        return 0;
    }
    std::memcpy(&fx, data, sizeof(fx));
    const pid_t pid = static_cast<pid_t>(fx.tgid);
    bool ok = true;
    for (uint32_t i = 0; i < fx.count && i < MT_CALL_FIXUP_SLOTS; i++) {
        // Only a slot that still holds the trampoline address: anything
        // else is no longer a replaced return address.
        if (fx.pairs[i].slot == 0) {
            continue;
        }
        uint64_t cur = 0;
        iovec local{&cur, sizeof(cur)};
        iovec remote{reinterpret_cast<void *>(fx.pairs[i].slot), sizeof(cur)};
        if (::process_vm_readv(pid, &local, 1, &remote, 1, 0) != sizeof(cur)) {
            ok = false;
            continue;
        }
        if (cur != fx.trampoline) {
            continue;
        }
        uint64_t orig = fx.pairs[i].orig;
        iovec src{&orig, sizeof(orig)};
        if (::process_vm_writev(pid, &src, 1, &remote, 1, 0) != sizeof(orig)) {
            ok = false;
        }
    }
    // The thread stopped the process on its way back to user space; a
    // SIGCONT that comes first cancels that stop instead.
    ::kill(pid, SIGCONT);
    if (ok) {
        self->fixups_++;
    } else {
        self->fixup_errors_++;
    }
    return 0;
}

void CallTracer::fixer_main() {
    while (!stopping_.load()) {
        ring_buffer__poll(fixup_ring_, 100);
    }
    ring_buffer__consume(fixup_ring_);
}

CallTracer::~CallTracer() {
    multi_links_.clear();
    links_.clear();
    if (fixer_.joinable()) {
        stopping_ = true;
        fixer_.join();
    }
    if (fixup_ring_ != nullptr) {
        ring_buffer__free(fixup_ring_);
    }
    rings_.reset();
    if (skel_ != nullptr) {
        ::calls::destroy(skel_);
    }
}

}  // namespace mysqltrace::calls
