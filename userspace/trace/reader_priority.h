// SPDX-License-Identifier: GPL-2.0-only
// The ring reader's scheduling priority. Given --reader-nice, it is fixed.
// Without it the reader competes like any other thread while it keeps up,
// and takes priority while it falls behind: on a machine whose CPUs the
// traced programs saturate (200 sysbench connections on 2 CPUs) a thread at
// the default nice gets a slice too small for the ~8% of a core the reader
// needs, and the rings overflow. Behind means the fullest ring holds a
// quarter of its size when the reader wakes (it is woken at an eighth); the
// work it then does is due anyway, only sooner. It also starts raised, for
// the bursts a trace starts with, until it has kept up for kCalmNs.
// Where nice -20 is not enough (hundreds of runnable threads on 2 CPUs: the
// fair scheduler still gives each its slice), a ring half full when the
// reader wakes makes it real-time (SCHED_RR, the lowest priority) until its
// next wakeup finds it keeping up: it then runs as soon as it is woken, for
// the moments it takes to drain, and the kernel's real-time throttling
// bounds it anyway.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "util/result.h"

namespace mysqltrace::trace {

class ReaderPriority {
  public:
    // set(nice) changes the calling thread's nice value; 0 or an errno.
    using Setter = std::function<int(int nice)>;
    // realtime(on) makes the calling thread SCHED_RR or back to SCHED_OTHER
    // (keeping its nice value); 0 or an errno.
    using RealtimeSetter = std::function<int(bool on)>;
    // Unset `fixed`: adaptive, starting from the thread's current nice.
    ReaderPriority(std::optional<int> fixed, int current_nice, Setter set, RealtimeSetter realtime);
    // For the calling thread (Linux keeps a nice value per thread).
    static ReaderPriority for_this_thread(std::optional<int> fixed);

    // Applies a fixed value (an error names --reader-nice), or raises the
    // priority for the start of the trace.
    Result<void> start(uint64_t now_ns);
    // At each wakeup, before draining: the fullest ring's unread share.
    void check(double fill, uint64_t now_ns);
    // Back to where it started (end of the trace).
    void finish(uint64_t now_ns);

    int nice() const { return nice_; }
    bool realtime() const { return realtime_; }
    // Times it went real-time, and for how long in all.
    unsigned realtime_times() const { return rt_times_; }
    uint64_t realtime_ns() const { return rt_ns_; }
    // Times it fell behind (a quarter-full ring, after having kept up).
    unsigned falls_behind() const { return falls_; }
    uint64_t raised_ns() const { return raised_ns_; }
    // One line for the end of a trace when the reader had to raise its
    // priority (or could not); empty otherwise. `hint`: how to fix it.
    std::string note(bool hint = true) const;

    static constexpr double kBehind = 0.25;       // -> kRaised
    static constexpr double kKeepingUp = 0.1875;  // for kCalmNs: back to the start
    // -10 was not enough: with 200 sysbench connections on 2 CPUs a reader
    // at -10 still dropped 23k-54k records in 8 s, at -20 none.
    static constexpr int kRaised = -20;
    // Half full at a wakeup: nice -20 did not get it enough CPU (-> SCHED_RR
    // until a wakeup below kKeepingUp). With 200 sysbench connections on 2
    // CPUs a reader at -20 dropped 38k records in 1 of 5 runs of 8 s.
    static constexpr double kUrgent = 0.5;
    // A machine saturated once tends to stay so: raised priority costs
    // nothing while there is nothing to read, falling behind again does.
    static constexpr uint64_t kCalmNs = 10'000'000'000;

  private:
    void set(int nice, uint64_t now_ns);
    void set_realtime(bool on, uint64_t now_ns);

    std::optional<int> fixed_;
    int base_;
    int nice_;
    Setter set_;
    RealtimeSetter realtime_set_;
    unsigned falls_ = 0;
    bool behind_ = false;
    uint64_t raised_since_ = 0;  // while not at base_
    uint64_t raised_ns_ = 0;
    bool calm_ = false;  // keeping up, while raised, since calm_since_
    uint64_t calm_since_ = 0;
    int failed_errno_ = 0;  // raising was refused (no CAP_SYS_NICE)
    bool realtime_ = false;
    unsigned rt_times_ = 0;
    uint64_t rt_since_ = 0;
    uint64_t rt_ns_ = 0;
    int rt_errno_ = 0;  // SCHED_RR was refused: not tried again
};

}  // namespace mysqltrace::trace
