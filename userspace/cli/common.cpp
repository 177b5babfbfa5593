// SPDX-License-Identifier: GPL-2.0-only
#include <iostream>

#include "cli/command.h"

namespace mysqltrace::cli {

void add_trace_options(CLI::App *cmd, TraceArgs &args, const std::vector<std::string> &formats) {
    cmd->add_option("-f,--format", args.format, "Output format")
        ->check(CLI::IsMember(formats))
        ->capture_default_str();
    cmd->add_option("-o,--output", args.output,
                    "Write events here (created 0600) instead of stdout");
    cmd->add_option("-d,--duration", args.duration,
                    "Stop after this many seconds (default: Ctrl-C or the traced process's exit)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--ring-kib", args.ring_kib, "Ring buffer size per CPU, KiB")
        ->check(CLI::Range(4, 1 << 20))
        ->capture_default_str();
}

int report_end(const std::string &totals, const bpf::RingStats &stats,
               const Result<trace::StopReason> &stop, const Result<void> &flushed) {
    std::cerr << "mysqltrace: " << totals << ", " << trace::drop_summary(stats);
    if (stop) {
        std::cerr << "; " << trace::stop_reason_text(*stop);
    }
    std::cerr << "\n";
    if (!stop || !flushed) {
        std::cerr << "mysqltrace: " << (!stop ? stop.error() : flushed.error()).message << "\n";
        return kExitFailure;
    }
    return kExitOk;
}

}  // namespace mysqltrace::cli
