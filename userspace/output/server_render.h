// SPDX-License-Identifier: GPL-2.0-only
// Server statements and stages as text rows, performance_schema-shaped JSON,
// or SHOW PROFILE-like tables (shared/DESIGN.md "Output formats").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "output/clock.h"
#include "server/stage_sites.h"
#include "server/statement.h"

namespace mysqltrace::output {

enum class ServerFormat { text, json, profile };

class ServerRenderer {
  public:
    // `sites`: the stage-site table exact marks index; `name_at`: the stage
    // name at a server address (sampled stages).
    ServerRenderer(ServerFormat format, uint32_t pid, const std::vector<server::StageSite> &sites,
                   std::function<std::string(uint64_t)> name_at);

    std::string header() const;
    // The rows of one statement (and its stages); also feeds the summary.
    std::string statement(const server::Statement &st);
    // Sampled stage shares per statement class, at the end of a trace
    // (empty when nothing was sampled).
    std::string summary();

  private:
    struct StageTotals {
        uint64_t on_cpu = 0;
        uint64_t off_cpu_ns = 0;
        uint64_t switches = 0;
    };
    struct ClassTotals {
        std::string event_name;
        uint64_t count = 0;
        uint64_t wait_ns = 0;
        uint64_t cpu_ns = 0;
        uint64_t period_us = 0;
        uint64_t samples_lost = 0;
        std::map<std::string, StageTotals> stages;
    };
    struct StageRow {
        std::string name, function, file;
        uint32_t line = 0;
        uint64_t start_ns = 0, end_ns = 0;
        server::TaskCounters used;
    };
    std::vector<StageRow> stage_rows(const server::Statement &st) const;
    std::string text_rows(const server::Statement &st, const std::vector<StageRow> &rows,
                          uint64_t event_id);
    std::string json_rows(const server::Statement &st, const std::vector<StageRow> &rows,
                          uint64_t event_id);
    std::string profile_rows(const server::Statement &st, const std::vector<StageRow> &rows);

    ServerFormat format_;
    uint32_t pid_;
    const std::vector<server::StageSite> &sites_;
    std::function<std::string(uint64_t)> name_at_;
    Clock clock_;
    std::map<uint64_t, uint64_t> next_event_id_;  // per THREAD_ID
    std::map<std::string, ClassTotals> classes_;  // by digest text
};

}  // namespace mysqltrace::output
