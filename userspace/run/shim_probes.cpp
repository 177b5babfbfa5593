// SPDX-License-Identifier: GPL-2.0-only
#include "run/shim_probes.h"

#include <cerrno>
#include <vector>

#include "calls/usdt_notes.h"
#include "mysqltrace/abi/usdt.h"

namespace mysqltrace::run {

namespace {

constexpr const char *kAdvice = "; use the shim installed with this mysqltrace";

}  // namespace

Result<void> check_shim_probes(const std::string &path) {
    auto notes = calls::usdt_notes(path);
    if (!notes) {
        return Error{notes.error().code,
                     "cannot read the probes of the shim " + path + ": " + notes.error().message};
    }
    for (const char *name : {MT_USDT_IO, MT_USDT_API_BEGIN, MT_USDT_API_END, MT_USDT_TRACE_EVENT}) {
        bool found = false;
        for (const auto &n : *notes) {
            if (n.provider != MT_USDT_PROVIDER || n.name != name) {
                continue;
            }
            found = true;
            const auto args = calls::usdt_arg_list(n.args);
            if (args.size() != 1 || args[0].rfind("8@", 0) != 0) {
                return Error{EINVAL, path + " is a shim of another mysqltrace version: its probe " +
                                         MT_USDT_PROVIDER + ":" + name + " takes " +
                                         std::to_string(args.size()) + " argument" +
                                         (args.size() == 1 ? "" : "s") + " (" + n.args +
                                         "), where this mysqltrace reads one, the address of " +
                                         "its record" + kAdvice};
            }
        }
        if (!found) {
            return Error{EINVAL, path + " is not a mysqltrace shim of this version: it has no " +
                                     "USDT probe " + MT_USDT_PROVIDER + ":" + name + kAdvice};
        }
    }
    return {};
}

}  // namespace mysqltrace::run
