// SPDX-License-Identifier: GPL-2.0-only
#include "selftest/self_probe.h"

#include <cerrno>
#include <cstring>

#include "bpf/uprobe_multi.h"
#include "selftest.skel.h"

namespace mysqltrace::selftest {

Result<std::unique_ptr<SelfProbe>> SelfProbe::load(const SelfProbeOptions &opts) {
    std::unique_ptr<SelfProbe> p(new SelfProbe());
    p->skel_ = ::selftest::open();
    if (p->skel_ == nullptr) {
        return make_error(errno, "cannot open the selftest BPF object");
    }
    p->skel_->rodata->target_tgid = static_cast<__u32>(opts.target_tgid);
    p->skel_->rodata->target_syscall = opts.target_syscall;
    if (int err = ::selftest::load(p->skel_); err != 0) {
        return make_error(err, "cannot load the selftest BPF programs");
    }
    SelfProbe *self = p.get();
    auto rings =
        bpf::RingSet::create(p->skel_->obj, opts.ring, [self](std::span<const uint8_t> rec) {
            mt_selftest_event ev;
            mt_event_header hdr;
            std::memcpy(&hdr, rec.data(), sizeof(hdr));
            if (hdr.type != MT_EV_SELFTEST || rec.size() != sizeof(ev)) {
                self->foreign_records_++;
                return;
            }
            std::memcpy(&ev, rec.data(), sizeof(ev));
            self->events_.push_back(ev);
        });
    if (!rings) {
        return rings.error();
    }
    p->rings_ = std::move(rings).value();
    return p;
}

SelfProbe::~SelfProbe() {
    links_.clear();
    rings_.reset();
    if (skel_ != nullptr) {
        ::selftest::destroy(skel_);
    }
}

Result<void> SelfProbe::attach_uprobe(pid_t pid, const std::string &path, uint64_t offset,
                                      uint64_t cookie) {
    auto l = bpf::attach_uprobe(skel_->progs.selftest_uprobe, pid, path, offset,
                                "the self-test's function", false, cookie);
    if (!l) {
        return l.error();
    }
    links_.push_back(std::move(l).value());
    return {};
}

Result<void> SelfProbe::attach_usdt(pid_t pid, const std::string &path, const std::string &provider,
                                    const std::string &name, uint64_t cookie) {
    bpf_usdt_opts o{};
    o.sz = sizeof(o);
    o.usdt_cookie = cookie;
    bpf_link *l = bpf_program__attach_usdt(skel_->progs.selftest_usdt, pid, path.c_str(),
                                           provider.c_str(), name.c_str(), &o);
    if (l == nullptr) {
        return make_error(errno, "cannot attach USDT " + provider + ":" + name + " in " + path);
    }
    links_.emplace_back(l);
    return {};
}

Result<void> SelfProbe::attach_syscall() {
    bpf_link *l = bpf_program__attach(skel_->progs.selftest_sys_enter);
    if (l == nullptr) {
        return make_error(errno, "cannot attach the sys_enter tracepoint");
    }
    links_.emplace_back(l);
    return {};
}

}  // namespace mysqltrace::selftest
