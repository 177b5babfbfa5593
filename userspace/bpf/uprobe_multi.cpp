// SPDX-License-Identifier: GPL-2.0-only
#include "bpf/uprobe_multi.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <bpf/libbpf.h>

#include "proc/kernel.h"

namespace mysqltrace::bpf {

namespace {

constexpr uint32_t kUprobeMultiReturn = 1;  // BPF_F_UPROBE_MULTI_RETURN
constexpr long kBpfLinkCreate = 28;         // BPF_LINK_CREATE

struct UprobeMultiLinkAttr {
    uint32_t prog_fd;
    uint32_t target_fd;
    uint32_t attach_type;
    uint32_t flags;
    uint64_t path;
    uint64_t offsets;
    uint64_t ref_ctr_offsets;
    uint64_t cookies;
    uint32_t cnt;
    uint32_t multi_flags;
    uint32_t pid;
    uint32_t pad;
};

}  // namespace

Result<Link> attach_uprobe(bpf_program *prog, pid_t pid, const std::string &path, uint64_t offset,
                           const std::string &what, bool retprobe, uint64_t cookie) {
    bpf_uprobe_opts o{};
    o.sz = sizeof(o);
    o.retprobe = retprobe;
    o.bpf_cookie = cookie;
    bpf_link *l = bpf_program__attach_uprobe_opts(prog, pid, path.c_str(), offset, &o);
    if (l == nullptr) {
        const int err = errno;
        return make_error(err, "cannot attach a uprobe to " + what + " in " + path + " (pid " +
                                   std::to_string(pid) + ")");
    }
    return Link(l);
}

bool uprobe_multi_supported() {
    const char *off = std::getenv("MYSQLTRACE_NO_UPROBE_MULTI");
    if (off != nullptr && std::strcmp(off, "1") == 0) {
        return false;
    }
    return proc::kernel_release().at_least(6, 6);
}

void prepare_uprobe_multi(bpf_program *prog) {
    bpf_program__set_expected_attach_type(prog, static_cast<bpf_attach_type>(kTraceUprobeMulti));
}

Result<Fd> attach_uprobe_multi(bpf_program *prog, pid_t pid, const std::string &path,
                               const std::vector<uint64_t> &offsets,
                               const std::vector<uint64_t> &cookies, bool retprobe) {
    if (offsets.empty() || cookies.size() != offsets.size()) {
        return Error{EINVAL, "attach_uprobe_multi: one cookie per offset, at least one offset"};
    }
    UprobeMultiLinkAttr a{};
    a.prog_fd = static_cast<uint32_t>(bpf_program__fd(prog));
    a.attach_type = kTraceUprobeMulti;
    a.path = reinterpret_cast<uint64_t>(path.c_str());
    a.offsets = reinterpret_cast<uint64_t>(offsets.data());
    a.cookies = reinterpret_cast<uint64_t>(cookies.data());
    a.cnt = static_cast<uint32_t>(offsets.size());
    a.multi_flags = retprobe ? kUprobeMultiReturn : 0;
    a.pid = static_cast<uint32_t>(pid);
    long fd = ::syscall(SYS_bpf, kBpfLinkCreate, &a, sizeof(a));
    if (fd < 0) {
        return make_error(errno, "cannot attach " + std::to_string(offsets.size()) +
                                     (retprobe ? " return" : "") + " uprobes to " + path +
                                     " in pid " + std::to_string(pid) +
                                     " (one uprobe_multi link needs Linux 6.6 or later)");
    }
    return Fd(static_cast<int>(fd));
}

}  // namespace mysqltrace::bpf
