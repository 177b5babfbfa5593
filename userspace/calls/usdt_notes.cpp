// SPDX-License-Identifier: GPL-2.0-only
#include "calls/usdt_notes.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <sstream>

#include <gelf.h>
#include <libelf.h>

#include "bpf/handles.h"

namespace mysqltrace::calls {

namespace {

struct ElfCloser {
    void operator()(Elf *e) const { elf_end(e); }
};

constexpr uint32_t kStapsdtType = 3;  // NT_STAPSDT
constexpr size_t kAddrs = 3 * 8;      // pc, base, semaphore precede the names

}  // namespace

Result<std::vector<UsdtNote>> usdt_notes(const std::string &path) {
    if (elf_version(EV_CURRENT) == EV_NONE) {
        return Error{0, "libelf is too old"};
    }
    bpf::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) {
        return make_error(errno, "cannot open " + path);
    }
    std::unique_ptr<Elf, ElfCloser> e(elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr));
    if (!e || elf_kind(e.get()) != ELF_K_ELF) {
        return Error{ENOEXEC, path + " is not an ELF file"};
    }
    std::vector<UsdtNote> out;
    Elf_Scn *scn = nullptr;
    while ((scn = elf_nextscn(e.get(), scn)) != nullptr) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_NOTE) {
            continue;
        }
        Elf_Data *data = elf_getdata(scn, nullptr);
        if (data == nullptr || data->d_buf == nullptr) {
            continue;
        }
        const char *p = static_cast<const char *>(data->d_buf);
        size_t off = 0, name_off = 0, desc_off = 0;
        GElf_Nhdr nh;
        while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) != 0) {
            if (nh.n_type != kStapsdtType || nh.n_namesz != sizeof("stapsdt") ||
                std::memcmp(p + name_off, "stapsdt", nh.n_namesz) != 0 || nh.n_descsz <= kAddrs) {
                continue;
            }
            const char *s = p + desc_off + kAddrs;
            const char *end = p + desc_off + nh.n_descsz;
            const char *provider_end = static_cast<const char *>(std::memchr(s, 0, end - s));
            if (provider_end == nullptr) {
                continue;
            }
            const char *n = provider_end + 1;
            const char *name_end =
                n < end ? static_cast<const char *>(std::memchr(n, 0, end - n)) : nullptr;
            if (name_end == nullptr) {
                continue;
            }
            const char *a = name_end + 1;
            const char *args_end =
                a < end ? static_cast<const char *>(std::memchr(a, 0, end - a)) : nullptr;
            out.push_back({std::string(s, provider_end), std::string(n, name_end),
                           args_end != nullptr ? std::string(a, args_end) : std::string()});
        }
    }
    return out;
}

std::vector<std::string> usdt_arg_list(const std::string &args) {
    std::istringstream in(args);
    std::vector<std::string> out;
    for (std::string w; in >> w;) {
        out.push_back(std::move(w));
    }
    return out;
}

Result<std::vector<UsdtName>> usdt_names(const std::string &path) {
    auto notes = usdt_notes(path);
    if (!notes) {
        return notes.error();
    }
    std::vector<UsdtName> out;
    for (auto &n : *notes) {
        UsdtName u{std::move(n.provider), std::move(n.name)};
        if (std::find(out.begin(), out.end(), u) == out.end()) {
            out.push_back(std::move(u));
        }
    }
    return out;
}

}  // namespace mysqltrace::calls
