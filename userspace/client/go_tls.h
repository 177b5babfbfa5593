// SPDX-License-Identifier: GPL-2.0-only
// Where a Go program's crypto/tls keeps the cleartext of its connections:
// the entry and every RET instruction of crypto/tls.(*Conn).Read and
// (*Conn).Write in the executable (bpf/client_go.bpf.h explains why RETs
// and not a return probe). The functions are found by the ELF symbol table
// or, in a binary built with -ldflags=-s, by Go's own function table
// (elf/gopclntab.h).
#pragma once

#include <string>
#include <vector>
#include <sys/types.h>

#include "elf/probe_site.h"
#include "mysqltrace/abi/event.h"
#include "util/result.h"

namespace mysqltrace::client {

struct GoTlsFunction {
    mt_tls_func func;  // MT_TLS_GO_READ or MT_TLS_GO_WRITE
    std::string symbol;
    std::string path;      // file to probe, reachable from this mount namespace
    std::string found_by;  // ".symtab" or ".gopclntab"
    elf::ProbeSite entry;
    std::vector<elf::ProbeSite> returns;  // one per RET instruction
    pid_t pid = -1;                       // the process it was found in (find_go_tls_functions)
};

struct GoTlsScan {
    std::vector<GoTlsFunction> functions;
    // Go executables of the process whose TLS cannot be probed, and why.
    std::vector<std::string> warnings;
};

// The Go TLS functions of process `pid`'s executable mappings.
Result<GoTlsScan> find_go_tls_functions(pid_t pid);

// The same for one file (the tests and `find_go_tls_functions`): no
// functions and no warning when it is not a Go executable or links no
// crypto/tls.
GoTlsScan find_go_tls_in_file(const std::string &path);

}  // namespace mysqltrace::client
