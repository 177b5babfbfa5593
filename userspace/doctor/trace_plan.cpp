// SPDX-License-Identifier: GPL-2.0-only
#include "doctor/trace_plan.h"

#include "doctor/server_report.h"

namespace mysqltrace::doctor {

TracePlan plan_trace(const server::ServerTarget &target, server::StageMode requested, pid_t pid) {
    TracePlan plan;
    // A build whose layout is only partly understood: say what will be
    // missing; nothing is guessed.
    std::string lacking;
    for (const auto &m : server_modes(target)) {
        if (!m.found && m.name.starts_with("  ")) {  // a statement column
            std::string name = m.name;
            name.erase(0, name.find_first_not_of(' '));
            lacking += "\nmysqltrace:   " + name + ": " + m.detail;
        }
    }
    if (!lacking.empty()) {
        plan.notes.push_back("this build's analysis is incomplete (`mysqltrace doctor --pid " +
                             std::to_string(pid) +
                             "` for details); statements are traced without:" + lacking);
    }
    auto mode = requested;
    const bool mysql8 = target.profile == server::ServerProfile::mysql8;
    const bool exact = mode == server::StageMode::exact || mode == server::StageMode::traps;
    if (target.end_is_return) {
        plan.notes.push_back(
            "no end-of-command stage site in this build: a return probe on dispatch_command ends "
            "statements (dearer)");
    }
    if (exact && target.stages.empty()) {
        plan.notes.push_back(mysql8 ? "no out-of-line THD::enter_stage to probe in this build: "
                                      "stages are sampled instead"
                                    : "no stage sites found in this build (the inlined "
                                      "THD::enter_stage pattern): stages are sampled instead");
        mode = server::StageMode::sampled;
    }
    // MySQL 8's exact stages read the stage from THD::enter_stage's argument.
    const bool needs_proc_info = !(mysql8 && exact && !target.stages.empty());
    if (mode != server::StageMode::off && needs_proc_info && target.layout.proc_info < 0) {
        plan.notes.push_back(
            std::string("cannot find THD::proc_info in this build (") +
            (mysql8 ? "THD::enter_stage's stores of the new stage, checked against its copy of "
                      "the old one"
                    : "set_thd_stage_info()'s stores") +
            "): stages are off; statements, --waits and --table-io still work");
        mode = server::StageMode::off;
    }
    plan.stages = mode;
    return plan;
}

std::string server_flavour(server::ServerProfile profile, const std::string &version) {
    if (version.find("MariaDB") != std::string::npos) {
        return "MariaDB";
    }
    return profile == server::ServerProfile::mariadb ? "MariaDB" : "MySQL";
}

}  // namespace mysqltrace::doctor
