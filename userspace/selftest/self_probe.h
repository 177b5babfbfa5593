// SPDX-License-Identifier: GPL-2.0-only
// Loads bpf/selftest.bpf.c and attaches its probes: the end-to-end proof used
// by `mysqltrace doctor` and by the probe-delivery tests. Every record that
// reaches the rings is kept, in delivery order.
#pragma once

#include <memory>
#include <string>
#include <vector>
#include <sys/types.h>

#include "bpf/handles.h"
#include "bpf/ring_set.h"
#include "mysqltrace/abi/event.h"
#include "util/result.h"

struct selftest;

namespace mysqltrace::selftest {

struct SelfProbeOptions {
    pid_t target_tgid = 0;     // only this process's hits are recorded
    long target_syscall = -1;  // syscall number the tracepoint program counts
    bpf::RingOptions ring;
};

class SelfProbe {
  public:
    static Result<std::unique_ptr<SelfProbe>> load(const SelfProbeOptions &opts);
    ~SelfProbe();

    // pid -1 attaches for every process: the BPF side then does the filtering.
    Result<void> attach_uprobe(pid_t pid, const std::string &path, uint64_t offset,
                               uint64_t cookie);
    Result<void> attach_usdt(pid_t pid, const std::string &path, const std::string &provider,
                             const std::string &name, uint64_t cookie);
    Result<void> attach_syscall();

    Result<int> poll(int timeout_ms) { return rings_->poll(timeout_ms); }
    Result<void> flush() { return rings_->flush(); }
    const std::vector<mt_selftest_event> &events() const { return events_; }
    bpf::RingStats stats() const { return rings_->stats(); }
    // Records that were not well-formed selftest records (should stay 0).
    uint64_t foreign_records() const { return foreign_records_; }
    int cpu_count() const { return rings_->cpu_count(); }

  private:
    SelfProbe() = default;

    ::selftest *skel_ = nullptr;
    std::unique_ptr<bpf::RingSet> rings_;
    std::vector<bpf::Link> links_;
    std::vector<mt_selftest_event> events_;
    uint64_t foreign_records_ = 0;
};

}  // namespace mysqltrace::selftest
