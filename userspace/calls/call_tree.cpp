// SPDX-License-Identifier: GPL-2.0-only
#include "calls/call_tree.h"

#include <cstring>

#include "mysqltrace/abi/event.h"

namespace mysqltrace::calls {

static_assert(sizeof(mt_call_event) == 64, "mt_call_event layout changed: bump MT_ABI_VERSION");

bool decode_call_record(std::span<const uint8_t> rec, CallRecord *out) {
    mt_call_event ev;
    if (rec.size() != sizeof(ev)) {
        return false;
    }
    std::memcpy(&ev, rec.data(), sizeof(ev));
    if (ev.hdr.type != MT_EV_CALL || ev.hdr.size != sizeof(ev) || ev.kind < MT_CALL_ENTRY ||
        ev.kind > MT_CALL_CATCH) {
        return false;
    }
    out->kind = ev.kind;
    out->tid = ev.hdr.tid;
    out->ts_ns = ev.hdr.ts_ns;
    out->seq = ev.seq;
    out->func = ev.func;
    out->sp = ev.sp;
    out->value = ev.value;
    return true;
}

const char *end_how_text(EndHow h) {
    switch (h) {
        case EndHow::returned:
            return "returned";
        case EndHow::unwound:
            return "no return: longjmp";
        case EndHow::exception:
            return "no return: unwound by an exception";
        case EndHow::lifted:
            return "no return seen: return probe lifted for an unwind";
        case EndHow::return_lost:
            return "no return seen: records lost";
        case EndHow::too_deep:
            return "no return seen: nested too deep for a return probe";
        case EndHow::thread_exit:
            return "no return: thread exited";
        case EndHow::trace_end:
            return "still running when the trace ended";
        case EndHow::entry_unseen:
            return "entry not seen";
    }
    return "?";
}

CallTree::CallTree(Sink sink, CallTreeOptions opts)
    : sink_(std::move(sink)), opts_(std::move(opts)) {}

size_t CallTree::depth(uint32_t tid) const {
    auto it = threads_.find(tid);
    return it == threads_.end() ? 0 : it->second.stack.size();
}

void CallTree::emit(CallEvent &ev) {
    if (opts_.max_depth != 0 && ev.depth > opts_.max_depth && ev.kind != EventKind::lost) {
        stats_.hidden++;
        return;
    }
    sink_(ev);
}

CallEvent CallTree::above_top(EventKind kind, const CallRecord &rec, const Thread &t) {
    CallEvent ev;
    ev.kind = kind;
    ev.tid = rec.tid;
    ev.ts_ns = rec.ts_ns;
    ev.depth = static_cast<uint32_t>(t.stack.size() + 1);
    ev.func = rec.func;
    ev.parent = t.stack.empty() ? int64_t{-1} : int64_t{t.stack.back().func};
    ev.value = rec.value;
    return ev;
}

void CallTree::close_top(uint32_t tid, Thread &t, uint64_t ts, EndHow how, uint64_t retval) {
    const Frame f = t.stack.back();
    CallEvent ev;
    ev.kind = EventKind::ret;
    ev.tid = tid;
    ev.ts_ns = ts;
    ev.depth = static_cast<uint32_t>(t.stack.size());
    ev.func = f.func;
    ev.call_site = f.call_site;
    ev.parent = t.stack.size() >= 2 ? int64_t{t.stack[t.stack.size() - 2].func} : int64_t{-1};
    ev.tail_call = f.tail_call;
    if (how == EndHow::unwound && t.stack.size() > kMaxPendingReturns) {
        how = EndHow::too_deep;
    } else if (how == EndHow::unwound && f.lifted) {
        how = EndHow::lifted;
    } else if (how == EndHow::unwound && t.losses != f.losses) {
        how = EndHow::return_lost;
    }
    ev.how = how;
    if (how == EndHow::returned) {
        ev.duration_ns = ts >= f.ts_ns ? ts - f.ts_ns : 0;
        ev.value = retval;
        stats_.returns++;
    } else if (how == EndHow::trace_end) {
        stats_.open_at_end++;
    } else {
        stats_.unmatched++;
    }
    t.stack.pop_back();
    emit(ev);
}

void CallTree::close_below(uint32_t tid, Thread &t, uint64_t sp, bool at_too, uint64_t ts,
                           EndHow how) {
    while (!t.stack.empty() && (t.stack.back().sp < sp || (at_too && t.stack.back().sp == sp))) {
        close_top(tid, t, ts, how, 0);
    }
}

void CallTree::add(const CallRecord &rec) {
    Thread &t = threads_[rec.tid];
    if (rec.seq != 0) {
        if (rec.seq <= t.last_seq) {
            stats_.late++;  // already counted in the gap it left
            return;
        }
        if (rec.seq > t.last_seq + 1) {
            CallEvent ev;
            ev.kind = EventKind::lost;
            ev.tid = rec.tid;
            ev.ts_ns = rec.ts_ns;
            ev.depth = static_cast<uint32_t>(t.stack.size() + 1);
            ev.lost = rec.seq - t.last_seq - 1;
            stats_.lost += ev.lost;
            t.losses++;
            emit(ev);
        }
        t.last_seq = rec.seq;
    }
    switch (rec.kind) {
        case MT_CALL_ENTRY: {
            const bool tail = !t.stack.empty() && t.stack.back().sp == rec.sp &&
                              opts_.is_trampoline && opts_.is_trampoline(rec.value);
            close_below(rec.tid, t, rec.sp, !tail, rec.ts_ns);
            CallEvent ev;
            ev.kind = EventKind::call;
            ev.tid = rec.tid;
            ev.ts_ns = rec.ts_ns;
            ev.func = rec.func;
            ev.call_site = rec.value;
            ev.parent = t.stack.empty() ? int64_t{-1} : int64_t{t.stack.back().func};
            ev.tail_call = tail;
            t.stack.push_back(Frame{rec.func, rec.sp, rec.ts_ns, rec.value, t.losses, tail});
            ev.depth = static_cast<uint32_t>(t.stack.size());
            stats_.calls++;
            emit(ev);
            break;
        }
        case MT_CALL_RETURN: {
            // The return popped the return address: the entry's sp was 8 lower.
            const uint64_t entry_sp = rec.sp - 8;
            size_t match = SIZE_MAX;
            for (size_t i = t.stack.size(); i-- > 0;) {
                if (t.stack[i].sp > entry_sp) {
                    break;
                }
                if (t.stack[i].sp == entry_sp && t.stack[i].func == rec.func) {
                    match = i;
                    break;
                }
            }
            if (match != SIZE_MAX) {
                while (t.stack.size() > match + 1) {
                    close_top(rec.tid, t, rec.ts_ns, EndHow::unwound, 0);
                }
                close_top(rec.tid, t, rec.ts_ns, EndHow::returned, rec.value);
                break;
            }
            close_below(rec.tid, t, entry_sp, false, rec.ts_ns);
            CallEvent ev = above_top(EventKind::ret, rec, t);
            ev.how = EndHow::entry_unseen;
            stats_.orphan_returns++;
            emit(ev);
            break;
        }
        case MT_CALL_USDT: {
            close_below(rec.tid, t, rec.sp, false, rec.ts_ns);
            CallEvent ev = above_top(EventKind::usdt, rec, t);
            stats_.annotations++;
            emit(ev);
            break;
        }
        case MT_CALL_UNWIND:
        case MT_CALL_CATCH: {
            const bool caught = rec.kind == MT_CALL_CATCH;
            if (caught) {
                // The handler runs in the catching call: everything below it
                // was unwound, everything above got its return probe back.
                // __cxa_begin_catch is probed at its entry: its own return
                // address took the slot of anything still open at sp.
                close_below(rec.tid, t, rec.sp, true, rec.ts_ns, EndHow::exception);
            } else {
                stats_.unwinds++;
            }
            // Caught: the calls above got their return probes back, if any
            // were re-armed (not where the kernel refuses BPF writes).
            if (!caught || rec.value > 0) {
                for (auto &f : t.stack) {
                    f.lifted = !caught;
                }
            }
            CallEvent ev = above_top(caught ? EventKind::caught : EventKind::unwind, rec, t);
            emit(ev);
            break;
        }
        case MT_CALL_THREAD_EXIT:
            while (!t.stack.empty()) {
                close_top(rec.tid, t, rec.ts_ns, EndHow::thread_exit, 0);
            }
            threads_.erase(rec.tid);
            break;
        default:
            break;
    }
}

void CallTree::finish(uint64_t ts_ns) {
    for (auto &[tid, t] : threads_) {
        while (!t.stack.empty()) {
            close_top(tid, t, ts_ns, EndHow::trace_end, 0);
        }
    }
}

}  // namespace mysqltrace::calls
