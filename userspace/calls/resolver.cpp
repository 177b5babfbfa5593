// SPDX-License-Identifier: GPL-2.0-only
#include "calls/resolver.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "bpf/ring_set.h"
#include "calls/match.h"
#include "elf/elf_file.h"
#include "proc/maps.h"

namespace mysqltrace::calls {

namespace {

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

}  // namespace

AddressResolver::AddressResolver(pid_t pid) : pid_(pid) {
    // Read now: the process may be gone by the time its last records are named.
    if (auto maps = proc::read_maps(pid_)) {
        maps_ = std::move(maps).value();
    }
}

AddressResolver::~AddressResolver() = default;

const proc::Mapping *AddressResolver::mapping_of(uint64_t addr) {
    auto find = [&]() -> const proc::Mapping * {
        for (const auto &m : maps_) {
            if (addr >= m.start && addr < m.end) {
                return &m;
            }
        }
        return nullptr;
    };
    const proc::Mapping *m = find();
    // Libraries loaded since, or the trampoline page the kernel maps on the
    // first uprobe hit: read the map again, at most ten times a second.
    const uint64_t now = bpf::monotonic_ns();
    if (m == nullptr && now - maps_read_ns_ > 100'000'000) {
        maps_read_ns_ = now;
        if (auto maps = proc::read_maps(pid_)) {
            maps_ = std::move(maps).value();
        }
        m = find();
    }
    return m;
}

AddressResolver::FileSyms &AddressResolver::symbols_of(const proc::Mapping &m) {
    const std::string &path = m.path;
    FileSyms &fs = files_[path];
    if (fs.loaded) {
        return fs;
    }
    fs.loaded = true;
    Result<std::unique_ptr<elf::ElfFile>> elf = Error{ENOENT, path};
    if (auto reached = proc::mapped_file(pid_, m)) {
        elf = elf::ElfFile::open(*reached);
    } else if (!proc::process_exists(pid_)) {
        elf = elf::ElfFile::open(path);  // the process has exited
    }
    if (!elf) {
        return fs;
    }
    for (const auto &s : (*elf)->symbols()) {
        if (!s.is_function || s.size == 0) {
            continue;
        }
        auto off = (*elf)->vaddr_to_offset(s.vaddr);
        if (off) {
            fs.funcs.push_back(Func{*off, s.size, s.name});
        }
    }
    // Aliases at one address: the shortest name first, so it wins below.
    std::sort(fs.funcs.begin(), fs.funcs.end(), [](const Func &a, const Func &b) {
        return a.offset != b.offset ? a.offset < b.offset : a.name.size() < b.name.size();
    });
    return fs;
}

const CodeLocation &AddressResolver::resolve(uint64_t addr) {
    auto cached = cache_.find(addr);
    if (cached != cache_.end()) {
        return cached->second;
    }
    CodeLocation loc;
    const proc::Mapping *m = mapping_of(addr);
    if (m == nullptr) {
        loc.site = hex(addr);
        return cache_.emplace(addr, std::move(loc)).first->second;
    }
    if (m->path.rfind("[uprobes", 0) == 0) {
        loc.trampoline = true;
        loc.site = "tail call";
        return cache_.emplace(addr, std::move(loc)).first->second;
    }
    if (m->path.empty() || m->path[0] != '/') {
        loc.site = (m->path.empty() ? "anon" : m->path) + "+" + hex(addr - m->start);
        return cache_.emplace(addr, std::move(loc)).first->second;
    }
    const uint64_t off = addr - m->start + m->file_offset;
    const FileSyms &fs = symbols_of(*m);
    auto it = std::upper_bound(fs.funcs.begin(), fs.funcs.end(), off,
                               [](uint64_t o, const Func &f) { return o < f.offset; });
    // The closest function starting at or before the address that contains it.
    const Func *best = nullptr;
    while (it != fs.funcs.begin()) {
        --it;
        if (off < it->offset + it->size) {
            best = &*it;
            // Prefer the first (shortest) alias at this start.
            while (it != fs.funcs.begin() && std::prev(it)->offset == best->offset) {
                --it;
                best = &*it;
            }
            break;
        }
        if (off - it->offset > (1u << 24)) {
            break;  // nothing this far back contains it
        }
    }
    if (best != nullptr) {
        loc.function = without_params(demangle(best->name));
        loc.site = loc.function + "+" + hex(off - best->offset);
    } else {
        auto slash = m->path.rfind('/');
        loc.site = m->path.substr(slash + 1) + "+" + hex(off);
    }
    return cache_.emplace(addr, std::move(loc)).first->second;
}

}  // namespace mysqltrace::calls
