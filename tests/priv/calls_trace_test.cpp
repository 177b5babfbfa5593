// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace calls` on real processes: the exact nested call sequence of a
// program with a known call graph (recursion, early return, longjmp, a tail
// call, a USDT annotation, threads, a thread and a process exiting inside
// traced calls), C++ exceptions through traced calls (the target must
// survive), lost events, the probe limit and no-match messages, and a real
// mariadbd running SELECT 1.
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/client_session.h"
#include "priv/priv.h"
#include "temp_dir.h"

namespace {

using mysqltrace::test::BackgroundCommand;
using mysqltrace::test::GatedClient;
using mysqltrace::test::read_json_lines;
using mysqltrace::test::run_command;
using mysqltrace::test::testprog;
using nlohmann::json;

// A test program driven line by line over pipes (the harness's gated
// client, its gate opened at once); its first line is its greeting.
class Target {
  public:
    explicit Target(const std::string &name) : client_({testprog(name)}) {
        client_.open_gate();
        first_ = client_.read_line();
    }
    pid_t pid() const { return client_.pid(); }
    const std::string &first_line() const { return first_; }
    void send(const std::string &line) { client_.send(line); }
    std::string read_line() { return client_.read_line(); }
    // Sends a scenario and reads up to its "done" line; returns what came
    // before it (e.g. the "tid" lines), and that line.
    std::vector<std::string> run(const std::string &scenario) {
        send(scenario);
        std::vector<std::string> lines;
        for (;;) {
            std::string l = read_line();
            lines.push_back(l);
            if (l == "<eof>" || l.rfind("done " + scenario, 0) == 0) {
                return lines;
            }
        }
    }
    // Waits for the program to exit.
    void reap() { client_.finish(); }

  private:
    GatedClient client_;
    std::string first_;
};

class CallsTrace : public ::testing::Test {
  protected:
    void SetUp() override { MYSQLTRACE_REQUIRE_ROOT(); }

    std::unique_ptr<BackgroundCommand> start(pid_t pid, std::vector<std::string> extra) {
        std::vector<std::string> argv = {MYSQLTRACE_BINARY,   "calls",    "--pid",
                                         std::to_string(pid), "--output", out_path_};
        argv.insert(argv.end(), extra.begin(), extra.end());
        auto t = std::make_unique<BackgroundCommand>(argv);
        EXPECT_TRUE(t->wait_for_stderr("Ctrl-C to stop")) << t->stop(SIGKILL).err;
        return t;
    }

    std::string output() const {
        std::ifstream in(out_path_);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

    std::vector<json> rows() const { return read_json_lines(out_path_); }

    // One thread's events as "call f @d", "return f @d" (+ " (reason)"),
    // "usdt p:n(arg) @d", "unwind ... @d", "catch @d", "lost @d".
    static std::vector<std::string> sequence(const std::vector<json> &evs, uint64_t tid,
                                             bool with_retval = false) {
        std::vector<std::string> seq;
        for (const auto &e : evs) {
            if (e["tid"] != tid) {
                continue;
            }
            const std::string kind = e["kind"];
            std::string s = kind;
            if (kind == "call" || kind == "return") {
                s += " " + e["function"].get<std::string>();
            } else if (kind == "usdt") {
                s += " " + e["probe"].get<std::string>() + "(" + e["arg"].dump() + ")";
            } else if (kind == "unwind") {
                s += " " + e["unwinder"].get<std::string>();
            }
            s += " @" + e["depth"].dump();
            if (kind == "return" && !e["returned"].get<bool>()) {
                s += " (" + e["reason"].get<std::string>() + ")";
            }
            if (with_retval && kind == "return" && e.contains("retval")) {
                s += " = " + e["retval"].dump();
            }
            seq.push_back(s);
        }
        return seq;
    }

    static uint64_t tid_of(const std::string &line) {  // "tid <n> <tid>"
        std::istringstream in(line);
        std::string word;
        int n = 0;
        uint64_t tid = 0;
        in >> word >> n >> tid;
        return tid;
    }

    mysqltrace::test::TempDir dir_{"mysqltrace-calls"};
    std::string out_path_ = dir_.file("trace");
};

TEST_F(CallsTrace, ExactNestedSequenceOfOneThread) {
    Target t("calltree");
    ASSERT_EQ(t.first_line(), "ready " + std::to_string(t.pid()));
    auto tracer = start(
        t.pid(), {"--match", "ct_*", "--format", "json", "--retval", "--usdt", "calltree:mark"});
    ASSERT_EQ(t.run("tree").back(), "done tree");
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("12 functions match 'ct_*' in "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("mysqltrace: 16 calls, 14 returns, 0 events lost, 2 left without a "
                         "return, 1 annotations, 0 records dropped; interrupted\n"),
              std::string::npos)
        << r.err;

    const std::vector<std::string> want = {
        // recursion
        "call ct_recurse @1",
        "call ct_recurse @2",
        "call ct_recurse @3",
        "call ct_leaf @4",
        "return ct_leaf @4 = 1",
        "return ct_recurse @3 = 1",
        "return ct_recurse @2 = 2",
        "return ct_recurse @1 = 3",
        // early return, then the path that calls on
        "call ct_early @1",
        "return ct_early @1 = 4294967295",
        "call ct_early @1",
        "call ct_leaf @2",
        "return ct_leaf @2 = 2",
        "return ct_early @1 = 4",
        // longjmp from ct_deep2 back into ct_jumper
        "call ct_jumper @1",
        "call ct_deep1 @2",
        "call ct_deep2 @3",
        "return ct_deep2 @3 (no return: longjmp)",
        "return ct_deep1 @2 (no return: longjmp)",
        "call ct_leaf @2",
        "return ct_leaf @2 = 8",
        "return ct_jumper @1 = 8",
        // a tail call nests under the function that jumped
        "call ct_tail @1",
        "call ct_leaf @2",
        "return ct_leaf @2 = 10",
        "return ct_tail @1 = 10",
        // a USDT annotation inside ct_annotate
        "call ct_annotate @1",
        "usdt calltree:mark(5) @2",
        "call ct_leaf @2",
        "return ct_leaf @2 = 6",
        "return ct_annotate @1 = 6",
        // single-stepped entry: dear, but traced
        "call ct_costly @1",
        "return ct_costly @1 = 3",
    };
    auto evs = rows();
    EXPECT_EQ(sequence(evs, static_cast<uint64_t>(t.pid()), true), want);
    // Callers and call sites are named from the symbol tables.
    ASSERT_FALSE(evs.empty());
    EXPECT_EQ(evs[0]["caller"], "main");
    EXPECT_EQ(evs[1]["caller"], "ct_recurse");
    EXPECT_TRUE(
        std::regex_match(evs[1]["site"].get<std::string>(), std::regex("ct_recurse\\+0x[0-9a-f]+")))
        << evs[1];
    for (const auto &e : evs) {
        if (e["kind"] == "call" && e["function"] == "ct_leaf" && e.value("tail_call", false)) {
            EXPECT_EQ(e["caller"], "ct_tail");
            EXPECT_EQ(e["site"], "tail call");
        }
    }
}

TEST_F(CallsTrace, TextFormat) {
    Target t("calltree");
    auto tracer = start(
        t.pid(), {"--match", "ct_recurse|ct_leaf|ct_annotate", "--retval", "--usdt", "calltree:*"});
    t.run("tree");
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    // Times and tids normalised.
    std::string text = std::regex_replace(
        output(),
        std::regex("^\\d\\d:\\d\\d:\\d\\d\\.\\d{9} " + std::to_string(t.pid()) + " ",
                   std::regex::multiline),
        "T ");
    text = std::regex_replace(text, std::regex("\\+0x[0-9a-f]+\\]"), "+X]");
    text = std::regex_replace(text, std::regex(" [0-9.]+ (us|ms)"), " D");
    EXPECT_EQ(text,
              "T -> main > ct_recurse [main+X]\n"
              "T ->-> ct_recurse > ct_recurse [ct_recurse+X]\n"
              "T ->->-> ct_recurse > ct_recurse [ct_recurse+X]\n"
              "T ->->->-> ct_recurse > ct_leaf [ct_recurse+X]\n"
              "T <-<-<-<- ct_recurse < ct_leaf D = 1\n"
              "T <-<-<- ct_recurse < ct_recurse D = 1\n"
              "T <-<- ct_recurse < ct_recurse D = 2\n"
              "T <- main < ct_recurse D = 3\n"
              "T -> ct_early > ct_leaf [ct_early+X]\n"
              "T <- ct_early < ct_leaf D = 2\n"
              "T -> ct_jumper > ct_leaf [ct_jumper+X]\n"
              "T <- ct_jumper < ct_leaf D = 8\n"
              // ct_tail is not traced: its jump leaves main's return address.
              "T -> main > ct_leaf [main+X]\n"
              "T <- main < ct_leaf D = 10\n"
              "T -> main > ct_annotate [main+X]\n"
              "T -># calltree:mark 5\n"
              "T ->-> ct_annotate > ct_leaf [ct_annotate+X]\n"
              "T <-<- ct_annotate < ct_leaf D = 6\n"
              "T <- main < ct_annotate D = 6\n");
}

TEST_F(CallsTrace, EachThreadHasItsOwnTree) {
    Target t("calltree");
    auto tracer = start(t.pid(), {"--match", "ct_*", "--format", "json"});
    auto lines = t.run("threads");
    ASSERT_EQ(lines.size(), 3u);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto evs = rows();
    const std::vector<std::string> want = {
        "call ct_worker @1",    "call ct_leaf @2",     "return ct_leaf @2", "call ct_recurse @2",
        "call ct_recurse @3",   "call ct_leaf @4",     "return ct_leaf @4", "return ct_recurse @3",
        "return ct_recurse @2", "return ct_worker @1",
    };
    std::set<uint64_t> tids;
    for (int i = 0; i < 2; i++) {
        const uint64_t tid = tid_of(lines[static_cast<size_t>(i)]);
        ASSERT_NE(tid, 0u) << lines[static_cast<size_t>(i)];
        tids.insert(tid);
        EXPECT_EQ(sequence(evs, tid), want) << "thread " << tid;
    }
    // Nothing else: the main thread called no traced function.
    for (const auto &e : evs) {
        EXPECT_TRUE(tids.count(e["tid"].get<uint64_t>())) << e;
    }
}

TEST_F(CallsTrace, OneThreadOnly) {
    Target t("calltree");
    auto tracer = start(
        t.pid(), {"--match", "ct_leaf", "--format", "json", "--tid", std::to_string(t.pid())});
    t.run("threads");
    t.run("tree");
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto evs = rows();
    ASSERT_EQ(evs.size(), 10u);  // ct_leaf 5 times on the main thread
    for (const auto &e : evs) {
        EXPECT_EQ(e["tid"], t.pid());
    }
}

TEST_F(CallsTrace, ThreadExitInsideTracedCalls) {
    Target t("calltree");
    auto tracer = start(t.pid(), {"--match", "ct_*", "--format", "json"});
    auto lines = t.run("thread_exit");
    ASSERT_EQ(lines.size(), 2u);
    const uint64_t tid = tid_of(lines[0]);
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(
        sequence(rows(), tid),
        (std::vector<std::string>{"call ct_exiting @1", "call ct_leaf @2", "return ct_leaf @2",
                                  "return ct_exiting @1 (no return: thread exited)"}));
}

TEST_F(CallsTrace, ProcessExitEndsTheTrace) {
    Target t("calltree");
    const uint64_t pid = static_cast<uint64_t>(t.pid());
    auto tracer = start(t.pid(), {"--match", "ct_*", "--format", "json"});
    t.send("exit");
    EXPECT_EQ(t.read_line(), "done exit");
    t.reap();
    auto r = tracer->wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("; traced process exited\n"), std::string::npos) << r.err;
    EXPECT_EQ(
        sequence(rows(), pid),
        (std::vector<std::string>{"call ct_exit_inside @1", "call ct_leaf @2", "return ct_leaf @2",
                                  "return ct_exit_inside @1 (no return: thread exited)"}))
        << r.err;
}

TEST_F(CallsTrace, LostEventsAreMarkedAndTheTreeHeals) {
    Target t("calltree");
    // The smallest rings: 30000 calls overflow them between two reads.
    auto tracer = start(t.pid(), {"--match", "ct_leaf", "--format", "json", "--ring-kib", "4"});
    t.run("loop 30000");
    // Later records reveal the last gap, and a call from the same level
    // closes a call whose return was lost: once the rings have drained.
    usleep(300'000);
    t.run("loop 10");
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.err, m, std::regex(" (\\d+) events lost, "))) << r.err;
    const uint64_t lost = std::stoull(m[1]);
    EXPECT_GT(lost, 0u) << r.err;
    ASSERT_TRUE(std::regex_search(r.err, m, std::regex(" (\\d+) records dropped")));
    EXPECT_EQ(std::stoull(m[1]), lost) << r.err;
    uint64_t marked = 0;
    for (const auto &e : rows()) {
        if (e["kind"] == "lost") {
            marked += e["count"].get<uint64_t>();
        } else {
            // Every ct_leaf call comes from main's loop, so from one stack
            // slot: a lost return never leaves a call open under the next.
            EXPECT_EQ(e["depth"], 1) << e;
        }
    }
    EXPECT_EQ(marked, lost);
}

TEST_F(CallsTrace, BeyondTheKernelsDepthOfReturnProbes) {
    Target t("calltree");
    auto tracer = start(t.pid(), {"--match", "ct_recurse|ct_leaf", "--format", "json"});
    t.run("deep 69");  // 70 nested ct_recurse, then ct_leaf: depth 71
    t.run("loop 1");   // ct_leaf from main's level again: what ran deeper is over
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    int returned = 0, too_deep = 0;
    for (const auto &e : rows()) {
        if (e["kind"] != "return") {
            continue;
        }
        const int depth = e["depth"].get<int>();
        if (e["returned"] == true) {
            EXPECT_LE(depth, 64) << e;
            returned++;
        } else {
            EXPECT_GT(depth, 64) << e;
            EXPECT_EQ(e["reason"], "no return seen: nested too deep for a return probe") << e;
            too_deep++;
        }
    }
    EXPECT_EQ(returned, 64 + 1);  // and the last ct_leaf
    EXPECT_EQ(too_deep, 71 - 64);
}

TEST_F(CallsTrace, MaxDepth) {
    Target t("calltree");
    auto tracer = start(t.pid(), {"--match", "ct_*", "--format", "json", "--max-depth", "2"});
    t.run("tree");
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(", 6 deeper than --max-depth not shown"), std::string::npos) << r.err;
    auto seq = sequence(rows(), static_cast<uint64_t>(t.pid()));
    ASSERT_GE(seq.size(), 4u);
    EXPECT_EQ(seq[0], "call ct_recurse @1");
    EXPECT_EQ(seq[1], "call ct_recurse @2");
    EXPECT_EQ(seq[2], "return ct_recurse @2");
    for (const auto &e : rows()) {
        EXPECT_LE(e["depth"].get<int>(), 2) << e;
    }
}

TEST_F(CallsTrace, ChromeTraceNestsSlicesPerThread) {
    Target t("calltree");
    auto tracer = start(t.pid(), {"--match", "ct_recurse|ct_leaf|ct_worker", "--format", "chrome"});
    t.run("tree");
    t.run("threads");
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto doc = json::parse(output());
    std::map<uint64_t, std::vector<std::string>> open;
    size_t slices = 0;
    for (const auto &e : doc["traceEvents"]) {
        EXPECT_EQ(e["pid"], t.pid());
        auto &stack = open[e["tid"].get<uint64_t>()];
        if (e["ph"] == "B") {
            stack.push_back(e["name"]);
        } else if (e["ph"] == "E") {
            ASSERT_FALSE(stack.empty()) << e;
            EXPECT_EQ(stack.back(), e["name"]) << e;
            stack.pop_back();
            slices++;
        }
    }
    EXPECT_EQ(slices, 8u + 2u * 5u);
    for (const auto &[tid, stack] : open) {
        EXPECT_TRUE(stack.empty()) << tid;
    }
}

TEST_F(CallsTrace, CostlyEntriesAreNamedAndCanBeLeftOut) {
    Target t("calltree");
    auto tracer =
        start(t.pid(), {"--match", "ct_leaf|ct_costly", "--format", "json", "--skip-costly"});
    t.run("tree");
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("mysqltrace: warning: 1 function begins with an instruction the kernel "
                         "must single-step: each call of it costs ~25 us instead of ~2 us: "
                         "ct_costly (mov eax, edi); left out (--skip-costly)\n"),
              std::string::npos)
        << r.err;
    for (const auto &e : rows()) {
        EXPECT_EQ(e["function"], "ct_leaf");
    }
}

TEST_F(CallsTrace, RefusesAboveTheLimit) {
    Target t("calltree");
    auto r = run_command({MYSQLTRACE_BINARY, "calls", "--pid", std::to_string(t.pid()), "--match",
                          "ct_*", "--limit", "5"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("mysqltrace: 12 functions match 'ct_*' in "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("mysqltrace: refusing to trace 12 functions, more than --limit 5: every "
                         "call of each costs the traced thread two traps (a few us); narrow "
                         "--match or --binary, raise --limit, or pass --force\n"),
              std::string::npos)
        << r.err;
    // --force goes ahead.
    auto forced = start(t.pid(), {"--match", "ct_*", "--limit", "5", "--force"});
    auto fr = forced->stop(SIGINT);
    EXPECT_EQ(fr.exit_code, 0) << fr.err;
}

TEST_F(CallsTrace, NoMatchIsOneClearLine) {
    Target t("calltree");
    auto r = run_command({MYSQLTRACE_BINARY, "calls", "--pid", std::to_string(t.pid()), "--match",
                          "no_such_fn_*", "--match", "nor_this"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(std::regex_match(
        r.err, std::regex("mysqltrace: no function matches 'no_such_fn_\\*', 'nor_this' in the "
                          "\\d+ files of pid " +
                          std::to_string(t.pid()) + " \\(.*/calltree, .*libc\\.so\\.6.*\\)\n")))
        << r.err;
    auto b = run_command({MYSQLTRACE_BINARY, "calls", "--pid", std::to_string(t.pid()), "--match",
                          "ct_*", "--binary", "libnothing.so"});
    EXPECT_EQ(b.exit_code, 1);
    EXPECT_NE(b.err.find("mysqltrace: libnothing.so is not mapped executable by pid "),
              std::string::npos)
        << b.err;
    auto gone = run_command({MYSQLTRACE_BINARY, "calls", "--pid", "999999999", "--match", "x"});
    EXPECT_EQ(gone.exit_code, 1);
    EXPECT_EQ(gone.err, "mysqltrace: no such process: 999999999\n");
}

TEST_F(CallsTrace, ExceptionsThroughTracedCallsDoNotKillTheTarget) {
    Target t("calltree_cxx");
    ASSERT_EQ(t.first_line(), "ready");
    auto tracer = start(t.pid(), {"--match", "cx_*", "--format", "json", "--retval"});
    EXPECT_EQ(t.run("throw").back(), "done throw -5 1");
    EXPECT_EQ(t.run("throw").back(), "done throw -5 1");
    EXPECT_EQ(t.run("walk").back(), "done walk ok");
    auto r = tracer->stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("NOT FIXED UP"), std::string::npos) << r.err;
    auto seq = sequence(rows(), static_cast<uint64_t>(t.pid()), true);
    // Where the kernel lets BPF write (no lockdown), the catcher's return
    // probe is re-armed; otherwise its return is not seen.
    const bool rearmed =
        std::find(seq.begin(), seq.end(), "return cx_catcher @1 = -5") != seq.end();
    std::vector<std::string> throw_part = {
        "call cx_catcher @1",
        "call cx_middle @2",
        "call cx_thrower @3",
        "unwind exception thrown @4",
        "return cx_thrower @3 (no return: unwound by an exception)",
        "return cx_middle @2 (no return: unwound by an exception)",
        "catch @2",
    };
    if (rearmed) {
        throw_part.push_back("return cx_catcher @1 = -5");
    } else {
        throw_part.push_back(
            "return cx_catcher @1 (no return seen: return probe lifted for an unwind)");
    }
    const std::vector<std::string> normal = {
        "call cx_catcher @1",       "call cx_middle @2",       "call cx_thrower @3",
        "return cx_thrower @3 = 0", "return cx_middle @2 = 1", "return cx_catcher @1 = 1",
    };
    std::vector<std::string> want;
    for (int i = 0; i < 2; i++) {
        want.insert(want.end(), throw_part.begin(), throw_part.end());
        want.insert(want.end(), normal.begin(), normal.end());
    }
    want.push_back("call cx_walker @1");
    want.push_back("unwind stack walk (backtrace) @2");
    ASSERT_GE(seq.size(), want.size()) << ::testing::PrintToString(seq);
    seq.resize(want.size());
    EXPECT_EQ(seq, want);
}

TEST(CallsMariadb, DispatchParseExecuteNested) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto s = mysqltrace::test::MariadbServer::start();
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto &server = **s;
    ASSERT_TRUE(server.query("SELECT 1").ok());  // the session exists before the trace
    const std::string out = server.root_dir() + "/calls.json";
    BackgroundCommand tracer({MYSQLTRACE_BINARY, "calls", "--pid", std::to_string(server.pid()),
                              "--match", "dispatch_command|mysql_parse|mysql_execute_command",
                              "--format", "json", "--output", out});
    ASSERT_TRUE(tracer.wait_for_stderr("Ctrl-C to stop")) << tracer.stop(SIGKILL).err;
    auto rows_ = server.query("SELECT 1");
    ASSERT_TRUE(rows_.ok()) << rows_.error().message;
    ASSERT_EQ((*rows_)[0][0], "1");
    // The reply goes out before dispatch_command returns.
    usleep(300'000);
    auto r = tracer.stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("3 functions match 'dispatch_command|mysql_parse|mysql_execute_command' "
                         "in "),
              std::string::npos)
        << r.err;
    std::map<uint64_t, std::vector<std::string>> per_thread;
    for (const auto &e : read_json_lines(out)) {
        std::string s = e["kind"].get<std::string>() + " " + e["function"].get<std::string>() +
                        " @" + e["depth"].dump();
        if (e["kind"] == "return" && e["returned"] != true) {
            s += " (" + e["reason"].get<std::string>() + ")";
        }
        per_thread[e["tid"].get<uint64_t>()].push_back(s);
    }
    const std::vector<std::string> want = {
        "call dispatch_command @1",        "call mysql_parse @2",   "call mysql_execute_command @3",
        "return mysql_execute_command @3", "return mysql_parse @2", "return dispatch_command @1",
    };
    bool found = false;
    for (const auto &[tid, seq] : per_thread) {
        found = found || seq == want;
    }
    EXPECT_TRUE(found) << ::testing::PrintToString(per_thread);
}

}  // namespace
