// SPDX-License-Identifier: GPL-2.0-only
// Call-tree reconstruction from entry/return records (calls/call_tree.h) and
// its renderers: nesting and depth, recursion, longjmp, tail calls, lost
// records, returns without entries, thread exit, exceptions, --max-depth,
// and the text, JSON and Chrome forms.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "calls/call_tree.h"
#include "calls/render.h"
#include "mysqltrace/abi/event.h"

namespace {

using namespace mysqltrace::calls;

constexpr uint64_t kTop = 0x7ffd0000;
constexpr uint64_t kTramp = 0x7fff0000;  // the trampoline page in these tests

// Builds one thread's records with increasing timestamps and sequence numbers.
struct Feed {
    explicit Feed(uint32_t t) : tid(t) {}
    uint32_t tid;
    uint64_t ts = 1000;
    uint64_t seq = 0;
    std::vector<CallRecord> out;

    CallRecord &add(uint32_t kind, uint32_t func, uint64_t sp, uint64_t value) {
        CallRecord r;
        r.kind = kind;
        r.tid = tid;
        r.ts_ns = ts += 100;
        r.seq = ++seq;
        r.func = func;
        r.sp = sp;
        r.value = value;
        out.push_back(r);
        return out.back();
    }
    // A call from depth d (0: outermost) sits at kTop - 64 * d.
    CallRecord &entry(uint32_t func, int d, uint64_t site = 0x401000) {
        return add(MT_CALL_ENTRY, func, kTop - 64 * d, site);
    }
    CallRecord &ret(uint32_t func, int d, uint64_t rax = 0) {
        return add(MT_CALL_RETURN, func, kTop - 64 * d + 8, rax);
    }
    void skip(uint64_t n) { seq += n; }
};

// One line per event: "call f1 @2", "ret f1 @2 returned", "usdt 0 @3", "lost 2 @1".
struct Collector {
    std::vector<std::string> lines;
    std::vector<CallEvent> events;
    void operator()(const CallEvent &ev) {
        events.push_back(ev);
        std::string s;
        switch (ev.kind) {
            case EventKind::call:
                s = "call f" + std::to_string(ev.func) + (ev.tail_call ? " tail" : "");
                break;
            case EventKind::ret:
                s = "ret f" + std::to_string(ev.func) + " " + end_how_text(ev.how);
                break;
            case EventKind::usdt:
                s = "usdt " + std::to_string(ev.func);
                break;
            case EventKind::lost:
                s = "lost " + std::to_string(ev.lost);
                break;
            case EventKind::unwind:
                s = "unwind";
                break;
            case EventKind::caught:
                s = "caught";
                break;
        }
        lines.push_back(std::to_string(ev.tid) + " " + s + " @" + std::to_string(ev.depth));
    }
};

std::vector<std::string> run(const std::vector<CallRecord> &recs, CallTreeOptions opts = {},
                             uint64_t finish_at = 0, Collector *keep = nullptr) {
    Collector c;
    if (!opts.is_trampoline) {
        opts.is_trampoline = [](uint64_t a) { return a == kTramp; };
    }
    CallTree tree([&c](const CallEvent &ev) { c(ev); }, opts);
    for (const auto &r : recs) {
        tree.add(r);
    }
    if (finish_at != 0) {
        tree.finish(finish_at);
    }
    if (keep != nullptr) {
        *keep = c;
    }
    return c.lines;
}

TEST(CallTree, NestsRecursionAndEarlyReturns) {
    Feed f(7);
    f.entry(1, 0);  // recurse(2)
    f.entry(1, 1);  // recurse(1)
    f.entry(1, 2);  // recurse(0)
    f.entry(2, 3);  // leaf
    f.ret(2, 3, 1);
    f.ret(1, 2, 1);
    f.ret(1, 1, 2);
    f.ret(1, 0, 3);
    f.entry(3, 0);  // early(0): returns at once
    f.ret(3, 0);
    Collector c;
    auto lines = run(f.out, {}, 0, &c);
    EXPECT_EQ(lines, (std::vector<std::string>{
                         "7 call f1 @1", "7 call f1 @2", "7 call f1 @3", "7 call f2 @4",
                         "7 ret f2 returned @4", "7 ret f1 returned @3", "7 ret f1 returned @2",
                         "7 ret f1 returned @1", "7 call f3 @1", "7 ret f3 returned @1"}));
    // Durations and return values come with the returns.
    EXPECT_EQ(c.events[4].duration_ns, 100u);
    EXPECT_EQ(c.events[4].value, 1u);
    EXPECT_EQ(c.events[7].duration_ns, 700u);
    EXPECT_EQ(c.events[7].value, 3u);
    EXPECT_EQ(c.events[1].parent, 1);
    EXPECT_EQ(c.events[0].parent, -1);
}

TEST(CallTree, ThreadsAreIndependent) {
    Feed a(10), b(11);
    a.entry(1, 0);
    b.entry(2, 0);
    a.entry(3, 1);
    b.ret(2, 0);
    a.ret(3, 1);
    a.ret(1, 0);
    std::vector<CallRecord> mixed = {a.out[0], b.out[0], a.out[1], b.out[1], a.out[2], a.out[3]};
    EXPECT_EQ(run(mixed),
              (std::vector<std::string>{"10 call f1 @1", "11 call f2 @1", "10 call f3 @2",
                                        "11 ret f2 returned @1", "10 ret f3 returned @2",
                                        "10 ret f1 returned @1"}));
}

TEST(CallTree, LongjmpClosesSkippedCalls) {
    // jumper -> deep1 -> deep2 -longjmp-> jumper, which then calls leaf from
    // the slot deep1 had.
    Feed f(5);
    f.entry(1, 0);
    f.entry(2, 1);
    f.entry(3, 2);
    f.entry(4, 1);
    f.ret(4, 1, 8);
    f.ret(1, 0, 8);
    EXPECT_EQ(run(f.out), (std::vector<std::string>{
                              "5 call f1 @1", "5 call f2 @2", "5 call f3 @3",
                              "5 ret f3 no return: longjmp @3", "5 ret f2 no return: longjmp @2",
                              "5 call f4 @2", "5 ret f4 returned @2", "5 ret f1 returned @1"}));
}

TEST(CallTree, ReturnFurtherUpClosesWhatItSkipped) {
    // The longjmp lands in the caller, which returns at once.
    Feed f(5);
    f.entry(1, 0);
    f.entry(2, 1);
    f.entry(3, 2);
    f.ret(1, 0);
    EXPECT_EQ(run(f.out),
              (std::vector<std::string>{"5 call f1 @1", "5 call f2 @2", "5 call f3 @3",
                                        "5 ret f3 no return: longjmp @3",
                                        "5 ret f2 no return: longjmp @2", "5 ret f1 returned @1"}));
}

TEST(CallTree, TailCallsNest) {
    // f1 jumps to f2: same slot, whose return address is already the trampoline.
    Feed f(5);
    f.entry(1, 0);
    f.entry(2, 0, kTramp);
    f.ret(2, 0, 10);  // the kernel runs both return probes, innermost first
    f.ret(1, 0, 10);
    Collector c;
    EXPECT_EQ(run(f.out, {}, 0, &c),
              (std::vector<std::string>{"5 call f1 @1", "5 call f2 tail @2", "5 ret f2 returned @2",
                                        "5 ret f1 returned @1"}));
    EXPECT_TRUE(c.events[1].tail_call);
    EXPECT_EQ(c.events[1].parent, 1);
}

TEST(CallTree, MarksLostRecordsWhereTheyWereAndResynchronises) {
    Feed f(5);
    f.entry(1, 0);
    f.entry(2, 1);
    f.skip(2);      // lost: f2's return and the entry of f3 at depth 1
    f.ret(3, 1);    // f3's return: its entry was not seen
    f.entry(4, 1);  // same slot as f2: f2 is over
    f.ret(4, 1);
    f.ret(1, 0);
    Collector c;
    EXPECT_EQ(run(f.out, {}, 0, &c),
              (std::vector<std::string>{"5 call f1 @1", "5 call f2 @2", "5 lost 2 @3",
                                        "5 ret f3 entry not seen @3",
                                        "5 ret f2 no return seen: records lost @2", "5 call f4 @2",
                                        "5 ret f4 returned @2", "5 ret f1 returned @1"}));
}

TEST(CallTree, LostMarksAreNeverHidden) {
    Feed f(5);
    f.entry(1, 0);
    f.entry(2, 1);
    f.entry(3, 2);
    f.skip(4);
    f.ret(3, 2);
    CallTreeOptions o;
    o.max_depth = 1;
    Collector c;
    EXPECT_EQ(run(f.out, o, 0, &c), (std::vector<std::string>{"5 call f1 @1", "5 lost 4 @4"}));
}

TEST(CallTree, MaxDepthHidesDeeperCalls) {
    Feed f(5);
    f.entry(1, 0);
    f.entry(2, 1);
    f.entry(3, 2);
    f.ret(3, 2);
    f.ret(2, 1);
    f.ret(1, 0);
    CallTreeOptions o;
    o.max_depth = 2;
    o.is_trampoline = [](uint64_t) { return false; };
    Collector c;
    Collector *keep = &c;
    std::vector<std::string> lines;
    CallTree tree([&](const CallEvent &ev) { (*keep)(ev); }, o);
    for (const auto &r : f.out) {
        tree.add(r);
    }
    EXPECT_EQ(c.lines, (std::vector<std::string>{"5 call f1 @1", "5 call f2 @2",
                                                 "5 ret f2 returned @2", "5 ret f1 returned @1"}));
    EXPECT_EQ(tree.stats().hidden, 2u);
    EXPECT_EQ(tree.stats().calls, 3u);
}

TEST(CallTree, AnnotationsSitBelowTheInnermostCall) {
    Feed f(5);
    f.entry(1, 0);
    f.add(MT_CALL_USDT, 0, kTop - 40, 5);  // inside f1
    f.entry(2, 1);
    f.ret(2, 1);
    f.ret(1, 0);
    f.add(MT_CALL_USDT, 0, kTop + 40, 6);  // back in the untraced caller
    Collector c;
    EXPECT_EQ(
        run(f.out, {}, 0, &c),
        (std::vector<std::string>{"5 call f1 @1", "5 usdt 0 @2", "5 call f2 @2",
                                  "5 ret f2 returned @2", "5 ret f1 returned @1", "5 usdt 0 @1"}));
    EXPECT_EQ(c.events[1].value, 5u);
}

TEST(CallTree, AnnotationAboveAnOpenCallClosesIt) {
    Feed f(5);
    f.entry(1, 0);
    f.entry(2, 1);
    f.add(MT_CALL_USDT, 0, kTop - 8, 1);  // in f1's frame: f2 is gone
    EXPECT_EQ(run(f.out),
              (std::vector<std::string>{"5 call f1 @1", "5 call f2 @2",
                                        "5 ret f2 no return: longjmp @2", "5 usdt 0 @2"}));
}

TEST(CallTree, ThreadExitClosesEverything) {
    Feed f(5);
    f.entry(1, 0);
    f.entry(2, 1);
    f.add(MT_CALL_THREAD_EXIT, 0, 0, 0);
    // The tid is reused by a new thread: its sequence starts again.
    Feed g(5);
    g.ts = 5000;
    g.entry(3, 0);
    std::vector<CallRecord> all = f.out;
    all.insert(all.end(), g.out.begin(), g.out.end());
    EXPECT_EQ(run(all), (std::vector<std::string>{
                            "5 call f1 @1", "5 call f2 @2", "5 ret f2 no return: thread exited @2",
                            "5 ret f1 no return: thread exited @1", "5 call f3 @1"}));
}

TEST(CallTree, FinishClosesWhatStillRuns) {
    Feed a(5), b(3);
    a.entry(1, 0);
    b.entry(2, 0);
    b.entry(3, 1);
    std::vector<CallRecord> all = {a.out[0], b.out[0], b.out[1]};
    Collector c;
    auto lines = run(all, {}, 99999, &c);
    EXPECT_EQ(lines, (std::vector<std::string>{"5 call f1 @1", "3 call f2 @1", "3 call f3 @2",
                                               "3 ret f3 still running when the trace ended @2",
                                               "3 ret f2 still running when the trace ended @1",
                                               "5 ret f1 still running when the trace ended @1"}));
}

TEST(CallTree, ExceptionsUnwindToTheCatcher) {
    // catcher -> middle -> thrower throws; caught in catcher, which returns.
    Feed f(5);
    f.entry(1, 0);
    f.entry(2, 1);
    f.entry(3, 2);
    f.add(MT_CALL_UNWIND, MT_UNWIND_RAISE, kTop - 64 * 3 - 100, 3);
    // __cxa_begin_catch's return address sits where middle's was.
    f.add(MT_CALL_CATCH, 0, kTop - 64, 1);
    f.ret(1, 0, 5);
    EXPECT_EQ(run(f.out), (std::vector<std::string>{
                              "5 call f1 @1", "5 call f2 @2", "5 call f3 @3", "5 unwind @4",
                              "5 ret f3 no return: unwound by an exception @3",
                              "5 ret f2 no return: unwound by an exception @2", "5 caught @2",
                              "5 ret f1 returned @1"}));
}

TEST(CallTree, LiftedReturnProbesAreNamedAsSuch) {
    // A stack walk (or a catch that could not re-arm): calls above it go on
    // without return probes and are closed when the stack shows them gone.
    Feed f(5);
    f.entry(1, 0);
    f.entry(2, 1);
    f.add(MT_CALL_UNWIND, MT_UNWIND_WALK, kTop - 200, 2);
    f.entry(3, 0);  // f1 returned unseen
    f.ret(3, 0);
    EXPECT_EQ(run(f.out), (std::vector<std::string>{
                              "5 call f1 @1", "5 call f2 @2", "5 unwind @3",
                              "5 ret f2 no return seen: return probe lifted for an unwind @2",
                              "5 ret f1 no return seen: return probe lifted for an unwind @1",
                              "5 call f3 @1", "5 ret f3 returned @1"}));
}

TEST(CallTree, CallsNestedBeyondTheKernelsReturnProbesAreNamed) {
    // 66 nested calls: the kernel arms return probes for the first 64 only.
    Feed f(5);
    for (int d = 0; d < 66; d++) {
        f.entry(1, d);
    }
    for (int d = 63; d >= 0; d--) {
        f.ret(1, d);
    }
    auto lines = run(f.out);
    ASSERT_EQ(lines.size(), 66u + 66u);
    EXPECT_EQ(lines[66], "5 ret f1 no return seen: nested too deep for a return probe @66");
    EXPECT_EQ(lines[67], "5 ret f1 no return seen: nested too deep for a return probe @65");
    EXPECT_EQ(lines[68], "5 ret f1 returned @64");
    EXPECT_EQ(lines.back(), "5 ret f1 returned @1");
}

TEST(CallTree, LateRecordsAreCountedNotPlaced) {
    Feed f(5);
    f.entry(1, 0);
    f.entry(2, 1);
    auto late = f.out[1];
    std::vector<CallRecord> recs = {f.out[0], f.out[1], late};
    Collector c;
    CallTree tree([&](const CallEvent &ev) { c(ev); }, {});
    for (const auto &r : recs) {
        tree.add(r);
    }
    EXPECT_EQ(c.lines.size(), 2u);
    EXPECT_EQ(tree.stats().late, 1u);
    EXPECT_EQ(tree.depth(5), 2u);
}

TEST(CallTree, DecodesRecords) {
    mt_call_event ev{};
    ev.hdr.type = MT_EV_CALL;
    ev.hdr.size = sizeof(ev);
    ev.hdr.ts_ns = 42;
    ev.hdr.tid = 9;
    ev.seq = 3;
    ev.sp = 0x1000;
    ev.value = 0x2000;
    ev.func = 4;
    ev.kind = MT_CALL_RETURN;
    uint8_t buf[sizeof(ev)];
    std::memcpy(buf, &ev, sizeof(ev));
    CallRecord r;
    ASSERT_TRUE(decode_call_record(std::span<const uint8_t>(buf, sizeof(buf)), &r));
    EXPECT_EQ(r.kind, MT_CALL_RETURN);
    EXPECT_EQ(r.tid, 9u);
    EXPECT_EQ(r.ts_ns, 42u);
    EXPECT_EQ(r.seq, 3u);
    EXPECT_EQ(r.func, 4u);
    EXPECT_EQ(r.sp, 0x1000u);
    EXPECT_EQ(r.value, 0x2000u);
    EXPECT_FALSE(decode_call_record(std::span<const uint8_t>(buf, sizeof(buf) - 1), &r));
    ev.kind = 99;
    std::memcpy(buf, &ev, sizeof(ev));
    EXPECT_FALSE(decode_call_record(std::span<const uint8_t>(buf, sizeof(buf)), &r));
}

// ---- Rendering ----

CallRenderer renderer(CallFormat fmt, bool retval = false) {
    RenderOptions o;
    o.format = fmt;
    o.retval = retval;
    o.pid = 77;
    o.time = [](uint64_t ns) { return "T" + std::to_string(ns); };
    return CallRenderer(o, {"main_loop", "outer", "inner"}, {"calltree:mark"}, [](uint64_t addr) {
        CodeLocation l;
        if (addr == 0x401000) {
            l.function = "caller_fn";
            l.site = "caller_fn+0x1a";
        } else {
            l.site = "libx.so+0x" + std::to_string(addr);
        }
        return l;
    });
}

std::vector<CallEvent> sample_events() {
    Feed f(8);
    f.entry(1, 0);
    f.add(MT_CALL_USDT, 0, kTop - 30, 5);
    f.entry(2, 1, 0x9999);
    f.ret(2, 1, static_cast<uint64_t>(-1));
    f.skip(3);
    f.ret(1, 0, 0xffffffffu);
    Collector c;
    run(f.out, {}, 0, &c);
    return c.events;
}

TEST(CallRender, Text) {
    auto r = renderer(CallFormat::text, true);
    std::string out;
    for (const auto &ev : sample_events()) {
        out += r.event(ev);
    }
    EXPECT_EQ(out,
              "T1100 8 -> caller_fn > outer [caller_fn+0x1a]\n"
              "T1200 8 -># calltree:mark 5\n"
              "T1300 8 ->-> ? > inner [libx.so+0x39321]\n"
              "T1400 8 <-<- ? < inner 0.10 us = -1\n"
              "T1500 8 !! 3 events lost here\n"
              "T1500 8 <- caller_fn < outer 0.40 us = 4294967295 (int -1)\n");
    EXPECT_EQ(r.header(), "");
    EXPECT_EQ(r.footer(), "");
}

TEST(CallRender, TextWithoutReturnValues) {
    auto r = renderer(CallFormat::text);
    auto evs = sample_events();
    EXPECT_EQ(r.event(evs[3]), "T1400 8 <-<- ? < inner 0.10 us\n");
}

TEST(CallRender, Json) {
    auto r = renderer(CallFormat::json, true);
    std::vector<nlohmann::json> rows;
    for (const auto &ev : sample_events()) {
        std::string line = r.event(ev);
        ASSERT_EQ(line.back(), '\n');
        rows.push_back(nlohmann::json::parse(line));
    }
    ASSERT_EQ(rows.size(), 6u);
    EXPECT_EQ(rows[0], nlohmann::json::parse(
                           R"({"kind":"call","pid":77,"tid":8,"ts_ns":1100,"depth":1,)"
                           R"("function":"outer","caller":"caller_fn","site":"caller_fn+0x1a"})"));
    EXPECT_EQ(rows[1], nlohmann::json::parse(R"({"kind":"usdt","pid":77,"tid":8,"ts_ns":1200,)"
                                             R"("depth":2,"probe":"calltree:mark","arg":5})"));
    EXPECT_EQ(rows[3]["kind"], "return");
    EXPECT_EQ(rows[3]["returned"], true);
    EXPECT_EQ(rows[3]["duration_ns"], 100);
    EXPECT_EQ(rows[3]["retval"], -1);
    EXPECT_EQ(rows[4], nlohmann::json::parse(R"({"kind":"lost","pid":77,"tid":8,"ts_ns":1500,)"
                                             R"("depth":2,"count":3})"));
    EXPECT_EQ(rows[5]["depth"], 1);
    EXPECT_EQ(rows[5]["function"], "outer");
}

TEST(CallRender, JsonNamesWhyACallHadNoReturn) {
    auto r = renderer(CallFormat::json);
    CallEvent ev;
    ev.kind = EventKind::ret;
    ev.tid = 3;
    ev.depth = 2;
    ev.func = 2;
    ev.parent = 1;
    ev.how = EndHow::unwound;
    auto j = nlohmann::json::parse(r.event(ev));
    EXPECT_EQ(j["returned"], false);
    EXPECT_EQ(j["reason"], "no return: longjmp");
    EXPECT_FALSE(j.contains("duration_ns"));
    EXPECT_EQ(j["caller"], "outer");
}

TEST(CallRender, UnwindsAndCatches) {
    CallEvent thrown;
    thrown.kind = EventKind::unwind;
    thrown.tid = 3;
    thrown.ts_ns = 10;
    thrown.depth = 4;
    thrown.func = MT_UNWIND_RAISE;
    thrown.value = 3;
    CallEvent caught = thrown;
    caught.kind = EventKind::caught;
    caught.depth = 2;
    caught.value = 0;
    auto text = renderer(CallFormat::text);
    EXPECT_EQ(text.event(thrown), "T10 3 ->->-># exception thrown (3 return probes lifted)\n");
    EXPECT_EQ(text.event(caught), "T10 3 -># exception caught\n");
    auto js = renderer(CallFormat::json);
    EXPECT_EQ(nlohmann::json::parse(js.event(thrown)),
              nlohmann::json::parse(R"({"kind":"unwind","pid":77,"tid":3,"ts_ns":10,"depth":4,)"
                                    R"("unwinder":"exception thrown","lifted":3})"));
    EXPECT_EQ(nlohmann::json::parse(js.event(caught)),
              nlohmann::json::parse(R"({"kind":"catch","pid":77,"tid":3,"ts_ns":10,"depth":2,)"
                                    R"("rearmed":0})"));
    thrown.func = MT_UNWIND_WALK;
    EXPECT_EQ(nlohmann::json::parse(js.event(thrown))["unwinder"], "stack walk (backtrace)");
}

TEST(CallRender, ChromeIsOneJsonDocumentOfNestedSlices) {
    auto r = renderer(CallFormat::chrome, true);
    std::string doc = r.header();
    for (const auto &ev : sample_events()) {
        doc += r.event(ev);
    }
    doc += r.footer();
    auto j = nlohmann::json::parse(doc);
    const auto &evs = j["traceEvents"];
    ASSERT_EQ(evs.size(), 6u);
    EXPECT_EQ(evs[0]["ph"], "B");
    EXPECT_EQ(evs[0]["name"], "outer");
    EXPECT_EQ(evs[0]["pid"], 77);
    EXPECT_EQ(evs[0]["tid"], 8);
    EXPECT_DOUBLE_EQ(evs[0]["ts"].get<double>(), 1.1);
    EXPECT_EQ(evs[1]["ph"], "i");
    EXPECT_EQ(evs[1]["name"], "calltree:mark");
    EXPECT_EQ(evs[2]["ph"], "B");
    EXPECT_EQ(evs[3]["ph"], "E");
    EXPECT_EQ(evs[3]["args"]["retval"], -1);
    EXPECT_EQ(evs[4]["ph"], "i");
    EXPECT_EQ(evs[4]["name"], "3 events lost");
    EXPECT_EQ(evs[5]["ph"], "E");
    // Timestamps keep the nanoseconds.
    EXPECT_NE(doc.find("\"ts\":1.500"), std::string::npos);
}

}  // namespace
