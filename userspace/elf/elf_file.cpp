// SPDX-License-Identifier: GPL-2.0-only
#include "elf/elf_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "elf/disassembler.h"

namespace mysqltrace::elf {

namespace {

struct ElfCloser {
    void operator()(Elf *e) const { elf_end(e); }
};

}  // namespace

Result<std::unique_ptr<ElfFile>> ElfFile::open(const std::string &path,
                                               const AnalysisLimits &limits) {
    if (elf_version(EV_CURRENT) == EV_NONE) {
        return Error{0, "libelf is too old"};
    }
    std::unique_ptr<ElfFile> f(new ElfFile(path, limits));
    f->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (f->fd_ < 0 || ::fstat(f->fd_, &st) != 0) {
        return make_error(errno, "cannot open " + path);
    }
    // libelf maps the whole file: its size is the first bound.
    f->file_size_ = static_cast<uint64_t>(st.st_size);
    if (!f->budget_->charge(Limit::file_bytes, f->file_size_)) {
        return *f->budget_->exceeded();
    }
    std::unique_ptr<Elf, ElfCloser> e(elf_begin(f->fd_, ELF_C_READ_MMAP, nullptr));
    return load(std::move(f), e.get());
}

Result<std::unique_ptr<ElfFile>> ElfFile::open_memory(const std::string &name,
                                                      std::span<uint8_t> image,
                                                      const AnalysisLimits &limits) {
    if (elf_version(EV_CURRENT) == EV_NONE) {
        return Error{0, "libelf is too old"};
    }
    std::unique_ptr<ElfFile> f(new ElfFile(name, limits));
    f->image_ = image;
    f->file_size_ = image.size();
    if (!f->budget_->charge(Limit::file_bytes, f->file_size_)) {
        return *f->budget_->exceeded();
    }
    std::unique_ptr<Elf, ElfCloser> e(
        elf_memory(reinterpret_cast<char *>(image.data()), image.size()));
    return load(std::move(f), e.get());
}

Result<std::unique_ptr<ElfFile>> ElfFile::load(std::unique_ptr<ElfFile> f, Elf *elf) {
    const std::string &path = f->path_;
    if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
        return Error{ENOEXEC, path + " is not an ELF file"};
    }
    size_t nphdr = 0;
    elf_getphdrnum(elf, &nphdr);
    for (size_t i = 0; i < nphdr; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, static_cast<int>(i), &ph) != nullptr && ph.p_type == PT_LOAD) {
            f->segments_.push_back({ph.p_vaddr, ph.p_offset, ph.p_filesz});
        }
    }
    Elf_Scn *scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == nullptr ||
            (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || sh.sh_entsize == 0) {
            continue;
        }
        Elf_Data *data = elf_getdata(scn, nullptr);
        // What the section really holds: a hostile header may claim more.
        const size_t count = data == nullptr ? 0 : data->d_size / sh.sh_entsize;
        AnalysisBudget &budget = *f->budget_;
        if (!budget.charge(Limit::symbols, count)) {
            return *budget.exceeded();
        }
        for (size_t i = 0; i < count; i++) {
            GElf_Sym sym;
            if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr || sym.st_value == 0 ||
                sym.st_shndx == SHN_UNDEF) {
                continue;
            }
            int type = GELF_ST_TYPE(sym.st_info);
            if (type != STT_FUNC && type != STT_OBJECT) {
                continue;
            }
            const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (name == nullptr || *name == '\0') {
                continue;
            }
            // A string table of one endless name, shared by every symbol,
            // would otherwise be copied once per symbol.
            if (!budget.charge(Limit::symbol_name_bytes, std::strlen(name))) {
                return *budget.exceeded();
            }
            f->symbols_.push_back({name, sym.st_value, sym.st_size, type == STT_FUNC});
        }
    }
    // .symtab and .dynsym repeat each other: keep one entry per name.
    std::sort(f->symbols_.begin(), f->symbols_.end(),
              [](const Symbol &a, const Symbol &b) { return a.name < b.name; });
    f->symbols_.erase(
        std::unique(f->symbols_.begin(), f->symbols_.end(),
                    [](const Symbol &a, const Symbol &b) { return a.name == b.name; }),
        f->symbols_.end());
    return f;
}

ElfFile::~ElfFile() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

std::optional<Symbol> ElfFile::find(std::string_view name) const {
    auto it = std::lower_bound(symbols_.begin(), symbols_.end(), name,
                               [](const Symbol &s, std::string_view n) { return s.name < n; });
    if (it != symbols_.end() && it->name == name) {
        return *it;
    }
    return std::nullopt;
}

Result<uint64_t> ElfFile::vaddr_to_offset(uint64_t vaddr) const {
    for (const auto &s : segments_) {
        if (vaddr >= s.vaddr && vaddr < s.vaddr + s.filesz) {
            return vaddr - s.vaddr + s.offset;
        }
    }
    char hex[32];
    std::snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(vaddr));
    return Error{EFAULT, std::string("address ") + hex + " is not in a loaded segment of " + path_};
}

Result<std::vector<uint8_t>> ElfFile::read(uint64_t vaddr, size_t n) const {
    auto off = vaddr_to_offset(vaddr);
    if (!off) {
        return off.error();
    }
    // Never more than the file holds: a symbol's size is whatever its
    // table says.
    const uint64_t from = std::min(*off, file_size_);
    n = static_cast<size_t>(std::min<uint64_t>(n, file_size_ - from));
    if (!budget_->charge(Limit::bytes_read, n)) {
        return *budget_->exceeded();
    }
    if (fd_ < 0) {
        return std::vector<uint8_t>(image_.begin() + static_cast<ptrdiff_t>(from),
                                    image_.begin() + static_cast<ptrdiff_t>(from + n));
    }
    std::vector<uint8_t> buf(n);
    ssize_t got = ::pread(fd_, buf.data(), n, static_cast<off_t>(from));
    if (got < 0) {
        return make_error(errno, "cannot read " + path_);
    }
    buf.resize(static_cast<size_t>(got));
    return buf;
}

namespace {

// The first `n` bytes of function `symbol`, and its address.
struct FunctionCode {
    uint64_t vaddr = 0;
    std::vector<uint8_t> bytes;
};
Result<FunctionCode> function_code(const ElfFile &file, std::string_view symbol, size_t n) {
    auto sym = file.find(symbol);
    if (!sym || !sym->is_function) {
        return Error{ENOENT, std::string(symbol) + " not found in " + file.path()};
    }
    auto bytes = file.read(sym->vaddr, n);
    if (!bytes) {
        return bytes.error();
    }
    return FunctionCode{sym->vaddr, std::move(bytes).value()};
}

}  // namespace

Result<int64_t> accessor_field_offset(const ElfFile &file, std::string_view symbol) {
    auto code = function_code(file, symbol, 16);
    if (!code) {
        return code.error();
    }
    Disassembler d(file.budget(), /*detail=*/true);
    const cs_insn *insn = d.decode(code->bytes, code->vaddr);
    if (insn != nullptr && insn->id == X86_INS_MOV && insn->detail->x86.op_count == 2) {
        const cs_x86_op &dst = insn->detail->x86.operands[0];
        const cs_x86_op &src = insn->detail->x86.operands[1];
        if (dst.type == X86_OP_REG && src.type == X86_OP_MEM && src.mem.base == X86_REG_RDI &&
            src.mem.index == X86_REG_INVALID && src.size == 8) {
            return static_cast<int64_t>(src.mem.disp);
        }
    }
    return Error{EINVAL, std::string(symbol) + " in " + file.path() +
                             " does not start with a load from its argument"};
}

Result<ThreadPointerLoad> thread_pointer_load(const ElfFile &file, std::string_view symbol) {
    auto code = function_code(file, symbol, 64);
    if (!code) {
        return code.error();
    }
    Disassembler d(file.budget(), /*detail=*/true);
    ThreadPointerLoad out;
    x86_reg tp = X86_REG_INVALID;  // the register holding the thread pointer
    size_t at = 0;
    while (at < code->bytes.size()) {
        const cs_insn *insn =
            d.decode(std::span<const uint8_t>(code->bytes).subspan(at), code->vaddr + at);
        if (insn == nullptr || insn->id == X86_INS_RET || insn->id == X86_INS_JMP) {
            break;
        }
        at += insn->size;
        const cs_x86 &x = insn->detail->x86;
        if (x.op_count != 2 || x.operands[0].type != X86_OP_REG ||
            x.operands[1].type != X86_OP_MEM || x.operands[1].size != 8) {
            if (tp != X86_REG_INVALID && x.op_count >= 1 && x.operands[0].type == X86_OP_REG &&
                x.operands[0].reg == tp) {
                break;  // the thread pointer is overwritten: not the pattern
            }
            continue;
        }
        const x86_reg dst = x.operands[0].reg;
        const x86_op_mem &m = x.operands[1].mem;
        if (insn->id == X86_INS_MOV && m.segment == X86_REG_FS && m.base == X86_REG_INVALID &&
            m.index == X86_REG_INVALID) {
            if (m.disp != 0) {
                out.offset = m.disp;  // the pointer itself: mov rax, fs:[disp]
                return out;
            }
            tp = dst;
        } else if (tp != X86_REG_INVALID && insn->id == X86_INS_ADD && dst == tp &&
                   m.base == X86_REG_RIP && m.index == X86_REG_INVALID && out.got == 0) {
            out.got = insn->address + insn->size + static_cast<uint64_t>(m.disp);
        } else if (tp != X86_REG_INVALID && insn->id == X86_INS_MOV && m.base == tp &&
                   m.index == X86_REG_INVALID && m.segment == X86_REG_INVALID) {
            out.offset = m.disp;
            return out;
        } else if (dst == tp) {
            break;  // the register is overwritten: not the pattern
        }
    }
    return Error{EINVAL, std::string(symbol) + " in " + file.path() +
                             " does not load a pointer at the thread pointer"};
}

}  // namespace mysqltrace::elf
