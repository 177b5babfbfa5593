// SPDX-License-Identifier: GPL-2.0-only
// Which USDT probes (sys/sdt.h `.note.stapsdt` notes) a file holds: by
// provider and name, enough to choose the files to hand to libbpf's
// bpf_program__attach_usdt (which parses the notes fully when it attaches),
// and each site's argument list, to check a file against a contract.
#pragma once

#include <string>
#include <vector>

#include "util/result.h"

namespace mysqltrace::calls {

struct UsdtName {
    std::string provider;
    std::string name;
    bool operator==(const UsdtName &) const = default;
};

// One probe site's note.
struct UsdtNote {
    std::string provider;
    std::string name;
    std::string args;  // e.g. "-4@%edi 8@8(%rsp)": size@operand, space-separated
};

// Every probe note of `path`, in file order (none: empty).
Result<std::vector<UsdtNote>> usdt_notes(const std::string &path);

// The operands of a note's argument list ("size@operand" each), in order.
std::vector<std::string> usdt_arg_list(const std::string &args);

// The distinct provider:name pairs of `path`'s probe notes (none: empty).
Result<std::vector<UsdtName>> usdt_names(const std::string &path);

}  // namespace mysqltrace::calls
