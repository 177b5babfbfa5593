// SPDX-License-Identifier: GPL-2.0-only
// The one loop every tracing command runs: drain the rings until Ctrl-C /
// SIGTERM, --duration, or every traced process has exited, then flush.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>
#include <sys/types.h>

#include "bpf/ring_set.h"
#include "util/result.h"

namespace mysqltrace::trace {

enum class StopReason { signal, duration, targets_exited };

const char *stop_reason_text(StopReason r);

struct LoopOptions {
    double duration_s = 0;          // 0: until stopped
    std::vector<pid_t> targets;     // stop when all of these have exited
    int tick_ms = 100;              // how often aged records are released
    std::function<void()> on_tick;  // once a second, e.g. live counters with -v
    // Asked after each batch of records: true ends the trace as
    // targets_exited (processes followed across forks end this way).
    std::function<bool()> all_exited;
    // SIGINT, SIGTERM or SIGHUP arrived: true ends the trace (the default
    // without a handler), false goes on (`run` waits for its command).
    std::function<bool(int signo)> on_signal;
    // After Ctrl-C or --duration, records keep being drained this long before
    // the loop returns: the probe at the end of a statement fires just after
    // the client has its reply, and a stop that a script sends on seeing the
    // reply would otherwise lose that statement.
    int grace_ms = 50;
    // The reading thread's nice value, set when the loop starts. Unset, the
    // reader raises its priority only while it falls behind
    // (trace/reader_priority.h). Threads and processes started before keep
    // their own.
    std::optional<int> reader_nice;
    // Further rings drained by the same loop (a server traced alongside the
    // clients: `client --server-pid`).
    std::vector<bpf::RingSet *> more_rings;
};

// "0 records dropped", or with the reasons: ring buffers full, or every
// scratch slot of a CPU taken.
std::string drop_summary(const bpf::RingStats &st);

// SIGINT, SIGTERM and SIGHUP are blocked for the whole process and read
// through a signalfd while the loop runs, so a Ctrl-C always ends in a clean
// flush.
Result<StopReason> run_loop(bpf::RingSet &rings, const LoopOptions &opts);

// Blocks SIGINT, SIGTERM and SIGHUP for run_loop's signalfd. Call before
// printing "Ctrl-C to stop": a Ctrl-C between that line and the loop then
// waits for the loop instead of killing the process with nothing flushed.
void block_stop_signals();

}  // namespace mysqltrace::trace
