// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace agent` with real servers coming and going under it: two
// MariaDB servers and MySQL 9.7 in its chroot, each attached (its labels
// logged), traced into its own files, detached when it stops with none of
// its BPF links or maps left, and a restarted server (same datadir, port
// and socket, new pid) attached again. A configuration file, its per-server
// sections and SIGHUP: a disabled server left alone, then attached; another
// attached again with a format more, writing on in the same file; a broken
// file reported, the last good one kept. A busy connection through such a
// reload: each statement traced once.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iterator>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/control_socket.h"
#include "harness/child_process.h"
#include "priv/cli_util.h"
#include "priv/otlp_receiver.h"
#include "priv/priv.h"
#include "priv/server_session.h"
#include "priv/tmpdir_test.h"
#include "top/snapshot.h"

namespace mysqltrace::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The key=value fields of the agent's line that starts with `prefix`
// ("attached pid=42 "), "" keys absent.
std::map<std::string, std::string> agent_line(const std::string &log, const std::string &prefix) {
    std::map<std::string, std::string> kv;
    const size_t at = log.find(prefix);
    if (at == std::string::npos) {
        return kv;
    }
    const size_t end = log.find('\n', at);
    std::istringstream words(log.substr(at, end == std::string::npos ? end : end - at));
    std::string w;
    while (words >> w) {
        const size_t eq = w.find('=');
        if (eq != std::string::npos) {
            kv[w.substr(0, eq)] = w.substr(eq + 1);
        }
    }
    return kv;
}

// The ids of the BPF links and maps process `pid` holds (its fds' fdinfo).
struct Held {
    std::set<int> links, maps;
};
Held held_by(pid_t pid) {
    Held h;
    const std::string dir = "/proc/" + std::to_string(pid) + "/fdinfo";
    for (const auto &e : fs::directory_iterator(dir)) {
        std::ifstream in(e.path());
        std::string line;
        while (std::getline(in, line)) {
            if (line.starts_with("link_id:")) {
                h.links.insert(std::stoi(line.substr(8)));
            } else if (line.starts_with("map_id:")) {
                h.maps.insert(std::stoi(line.substr(7)));
            }
        }
    }
    return h;
}

// VmRSS of `pid`, for the figures the test prints.
std::string rss_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.starts_with("VmRSS:")) {
            return line.substr(line.find_first_not_of(" \t", 6));
        }
    }
    return "?";
}

// The ids bpftool lists of every link or map of the machine.
std::set<int> bpftool_ids(const std::string &what) {
    std::set<int> ids;
    auto r = run_command({"/usr/sbin/bpftool", "-j", what, "show"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto all = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_TRUE(all.is_array()) << r.out;
    if (all.is_array()) {
        for (const auto &o : all) {
            ids.insert(o.value("id", -1));
        }
    }
    return ids;
}

// Of `ids`, those bpftool still lists.
std::set<int> still_listed(const std::set<int> &ids, const std::string &what) {
    std::set<int> left;
    const auto listed = bpftool_ids(what);
    for (int id : ids) {
        if (listed.count(id)) {
            left.insert(id);
        }
    }
    return left;
}

// Of `ids`, those bpftool still lists once the kernel has freed what it
// frees after an RCU grace period (a map goes with the last program using
// it, after its links), waiting up to 10 s for that.
std::set<int> left_behind(const std::set<int> &ids, const std::string &what) {
    std::set<int> left = still_listed(ids, what);
    for (int i = 0; i < 200 && !left.empty(); i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        left = still_listed(left, what);
    }
    return left;
}

// The SQL texts of the statements traced for connection `thread_id`.
std::vector<std::string> traced_texts(const std::string &path, unsigned long thread_id) {
    std::vector<std::string> out;
    for (const auto &row : read_json_lines(path)) {
        if (row.value("kind", "") == "statement" && row.value("THREAD_ID", 0ul) == thread_id &&
            row.value("EVENT_NAME", "").starts_with("statement/sql/")) {
            out.push_back(row.value("SQL_TEXT", ""));
        }
    }
    return out;
}

// The SQL statements of any connection but `thread_id` in the file (the
// harness's own session ends with a COM_QUIT, which MySQL's one-probe path
// reports too).
size_t others(const std::string &path, unsigned long thread_id) {
    size_t n = 0;
    for (const auto &row : read_json_lines(path)) {
        n += row.value("kind", "") == "statement" && row.value("THREAD_ID", 0ul) != thread_id &&
             row.value("EVENT_NAME", "").starts_with("statement/sql/");
    }
    return n;
}

class AgentTest : public TmpdirTest {
  protected:
    AgentTest() : TmpdirTest("mtagent") {}
    void SetUp() override {
        TmpdirTest::SetUp();
        out_ = base_ + "/out";
    }

    std::string out_;
};

// Waits for the agent's "attached pid=N" line and returns its fields.
std::map<std::string, std::string> wait_attached(BackgroundCommand &agent, pid_t pid,
                                                 double *seconds) {
    const auto t0 = Clock::now();
    const std::string prefix = "attached pid=" + std::to_string(pid) + " ";
    EXPECT_TRUE(agent.wait_for_stderr(prefix, 60000)) << agent.stderr_so_far();
    // The agent writes each line whole; a read may still end inside it.
    for (int i = 0; i < 100; i++) {
        const auto &log = agent.stderr_so_far();
        if (log.find('\n', log.find(prefix)) != std::string::npos) {
            break;
        }
        agent.wait_for_stderr("\n" + prefix, 100);
    }
    *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return agent_line(agent.stderr_so_far(), prefix);
}

// Two statements on a new connection, right after the attach line; the
// connection's id. The files are read once the server has stopped and the
// agent has drained its rings: no waiting here.
unsigned long workload(MariadbServer &server, const std::string &tag) {
    MYSQL *m = connect_to(server);
    const unsigned long id = mysql_thread_id(m);
    EXPECT_EQ(run_query(m, "SELECT '" + tag + "'"), 0u);
    EXPECT_EQ(run_query(m, "SELECT 1 + 41 AS " + tag), 0u);
    mysql_close(m);
    return id;
}

TEST_F(AgentTest, ServersAttachedTracedDetachedAndReattached) {
    BackgroundCommand agent({MYSQLTRACE_BINARY, "agent", "--output-dir", out_, "--socket-prefix",
                             base_ + "/", "--format", "json,slowlog", "--rescan-ms", "500",
                             "--control-socket", base_ + "/agent.sock"});
    ASSERT_TRUE(agent.wait_for_stderr("agent watching")) << agent.stderr_so_far();
    // A program named mysqld that listens like a server but is none (a
    // copy of python): reported once, with why, and left alone.
    const std::string impostor = base_ + "/mysqld";
    fs::copy_file("/usr/bin/python3", impostor);
    auto fake = harness::spawn({impostor, "-c",
                                "import socket, time\n"
                                "s = socket.socket(socket.AF_UNIX)\n"
                                "s.bind('" +
                                    base_ +
                                    "/fake.sock')\n"
                                    "s.listen()\n"
                                    "time.sleep(600)\n"},
                               base_ + "/fake.log", false);
    ASSERT_TRUE(fake) << fake.error().message;
    const std::string refused =
        "not tracing pid=" + std::to_string(*fake) + " (" + impostor + "): ";
    EXPECT_TRUE(agent.wait_for_stderr(refused)) << agent.stderr_so_far();

    struct Traced {
        std::unique_ptr<MariadbServer> server;
        std::map<std::string, std::string> line;
        unsigned long thread_id = 0;
        std::string tag;
    };
    std::vector<Traced> servers;
    const ServerFlavour flavours[] = {ServerFlavour::mariadb, ServerFlavour::mariadb,
                                      ServerFlavour::mysql};
    for (size_t i = 0; i < std::size(flavours); i++) {
        ServerOptions opts;
        opts.flavour = flavours[i];
        if (opts.flavour == ServerFlavour::mysql) {
            opts.extra_args = {"--performance-schema=OFF"};
        }
        auto s = MariadbServer::start(opts);
        ASSERT_TRUE(s) << s.error().message;
        Traced t;
        t.server = std::move(s).value();
        double took = 0;
        t.line = wait_attached(agent, t.server->pid(), &took);
        std::printf("server %zu (%s): attached %.2f s after it answered\n", i,
                    flavour_name(flavours[i]).c_str(), took);
        // Its labels: what the server says of itself, and where it listens.
        EXPECT_EQ(t.line["flavour"], flavour_name(flavours[i]));
        EXPECT_TRUE(t.server->version().starts_with(t.line["version"]) &&
                    !t.line["version"].empty())
            << t.line["version"] << " vs " << t.server->version();
        EXPECT_EQ(t.line["port"], std::to_string(t.server->port()));
        EXPECT_EQ(t.line["socket"], t.server->socket_path());
        EXPECT_EQ(t.line["dir"],
                  out_ + "/" + flavour_name(flavours[i]) + "-" + std::to_string(t.server->port()));
        EXPECT_EQ(t.line["container"], "-");
        t.tag = "agent_" + std::to_string(i);
        t.thread_id = workload(*t.server, t.tag);
        servers.push_back(std::move(t));
    }
    // Three servers' links and maps, which bpftool lists.
    const Held all_attached = held_by(agent.pid());
    std::printf("agent with 3 servers attached: %zu links, %zu maps, RSS %s\n",
                all_attached.links.size(), all_attached.maps.size(), rss_of(agent.pid()).c_str());
    EXPECT_FALSE(all_attached.links.empty());
    EXPECT_FALSE(all_attached.maps.empty());
    EXPECT_EQ(still_listed(all_attached.links, "link"), all_attached.links);
    EXPECT_EQ(still_listed(all_attached.maps, "map"), all_attached.maps);

    // The first MariaDB restarts: same datadir, port and socket, new pid.
    auto &first = servers[0];
    const pid_t old_pid = first.server->pid();
    std::string cmdline =
        harness::read_file("/proc/" + std::to_string(old_pid) + "/cmdline").value_or("");
    std::vector<std::string> argv;
    for (size_t at = 0; at < cmdline.size();) {
        const size_t nul = cmdline.find('\0', at);
        argv.push_back(cmdline.substr(at, nul - at));
        at = nul == std::string::npos ? cmdline.size() : nul + 1;
    }
    ASSERT_FALSE(argv.empty());
    ASSERT_TRUE(first.server->stop());
    ASSERT_TRUE(
        agent.wait_for_stderr("detached pid=" + std::to_string(old_pid) + " (server exited)"))
        << agent.stderr_so_far();
    // Its links and maps are gone from the machine; the others' are not.
    const Held one_gone = held_by(agent.pid());
    EXPECT_LT(one_gone.links.size(), all_attached.links.size());
    EXPECT_LT(one_gone.maps.size(), all_attached.maps.size());
    std::set<int> gone_links, gone_maps;
    std::ranges::set_difference(all_attached.links, one_gone.links,
                                std::inserter(gone_links, gone_links.end()));
    std::ranges::set_difference(all_attached.maps, one_gone.maps,
                                std::inserter(gone_maps, gone_maps.end()));
    EXPECT_EQ(left_behind(gone_links, "link"), std::set<int>{});
    EXPECT_EQ(left_behind(gone_maps, "map"), std::set<int>{});
    EXPECT_EQ(still_listed(one_gone.links, "link"), one_gone.links);

    auto restarted = harness::spawn(argv, first.server->error_log_path(), false);
    ASSERT_TRUE(restarted) << restarted.error().message;
    double took = 0;
    auto again = wait_attached(agent, *restarted, &took);
    EXPECT_EQ(again["dir"], first.line["dir"]);
    EXPECT_EQ(again["socket"], first.line["socket"]);
    // Attached once it listens: a client can connect now.
    MYSQL *m = connect_to(*first.server);
    const unsigned long again_id = mysql_thread_id(m);
    EXPECT_EQ(run_query(m, "SELECT 'after restart'"), 0u);
    mysql_close(m);
    ::kill(*restarted, SIGTERM);
    ASSERT_TRUE(harness::wait_child(*restarted, Clock::now() + std::chrono::seconds(60)));
    EXPECT_TRUE(
        agent.wait_for_stderr("detached pid=" + std::to_string(*restarted) + " (server exited)"))
        << agent.stderr_so_far();

    for (size_t i = 1; i < servers.size(); i++) {
        const pid_t pid = servers[i].server->pid();
        ASSERT_TRUE(servers[i].server->stop());
        EXPECT_TRUE(
            agent.wait_for_stderr("detached pid=" + std::to_string(pid) + " (server exited): "))
            << agent.stderr_so_far();
    }
    std::printf("agent with every server gone: RSS %s\n", rss_of(agent.pid()).c_str());
    // Every server gone: nothing of theirs is left in the kernel.
    const Held none = held_by(agent.pid());
    EXPECT_EQ(none.links, std::set<int>{});
    EXPECT_EQ(none.maps, std::set<int>{});
    EXPECT_EQ(left_behind(all_attached.links, "link"), std::set<int>{});
    EXPECT_EQ(left_behind(all_attached.maps, "map"), std::set<int>{});

    // Many rescans later, the impostor was still reported only once.
    const std::string &log = agent.stderr_so_far();
    EXPECT_EQ(log.find(refused, log.find(refused) + 1), std::string::npos) << log;
    EXPECT_NE(log.find(refused + "pid " + std::to_string(*fake) +
                       " is not a MySQL/MariaDB server (no dispatch_command symbol)\n"),
              std::string::npos)
        << log;
    auto result = agent.stop(SIGTERM);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    ::kill(*fake, SIGKILL);
    harness::wait_child(*fake, Clock::now() + std::chrono::seconds(10));
    EXPECT_NE(result.err.find("agent stopped (terminated): 4 server(s) attached, 1 running "
                              "server(s) not traced"),
              std::string::npos)
        << result.err;

    // Each server's files hold exactly its statements.
    for (size_t i = 0; i < servers.size(); i++) {
        auto &t = servers[i];
        // The restarted server rotated its first run's file away.
        const std::string json =
            t.line["dir"] + (i == 0 ? "/statements.json.1" : "/statements.json");
        EXPECT_EQ(traced_texts(json, t.thread_id),
                  (std::vector<std::string>{"SELECT '" + t.tag + "'", "SELECT 1 + 41 AS " + t.tag}))
            << json;
        EXPECT_EQ(others(json, t.thread_id), 0u) << json;
        const std::string slow =
            harness::read_file(t.line["dir"] + (i == 0 ? "/slow.log.1" : "/slow.log")).value_or("");
        EXPECT_NE(slow.find("SELECT '" + t.tag + "';\n"), std::string::npos) << slow;
        EXPECT_NE(slow.find("SELECT 1 + 41 AS " + t.tag + ";\n"), std::string::npos) << slow;
    }
    const std::string json = first.line["dir"] + "/statements.json";
    EXPECT_EQ(traced_texts(json, again_id), std::vector<std::string>{"SELECT 'after restart'"});
    EXPECT_EQ(others(json, again_id), 0u);
}

// Every SQL statement's text in a statements.json, in order.
std::vector<std::string> all_texts(const std::string &path) {
    std::vector<std::string> out;
    for (const auto &row : read_json_lines(path)) {
        if (row.value("kind", "") == "statement" &&
            row.value("EVENT_NAME", "").starts_with("statement/sql/")) {
            out.push_back(row.value("SQL_TEXT", ""));
        }
    }
    return out;
}

// The statements of `workload(server, tag)`, as traced.
std::vector<std::string> texts_of(std::initializer_list<std::string> tags) {
    std::vector<std::string> out;
    for (const auto &t : tags) {
        out.push_back("SELECT '" + t + "'");
        out.push_back("SELECT 1 + 41 AS " + t);
    }
    return out;
}

// What `got` has that `want` has not, and the other way round, counted
// (a gap or a statement written twice), and where they first part.
std::string differences(const std::vector<std::string> &got, const std::vector<std::string> &want) {
    std::map<std::string, int> n;
    for (const auto &s : got) {
        n[s]++;
    }
    for (const auto &s : want) {
        n[s]--;
    }
    std::string out =
        std::to_string(got.size()) + " traced, " + std::to_string(want.size()) + " run;";
    for (const auto &[text, k] : n) {
        if (k != 0) {
            out += " " + text + (k > 0 ? " +" : " ") + std::to_string(k) + ";";
        }
    }
    const auto part = std::ranges::mismatch(got, want);
    if (part.in1 != got.end()) {
        out += " first apart at " + std::to_string(part.in1 - got.begin()) + ": " + *part.in1;
    }
    return out;
}

void write_config(const std::string &path, const std::string &text) {
    // Replaced whole, as an editor's save or a package upgrade does.
    std::ofstream(path + ".new") << text;
    fs::rename(path + ".new", path);
}

size_t count_of(const std::string &text, const std::string &what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
        n++;
    }
    return n;
}

TEST_F(AgentTest, ConfigFileSectionsAndSighupReload) {
    ServerOptions opts;
    opts.flavour = ServerFlavour::mariadb;
    auto a = MariadbServer::start(opts);
    ASSERT_TRUE(a) << a.error().message;
    auto b = MariadbServer::start(opts);
    ASSERT_TRUE(b) << b.error().message;
    const std::string pa = "pid=" + std::to_string((*a)->pid());
    const std::string pb = "pid=" + std::to_string((*b)->pid());
    const std::string dir_a = out_ + "/mariadb-" + std::to_string((*a)->port());
    const std::string dir_b = out_ + "/mariadb-" + std::to_string((*b)->port());
    const std::string conf = base_ + "/agent.conf";
    const std::string agent_section =
        "# The test's servers only.\n"
        "[agent]\n"
        "output_dir = " +
        out_ +
        "\n"
        "socket_prefix = " +
        base_ +
        "/\n"
        "rescan_ms = 200\n"
        "formats = json\n";
    write_config(conf, agent_section + "\n[server port=" + std::to_string((*b)->port()) +
                           "]\nenabled = no\n");
    BackgroundCommand agent({MYSQLTRACE_BINARY, "agent", "--config", conf, "--control-socket", ""});
    ASSERT_TRUE(agent.wait_for_stderr("agent watching")) << agent.stderr_so_far();
    double took = 0;
    auto line_a = wait_attached(agent, (*a)->pid(), &took);
    EXPECT_EQ(line_a["dir"], dir_a);
    EXPECT_EQ(line_a["formats"], "json");
    const std::string left_alone =
        "not tracing " + pb + " (" + (*b)->binary_path() +
        "): disabled by the configuration ([server port=" + std::to_string((*b)->port()) +
        "] (line 8))\n";
    EXPECT_TRUE(agent.wait_for_stderr(left_alone)) << agent.stderr_so_far();
    workload(**a, "before_a");
    workload(**b, "before_b");

    // B's section goes, A gets one: A gains the slow log and its lock
    // waits' probes, B is traced.
    write_config(conf, agent_section + "\n[server port=" + std::to_string((*a)->port()) +
                           "]\nformats = json, slowlog\nlocks = yes\n");
    ::kill(agent.pid(), SIGHUP);
    EXPECT_TRUE(agent.wait_for_stderr("SIGHUP: read " + conf + " again\n"))
        << agent.stderr_so_far();
    EXPECT_TRUE(agent.wait_for_stderr(pa +
                                      ": settings changed (formats json -> json,slowlog; locks "
                                      "no -> yes) by "
                                      "[server port=" +
                                      std::to_string((*a)->port()) +
                                      "] (line 8): attaching again\n"))
        << agent.stderr_so_far();
    EXPECT_TRUE(agent.wait_for_stderr("detached " + pa +
                                      " (settings changed): 2 statements, 0 records dropped\n"))
        << agent.stderr_so_far();
    EXPECT_TRUE(agent.wait_for_stderr(pb + ": enabled by the configuration ([agent]): attaching\n"))
        << agent.stderr_so_far();
    // A's second attach line (the first is before the reload).
    const size_t reload_at = agent.stderr_so_far().find("SIGHUP: read");
    ASSERT_TRUE(agent.wait_for_stderr("attached " + pa + " ")) << agent.stderr_so_far();
    for (int i = 0; i < 600; i++) {
        if (agent.stderr_so_far().find("attached " + pa + " ", reload_at) != std::string::npos) {
            break;
        }
        agent.wait_for_stderr("\n", 100);
    }
    auto again_a = agent_line(agent.stderr_so_far().substr(reload_at), "attached " + pa + " ");
    EXPECT_EQ(again_a["dir"], dir_a);
    EXPECT_EQ(again_a["formats"], "json,slowlog");
    // locks = yes: server --locks' probes too.
    EXPECT_GT(std::stoi(again_a["probes"]), std::stoi(line_a["probes"]))
        << again_a["probes"] << " " << line_a["probes"];
    auto line_b = wait_attached(agent, (*b)->pid(), &took);
    EXPECT_EQ(line_b["dir"], dir_b);
    EXPECT_EQ(line_b["formats"], "json");
    workload(**a, "after_a");
    workload(**b, "after_b");

    // A broken file: said with its line and key; the servers go on as they were.
    write_config(conf, "[agent]\nformats = json\nstagez = off\n");
    ::kill(agent.pid(), SIGHUP);
    EXPECT_TRUE(agent.wait_for_stderr(
        "SIGHUP: " + conf +
        ":3: key 'stagez': unknown key (known: output_dir, rescan_ms, socket_prefix, "
        "metrics_listen, control_socket, max_classes, enabled, formats, stages, rotate_size, "
        "rotate_keep, ring_kib, max_sql, "
        "show_secrets, locks, otlp); going on with the configuration loaded before\n"))
        << agent.stderr_so_far();
    workload(**a, "broken_a");
    workload(**b, "broken_b");

    auto result = agent.stop(SIGTERM);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(count_of(result.err, "not tracing " + pb), 1u) << result.err;
    EXPECT_EQ(count_of(result.err, "attached " + pa + " "), 2u) << result.err;
    EXPECT_EQ(count_of(result.err, "attached " + pb + " "), 1u) << result.err;
    EXPECT_EQ(count_of(result.err, "settings changed"), 2u) << result.err;  // said, detached
    EXPECT_NE(result.err.find("detached " + pa + " (terminated): 4 statements, 0 records dropped"),
              std::string::npos)
        << result.err;
    EXPECT_NE(result.err.find("detached " + pb + " (terminated): 4 statements, 0 records dropped"),
              std::string::npos)
        << result.err;
    EXPECT_NE(result.err.find("agent stopped (terminated): 3 server(s) attached, 0 running "
                              "server(s) not traced\n"),
              std::string::npos)
        << result.err;

    // A: one statements.json across its two attachments; the slow log from
    // the reload on.
    EXPECT_EQ(all_texts(dir_a + "/statements.json"), texts_of({"before_a", "after_a", "broken_a"}));
    EXPECT_FALSE(fs::exists(dir_a + "/statements.json.1"));
    const std::string slow = harness::read_file(dir_a + "/slow.log").value_or("");
    EXPECT_EQ(count_of(slow, "# Query_time: "), 4u) << slow;
    for (const auto &t : texts_of({"after_a", "broken_a"})) {
        EXPECT_EQ(count_of(slow, "\n" + t + ";\n"), 1u) << t << "\n" << slow;
    }
    EXPECT_FALSE(fs::exists(dir_a + "/slow.log.1"));
    // B: nothing while disabled, json only.
    EXPECT_EQ(all_texts(dir_b + "/statements.json"), texts_of({"after_b", "broken_b"}));
    EXPECT_FALSE(fs::exists(dir_b + "/statements.json.1"));
    EXPECT_FALSE(fs::exists(dir_b + "/slow.log"));
}

// A reload that attaches a busy server again: the new probes go in before
// the old come out, so every statement of a connection that runs through it
// is traced once, in the file of the attachment on its side of the cut.
void reload_traces_every_statement_once(ServerFlavour flavour, const std::string &base,
                                        const std::string &out) {
    ServerOptions opts;
    opts.flavour = flavour;
    auto a = MariadbServer::start(opts);
    ASSERT_TRUE(a) << a.error().message;
    const std::string pa = "pid=" + std::to_string((*a)->pid());
    const std::string dir_a = out + (flavour == ServerFlavour::mysql ? "/mysql-" : "/mariadb-") +
                              std::to_string((*a)->port());
    const std::string conf = base + "/agent.conf";
    const std::string agent_section = "[agent]\noutput_dir = " + out + "\nsocket_prefix = " + base +
                                      "/\nrescan_ms = 200\nformats = json\n";
    write_config(conf, agent_section);
    const std::string control = base + "/agent.sock";
    BackgroundCommand agent(
        {MYSQLTRACE_BINARY, "agent", "--config", conf, "--control-socket", control});
    ASSERT_TRUE(agent.wait_for_stderr("agent watching")) << agent.stderr_so_far();
    double took = 0;
    wait_attached(agent, (*a)->pid(), &took);

    // One connection, a statement a millisecond, each its own text.
    std::atomic<bool> done{false};
    std::atomic<int> sent{0};
    std::thread client([&] {
        MYSQL *m = connect_to(**a);
        while (!done) {
            EXPECT_EQ(run_query(m, "SELECT " + std::to_string(sent.load()) + " AS seq"), 0u);
            sent++;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        mysql_close(m);
    });
    auto wait_sent = [&](int n) {
        for (int i = 0; i < 3000 && sent < n; i++) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    };
    wait_sent(200);
    write_config(conf, agent_section + "\n[server port=" + std::to_string((*a)->port()) +
                           "]\nformats = json, slowlog\n");
    ::kill(agent.pid(), SIGHUP);
    EXPECT_TRUE(agent.wait_for_stderr("detached " + pa + " (settings changed): "))
        << agent.stderr_so_far();
    const int at_reload = sent;
    wait_sent(at_reload + 200);
    done = true;
    client.join();
    // The totals (`top`, /metrics) go on across the reload: the class of
    // these statements counts every one (the last ones once the reader has
    // put its rings' records in order).
    auto calls_now = [&](std::string *answer) {
        uint64_t n = 0;
        auto text = agent::ask_agent(control, "snapshot");
        if (!text) {
            *answer = text.error().message;
            return n;
        }
        *answer = *text;
        auto snap = top::parse_snapshot(*text);
        if (!snap) {
            return n;
        }
        for (const auto &sv : snap->servers) {
            for (const auto &c : sv.classes) {
                n += c.digest == "SELECT ? AS seq" ? c.calls : 0;
            }
        }
        return n;
    };
    std::string snapshot;
    uint64_t calls = calls_now(&snapshot);
    for (int i = 0; i < 50 && calls < static_cast<uint64_t>(sent); i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        calls = calls_now(&snapshot);
    }
    auto result = agent.stop(SIGTERM);
    EXPECT_EQ(result.exit_code, 0) << result.err;

    std::vector<std::string> expected;
    for (int i = 0; i < sent; i++) {
        expected.push_back("SELECT " + std::to_string(i) + " AS seq");
    }
    // One file across the reload, each statement once, in order.
    const auto traced = all_texts(dir_a + "/statements.json");
    EXPECT_TRUE(traced == expected) << differences(traced, expected);
    EXPECT_FALSE(fs::exists(dir_a + "/statements.json.1"));
    // The cut fell inside the run: the attachment before wrote the first
    // `before` statements, the new one (with the slow log) the rest.
    const std::string detached = "detached " + pa + " (settings changed): ";
    const size_t at = result.err.find(detached);
    ASSERT_NE(at, std::string::npos) << result.err;
    const int before = std::atoi(result.err.c_str() + at + detached.size());
    EXPECT_EQ(result.err.substr(at, result.err.find('\n', at) - at),
              detached + std::to_string(before) + " statements, 0 records dropped");
    EXPECT_GE(before, 200);
    EXPECT_GE(sent - before, 200);
    EXPECT_EQ(calls, static_cast<uint64_t>(sent)) << snapshot.substr(0, 2000);
    const std::string slow = harness::read_file(dir_a + "/slow.log").value_or("");
    EXPECT_EQ(count_of(slow, " AS seq;\n"), static_cast<size_t>(sent - before))
        << slow.substr(0, 2000);
    const size_t first = slow.find(" AS seq;\n");
    ASSERT_NE(first, std::string::npos) << slow.substr(0, 2000);
    const size_t line = slow.rfind('\n', first) + 1;
    EXPECT_EQ(slow.substr(line, first - line + 8), "SELECT " + std::to_string(before) + " AS seq;");
}

TEST_F(AgentTest, ReloadTracesEveryStatementOnce) {
    reload_traces_every_statement_once(ServerFlavour::mariadb, base_, out_);
}

// MySQL's start times are on the wall clock; its query ids the same rule.
TEST_F(AgentTest, ReloadTracesEveryStatementOnceMysql) {
    reload_traces_every_statement_once(ServerFlavour::mysql, base_, out_);
}

// A reload whose new settings cannot be attached: the attachment before
// goes on, losing nothing, and the next reload tries again.
TEST_F(AgentTest, ReloadThatCannotAttachKeepsTheSettingsBefore) {
    ServerOptions opts;
    opts.flavour = ServerFlavour::mariadb;
    auto a = MariadbServer::start(opts);
    ASSERT_TRUE(a) << a.error().message;
    const std::string pa = "pid=" + std::to_string((*a)->pid());
    const std::string name = "/mariadb-" + std::to_string((*a)->port());
    const std::string out2 = base_ + "/out2";
    const std::string conf = base_ + "/agent.conf";
    auto config = [&](const std::string &dir) {
        write_config(conf, "[agent]\noutput_dir = " + dir + "\nsocket_prefix = " + base_ +
                               "/\nrescan_ms = 200\nformats = json\n");
    };
    config(out_);
    BackgroundCommand agent({MYSQLTRACE_BINARY, "agent", "--config", conf, "--control-socket", ""});
    ASSERT_TRUE(agent.wait_for_stderr("agent watching")) << agent.stderr_so_far();
    double took = 0;
    wait_attached(agent, (*a)->pid(), &took);
    workload(**a, "first");

    // The new output_dir holds a file where the server's directory goes.
    fs::create_directories(out2);
    std::ofstream(out2 + name) << "in the way\n";
    config(out2);
    ::kill(agent.pid(), SIGHUP);
    EXPECT_TRUE(agent.wait_for_stderr(pa + ": cannot attach with the new settings (" + out2 + name +
                                      " exists and is not a directory): tracing goes on with "
                                      "the settings before\n"))
        << agent.stderr_so_far();
    workload(**a, "kept");

    fs::remove(out2 + name);
    ::kill(agent.pid(), SIGHUP);
    EXPECT_TRUE(agent.wait_for_stderr("detached " + pa + " (settings changed): 4 statements"))
        << agent.stderr_so_far();
    workload(**a, "moved");
    auto result = agent.stop(SIGTERM);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(count_of(result.err, "attached " + pa + " "), 2u) << result.err;
    EXPECT_EQ(count_of(result.err, "not tracing"), 0u) << result.err;
    EXPECT_NE(result.err.find("detached " + pa + " (terminated): 2 statements, 0 records dropped"),
              std::string::npos)
        << result.err;
    EXPECT_EQ(all_texts(out_ + name + "/statements.json"), texts_of({"first", "kept"}));
    EXPECT_EQ(all_texts(out2 + name + "/statements.json"), texts_of({"moved"}));
}

// The `otlp` key: a server's statements as spans and their durations as the
// server histogram, to a collector (the independent receiver), and the
// detach line counts what was sent.
TEST_F(AgentTest, OtlpKeyExportsStatementsAsSpans) {
    ServerOptions opts;
    opts.flavour = ServerFlavour::mariadb;
    auto a = MariadbServer::start(opts);
    ASSERT_TRUE(a) << a.error().message;
    const std::string received = base_ + "/received.jsonl";
    const std::string metrics = base_ + "/metrics.jsonl";
    int port = 0;
    auto receiver = start_receiver(received, &port, {"--metrics-out", metrics});
    ASSERT_GT(port, 0);
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    const std::string conf = base_ + "/agent.conf";
    write_config(conf, "[agent]\noutput_dir = " + out_ + "\nsocket_prefix = " + base_ +
                           "/\nrescan_ms = 200\nformats = json\n\n[server port=" +
                           std::to_string((*a)->port()) + "]\notlp = " + url + "\n");
    BackgroundCommand agent({MYSQLTRACE_BINARY, "agent", "--config", conf, "--control-socket", ""});
    ASSERT_TRUE(agent.wait_for_stderr("agent watching")) << agent.stderr_so_far();
    double took = 0;
    auto line = wait_attached(agent, (*a)->pid(), &took);
    EXPECT_EQ(line["otlp"], url);
    const unsigned long id = workload(**a, "otlp_a");
    const std::string pid = std::to_string((*a)->pid());
    const std::string detached = "detached pid=" + pid + " (server exited)";
    ASSERT_TRUE((*a)->stop());
    ASSERT_TRUE(agent.wait_for_stderr(detached)) << agent.stderr_so_far();
    auto r = agent.stop(SIGINT);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    receiver->stop(SIGTERM);
    EXPECT_NE(r.err.find(detached + ": 2 statements, 0 records dropped, 2 spans (OTLP " + url +
                         "/v1/traces: 2 sent, 0 dropped (queue full), 0 failed), 1 metric "
                         "exports (OTLP " +
                         url + "/v1/metrics: 1 points sent, 0 dropped, 0 failed)"),
              std::string::npos)
        << r.err;
    std::vector<std::string> texts;
    for (const auto &sp : json_lines(read_file(received))) {
        ASSERT_FALSE(sp.contains("error")) << sp.dump();
        EXPECT_EQ(sp["kind"], 2);
        EXPECT_EQ(sp["resource"]["service.name"], "mariadb");
        EXPECT_EQ(sp["resource"]["process.pid"]["int"], pid);
        EXPECT_EQ(str_attr(sp, "db.system.name"), "mariadb");
        EXPECT_EQ(int_attr(sp, "server.port"), std::to_string((*a)->port()));
        EXPECT_EQ(int_attr(sp, "mysqltrace.connection.id"), std::to_string(id));
        texts.push_back(str_attr(sp, "db.query.text"));
    }
    EXPECT_EQ(texts, (std::vector<std::string>{"SELECT 'otlp_a'", "SELECT 1 + 41 AS otlp_a"}));
    const auto points = json_lines(read_file(metrics));
    ASSERT_EQ(points.size(), 1u);
    EXPECT_EQ(points[0]["metric"], "mysqltrace.server.operation.duration");
    EXPECT_EQ(points[0]["count"], "2");
    EXPECT_EQ(points[0]["attributes"]["db.query.summary"], "SELECT");
}

}  // namespace
}  // namespace mysqltrace::test
