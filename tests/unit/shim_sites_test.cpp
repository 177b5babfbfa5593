// SPDX-License-Identifier: GPL-2.0-only
// The built libmysqltrace-shim.so against the USDT contract of
// include/mysqltrace/abi/usdt.h: its probe notes (names, argument sizes and
// forms, semaphores), the instruction at every site, and its exported symbols.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>

#include "calls/usdt_notes.h"
#include "elf/disassembler.h"
#include "elf/elf_file.h"
#include "mysqltrace/abi/usdt.h"
#include "run/shim_probes.h"

namespace {

struct Note {
    std::string provider, name, args;
    uint64_t pc = 0, base = 0, semaphore = 0;
};

struct Section {
    uint64_t addr = 0, size = 0;
    uint32_t type = 0;
};

struct ShimElf {
    std::vector<Note> notes;
    std::map<std::string, Section> sections;
    std::set<std::string> exports;  // defined global symbols of .dynsym
    std::vector<std::string> needed;
};

struct ElfCloser {
    void operator()(Elf *e) const { elf_end(e); }
};

void read_notes(Elf_Data *data, std::vector<Note> &notes) {
    size_t off = 0, name_off = 0, desc_off = 0;
    GElf_Nhdr nh;
    while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) != 0) {
        const char *p = static_cast<const char *>(data->d_buf);
        if (nh.n_type != 3 || std::strcmp(p + name_off, "stapsdt") != 0 || nh.n_descsz < 24) {
            continue;
        }
        Note n;
        std::memcpy(&n.pc, p + desc_off, 8);
        std::memcpy(&n.base, p + desc_off + 8, 8);
        std::memcpy(&n.semaphore, p + desc_off + 16, 8);
        const char *s = p + desc_off + 24;
        n.provider = s;
        s += n.provider.size() + 1;
        n.name = s;
        s += n.name.size() + 1;
        n.args = s;
        notes.push_back(n);
    }
}

ShimElf load(const char *path) {
    ShimElf out;
    EXPECT_NE(elf_version(EV_CURRENT), EV_NONE);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0) << path;
    if (fd < 0) {
        return out;
    }
    std::unique_ptr<Elf, ElfCloser> e(elf_begin(fd, ELF_C_READ, nullptr));
    size_t shstrndx = 0;
    EXPECT_EQ(elf_getshdrstrndx(e.get(), &shstrndx), 0);
    Elf_Scn *scn = nullptr;
    while ((scn = elf_nextscn(e.get(), scn)) != nullptr) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == nullptr) {
            continue;
        }
        const char *name = elf_strptr(e.get(), shstrndx, sh.sh_name);
        std::string sname = name ? name : "";
        out.sections[sname] = {sh.sh_addr, sh.sh_size, sh.sh_type};
        Elf_Data *data = elf_getdata(scn, nullptr);
        if (data == nullptr) {
            continue;
        }
        if (sh.sh_type == SHT_NOTE && sname == ".note.stapsdt") {
            read_notes(data, out.notes);
        } else if (sh.sh_type == SHT_DYNSYM && sh.sh_entsize != 0) {
            for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
                GElf_Sym sym;
                if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr ||
                    sym.st_shndx == SHN_UNDEF) {
                    continue;
                }
                int bind = GELF_ST_BIND(sym.st_info);
                if (bind == STB_GLOBAL || bind == STB_WEAK) {
                    out.exports.insert(elf_strptr(e.get(), sh.sh_link, sym.st_name));
                }
            }
        } else if (sh.sh_type == SHT_DYNAMIC && sh.sh_entsize != 0) {
            for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
                GElf_Dyn dyn;
                if (gelf_getdyn(data, static_cast<int>(i), &dyn) != nullptr &&
                    dyn.d_tag == DT_NEEDED) {
                    out.needed.push_back(elf_strptr(e.get(), sh.sh_link, dyn.d_un.d_val));
                }
            }
        }
    }
    close(fd);
    return out;
}

const ShimElf &shim() {
    static const ShimElf elf = load(MYSQLTRACE_SHIM_PATH);
    return elf;
}

// Argument sizes per probe, as bpf/client.bpf.c reads them: the address of
// the probe's struct, alone.
const std::map<std::string, std::vector<int>> &contract() {
    static const std::map<std::string, std::vector<int>> c = {
        {MT_USDT_IO, {8}},
        {MT_USDT_API_BEGIN, {8}},
        {MT_USDT_API_END, {8}},
        {MT_USDT_TRACE_EVENT, {8}},
    };
    return c;
}

TEST(ShimSites, AllFourProbesOfTheContract) {
    const auto &elf = shim();
    std::set<std::string> names;
    for (const auto &n : elf.notes) {
        EXPECT_EQ(n.provider, MT_USDT_PROVIDER);
        names.insert(n.name);
    }
    EXPECT_EQ(names, (std::set<std::string>{MT_USDT_IO, MT_USDT_API_BEGIN, MT_USDT_API_END,
                                            MT_USDT_TRACE_EVENT}));
}

// One site per probe: a tracer attaches a uprobe per site, and each one's
// removal waits out RCU grace periods as a trace ends.
TEST(ShimSites, OneSitePerProbe) {
    std::map<std::string, int> sites;
    for (const auto &n : shim().notes) {
        sites[n.name]++;
    }
    EXPECT_EQ(sites, (std::map<std::string, int>{{MT_USDT_IO, 1},
                                                 {MT_USDT_API_BEGIN, 1},
                                                 {MT_USDT_API_END, 1},
                                                 {MT_USDT_TRACE_EVENT, 1}}));
}

TEST(ShimSites, ArgumentSizesAndFormsAreWhatBpfReads) {
    // The operand forms libbpf's USDT argument parser accepts on x86-64:
    // a register, a constant, or a register-relative memory operand.
    const std::regex form(R"(^(-?[0-9]+)@(%[a-z0-9]+|\$-?[0-9]+|-?[0-9]*\(%[a-z0-9]+\))$)");
    for (const auto &n : shim().notes) {
        auto want = contract().find(n.name);
        ASSERT_NE(want, contract().end()) << n.name;
        auto args = mysqltrace::calls::usdt_arg_list(n.args);
        ASSERT_EQ(args.size(), want->second.size()) << n.name << ": " << n.args;
        for (size_t i = 0; i < args.size(); i++) {
            std::smatch m;
            ASSERT_TRUE(std::regex_match(args[i], m, form)) << n.name << ": " << args[i];
            EXPECT_EQ(std::stoi(m[1].str()), want->second[i])
                << n.name << " argument " << i + 1 << ": " << n.args;
        }
    }
}

// `mysqltrace run` checks the shim it preloads (its own, or --shim's) the
// same way before it starts anything.
TEST(ShimSites, RunAcceptsThisShim) {
    auto r = mysqltrace::run::check_shim_probes(MYSQLTRACE_SHIM_PATH);
    EXPECT_TRUE(r.ok()) << r.error().message;
}

TEST(ShimSites, RunRefusesAShimOfTheOldProbeShapes) {
    const std::string path = MYSQLTRACE_TESTPROGS_DIR "/libshim_old_probes.so";
    auto r = mysqltrace::run::check_shim_probes(path);
    ASSERT_FALSE(r.ok());
    // The operands in between are the compiler's choice.
    const std::string &m = r.error().message;
    const std::string head =
        path +
        " is a shim of another mysqltrace version: its probe mysqltrace:io takes 10 "
        "arguments (-4@";
    const std::string tail =
        "), where this mysqltrace reads one, the address of its record; use the shim installed "
        "with this mysqltrace";
    EXPECT_EQ(m.substr(0, head.size()), head) << m;
    ASSERT_GE(m.size(), tail.size()) << m;
    EXPECT_EQ(m.substr(m.size() - tail.size()), tail) << m;
}

TEST(ShimSites, RunRefusesAFileWithoutTheProbes) {
    const std::string path = MYSQLTRACE_TESTPROGS_DIR "/calltree";
    auto r = mysqltrace::run::check_shim_probes(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, path +
                                     " is not a mysqltrace shim of this version: it has no USDT "
                                     "probe mysqltrace:io; use the shim installed with this "
                                     "mysqltrace");
    auto missing = mysqltrace::run::check_shim_probes("/nonexistent/libmysqltrace-shim.so");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().code, ENOENT);
}

TEST(ShimSites, SemaphoresAreFileBackedAndOnePerProbe) {
    const auto &elf = shim();
    auto probes = elf.sections.find(".probes");
    ASSERT_NE(probes, elf.sections.end());
    // PROGBITS, not NOBITS: the kernel finds a semaphore by its file offset.
    EXPECT_EQ(probes->second.type, static_cast<uint32_t>(SHT_PROGBITS));
    std::map<std::string, std::set<uint64_t>> by_probe;
    for (const auto &n : elf.notes) {
        EXPECT_NE(n.semaphore, 0u) << n.name;
        EXPECT_GE(n.semaphore, probes->second.addr) << n.name;
        EXPECT_LT(n.semaphore, probes->second.addr + probes->second.size) << n.name;
        by_probe[n.name].insert(n.semaphore);
    }
    std::set<uint64_t> all;
    for (const auto &[name, semas] : by_probe) {
        EXPECT_EQ(semas.size(), 1u) << name;
        all.insert(semas.begin(), semas.end());
    }
    EXPECT_EQ(all.size(), by_probe.size());
}

TEST(ShimSites, EverySiteIsAOneByteNop) {
    const auto &elf = shim();
    auto base = elf.sections.find(".stapsdt.base");
    ASSERT_NE(base, elf.sections.end());
    auto file = mysqltrace::elf::ElfFile::open(MYSQLTRACE_SHIM_PATH);
    ASSERT_TRUE(file.ok()) << file.error().message;
    mysqltrace::elf::Disassembler dis;
    ASSERT_FALSE(elf.notes.empty());
    for (const auto &n : elf.notes) {
        // The note records .stapsdt.base's link-time address; a prelinked
        // file would have moved both.
        uint64_t pc = n.pc + (base->second.addr - n.base);
        auto bytes = (*file)->read(pc, 16);
        ASSERT_TRUE(bytes.ok()) << n.name;
        const cs_insn *insn = dis.decode(*bytes, pc);
        ASSERT_NE(insn, nullptr) << n.name;
        EXPECT_EQ(insn->id, static_cast<unsigned>(X86_INS_NOP)) << n.name;
        EXPECT_EQ(insn->size, 1) << n.name << ": " << mysqltrace::elf::Disassembler::text(*insn);
        EXPECT_EQ(insn->bytes[0], 0x90) << n.name;
    }
}

TEST(ShimSites, ExportsExactlyTheInterposers) {
    const std::set<std::string> want = {
        // libc
        "connect", "read", "write", "recv", "send", "recvfrom", "sendto", "recvmsg", "sendmsg",
        "readv", "writev", "close", "shutdown", "__read_chk", "__recv_chk", "__recvfrom_chk",
        // TLS
        "SSL_read", "SSL_write", "SSL_read_ex", "SSL_write_ex", "gnutls_record_recv",
        "gnutls_record_send",
        // MySQL C API
        "mysql_real_connect", "mysql_real_query", "mysql_query", "mysql_send_query",
        "mysql_read_query_result", "mysql_store_result", "mysql_use_result", "mysql_next_result",
        "mysql_stmt_prepare", "mysql_stmt_execute", "mysql_stmt_fetch", "mysql_stmt_close",
        "mysql_change_user", "mysql_select_db", "mysql_ping", "mysql_reset_connection",
        "mysql_close",
        // libmariadb's non-blocking API
        "mysql_real_connect_start", "mysql_real_connect_cont", "mysql_real_query_start",
        "mysql_real_query_cont", "mysql_query_start", "mysql_query_cont", "mysql_send_query_start",
        "mysql_send_query_cont", "mysql_read_query_result_start", "mysql_read_query_result_cont",
        "mysql_store_result_start", "mysql_store_result_cont", "mysql_next_result_start",
        "mysql_next_result_cont", "mysql_change_user_start", "mysql_change_user_cont",
        "mysql_select_db_start", "mysql_select_db_cont", "mysql_ping_start", "mysql_ping_cont",
        "mysql_close_start", "mysql_close_cont", "mysql_stmt_prepare_start",
        "mysql_stmt_prepare_cont", "mysql_stmt_execute_start", "mysql_stmt_execute_cont",
        "mysql_stmt_fetch_start", "mysql_stmt_fetch_cont", "mysql_stmt_close_start",
        "mysql_stmt_close_cont", "mysql_reset_connection_start", "mysql_reset_connection_cont",
        // Oracle libmysqlclient's non-blocking API and query attributes
        "mysql_real_connect_nonblocking", "mysql_real_query_nonblocking",
        "mysql_send_query_nonblocking", "mysql_store_result_nonblocking",
        "mysql_next_result_nonblocking", "mysql_reset_connection_nonblocking", "mysql_bind_param"};
    EXPECT_EQ(want.size(), 78u);
    EXPECT_EQ(shim().exports, want);
}

// With no tracer attached, an interposer loads the real function and the
// semaphores (and, for data calls, the count of connections awaiting their
// verdict) and jumps to the real function: no stack frame, no call, no
// thread-local variable. Checked on the path that falls through every
// branch up to the first jump through a register. connect(), close(),
// shutdown(), mysql_real_connect(), mysql_close() and Oracle's non-blocking
// calls keep their state with or without a tracer (docs/run.md);
// mysql_real_connect_start() passes nine arguments on, three on the stack,
// and saves registers for that (once per connection).
TEST(ShimSites, IdleInterposersOnlyCheckAndJump) {
    const std::set<std::string> stateful = {"connect",
                                            "close",
                                            "shutdown",
                                            "mysql_real_connect",
                                            "mysql_real_connect_start",
                                            "mysql_close",
                                            "mysql_real_connect_nonblocking",
                                            "mysql_real_query_nonblocking",
                                            "mysql_send_query_nonblocking",
                                            "mysql_store_result_nonblocking",
                                            "mysql_next_result_nonblocking",
                                            "mysql_reset_connection_nonblocking"};
    auto file = mysqltrace::elf::ElfFile::open(MYSQLTRACE_SHIM_PATH);
    ASSERT_TRUE(file.ok()) << file.error().message;
    mysqltrace::elf::Disassembler dis;
    size_t checked = 0;
    for (const auto &name : shim().exports) {
        if (stateful.count(name) != 0) {
            continue;
        }
        auto sym = (*file)->find(name);
        ASSERT_TRUE(sym.has_value()) << name;
        auto bytes = (*file)->read(sym->vaddr, sym->size);
        ASSERT_TRUE(bytes.ok()) << name;
        size_t off = 0;
        bool jumped = false;
        std::string path;
        for (int n = 0; n < 16 && off < bytes->size(); n++) {
            const cs_insn *insn =
                dis.decode(std::span<const uint8_t>(*bytes).subspan(off), sym->vaddr + off);
            ASSERT_NE(insn, nullptr) << name << " at +" << off;
            std::string text = mysqltrace::elf::Disassembler::text(*insn);
            path += text + "; ";
            EXPECT_TRUE(insn->id != X86_INS_PUSH && insn->id != X86_INS_CALL &&
                        insn->id != X86_INS_SUB && text.find("fs:") == std::string::npos)
                << name << ": " << path;
            off += insn->size;
            if (insn->id == X86_INS_JMP) {
                // A jump to an address is the slow path's tail call or a
                // branch; only a jump through a register is the real function.
                jumped = text.find("0x") == std::string::npos;
                break;
            }
        }
        EXPECT_TRUE(jumped) << name << ": " << path;
        checked++;
    }
    EXPECT_EQ(checked, 66u);
}

TEST(ShimSites, NeedsOnlyLibc) {
    // No libstdc++ or client library dragged into the programs it is loaded into.
    for (const auto &lib : shim().needed) {
        EXPECT_TRUE(lib == "libc.so.6" || lib.rfind("ld-linux", 0) == 0) << lib;
    }
}

}  // namespace
