// SPDX-License-Identifier: GPL-2.0-only
#pragma once

namespace mysqltrace::bpf {

// libbpf's own messages: silent at 0 (mysqltrace reports failures itself in
// one clear line), warnings at 1 (-v), everything at 2 (-vv).
void set_libbpf_verbosity(int level);

}  // namespace mysqltrace::bpf
