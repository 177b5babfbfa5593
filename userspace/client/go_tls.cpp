// SPDX-License-Identifier: GPL-2.0-only
#include "client/go_tls.h"

#include <set>
#include <sys/stat.h>

#include "elf/disassembler.h"
#include "elf/elf_file.h"
#include "elf/gopclntab.h"
#include "proc/maps.h"

namespace mysqltrace::client {

namespace {

struct GoKnown {
    mt_tls_func func;
    const char *symbol;
};

constexpr GoKnown kGoFunctions[] = {
    {MT_TLS_GO_READ, "crypto/tls.(*Conn).Read"},
    {MT_TLS_GO_WRITE, "crypto/tls.(*Conn).Write"},
};

// True when one of the first two instructions of `code` reads through R14:
// the stack-bound check of Go's register ABI (`cmp rsp, [r14 + 0x10]`, or
// `lea r12, [rsp - N]; cmp r12, [r14 + 0x10]` for a large frame). Go
// before 1.17 loaded g from thread-local storage instead, and passed
// arguments on the stack, which the BPF programs do not read.
bool uses_register_abi(const elf::ElfFile &file, std::span<const uint8_t> code, uint64_t vaddr) {
    elf::Disassembler d(file.budget(), /*detail=*/true);
    size_t at = 0;
    for (int i = 0; i < 2 && at < code.size(); i++) {
        const cs_insn *insn = d.decode(code.subspan(at), vaddr + at);
        if (insn == nullptr) {
            return false;
        }
        for (uint8_t k = 0; k < insn->detail->x86.op_count; k++) {
            const cs_x86_op &op = insn->detail->x86.operands[k];
            if (op.type == X86_OP_MEM && op.mem.base == X86_REG_R14) {
                return true;
            }
        }
        at += insn->size;
    }
    return false;
}

// Every RET of the function `sym` (a linear sweep: Go puts no data in its
// functions' code, and pads between them with int3), as probe sites.
Result<std::vector<elf::ProbeSite>> return_sites(const elf::ElfFile &file, const elf::Symbol &sym,
                                                 const std::vector<uint8_t> &code) {
    elf::Disassembler d(file.budget());
    std::vector<elf::ProbeSite> sites;
    size_t at = 0;
    while (at < code.size()) {
        const cs_insn *insn = d.decode(std::span<const uint8_t>(code).subspan(at), sym.vaddr + at);
        if (insn == nullptr) {
            return Error{EINVAL, sym.name + " in " + file.path() +
                                     ": cannot decode the instruction at +" + std::to_string(at) +
                                     ", so its returns are not all known"};
        }
        if (insn->id == X86_INS_RET) {
            auto off = file.vaddr_to_offset(sym.vaddr + at);
            if (!off) {
                return off.error();
            }
            elf::ProbeSite s;
            s.offset = *off;
            s.cost = elf::classify_instruction(std::span<const uint8_t>(code).subspan(at),
                                               &s.instruction);
            sites.push_back(s);
        }
        at += insn->size;
    }
    if (sites.empty()) {
        return Error{EINVAL, sym.name + " in " + file.path() + " has no RET instruction"};
    }
    return sites;
}

}  // namespace

GoTlsScan find_go_tls_in_file(const std::string &path) {
    GoTlsScan scan;
    if (!elf::is_go_executable(path)) {
        return scan;
    }
    auto elf = elf::ElfFile::open(path);
    if (!elf) {
        scan.warnings.push_back("Go executable " + path + ": " + elf.error().message);
        return scan;
    }
    std::vector<elf::Symbol> syms;
    std::string found_by = ".symtab";
    for (const auto &k : kGoFunctions) {
        if (auto s = (*elf)->find(k.symbol); s && s->is_function && s->size > 0) {
            syms.push_back(*s);
        }
    }
    if (syms.empty()) {
        // Stripped of its ELF symbols (-ldflags=-s): Go's own table.
        std::vector<std::string> names;
        for (const auto &k : kGoFunctions) {
            names.emplace_back(k.symbol);
        }
        auto from_pcln = elf::go_pclntab_functions(**elf, names);
        if (!from_pcln) {
            scan.warnings.push_back("Go executable " + path +
                                    " has no ELF symbol table and its function table is not "
                                    "read: " +
                                    from_pcln.error().message + "; its TLS cleartext is not seen");
            return scan;
        }
        syms = std::move(from_pcln).value();
        found_by = ".gopclntab";
    }
    for (const auto &sym : syms) {
        mt_tls_func func = MT_TLS_GO_READ;
        for (const auto &k : kGoFunctions) {
            if (sym.name == k.symbol) {
                func = k.func;
            }
        }
        auto code = (*elf)->read(sym.vaddr, sym.size);
        auto off = (*elf)->vaddr_to_offset(sym.vaddr);
        if (!code || !off) {
            scan.warnings.push_back("Go executable " + path + ": cannot read " + sym.name);
            continue;
        }
        if (!uses_register_abi(**elf, *code, sym.vaddr)) {
            scan.warnings.push_back("Go executable " + path + ": " + sym.name +
                                    " does not use Go's register ABI (built by Go before 1.17?); "
                                    "its TLS cleartext is not seen");
            continue;
        }
        auto rets = return_sites(**elf, sym, *code);
        if (!rets) {
            scan.warnings.push_back("Go executable " + path + ": " + rets.error().message +
                                    "; its TLS cleartext is not seen");
            continue;
        }
        scan.functions.push_back({func, sym.name, path, found_by,
                                  elf::place_entry_probe(*code, *off), std::move(rets).value(),
                                  -1});
    }
    if (scan.functions.size() == 1) {
        // Read without Write (or the reverse) would show half of each
        // conversation: probe both or neither.
        scan.warnings.push_back("Go executable " + path + ": only " + scan.functions[0].symbol +
                                " could be probed; its TLS cleartext is not seen");
        scan.functions.clear();
    }
    return scan;
}

Result<GoTlsScan> find_go_tls_functions(pid_t pid) {
    auto maps = proc::read_maps(pid);
    if (!maps) {
        return maps.error();
    }
    GoTlsScan all;
    std::set<std::pair<dev_t, ino_t>> seen;
    for (const auto &m : *maps) {
        if (m.path.empty() || m.path[0] != '/' || m.perms.find('x') == std::string::npos) {
            continue;
        }
        auto path = proc::mapped_file(pid, m);
        if (!path) {
            continue;
        }
        struct stat st {};
        if (stat(path->c_str(), &st) != 0 || !seen.insert({st.st_dev, st.st_ino}).second) {
            continue;
        }
        GoTlsScan one = find_go_tls_in_file(*path);
        for (auto &f : one.functions) {
            f.pid = pid;
            all.functions.push_back(std::move(f));
        }
        for (auto &w : one.warnings) {
            all.warnings.push_back(std::move(w));
        }
    }
    return all;
}

}  // namespace mysqltrace::client
