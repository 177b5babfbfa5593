// SPDX-License-Identifier: GPL-2.0-only
#include "util/result.h"

#include <cstring>
#include <cstdlib>

namespace mysqltrace {

Error make_error(int err, std::string what) {
    int code = std::abs(err);
    if (code != 0) {
        what += ": ";
        what += std::strerror(code);
    }
    return Error{code, std::move(what)};
}

}  // namespace mysqltrace
