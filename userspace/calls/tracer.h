// SPDX-License-Identifier: GPL-2.0-only
// Loads bpf/calls.bpf.c and attaches it to a process: entry and return
// probes on the selected functions (one uprobe_multi link per file and
// direction, sharing each entry's trap), USDT annotations, and the thread
// exit tracepoint. Records go to the per-CPU rings and, decoded, to a sink.
#pragma once

#include <cstdint>
#include <functional>
#include <atomic>
#include <memory>
#include <thread>
#include <string>
#include <vector>
#include <sys/types.h>

#include "bpf/handles.h"
#include "bpf/ring_set.h"
#include "calls/call_tree.h"
#include "calls/functions.h"
#include "util/result.h"

struct calls;
struct ring_buffer;

namespace mysqltrace::calls {

// One USDT probe to show as an annotation.
struct UsdtSite {
    size_t file = 0;  // index into Selection::files
    std::string provider, name;
    uint32_t annotation = 0;  // index into the annotation labels
};

struct UsdtPlan {
    std::vector<UsdtSite> sites;
    std::vector<std::string> labels;  // "provider:name", by annotation index
};

// Finds the probes `specs` ("provider:name", globs allowed in both parts)
// name in the mapped files. Fails with a clear message when a spec is
// malformed or matches nothing.
Result<UsdtPlan> plan_usdt(const std::vector<MappedFile> &files,
                           const std::vector<std::string> &specs);

struct CallTracerOptions {
    pid_t pid = 0;
    uint32_t tid = 0;         // 0: every thread
    bool traps_only = false;  // probes fire but record nothing (benchmarks)
    bpf::RingOptions ring;
};

class CallTracer {
  public:
    static Result<std::unique_ptr<CallTracer>> attach(const Selection &sel, const UsdtPlan &usdt,
                                                      const CallTracerOptions &opts,
                                                      std::function<void(const CallRecord &)> sink);
    ~CallTracer();
    CallTracer(const CallTracer &) = delete;
    CallTracer &operator=(const CallTracer &) = delete;

    bpf::RingSet &rings() { return *rings_; }
    // Records that were not well-formed call records (should stay 0).
    uint64_t undecodable() const { return undecodable_; }
    // How the unwinders of the process are kept working (bpf/calls.bpf.c).
    enum class Guard { none, write, stop };
    Guard guard() const { return guard_; }
    // Stop way: unwinds whose return addresses were put back, and those
    // that could not be (the process may then have aborted).
    uint64_t fixups() const { return fixups_.load(); }
    uint64_t fixups_failed() const;

  private:
    CallTracer() = default;
    static int on_fixup(void *ctx, void *data, size_t size);
    void fixer_main();

    ::calls *skel_ = nullptr;
    std::unique_ptr<bpf::RingSet> rings_;
    std::vector<bpf::Fd> multi_links_;
    std::vector<bpf::Link> links_;
    std::function<void(const CallRecord &)> sink_;
    uint64_t undecodable_ = 0;
    Guard guard_ = Guard::none;
    // Stop way: a thread of our own serves fix-up requests at once, apart
    // from the trace loop and its reorder window.
    ring_buffer *fixup_ring_ = nullptr;
    std::thread fixer_;
    std::atomic<bool> stopping_{false};
    std::atomic<uint64_t> fixups_{0};
    std::atomic<uint64_t> fixup_errors_{0};
};

}  // namespace mysqltrace::calls
