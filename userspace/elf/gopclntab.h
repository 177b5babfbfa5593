// SPDX-License-Identifier: GPL-2.0-only
// Go's own function table (.gopclntab), for Go executables whose ELF
// symbol table was stripped (`go build -ldflags=-s`): the runtime needs it
// for stack traces and garbage collection, so no Go binary lacks it.
//
// Read here: the layout of Go 1.18 and 1.19 (header magic 0xfffffff0) and
// Go 1.20 and later (0xfffffff1), which differ in nothing used here (the
// runtime's pcHeader, functab and _func in runtime/symtab.go and
// runtime/runtime2.go). Older tables (Go 1.16 and 1.17: 0xfffffffa) are
// reported as unsupported.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "elf/elf_file.h"
#include "util/result.h"

namespace mysqltrace::elf {

struct Section {
    uint64_t vaddr = 0;
    uint64_t size = 0;
};

// The section `name` of the ELF file at `path`, if it has one.
Result<std::optional<Section>> find_section(const std::string &path, std::string_view name);

// True when `path` was built by the Go toolchain (it has .gopclntab or
// .go.buildinfo).
bool is_go_executable(const std::string &path);

// The functions named `names` in the .gopclntab of `file` (vaddr, and size
// up to the next function's entry). Names not in the table are left out.
Result<std::vector<Symbol>> go_pclntab_functions(const ElfFile &file,
                                                 const std::vector<std::string> &names);

}  // namespace mysqltrace::elf
