// SPDX-License-Identifier: GPL-2.0-only
// Where a client's TLS library keeps the functions whose arguments and
// results are the cleartext of its connections: OpenSSL's SSL_read/SSL_write
// (and the _ex variants) and GnuTLS's gnutls_record_recv/send, in a shared
// library the process has mapped or linked into the executable itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include <sys/types.h>

#include "elf/probe_site.h"
#include "mysqltrace/abi/event.h"
#include "util/result.h"

namespace mysqltrace::client {

struct TlsFunction {
    mt_tls_func func;
    std::string symbol;
    std::string path;     // file to probe, reachable from this mount namespace
    elf::ProbeSite site;  // entry probe; the return probe goes on the same offset
};

// Every TLS read/write function mapped into process `pid`.
Result<std::vector<TlsFunction>> find_tls_functions(pid_t pid);

}  // namespace mysqltrace::client
