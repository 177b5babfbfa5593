// SPDX-License-Identifier: GPL-2.0-only
#include "trace/reader_priority.h"

#include <cerrno>
#include <cstring>

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include "output/units.h"

namespace mysqltrace::trace {

ReaderPriority::ReaderPriority(std::optional<int> fixed, int current_nice, Setter set,
                               RealtimeSetter realtime)
    : fixed_(fixed),
      base_(current_nice),
      nice_(current_nice),
      set_(std::move(set)),
      realtime_set_(std::move(realtime)) {}

ReaderPriority ReaderPriority::for_this_thread(std::optional<int> fixed) {
    const auto tid = static_cast<id_t>(gettid());
    errno = 0;
    const int current = getpriority(PRIO_PROCESS, tid);
    return ReaderPriority(
        fixed, errno == 0 ? current : 0,
        [tid](int nice) { return setpriority(PRIO_PROCESS, tid, nice) == 0 ? 0 : errno; },
        [tid](bool on) {
            // Back to SCHED_OTHER keeps the thread's nice value. Threads and
            // processes it starts never inherit SCHED_RR.
            const sched_param param{.sched_priority = on ? 1 : 0};
            const int policy = on ? SCHED_RR | SCHED_RESET_ON_FORK : SCHED_OTHER;
            return sched_setscheduler(static_cast<pid_t>(tid), policy, &param) == 0 ? 0 : errno;
        });
}

Result<void> ReaderPriority::start(uint64_t now_ns) {
    if (!fixed_) {
        // A trace starts with bursts (attaching mid-run, connections made
        // at once) while the reader has yet to see a ring: it starts raised,
        // and drops back once it has kept up for kCalmNs. Refused (no
        // CAP_SYS_NICE): it starts where it is.
        if (kRaised < nice_ && set_(kRaised) == 0) {
            nice_ = kRaised;
            raised_since_ = now_ns;
        }
        return {};
    }
    if (*fixed_ == nice_) {
        return {};
    }
    if (int err = set_(*fixed_); err != 0) {
        return make_error(-err, "cannot set the reader's priority to nice " +
                                    std::to_string(*fixed_) + " (--reader-nice)");
    }
    nice_ = *fixed_;
    return {};
}

void ReaderPriority::set(int nice, uint64_t now_ns) {
    if (nice == nice_) {
        return;
    }
    if (int err = set_(nice); err != 0) {
        failed_errno_ = err;
        return;
    }
    if (nice_ == base_) {
        raised_since_ = now_ns;
    }
    if (nice == base_) {
        raised_ns_ += now_ns - raised_since_;
    }
    nice_ = nice;
}

void ReaderPriority::set_realtime(bool on, uint64_t now_ns) {
    if (on == realtime_ || (on && rt_errno_ != 0)) {
        return;
    }
    if (int err = realtime_set_(on); err != 0) {
        if (on) {
            rt_errno_ = err;
        }
        return;
    }
    realtime_ = on;
    if (on) {
        rt_times_++;
        rt_since_ = now_ns;
    } else {
        rt_ns_ += now_ns - rt_since_;
    }
}

void ReaderPriority::check(double fill, uint64_t now_ns) {
    if (fixed_ || failed_errno_ != 0) {
        return;
    }
    if (fill >= kBehind) {
        if (!behind_) {
            behind_ = true;
            falls_++;
        }
        set(kRaised, now_ns);
        if (fill >= kUrgent) {
            set_realtime(true, now_ns);
        }
        calm_ = false;
        return;
    }
    if (fill < kKeepingUp) {
        behind_ = false;
        set_realtime(false, now_ns);
    }
    if (nice_ == base_ || fill >= kKeepingUp) {
        calm_ = false;
        return;
    }
    if (!calm_) {
        calm_ = true;
        calm_since_ = now_ns;
    } else if (now_ns - calm_since_ >= kCalmNs) {
        set(base_, now_ns);
        calm_ = false;
    }
}

void ReaderPriority::finish(uint64_t now_ns) {
    set_realtime(false, now_ns);
    if (!fixed_ && nice_ != base_) {
        set(base_, now_ns);
    }
}

std::string ReaderPriority::note(bool hint) const {
    if (failed_errno_ != 0) {
        return "mysqltrace: the reader fell behind and could not raise its priority (" +
               std::string(std::strerror(failed_errno_)) + "): records may be dropped" +
               (hint ? "; --reader-nice needs CAP_SYS_NICE" : "");
    }
    if (falls_ == 0) {
        return "";
    }
    std::string s = "mysqltrace: the reader fell behind " + std::to_string(falls_) +
                    (falls_ == 1 ? " time" : " times") + "; it ran at nice " +
                    std::to_string(kRaised) + " for ";
    output::append_fixed(s, raised_ns_, 1'000'000'000, 1);
    s += " s in all";
    if (rt_times_ > 0) {
        s += ", real-time (SCHED_RR) " + std::to_string(rt_times_) +
             (rt_times_ == 1 ? " time for " : " times for ");
        output::append_fixed(s, rt_ns_, 1'000'000'000, 3);
        s += " s of it";
    }
    if (rt_errno_ != 0) {
        s += ", real-time refused (" + std::string(std::strerror(rt_errno_)) + ")";
    }
    return s + (hint ? " (--reader-nice N fixes its priority)" : "");
}

}  // namespace mysqltrace::trace
