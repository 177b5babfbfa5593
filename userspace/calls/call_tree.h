// SPDX-License-Identifier: GPL-2.0-only
// Rebuilds per-thread call trees from the records of bpf/calls.bpf.c.
//
// Each thread keeps a stack of open calls with the stack pointer at their
// entry (where the return address sits). Stack pointers, not record order
// alone, decide what is still open, so the tree heals itself:
// - a return matches the open call of its function whose entry sp is its own
//   sp - 8; calls above it (deeper) were left without returning (longjmp, an
//   exception, or lost records);
// - an entry, a USDT probe or a return at stack pointer S proves that every
//   open call whose return address lay below S has ended;
// - an entry at the very slot of an open call, whose return address is
//   already the return-probe trampoline, is a tail call: it nests.
// Per-thread record sequence numbers show exactly where records were lost.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <vector>

namespace mysqltrace::calls {

// One record of bpf/calls.bpf.c, decoded (kind: enum mt_call_kind).
struct CallRecord {
    uint32_t kind = 0;
    uint32_t tid = 0;
    uint64_t ts_ns = 0;
    uint64_t seq = 0;
    uint32_t func = 0;
    uint64_t sp = 0;
    uint64_t value = 0;
};

// Decodes a ring record; false when it is not a well-formed MT_EV_CALL record.
bool decode_call_record(std::span<const uint8_t> rec, CallRecord *out);

enum class EventKind {
    call,
    ret,
    usdt,
    lost,
    unwind,  // an unwinder started: func = enum mt_call_unwinder, value = probes lifted
    caught,  // an exception was caught: value = return probes re-armed
};

// How a call ended.
enum class EndHow {
    returned,      // its return probe fired
    unwound,       // left without returning: longjmp (or an unguarded unwind)
    exception,     // unwound by an exception, caught further up
    return_lost,   // no return seen, and records of the thread were lost meanwhile
    lifted,        // no return seen: its return probe was lifted for an unwind
    too_deep,      // no return seen: entered with 64 return probes already pending
    thread_exit,   // the thread exited inside it
    trace_end,     // still running when the trace ended
    entry_unseen,  // a return whose entry was not seen (lost, or before the trace)
};

const char *end_how_text(EndHow h);

struct CallEvent {
    EventKind kind = EventKind::call;
    uint32_t tid = 0;
    uint64_t ts_ns = 0;
    // Nesting level: 1 for a thread's outermost traced call. A USDT
    // annotation or a loss mark sits one below the innermost open call.
    uint32_t depth = 0;
    // call/ret: index into the function table; usdt: annotation index.
    uint32_t func = 0;
    // call/ret: the entry's return address (the caller's call site), 0 if unknown.
    uint64_t call_site = 0;
    // call/ret: the enclosing open call's function, -1 if none.
    int64_t parent = -1;
    bool tail_call = false;
    EndHow how = EndHow::returned;  // ret
    uint64_t duration_ns = 0;       // ret: since the entry (0 for entry_unseen)
    uint64_t value = 0;             // ret: rax when returned or entry_unseen; usdt: argument
    uint64_t lost = 0;              // lost: records lost here
};

struct CallTreeOptions {
    // Calls deeper than this are followed but not reported (0: no limit).
    uint32_t max_depth = 0;
    // True for an address in the uprobe trampoline page.
    std::function<bool(uint64_t)> is_trampoline;
};

struct CallTreeStats {
    uint64_t calls = 0;           // entries seen
    uint64_t returns = 0;         // returns matched to their entry
    uint64_t unmatched = 0;       // calls closed without a return (all reasons but trace_end)
    uint64_t orphan_returns = 0;  // returns whose entry was not seen
    uint64_t lost = 0;            // records lost (sequence gaps)
    uint64_t late = 0;            // records that came after later ones of their thread
    uint64_t annotations = 0;     // USDT hits
    uint64_t unwinds = 0;         // unwinder entries (throws, forced unwinds, stack walks)
    uint64_t hidden = 0;          // events deeper than max_depth, not reported
    uint64_t open_at_end = 0;     // calls still open at finish()
};

// The kernel arms at most this many return probes per thread
// (MAX_URETPROBE_DEPTH): calls nested deeper get no return probe.
inline constexpr size_t kMaxPendingReturns = 64;

class CallTree {
  public:
    using Sink = std::function<void(const CallEvent &)>;
    CallTree(Sink sink, CallTreeOptions opts);

    // Records of all threads, each thread's in its own order.
    void add(const CallRecord &rec);
    // Closes every call still open (EndHow::trace_end) at `ts_ns`, threads
    // in tid order.
    void finish(uint64_t ts_ns);

    const CallTreeStats &stats() const { return stats_; }
    // Open calls of `tid` (for tests).
    size_t depth(uint32_t tid) const;

  private:
    struct Frame {
        uint32_t func;
        uint64_t sp;
        uint64_t ts_ns;
        uint64_t call_site;
        uint64_t losses;  // the thread's loss count when it was entered
        bool tail_call;
        bool lifted = false;  // an unwinder put its return address back
    };
    struct Thread {
        std::vector<Frame> stack;
        uint64_t last_seq = 0;
        uint64_t losses = 0;  // gaps seen so far
    };

    void emit(CallEvent &ev);
    // An event of `rec` one below the thread's innermost open call (an
    // annotation, an unwinder, a return whose entry was not seen).
    static CallEvent above_top(EventKind kind, const CallRecord &rec, const Thread &t);
    void close_top(uint32_t tid, Thread &t, uint64_t ts, EndHow how, uint64_t retval);
    // Closes open calls whose return address lies below `sp` (or at it,
    // with `at_too`), as left without returning.
    void close_below(uint32_t tid, Thread &t, uint64_t sp, bool at_too, uint64_t ts,
                     EndHow how = EndHow::unwound);

    Sink sink_;
    CallTreeOptions opts_;
    std::map<uint32_t, Thread> threads_;
    CallTreeStats stats_;
};

}  // namespace mysqltrace::calls
