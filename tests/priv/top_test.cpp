// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace top` used as a person uses it: in a terminal (a detached tmux
// session of 200x50), keys sent, the screen read back. Once on one MariaDB
// server it traces itself (--pid), once through the agent's control socket
// with a MariaDB and a MySQL 9.7 server. The workload's classes take
// clearly different total times and calls, so each sort order is known:
//   heavy  SELECT SLEEP(0.01) AS heavy  60 calls, about 0.6 s   (db topa)
//   slow   SELECT SLEEP(0.1) AS slow     3 calls, about 0.3 s   (db topb)
//   cheap  SELECT 1 AS cheap           200 calls, a few ms      (db topa)
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "priv/cli_util.h"
#include "priv/priv.h"
#include "priv/server_session.h"
#include "priv/tmpdir_test.h"
#include "priv/tmux.h"

namespace mysqltrace::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<std::string> lines_of(const std::string &screen) {
    std::vector<std::string> out;
    std::istringstream in(screen);
    std::string l;
    while (std::getline(in, l)) {
        out.push_back(l);
    }
    return out;
}

std::vector<std::string> fields_of(const std::string &line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    std::string w;
    while (in >> w) {
        out.push_back(w);
    }
    return out;
}

// The table rows whose digest ends with " AS <name>", in screen order:
// name -> its fields (CALLS/S TIME% CALLS ..., after SERVER if shown).
struct Shown {
    std::vector<std::string> order;
    std::map<std::string, std::vector<std::string>> fields;
};
Shown classes_shown(const std::string &screen, const std::vector<std::string> &names) {
    Shown s;
    for (const auto &l : lines_of(screen)) {
        for (const auto &n : names) {
            if (l.ends_with(" AS " + n) && l.find("SELECT") != std::string::npos &&
                !s.fields.count(n)) {
                s.order.push_back(n);
                s.fields[n] = fields_of(l);
            }
        }
    }
    return s;
}

// The screen shows exactly `order` of `names`, each with the CALLS
// `calls` gives (field `calls_field` of its line).
bool shows(const std::string &screen, const std::vector<std::string> &names,
           const std::vector<std::string> &order, const std::map<std::string, int> &calls,
           size_t calls_field) {
    const Shown s = classes_shown(screen, names);
    if (s.order != order) {
        return false;
    }
    for (const auto &[n, want] : calls) {
        auto it = s.fields.find(n);
        if (it != s.fields.end() &&
            (it->second.size() <= calls_field || it->second[calls_field] != std::to_string(want))) {
            return false;
        }
    }
    return true;
}

// The workload of the header comment; the ids of its topa and topb
// connections.
std::pair<unsigned long, unsigned long> workload(MariadbServer &server) {
    MYSQL *a = connect_to(server, 0, "topa");
    MYSQL *b = connect_to(server, 0, "topb");
    const std::pair ids{mysql_thread_id(a), mysql_thread_id(b)};
    for (int i = 0; i < 200; i++) {
        EXPECT_EQ(run_query(a, "SELECT 1 AS cheap"), 0u);
        if (i % 10 == 0 && i / 10 < 3) {
            EXPECT_EQ(run_query(b, "SELECT SLEEP(0.1) AS slow"), 0u);
        }
        if (i % 10 < 3) {
            EXPECT_EQ(run_query(a, "SELECT SLEEP(0.01) AS heavy"), 0u);
        }
    }
    mysql_close(a);
    mysql_close(b);
    return ids;
}

void make_databases(MariadbServer &server) {
    auto made = server.query("CREATE DATABASE topa; CREATE DATABASE topb");
    ASSERT_TRUE(made) << made.error().message;
}

class TopTest : public TmpdirTest {
  protected:
    TopTest() : TmpdirTest("mttop") {}
};

const std::vector<std::string> kNames = {"heavy", "slow", "cheap"};

TEST_F(TopTest, OneServerInATerminal) {
    auto started = MariadbServer::start();
    ASSERT_TRUE(started) << started.error().message;
    auto server = std::move(started).value();
    make_databases(*server);
    Tmux tmux(base_);
    std::string screen;
    ASSERT_TRUE(tmux.wait(
        [](const std::string &s) { return s.find("shell$") != std::string::npos; }, 10, &screen))
        << screen;
    tmux.type(std::string(MYSQLTRACE_BINARY) + " top --pid " + std::to_string(server->pid()) +
              " --interval 0.5; echo TOP-EXIT=$?");
    tmux.key("Enter");
    ASSERT_TRUE(tmux.wait(
        [](const std::string &s) {
            return s.find("mysqltrace top - 1 server (pid ") != std::string::npos &&
                   s.find("CALLS/S") != std::string::npos;
        },
        30, &screen))
        << screen;

    const auto [topa_id, topb_id] = workload(*server);
    const auto done = Clock::now();
    // Sorted by total time; CALLS is the third field.
    const std::map<std::string, int> calls = {{"heavy", 60}, {"slow", 3}, {"cheap", 200}};
    ASSERT_TRUE(tmux.wait(
        [&](const std::string &s) {
            return shows(s, kNames, {"heavy", "slow", "cheap"}, calls, 2);
        },
        2, &screen))
        << screen;
    std::printf("classes in total time order %.2f s after the workload\n", seconds_since(done));
    EXPECT_NE(screen.find("sorted by total time"), std::string::npos) << screen;
    EXPECT_NE(screen.find("SELECT SLEEP(?) AS heavy"), std::string::npos) << screen;

    // By calls.
    tmux.key("c");
    EXPECT_TRUE(tmux.wait(
        [&](const std::string &s) {
            return s.find("sorted by calls/s") != std::string::npos &&
                   shows(s, kNames, {"cheap", "heavy", "slow"}, calls, 2);
        },
        2, &screen))
        << screen;
    // By mean latency.
    tmux.key("m");
    EXPECT_TRUE(tmux.wait(
        [&](const std::string &s) {
            return s.find("sorted by mean latency") != std::string::npos &&
                   shows(s, kNames, {"slow", "heavy", "cheap"}, calls, 2);
        },
        2, &screen))
        << screen;
    tmux.key("t");
    // One schema: topb has the slow class alone.
    tmux.key("d");
    tmux.type("topb");
    tmux.key("Enter");
    EXPECT_TRUE(tmux.wait(
        [&](const std::string &s) {
            return s.find("only db=topb") != std::string::npos &&
                   shows(s, kNames, {"slow"}, calls, 2);
        },
        2, &screen))
        << screen;
    // Enter: its recent statements, newest first, with their connection.
    tmux.key("Enter");
    EXPECT_TRUE(tmux.wait(
        [&](const std::string &s) {
            return s.find("RECENT STATEMENTS (newest first)") != std::string::npos;
        },
        2, &screen))
        << screen;
    size_t recent = 0;
    for (const auto &l : lines_of(screen)) {
        if (l.ends_with("  SELECT SLEEP(0.1) AS slow")) {
            recent++;
            auto f = fields_of(l);
            ASSERT_EQ(f.size(), 9u) << l;
            EXPECT_EQ(f[1], "1") << l;  // rows sent
            EXPECT_EQ(f[3], "-") << l;  // no error
            EXPECT_EQ(f[4], std::to_string(topb_id)) << l;
        }
    }
    EXPECT_EQ(recent, 3u) << screen;
    EXPECT_NE(screen.find("calls 3 "), std::string::npos) << screen;
    EXPECT_NE(screen.find("schema topb   user mt"), std::string::npos) << screen;
    (void)topa_id;

    // q: top exits 0 and the shell's screen is back.
    tmux.key("Escape");
    tmux.key("q");
    EXPECT_TRUE(tmux.wait_for_prompt_after("TOP-EXIT=", 10, &screen)) << screen;
    EXPECT_NE(screen.find("TOP-EXIT=0\nshell$"), std::string::npos) << screen;
    EXPECT_EQ(screen.find("mysqltrace top - "), std::string::npos) << screen;
}

// A socket file nothing listens on, as a killed agent leaves it.
void leave_stale_socket(const std::string &path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0);
    ::close(fd);
}

TEST_F(TopTest, EveryServerThroughTheAgent) {
    const std::string control = base_ + "/run/agent.sock";
    // Nothing there yet.
    auto none = run_command({MYSQLTRACE_BINARY, "top", "-b", "--control-socket", control});
    EXPECT_EQ(none.exit_code, 1);
    EXPECT_EQ(none.err, "mysqltrace: no agent at " + control +
                            ": start one with `mysqltrace agent` or use --pid\n");
    fs::create_directories(base_ + "/run");
    leave_stale_socket(control);
    BackgroundCommand agent({MYSQLTRACE_BINARY, "agent", "--output-dir", base_ + "/out",
                             "--socket-prefix", base_ + "/", "--rescan-ms", "200",
                             "--control-socket", control});
    ASSERT_TRUE(agent.wait_for_stderr("agent watching")) << agent.stderr_so_far();
    EXPECT_NE(agent.stderr_so_far().find("control socket " + control), std::string::npos);
    struct stat st {};
    ASSERT_EQ(::lstat(control.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    // A second agent on the same socket is refused.
    auto second = run_command({MYSQLTRACE_BINARY, "agent", "--output-dir", base_ + "/out2",
                               "--socket-prefix", base_ + "/none/", "--control-socket", control});
    EXPECT_EQ(second.exit_code, 1);
    EXPECT_NE(second.err.find("another agent answers on " + control), std::string::npos)
        << second.err;

    auto mariadb = MariadbServer::start();
    ASSERT_TRUE(mariadb) << mariadb.error().message;
    ServerOptions mo;
    mo.flavour = ServerFlavour::mysql;
    mo.extra_args = {"--performance-schema=OFF"};
    auto mysql = MariadbServer::start(mo);
    ASSERT_TRUE(mysql) << mysql.error().message;
    for (auto *s : {mariadb->get(), mysql->get()}) {
        EXPECT_TRUE(agent.wait_for_stderr("attached pid=" + std::to_string(s->pid()) + " ", 60000))
            << agent.stderr_so_far();
    }
    make_databases(**mariadb);

    Tmux tmux(base_);
    std::string screen;
    ASSERT_TRUE(tmux.wait(
        [](const std::string &s) { return s.find("shell$") != std::string::npos; }, 10, &screen))
        << screen;
    tmux.type(std::string(MYSQLTRACE_BINARY) + " top --control-socket " + control +
              " --interval 0.5; echo TOP-EXIT=$?");
    tmux.key("Enter");
    ASSERT_TRUE(tmux.wait(
        [](const std::string &s) {
            return s.find("mysqltrace top - 2 servers (agent ") != std::string::npos;
        },
        30, &screen))
        << screen;

    workload(**mariadb);
    MYSQL *m = connect_to(**mysql);
    for (int i = 0; i < 4; i++) {
        EXPECT_EQ(run_query(m, "SELECT SLEEP(0.05) AS mysqlslow"), 0u);
    }
    mysql_close(m);
    const auto done = Clock::now();
    // SERVER is the first field, CALLS the fourth.
    const std::vector<std::string> names = {"heavy", "mysqlslow", "slow", "cheap"};
    const std::map<std::string, int> calls = {
        {"heavy", 60}, {"mysqlslow", 4}, {"slow", 3}, {"cheap", 200}};
    ASSERT_TRUE(tmux.wait(
        [&](const std::string &s) {
            return shows(s, names, {"heavy", "slow", "mysqlslow", "cheap"}, calls, 3);
        },
        2, &screen))
        << screen;
    std::printf("both servers' classes in order %.2f s after the workload\n", seconds_since(done));
    const Shown shown = classes_shown(screen, names);
    const std::string maria_name = "mariadb-" + std::to_string((*mariadb)->port());
    const std::string mysql_name = "mysql-" + std::to_string((*mysql)->port());
    EXPECT_EQ(shown.fields.at("heavy")[0], maria_name);
    EXPECT_EQ(shown.fields.at("slow")[0], maria_name);
    EXPECT_EQ(shown.fields.at("cheap")[0], maria_name);
    EXPECT_EQ(shown.fields.at("mysqlslow")[0], mysql_name);
    EXPECT_NE(screen.find("SERVER"), std::string::npos) << screen;
    // Ctrl-C ends it as q does: exit 0, the shell's screen back.
    tmux.key("C-c");
    EXPECT_TRUE(tmux.wait_for_prompt_after("TOP-EXIT=", 10, &screen)) << screen;
    EXPECT_NE(screen.find("TOP-EXIT=0\nshell$"), std::string::npos) << screen;

    EXPECT_EQ(screen.find("mysqltrace top - "), std::string::npos) << screen;

    // Not a terminal: said, unless --batch.
    auto no_tty = run_command({MYSQLTRACE_BINARY, "top", "--control-socket", control});
    EXPECT_EQ(no_tty.exit_code, 2);
    EXPECT_EQ(no_tty.err,
              "mysqltrace: top needs a terminal on stdin and stdout; --batch (-b) "
              "prints the table as text every interval instead\n");
    // --batch: the same table as text.
    auto batch = run_command({MYSQLTRACE_BINARY, "top", "-b", "--control-socket", control,
                              "--interval", "0.3", "-d", "1", "--sort", "calls"});
    EXPECT_EQ(batch.exit_code, 0) << batch.err;
    const std::string last = batch.out.substr(batch.out.rfind("mysqltrace top - "));
    EXPECT_TRUE(shows(last, names, {"cheap", "heavy", "mysqlslow", "slow"}, calls, 3)) << last;

    auto stopped = agent.stop(SIGTERM);
    EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
    // The agent removed its socket.
    EXPECT_FALSE(fs::exists(control));
}

}  // namespace
}  // namespace mysqltrace::test
