// SPDX-License-Identifier: GPL-2.0-only
#include <cerrno>
#include <iostream>

#include "cli/command.h"

namespace mysqltrace::cli {

void add_trace_options(CLI::App *cmd, TraceArgs &args, const std::vector<std::string> &formats) {
    cmd->add_option("-f,--format", args.format, "Output format")
        ->check(CLI::IsMember(formats))
        ->capture_default_str();
    auto *output = cmd->add_option("-o,--output", args.output,
                                   "Write events here (created 0600) instead of stdout");
    cmd->add_option("-d,--duration", args.duration,
                    "Stop after this many seconds (default: Ctrl-C or the traced process's exit)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--ring-kib", args.ring_kib, "Ring buffer size per CPU, KiB")
        ->check(CLI::Range(4, 1 << 20))
        ->capture_default_str();
    cmd->add_option("--rotate-size", args.rotate_size,
                    "With --output FILE: before FILE would grow past SIZE (bytes, or with a "
                    "k/M/G suffix: 100M), rename it to FILE.1 (FILE.1 to FILE.2, ...) and "
                    "start a new FILE; an existing FILE is then rotated instead of truncated")
        ->transform(CLI::AsSizeValue(false))
        ->check(CLI::Range(uint64_t{1024}, uint64_t{1} << 50))
        ->option_text("SIZE")
        ->needs(output);
    cmd->add_option("--rotate-keep", args.rotate_keep,
                    "Rotated files kept with --rotate-size (FILE.1 ... FILE.N); 0 keeps none")
        ->check(CLI::Range(0, 1000))
        ->capture_default_str();
    cmd->add_option("--reader-nice", args.reader_nice,
                    "Fixed scheduling priority (nice) of the thread that reads the ring buffers. "
                    "By default it runs at nice -20 while it falls behind (a ring buffer a "
                    "quarter full when it wakes) and for the first seconds of a trace, and "
                    "competes like any other thread once it has kept up for 10 s: on a machine "
                    "whose CPUs the traced programs keep busy it would otherwise get too little "
                    "CPU and drop records. Should a ring still be half full when it wakes, it "
                    "runs real-time (SCHED_RR, lowest priority) until it keeps up again. The "
                    "end of the trace says when it fell behind. A fixed value turns this off: 19 "
                    "never takes CPU from the traced programs (records are dropped, and "
                    "counted, instead)")
        ->check(CLI::Range(-20, 19));
}

Result<std::unique_ptr<output::OutputFile>> open_trace_output(const TraceArgs &args,
                                                              bool to_stderr) {
    if (args.rotate_size > 0 && (args.output.empty() || args.output == "-")) {
        return Error{EINVAL, "--rotate-size needs --output FILE"};
    }
    return output::OutputFile::open(args.output, to_stderr,
                                    output::Rotation{args.rotate_size, args.rotate_keep});
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
