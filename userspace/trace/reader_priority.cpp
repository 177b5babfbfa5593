// SPDX-License-Identifier: GPL-2.0-only
#include "trace/reader_priority.h"

#include <cstring>

#include "output/units.h"

namespace mysqltrace::trace {

ReaderPriority::ReaderPriority(std::optional<int> fixed, int current_nice, Setter set)
    : fixed_(fixed),
      base_(current_nice),
      nice_(current_nice),
      set_(std::move(set)),
      highest_(current_nice) {}

Result<void> ReaderPriority::start() {
    if (!fixed_ || *fixed_ == nice_) {
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
    if (nice < nice_ && nice_ == base_) {
        raises_++;
        raised_since_ = now_ns;
    }
    if (nice == base_ && raised_since_ != 0) {
        raised_ns_ += now_ns - raised_since_;
        raised_since_ = 0;
    }
    nice_ = nice;
    highest_ = std::min(highest_, nice);
}

void ReaderPriority::check(double fill, uint64_t now_ns) {
    if (fixed_ || failed_errno_ != 0) {
        return;
    }
    if (fill >= kFarBehind) {
        set(std::min(nice_, kHighest), now_ns);
    } else if (fill >= kBehind) {
        set(std::min(nice_, kRaised), now_ns);
    }
    if (nice_ == base_ || fill >= kKeepingUp) {
        calm_since_ = 0;
        return;
    }
    if (calm_since_ == 0) {
        calm_since_ = now_ns;
    } else if (now_ns - calm_since_ >= kCalmNs) {
        set(base_, now_ns);
        calm_since_ = 0;
    }
}

void ReaderPriority::finish(uint64_t now_ns) {
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
    if (raises_ == 0) {
        return "";
    }
    std::string s = "mysqltrace: the reader fell behind " + std::to_string(raises_) +
                    (raises_ == 1 ? " time" : " times") + " and ran at up to nice " +
                    std::to_string(highest_) + " for ";
    output::append_fixed(s, raised_ns_, 1'000'000'000, 1);
    return s + " s to catch up" + (hint ? " (--reader-nice N fixes its priority)" : "");
}

}  // namespace mysqltrace::trace
