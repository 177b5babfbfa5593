// SPDX-License-Identifier: GPL-2.0-only
// Every inlined THD::enter_stage(&stage_X, ...) of a mariadbd build, found
// in its code. Each compiles to
//   lea  stage_X(%rip), %reg           ; PSI_stage_info {m_key, m_name, m_flags}
//   ...  m_key -> [thd + stage_key], m_name -> [thd + proc_info]
//   test profiling.current ; jne <QUERY_PROFILE::new_status(..., file, line)>
//   call *start_stage(PSI_server)(key, file, line)
// and the jcc after the two stores is where a uprobe goes: the kernel
// emulates conditional jumps, and the THD already names the new stage there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "elf/elf_file.h"
#include "elf/probe_site.h"
#include "server/thd_layout.h"
#include "util/result.h"

namespace mysqltrace::server {

struct StageSite {
    uint64_t probe_vaddr = 0;   // the conditional jump after the stores
    uint64_t probe_offset = 0;  // its file offset
    uint64_t lea_vaddr = 0;     // the `lea reg, [rip + stage_X]` (0 for a dynamic site)
    std::string stage_symbol;   // "stage_cleaning_up" ("" for a dynamic site)
    std::string stage_name;     // "cleaning up"
    std::string function;       // mangled name of the function holding the site, or ""
    std::string source_file;    // "./sql/sql_parse.cc", when the PSI/profiling call shows it
    uint32_t source_line = 0;   // the THD_STAGE_INFO line, 0 when not found
    std::string thd_register;   // register holding the THD (+ thd_bias) at the probe, or ""
    int64_t thd_bias = 0;       // non-zero when the THD is embedded (Delayed_insert::thd)
    elf::ProbeCost probe_cost = elf::ProbeCost::undecodable;
};

struct StageScan {
    std::vector<StageSite> sites;  // sorted by probe_vaddr
    // enter_stage(stage) with a stage only known at run time (exit_cond()
    // restoring the previous stage, ...): same probe shape, no static name;
    // read THD::proc_info there instead.
    std::vector<StageSite> dynamic_sites;
    size_t lea_refs = 0;  // lea of a stage_ symbol seen (sites or calls such as set_thd_stage_info)
    int64_t proc_info = -1;  // the THD offsets the sites store to (from the layout, or voted)
    int64_t stage_key = -1;
};

// When the layout lacks proc_info/stage_key, they are learnt from the sites
// (the most common pair of store offsets) and returned in the scan.
Result<StageScan> find_stage_sites(const elf::ElfFile &file, const ThdLayout &layout);

}  // namespace mysqltrace::server
