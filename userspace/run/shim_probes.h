// SPDX-License-Identifier: GPL-2.0-only
// Whether a libmysqltrace-shim.so fires the probes this mysqltrace reads
// (include/mysqltrace/abi/usdt.h): a shim of another version, given with
// --shim or MYSQLTRACE_SHIM, would otherwise be traced wrongly in silence.
#pragma once

#include <string>

#include "util/result.h"

namespace mysqltrace::run {

// Ok when `path` has each of the shim's probes (provider "mysqltrace":
// io, api_begin, api_end, trace_event), each with the one 8-byte argument
// (its struct's address) bpf/client.bpf.c reads; else says what differs.
Result<void> check_shim_probes(const std::string &path);

}  // namespace mysqltrace::run
