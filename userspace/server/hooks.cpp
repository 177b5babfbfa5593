// SPDX-License-Identifier: GPL-2.0-only
#include "server/hooks.h"

#include <algorithm>
#include <cstring>

#include "elf/disassembler.h"
#include "proc/maps.h"

namespace mysqltrace::server {

std::optional<elf::Symbol> find_by_prefix(const elf::ElfFile &file, std::string_view prefix) {
    const auto &syms = file.symbols();
    auto it = std::lower_bound(syms.begin(), syms.end(), prefix,
                               [](const elf::Symbol &s, std::string_view p) { return s.name < p; });
    for (; it != syms.end() && it->name.starts_with(prefix); ++it) {
        if (it->is_function) {
            return *it;
        }
    }
    return std::nullopt;
}

std::vector<elf::ProbeSite> call_sites(const elf::ElfFile &file, const elf::Symbol &caller,
                                       const elf::Symbol &callee) {
    std::vector<elf::ProbeSite> sites;
    auto code = file.read(caller.vaddr, caller.size);
    if (caller.size == 0 || !code) {
        return sites;
    }
    elf::Disassembler d(file.budget());
    std::span<const uint8_t> bytes(*code);
    for (size_t at = 0; at < bytes.size();) {
        const cs_insn *insn = d.decode(bytes.subspan(at), caller.vaddr + at);
        if (insn == nullptr) {
            at++;  // padding or data: resynchronise
            continue;
        }
        // e8 rel32: the direct call the kernel emulates.
        if (insn->id == X86_INS_CALL && insn->size == 5 && bytes[at] == 0xe8) {
            int32_t rel = 0;
            std::memcpy(&rel, &bytes[at + 1], 4);
            if (caller.vaddr + at + 5 + static_cast<int64_t>(rel) == callee.vaddr) {
                auto off = file.vaddr_to_offset(caller.vaddr + at);
                if (off) {
                    elf::ProbeSite s;
                    s.offset = *off;
                    s.cost = elf::classify_instruction(bytes.subspan(at));
                    s.instruction = "call rel32";
                    sites.push_back(s);
                }
            }
        }
        at += insn->size;
    }
    return sites;
}

bool call_follows(const elf::ElfFile &file, const elf::Symbol &caller, uint64_t site_vaddr,
                  const elf::Symbol &callee) {
    if (site_vaddr < caller.vaddr || site_vaddr >= caller.vaddr + caller.size) {
        return false;
    }
    const uint64_t n = caller.vaddr + caller.size - site_vaddr;
    auto code = file.read(site_vaddr, n);
    if (!code) {
        return false;
    }
    elf::Disassembler d(file.budget());
    std::span<const uint8_t> bytes(*code);
    for (size_t at = 0; at < bytes.size();) {
        const cs_insn *insn = d.decode(bytes.subspan(at), site_vaddr + at);
        if (insn == nullptr || insn->id == X86_INS_RET) {
            return false;
        }
        if (at > 0 && insn->id == X86_INS_CALL && insn->size == 5 && bytes[at] == 0xe8) {
            int32_t rel = 0;
            std::memcpy(&rel, &bytes[at + 1], 4);
            if (site_vaddr + at + 5 + static_cast<int64_t>(rel) == callee.vaddr) {
                return true;
            }
        }
        at += insn->size;
    }
    return false;
}

Result<elf::ProbeSite> entry_probe_site(const elf::ElfFile &file, const elf::Symbol &sym) {
    auto code = file.read(sym.vaddr, 16);
    if (!code) {
        return code.error();
    }
    auto off = file.vaddr_to_offset(sym.vaddr);
    if (!off) {
        return off.error();
    }
    return elf::place_entry_probe(*code, *off);
}

std::string server_version(const elf::ElfFile &file, pid_t pid, int64_t load_bias) {
    auto sym = file.find("server_version");
    if (!sym || sym->is_function) {
        return {};
    }
    const size_t n = std::min<uint64_t>(sym->size != 0 ? sym->size : 64, 256);
    std::string v;
    if (auto bytes = file.read(sym->vaddr, n); bytes && !bytes->empty() && (*bytes)[0] != 0) {
        v.assign(bytes->begin(), bytes->end());
    } else if (pid > 0) {
        v.resize(n);
        const ssize_t got = proc::read_memory(pid, sym->vaddr + load_bias, v.data(), n);
        v.resize(got > 0 ? static_cast<size_t>(got) : 0);
    }
    v.resize(strnlen(v.data(), v.size()));
    // Only a printable version string ("9.7.4", "10.11.19-MariaDB-0+deb12u1-log").
    if (v.empty() ||
        !std::all_of(v.begin(), v.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) {
        return {};
    }
    return v;
}

}  // namespace mysqltrace::server
