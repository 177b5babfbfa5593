// SPDX-License-Identifier: GPL-2.0-only
#include "elf/gopclntab.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

namespace mysqltrace::elf {

namespace {

constexpr uint32_t kMagicGo118 = 0xfffffff0;
constexpr uint32_t kMagicGo120 = 0xfffffff1;
constexpr uint32_t kMagicGo116 = 0xfffffffa;

uint32_t u32(const std::vector<uint8_t> &b, uint64_t off) {
    uint32_t v;
    std::memcpy(&v, b.data() + off, sizeof(v));
    return v;
}

uint64_t u64(const std::vector<uint8_t> &b, uint64_t off) {
    uint64_t v;
    std::memcpy(&v, b.data() + off, sizeof(v));
    return v;
}

}  // namespace

Result<std::optional<Section>> find_section(const std::string &path, std::string_view name) {
    if (elf_version(EV_CURRENT) == EV_NONE) {
        return Error{0, "libelf is too old"};
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return make_error(errno, "cannot open " + path);
    }
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    std::optional<Section> found;
    size_t shstrndx = 0;
    if (e != nullptr && elf_kind(e) == ELF_K_ELF && elf_getshdrstrndx(e, &shstrndx) == 0) {
        Elf_Scn *scn = nullptr;
        while ((scn = elf_nextscn(e, scn)) != nullptr) {
            GElf_Shdr sh;
            if (gelf_getshdr(scn, &sh) == nullptr) {
                continue;
            }
            const char *n = elf_strptr(e, shstrndx, sh.sh_name);
            if (n != nullptr && name == n) {
                found = Section{sh.sh_addr, sh.sh_size};
                break;
            }
        }
    }
    if (e != nullptr) {
        elf_end(e);
    }
    ::close(fd);
    return found;
}

bool is_go_executable(const std::string &path) {
    for (const char *name : {".gopclntab", ".go.buildinfo"}) {
        auto s = find_section(path, name);
        if (s && s->has_value()) {
            return true;
        }
    }
    return false;
}

Result<std::vector<Symbol>> go_pclntab_functions(const ElfFile &file,
                                                 const std::vector<std::string> &names) {
    auto sec = find_section(file.path(), ".gopclntab");
    if (!sec) {
        return sec.error();
    }
    if (!sec->has_value() || (*sec)->vaddr == 0) {
        return Error{ENOENT, file.path() + " has no loaded .gopclntab section"};
    }
    auto tab = file.read((*sec)->vaddr, (*sec)->size);
    if (!tab) {
        return tab.error();
    }
    const std::vector<uint8_t> &b = *tab;
    // pcHeader: magic u32, two pad bytes, minLC u8, ptrSize u8, then
    // nfunc, nfiles, textStart, funcnameOffset, cuOffset, filetabOffset,
    // pctabOffset, pclnOffset, each pointer-sized.
    if (b.size() < 8 + 8 * 8) {
        return Error{EINVAL, file.path() + ": .gopclntab is too short"};
    }
    const uint32_t magic = u32(b, 0);
    if (magic == kMagicGo116) {
        return Error{ENOTSUP, file.path() +
                                  ": .gopclntab of Go 1.16/1.17 is not read (Go 1.18 "
                                  "and later are)"};
    }
    if ((magic != kMagicGo118 && magic != kMagicGo120) || b[7] != 8) {
        return Error{ENOTSUP, file.path() + ": unknown .gopclntab format"};
    }
    const uint64_t nfunc = u64(b, 8);
    uint64_t text_start = u64(b, 8 + 2 * 8);
    const uint64_t funcname_off = u64(b, 8 + 3 * 8);
    const uint64_t pcln_off = u64(b, 8 + 7 * 8);
    if (text_start == 0) {
        // Relocated at load time in some builds: the table's text base is .text.
        auto text = find_section(file.path(), ".text");
        if (!text || !text->has_value()) {
            return Error{EINVAL, file.path() + ": no text base for .gopclntab"};
        }
        text_start = (*text)->vaddr;
    }
    // functab: nfunc + 1 pairs (entryoff, funcoff) of u32; the last entryoff
    // is the end of the text.
    if (pcln_off > b.size() || nfunc > (b.size() - pcln_off) / 8 - 1 || funcname_off > b.size()) {
        return Error{EINVAL, file.path() + ": .gopclntab offsets out of range"};
    }
    std::vector<Symbol> found;
    for (uint64_t i = 0; i < nfunc && found.size() < names.size(); i++) {
        const uint64_t ft = pcln_off + i * 8;
        const uint32_t entry = u32(b, ft);
        const uint32_t next = u32(b, ft + 8);
        const uint64_t fn = pcln_off + u32(b, ft + 4);  // _func: entryOff u32, nameOff i32
        if (fn + 8 > b.size()) {
            continue;
        }
        const uint64_t name_at = funcname_off + static_cast<uint32_t>(u32(b, fn + 4));
        if (name_at >= b.size()) {
            continue;
        }
        const char *name = reinterpret_cast<const char *>(b.data() + name_at);
        const size_t max = b.size() - name_at;
        const size_t len = strnlen(name, max);
        if (len == max) {
            continue;
        }
        const std::string_view n(name, len);
        for (const auto &want : names) {
            if (n == want && next > entry) {
                found.push_back({want, text_start + entry, next - entry, true});
            }
        }
    }
    return found;
}

}  // namespace mysqltrace::elf
