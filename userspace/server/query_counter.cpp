// SPDX-License-Identifier: GPL-2.0-only
#include "server/query_counter.h"

#include <cerrno>

#include "proc/maps.h"

namespace mysqltrace::server {

Result<QueryIdCounter> QueryIdCounter::open(const ServerTarget &target) {
    if (!target.file) {
        return Error{ENOENT, "no server binary to find the query id in"};
    }
    for (const char *name : {"global_query_id", "atomic_global_query_id"}) {
        auto sym = target.file->find(name);
        if (!sym || sym->is_function || (sym->size != 0 && sym->size != sizeof(uint64_t))) {
            continue;
        }
        QueryIdCounter c;
        c.pid_ = target.pid;
        c.addr_ = sym->vaddr + static_cast<uint64_t>(target.load_bias);
        c.symbol_ = name;
        if (auto v = c.read(); !v) {
            return v.error();
        }
        return c;
    }
    return Error{ENOENT, target.file->path() +
                             " exports no 8-byte global_query_id or atomic_global_query_id"};
}

Result<uint64_t> QueryIdCounter::read() const {
    uint64_t v = 0;
    if (proc::read_memory(pid_, addr_, &v, sizeof(v)) != static_cast<ssize_t>(sizeof(v))) {
        return make_error(errno ? errno : EIO,
                          "cannot read " + symbol_ + " of pid " + std::to_string(pid_));
    }
    return v;
}

}  // namespace mysqltrace::server
