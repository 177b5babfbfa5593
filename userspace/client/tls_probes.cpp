// SPDX-License-Identifier: GPL-2.0-only
#include "client/tls_probes.h"

#include <set>
#include <sys/stat.h>

#include "elf/elf_file.h"
#include "proc/maps.h"

namespace mysqltrace::client {

namespace {

struct Known {
    mt_tls_func func;
    const char *symbol;
};

constexpr Known kFunctions[] = {
    {MT_TLS_SSL_READ, "SSL_read"},
    {MT_TLS_SSL_READ_EX, "SSL_read_ex"},
    {MT_TLS_SSL_WRITE, "SSL_write"},
    {MT_TLS_SSL_WRITE_EX, "SSL_write_ex"},
    {MT_TLS_GNUTLS_RECV, "gnutls_record_recv"},
    {MT_TLS_GNUTLS_SEND, "gnutls_record_send"},
};

// Debian's TLS libraries. A client being traced may not have mapped its TLS
// library yet (it is still starting, or loads it later): a uprobe attached
// for one pid is inserted when that process maps the file, so these are
// probed too, at no cost to any other process.
constexpr const char *kWellKnown[] = {
    "/usr/lib/x86_64-linux-gnu/libssl.so.3",
    "/usr/lib/x86_64-linux-gnu/libssl.so.1.1",
    "/usr/lib/x86_64-linux-gnu/libgnutls.so.30",
};

}  // namespace

Result<std::vector<TlsFunction>> find_tls_functions(pid_t pid) {
    auto maps = proc::read_maps(pid);
    if (!maps) {
        return maps.error();
    }
    // Through the process's root, so a client in a container is reached,
    // and never out of it (proc::mapped_file).
    std::vector<std::string> files;
    for (const auto &m : *maps) {
        if (!m.path.empty() && m.path[0] == '/' && m.perms.find('x') != std::string::npos) {
            if (auto reached = proc::mapped_file(pid, m)) {
                files.push_back(std::move(reached).value());
            }
        }
    }
    for (const char *p : kWellKnown) {
        if (auto in_root = proc::path_in_root(pid, p)) {
            files.push_back(std::move(in_root).value());
        }
    }
    // One probe per file, however many names reach it.
    std::set<std::pair<dev_t, ino_t>> seen;
    std::vector<TlsFunction> found;
    for (const auto &path : files) {
        struct stat st {};
        if (stat(path.c_str(), &st) != 0 || !seen.insert({st.st_dev, st.st_ino}).second) {
            continue;
        }
        auto elf = elf::ElfFile::open(path);
        if (!elf) {
            continue;  // deleted or unreadable mapping: nothing to probe there
        }
        for (const auto &k : kFunctions) {
            auto sym = (*elf)->find(k.symbol);
            if (!sym || !sym->is_function) {
                continue;
            }
            auto code = (*elf)->read(sym->vaddr, 16);
            auto off = (*elf)->vaddr_to_offset(sym->vaddr);
            if (!code || !off) {
                continue;
            }
            found.push_back({k.func, k.symbol, path, elf::place_entry_probe(*code, *off)});
        }
    }
    return found;
}

}  // namespace mysqltrace::client
