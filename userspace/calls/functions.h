// SPDX-License-Identifier: GPL-2.0-only
// The functions `mysqltrace calls` traces: every function symbol of the
// target's executable and shared objects (the files /proc/PID/maps maps
// executable) whose name matches the globs, each with the instruction its
// entry and return probes share (shared/FACTS.md section 2: after a leading
// endbr64, and costly when the kernel must single-step it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include <sys/types.h>

#include "calls/match.h"
#include "elf/elf_file.h"
#include "elf/probe_site.h"
#include "util/result.h"

namespace mysqltrace::calls {

struct MappedFile {
    std::string path;  // as /proc/PID/maps names it
    // The same file reached through /proc/PID/root, or through
    // /proc/PID/map_files when its path is not one inside that root.
    std::string open_path;
    // File offset ranges mapped executable: only code there can be probed.
    std::vector<std::pair<uint64_t, uint64_t>> exec_ranges;
    // Its functions were searched (false: left out by --binary; its
    // unwinder entries are still guarded).
    bool searched = true;
};

struct TracedFunction {
    FunctionName name;
    size_t file = 0;  // index into Selection::files
    uint64_t vaddr = 0;
    uint64_t size = 0;
    elf::ProbeSite site;  // file offset and instruction the probes go on
};

// Where the unwinders are (bpf/calls.bpf.c: keeping them working with
// return probes in place).
struct GuardSite {
    size_t file = 0;
    uint64_t offset = 0;  // entry probe file offset
    int unwinder = -1;    // enum mt_call_unwinder, or -1 for __cxa_begin_catch
    std::string symbol;
};

struct Selection {
    std::vector<MappedFile> files;          // every executable file mapping
    std::vector<TracedFunction> functions;  // matched and placeable: to trace
    // Matched but never probed: a return probe replaces the return address
    // on the stack, which breaks functions that save, read or never use it
    // (setjmp, context switches, the unwinder, PLT resolvers, thunks).
    std::vector<TracedFunction> unsafe;
    // Matched, but the entry is not a decodable instruction.
    std::vector<TracedFunction> undecodable;
    // Unwinder entries and __cxa_begin_catch in any mapped file.
    std::vector<GuardSite> guards;
    size_t costly() const;  // of `functions`: entry single-stepped
};

// Adds the unwinder entry points `elf` defines to out.guards.
void find_guards(const elf::ElfFile &elf, size_t file_index, Selection &out);

// True for functions that must never get a return probe (see `unsafe`).
bool unsafe_to_trace(const FunctionName &f);

// The executable file mappings of `pid`, one per file (by device and inode),
// in the order they appear. `binary` non-empty: only that file (its mapped
// path, real path or base name).
Result<std::vector<MappedFile>> mapped_files(pid_t pid, const std::string &binary);

// Adds the functions of `elf` (file number `file_index` of out.files) that
// match `globs` to `out`. Aliases at one address count once; zero-size,
// non-function and GCC `.cold` part symbols never match.
void select_from_file(const elf::ElfFile &elf, size_t file_index, const GlobSet &globs,
                      Selection &out);

// mapped_files + select_from_file for each.
Result<Selection> select_functions(pid_t pid, const GlobSet &globs, const std::string &binary);

}  // namespace mysqltrace::calls
