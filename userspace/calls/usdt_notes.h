// SPDX-License-Identifier: GPL-2.0-only
// Which USDT probes (sys/sdt.h `.note.stapsdt` notes) a file holds, by
// provider and name only: enough to choose the files to hand to libbpf's
// bpf_program__attach_usdt, which parses the notes fully when it attaches.
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

// The distinct provider:name pairs of `path`'s probe notes (none: empty).
Result<std::vector<UsdtName>> usdt_names(const std::string &path);

}  // namespace mysqltrace::calls
