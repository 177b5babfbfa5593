// SPDX-License-Identifier: GPL-2.0-only
#include "calls/functions.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <map>
#include <set>

#include "mysqltrace/abi/event.h"
#include "proc/maps.h"

namespace mysqltrace::calls {

namespace {

bool starts_with(const std::string &s, std::string_view p) {
    return s.compare(0, p.size(), p) == 0;
}

std::string base_name(const std::string &path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string real_path(const std::string &path) {
    char buf[PATH_MAX];
    return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

// Of several names for one address, the one people call it by: no leading
// underscore, then the shortest.
bool better_alias(const FunctionName &a, const FunctionName &b) {
    const bool ua = !a.symbol.empty() && a.symbol[0] == '_' && a.signature == a.symbol;
    const bool ub = !b.symbol.empty() && b.symbol[0] == '_' && b.signature == b.symbol;
    if (ua != ub) {
        return !ua;
    }
    if (a.symbol.size() != b.symbol.size()) {
        return a.symbol.size() < b.symbol.size();
    }
    return a.symbol < b.symbol;
}

}  // namespace

size_t Selection::costly() const {
    return static_cast<size_t>(std::count_if(functions.begin(), functions.end(), [](const auto &f) {
        return f.site.cost == elf::ProbeCost::single_stepped;
    }));
}

bool unsafe_to_trace(const FunctionName &f) {
    static const std::set<std::string, std::less<>> exact = {
        "setjmp",
        "_setjmp",
        "__setjmp",
        "sigsetjmp",
        "__sigsetjmp",
        "__sigsetjmp_cancel",
        "longjmp",
        "_longjmp",
        "siglongjmp",
        "__longjmp",
        "__longjmp_chk",
        "____longjmp_chk",
        "__libc_longjmp",
        "__libc_siglongjmp",
        "__libc_unwind_longjmp",
        "getcontext",
        "setcontext",
        "swapcontext",
        "makecontext",
        "__start_context",
        "__push___start_context",
        "vfork",
        "__vfork",
        "clone",
        "__clone",
        "__clone3",
        "clone3",
        "__clone_internal",
        "_start",
        "_dl_start",
        "_dl_start_user",
        "__restore_rt",
        "__cxa_throw",
        "__cxa_rethrow",
        "__cxa_call_unexpected",
        "pthread_exit",
        "__pthread_exit",
        "__pthread_unwind",
        "__pthread_unwind_next",
        "__morestack",
        "mcount",
        "_mcount",
        "__fentry__",
    };
    const std::string &n = f.name;
    return exact.count(n) != 0 || starts_with(n, "_dl_runtime_") || starts_with(n, "_Unwind_") ||
           starts_with(n, "__x86_indirect_thunk") || starts_with(n, "__x86_return_thunk") ||
           starts_with(n, "__gxx_personality") || starts_with(n, "__gcc_personality");
}

Result<std::vector<MappedFile>> mapped_files(pid_t pid, const std::string &binary) {
    auto maps = proc::read_maps(pid);
    if (!maps) {
        return maps.error();
    }
    const std::string want_real = binary.empty() ? "" : real_path(binary);
    std::vector<MappedFile> files;
    std::map<std::pair<dev_t, ino_t>, size_t> by_inode;
    std::vector<std::string> seen;
    for (const auto &m : *maps) {
        if (m.perms.size() < 3 || m.perms[2] != 'x' || m.path.empty() || m.path[0] != '/' ||
            m.path.find(" (deleted)") != std::string::npos) {
            continue;
        }
        if (std::find(seen.begin(), seen.end(), m.path) == seen.end()) {
            seen.push_back(m.path);
        }
        auto reached = proc::mapped_file(pid, m);
        struct stat st {};
        if (!reached || ::stat(reached->c_str(), &st) != 0) {
            continue;
        }
        const std::string &open_path = *reached;
        if (!binary.empty() && m.path != binary && base_name(m.path) != binary &&
            real_path(open_path) != want_real && m.path != want_real) {
            continue;
        }
        auto key = std::make_pair(st.st_dev, st.st_ino);
        auto it = by_inode.find(key);
        if (it == by_inode.end()) {
            it = by_inode.emplace(key, files.size()).first;
            files.push_back(MappedFile{m.path, open_path, {}});
        }
        files[it->second].exec_ranges.emplace_back(m.file_offset,
                                                   m.file_offset + (m.end - m.start));
    }
    if (files.empty()) {
        if (!binary.empty()) {
            std::string list;
            for (const auto &p : seen) {
                list += (list.empty() ? "" : ", ") + p;
            }
            return Error{ENOENT, binary + " is not mapped executable by pid " +
                                     std::to_string(pid) + " (it maps " + list + ")"};
        }
        return Error{ENOENT, "pid " + std::to_string(pid) + " maps no executable file"};
    }
    return files;
}

void select_from_file(const elf::ElfFile &elf, size_t file_index, const GlobSet &globs,
                      Selection &out) {
    const MappedFile &file = out.files[file_index];
    // Aliases: one function per address, named by its best alias.
    std::map<uint64_t, TracedFunction> chosen;
    for (const auto &sym : elf.symbols()) {
        if (!sym.is_function || sym.size == 0 || sym.name.find(".cold") != std::string::npos) {
            continue;
        }
        FunctionName name = function_name(sym.name);
        if (!matches(globs, name)) {
            continue;
        }
        auto it = chosen.find(sym.vaddr);
        if (it != chosen.end()) {
            if (better_alias(name, it->second.name)) {
                it->second.name = std::move(name);
            }
            continue;
        }
        TracedFunction f;
        f.name = std::move(name);
        f.file = file_index;
        f.vaddr = sym.vaddr;
        f.size = sym.size;
        chosen.emplace(sym.vaddr, std::move(f));
    }
    for (auto &[vaddr, f] : chosen) {
        auto off = elf.vaddr_to_offset(vaddr);
        if (!off) {
            continue;
        }
        bool executable = false;
        for (const auto &[lo, hi] : file.exec_ranges) {
            executable = executable || (*off >= lo && *off < hi);
        }
        if (!executable) {
            continue;  // not code this process runs from this file
        }
        if (unsafe_to_trace(f.name)) {
            out.unsafe.push_back(std::move(f));
            continue;
        }
        auto code = elf.read(vaddr, static_cast<size_t>(std::min<uint64_t>(f.size, 16)));
        if (code) {
            f.site = elf::place_entry_probe(*code, *off);
        }
        if (!code || f.site.cost == elf::ProbeCost::undecodable) {
            out.undecodable.push_back(std::move(f));
            continue;
        }
        out.functions.push_back(std::move(f));
    }
}

void find_guards(const elf::ElfFile &elf, size_t file_index, Selection &out) {
    static const std::pair<const char *, int> kGuards[] = {
        {"_Unwind_RaiseException", MT_UNWIND_RAISE},
        {"_Unwind_Resume", MT_UNWIND_RESUME},
        {"_Unwind_Resume_or_Rethrow", MT_UNWIND_RETHROW},
        {"_Unwind_ForcedUnwind", MT_UNWIND_FORCED},
        {"_Unwind_Backtrace", MT_UNWIND_WALK},
        {"__cxa_begin_catch", -1},
    };
    for (const auto &[name, kind] : kGuards) {
        auto sym = elf.find(name);
        if (!sym || !sym->is_function || sym->size == 0) {
            continue;  // an import, or not here
        }
        auto off = elf.vaddr_to_offset(sym->vaddr);
        auto code = elf.read(sym->vaddr, 16);
        if (!off || !code) {
            continue;
        }
        const elf::ProbeSite site = elf::place_entry_probe(*code, *off);
        if (site.cost == elf::ProbeCost::undecodable) {
            continue;
        }
        out.guards.push_back(GuardSite{file_index, site.offset, kind, name});
    }
}

Result<Selection> select_functions(pid_t pid, const GlobSet &globs, const std::string &binary) {
    if (!proc::process_exists(pid)) {
        return Error{ESRCH, "no such process: " + std::to_string(pid)};
    }
    auto wanted = mapped_files(pid, binary);
    if (!wanted) {
        return wanted.error();
    }
    // A bad MYSQLTRACE_ANALYSIS_LIMITS would otherwise read as "no ELF file".
    if (const auto limits = elf::default_analysis_limits(); !limits.invalid.empty()) {
        return Error{EINVAL, limits.invalid};
    }
    Selection sel;
    if (binary.empty()) {
        sel.files = std::move(wanted).value();
    } else {
        // Unwinders are guarded wherever they are, whatever --binary says.
        auto all = mapped_files(pid, "");
        if (!all) {
            return all.error();
        }
        sel.files = std::move(all).value();
        for (auto &f : sel.files) {
            f.searched = std::any_of(wanted->begin(), wanted->end(),
                                     [&](const MappedFile &w) { return w.path == f.path; });
        }
    }
    for (size_t i = 0; i < sel.files.size(); i++) {
        auto elf = elf::ElfFile::open(sel.files[i].open_path);
        if (!elf && elf.error().code == EFBIG) {
            return elf.error();  // over an analysis limit (elf/analysis_budget.h)
        }
        if (!elf) {
            continue;  // not ELF (e.g. a mapped data file marked executable)
        }
        if (sel.files[i].searched) {
            select_from_file(**elf, i, globs, sel);
        }
        find_guards(**elf, i, sel);
        // Probe sites read after the budget ran out are missing: refuse
        // rather than trace part of what was asked.
        if (auto &over = (*elf)->budget()->exceeded()) {
            return *over;
        }
    }
    return sel;
}

}  // namespace mysqltrace::calls
