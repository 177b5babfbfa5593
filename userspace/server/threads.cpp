// SPDX-License-Identifier: GPL-2.0-only
#include "server/threads.h"

#include <cerrno>
#include <cstring>

#include <bpf/libbpf.h>

#include "bpf/uprobe_multi.h"
#include "mysqltrace/abi/event.h"
#include "server.skel.h"
#include "server/accounts.h"
#include "server/hooks.h"
#include "server/server_target.h"

namespace mysqltrace::server {

namespace {

// Connections remembered at once (ids only grow; a trace of a server with
// much churn must not keep every closed one).
constexpr size_t kMaxRemembered = 65536;

// A length-encoded integer at `p` (the protocol's int<lenenc>); false when
// it does not fit in what is left.
bool lenenc(std::span<const uint8_t> b, size_t *p, uint64_t *v) {
    if (*p >= b.size()) {
        return false;
    }
    const uint8_t first = b[(*p)++];
    size_t n = 0;
    if (first < 0xfb) {
        *v = first;
        return true;
    }
    if (first == 0xfc) {
        n = 2;
    } else if (first == 0xfd) {
        n = 3;
    } else if (first == 0xfe) {
        n = 8;
    } else {
        return false;  // 0xfb (NULL) and 0xff are not lengths
    }
    if (b.size() - *p < n) {
        return false;
    }
    *v = 0;
    for (size_t i = 0; i < n; i++) {
        *v |= uint64_t{b[*p + i]} << (8 * i);
    }
    *p += n;
    return true;
}

bool lenenc_string(std::span<const uint8_t> b, size_t *p, std::string *s) {
    uint64_t n = 0;
    if (!lenenc(b, p, &n) || n > b.size() - *p) {
        return false;
    }
    s->assign(reinterpret_cast<const char *>(b.data() + *p), n);
    *p += n;
    return true;
}

}  // namespace

ConnectAttrs parse_connect_attrs(std::span<const uint8_t> block) {
    ConnectAttrs attrs;
    size_t p = 0;
    while (p < block.size()) {
        std::string k, v;
        const size_t at = p;
        if (!lenenc_string(block, &p, &k) || !lenenc_string(block, &p, &v)) {
            p = at;
            break;
        }
        attrs.emplace_back(std::move(k), std::move(v));
    }
    return attrs;
}

bool Connections::decode(std::span<const uint8_t> record, Connection *out, bool *ready) {
    mt_server_thread_event ev;
    if (record.size() != sizeof(ev)) {
        return false;
    }
    std::memcpy(&ev, record.data(), sizeof(ev));
    if (ev.hdr.type != MT_EV_SERVER_THREAD || ev.hdr.size != sizeof(ev) ||
        ev.attrs_len > sizeof(ev.attrs) || ev.attrs_len > ev.attrs_total ||
        ev.op < MT_THREAD_CONNECT || ev.op > MT_THREAD_ATTRS) {
        return false;
    }
    *ready = false;
    if (ev.op == MT_THREAD_ATTRS) {
        if (attrs_by_tid_.size() >= kMaxRemembered) {
            attrs_by_tid_.clear();
        }
        Pending &p = attrs_by_tid_[ev.hdr.tid];
        p.attrs = parse_connect_attrs(std::span(ev.attrs, ev.attrs_len));
        p.cut = ev.attrs_len < ev.attrs_total;
        return true;
    }
    Connection &c = *out;
    c = Connection{};
    c.op = ev.op == MT_THREAD_CONNECT ? Connection::Op::connect : Connection::Op::disconnect;
    c.tid = ev.hdr.tid;
    c.ts_ns = ev.hdr.ts_ns;
    c.thread_id = ev.thread_id;
    c.user = printable_name(ev.user);
    c.host = printable_name(ev.host);
    c.ip = printable_name(ev.ip);
    c.db = printable_name(ev.db);
    if (c.op == Connection::Op::connect) {
        connects_++;
        if (auto it = attrs_by_tid_.find(c.tid); it != attrs_by_tid_.end()) {
            c.attrs = std::move(it->second.attrs);
            c.attrs_cut = it->second.cut;
            attrs_by_tid_.erase(it);
        }
        if (connected_at_.size() >= kMaxRemembered) {
            connected_at_.clear();
        }
        connected_at_[c.thread_id] = c.ts_ns;
    } else {
        disconnects_++;
        if (auto it = connected_at_.find(c.thread_id); it != connected_at_.end()) {
            c.connected_ns = it->second;
            connected_at_.erase(it);
        }
    }
    *ready = true;
    return true;
}

Result<std::string> attach_connection_probes(::server *skel, const ServerTarget &target,
                                             std::vector<bpf::Link> &links) {
    const elf::ElfFile &file = *target.file;
    auto site = [&](const char *prefix) -> Result<uint64_t> {
        auto sym = find_by_prefix(file, prefix);
        if (!sym) {
            return Error{ENOENT, std::string("no ") + prefix + "... in this server build"};
        }
        auto s = entry_probe_site(file, *sym);
        if (!s) {
            return s.error();
        }
        return s->offset;
    };
    auto attach = [&](bpf_program *prog, uint64_t offset, bool ret,
                      const char *what) -> Result<void> {
        auto l = bpf::attach_uprobe(prog, target.pid, target.exe, offset, what, ret);
        if (!l) {
            return l.error();
        }
        links.push_back(std::move(l).value());
        return {};
    };
    auto login = site("_Z22thd_prepare_connectionP3THD");
    auto end = site("_Z14end_connectionP3THD");
    if (!login || !end) {
        return Error{ENOTSUP, "--threads: " + (!login ? login.error() : end.error()).message};
    }
    // The return first: a login already running then ends unseen rather
    // than with a stale THD. A return probe sits past the endbr64 as well:
    // it only needs the return address on the stack, which is there.
    for (auto [prog, off, ret, what] :
         {std::tuple{skel->progs.server_login_end, *login, true, "thd_prepare_connection"},
          std::tuple{skel->progs.server_login_begin, *login, false, "thd_prepare_connection"},
          std::tuple{skel->progs.server_connection_end, *end, false, "end_connection"}}) {
        if (auto r = attach(prog, off, ret, what); !r) {
            return r.error();
        }
    }
    auto attrs = site("_Z31pfs_set_thread_connect_attrs_vcPKcjPKv");
    if (!attrs) {
        return std::string("connect attributes: not handed over by this build");
    }
    if (auto r = attach(skel->progs.server_connect_attrs, *attrs, false,
                        "pfs_set_thread_connect_attrs_vc");
        !r) {
        return r.error();
    }
    return std::string("connect attributes while performance_schema is on");
}

}  // namespace mysqltrace::server
