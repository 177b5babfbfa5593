// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace doctor`: can this machine trace, and if not, what is missing.
// Each check proves its point by doing the thing (create the map, attach the
// probe and see it fire), not by reading configuration.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace mysqltrace::doctor {

enum class Status { ok, fail };

struct Check {
    std::string name;
    Status status = Status::ok;
    std::string detail;
    std::string remedy;  // one line, set on failure
};

struct DoctorOptions {
    int probe_hits = 100;  // hits per probe kind in the delivery proofs
};

std::vector<Check> run_checks(const DoctorOptions &opts);

// An aligned table; each failure is followed by its remedy.
void print_report(const std::vector<Check> &checks, std::ostream &out);

bool all_ok(const std::vector<Check> &checks);

}  // namespace mysqltrace::doctor
