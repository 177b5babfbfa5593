// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace top`'s blocking tree (top/lock_view.h) against a scripted
// incident whose every wait the test causes itself, with the connection ids
// it got from the server: A holds a row lock that B waits for; C holds a
// transaction that read t2 while D's ALTER TABLE waits for its metadata
// lock. While both wait, `top --batch` (and the screen, on `l`) prints A
// over B and C over D, with the statements A and C ran, and no one else as
// a blocker; once A and C commit, "lock waits: none now". Through the agent (--locks) with a
// MariaDB 10.11 and a MySQL 9.7 server (performance_schema off), and with
// `top --pid --locks` on MariaDB, with its binary log closed and open: A is
// a certain blocker in both (the transaction B's waits for,
// trx->lock.wait_trx; with --log-bin InnoDB also reports the edge through
// thd_rpl_deadlock_check).
#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <mysql.h>

#include "priv/cli_util.h"
#include "priv/priv.h"
#include "priv/server_session.h"
#include "priv/tmpdir_test.h"
#include "priv/tmux.h"

namespace mysqltrace::test {
namespace {

using Clock = std::chrono::steady_clock;

class TopLocksTest : public TmpdirTest {
  protected:
    TopLocksTest() : TmpdirTest("mttoplocks") {}
};

// A statement run on its own thread (it blocks); join() returns its error.
class Async {
  public:
    Async(MYSQL *m, std::string sql)
        : t_([this, m, sql = std::move(sql)] { err_ = run_query(m, sql); }) {}
    unsigned join() {
        t_.join();
        return err_;
    }

  private:
    unsigned err_ = 0;
    std::thread t_;
};

// Polls until `sql` returns a row. Every 150 ms: INNODB_TRX is a cache
// refreshed only when it was not read for 100 ms, so a faster poll reads
// the first refresh forever.
bool until_row(MariadbServer &server, const std::string &sql) {
    for (int i = 0; i < 100; i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));
        auto r = server.query(sql);
        if (r.ok() && !r->empty()) {
            return true;
        }
    }
    ADD_FAILURE() << "never true: " << sql;
    return false;
}

// The incident of the header comment, from its start (both waits in
// progress) to end() (both granted).
class Incident {
  public:
    static constexpr const char *kAUpdate = "UPDATE mt_db.t SET b = 'a' WHERE a = 1";
    static constexpr const char *kBUpdate = "UPDATE mt_db.t SET b = 'b' WHERE a = 1";
    static constexpr const char *kCSelect = "SELECT * FROM mt_db.t2";
    static constexpr const char *kDAlter = "ALTER TABLE mt_db.t2 ADD COLUMN c INT";

    explicit Incident(MariadbServer &server) : server_(server) {
        for (int i = 0; i < 4; i++) {
            c_[i] = connect_to(server);
            id[i] = mysql_thread_id(c_[i]);
        }
    }
    ~Incident() {
        for (MYSQL *m : c_) {
            mysql_close(m);
        }
    }
    void start() {
        ASSERT_EQ(run_query(c_[A], "BEGIN"), 0u);
        ASSERT_EQ(run_query(c_[A], kAUpdate), 0u);
        b_ = std::make_unique<Async>(c_[B], kBUpdate);
        until_row(server_,
                  "SELECT 1 FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT' AND "
                  "trx_mysql_thread_id = " +
                      std::to_string(id[B]));
        ASSERT_EQ(run_query(c_[C], "BEGIN"), 0u);
        ASSERT_EQ(run_query(c_[C], kCSelect), 0u);
        d_ = std::make_unique<Async>(c_[D], kDAlter);
        until_row(server_,
                  "SELECT 1 FROM information_schema.PROCESSLIST WHERE STATE = 'Waiting for table "
                  "metadata lock' AND ID = " +
                      std::to_string(id[D]));
    }
    void end() {
        EXPECT_EQ(run_query(c_[A], "COMMIT"), 0u);
        EXPECT_EQ(b_->join(), 0u);
        EXPECT_EQ(run_query(c_[C], "COMMIT"), 0u);
        EXPECT_EQ(d_->join(), 0u);
        b_.reset();
        d_.reset();
    }

    enum { A, B, C, D };
    unsigned long id[4] = {};

  private:
    MariadbServer &server_;
    MYSQL *c_[4] = {};
    std::unique_ptr<Async> b_, d_;
};

void make_tables(MariadbServer &server) {
    create_table_t(server);
    auto r =
        server.query("CREATE TABLE mt_db.t2 (a INT PRIMARY KEY); INSERT INTO mt_db.t2 VALUES (1)");
    ASSERT_TRUE(r.ok()) << r.error().message;
}

// Durations (top's short_duration) as "<t>": they change every frame.
std::string without_times(const std::string &s) {
    static const std::regex t(R"(\b[0-9]+(\.[0-9]+)?(ns|us|ms|s)\b|\b[0-9]+m[0-9]+s\b)");
    return std::regex_replace(s, t, "<t>");
}

// The lock lines of the last frame of a `top --batch` output (from its
// "lock waits" lines to the frame's end).
std::string last_lock_lines(const std::string &out) {
    const size_t frame = out.rfind("mysqltrace top - ");
    if (frame == std::string::npos) {
        return "";
    }
    std::string last = out.substr(frame);
    const size_t at = last.find("\nlock waits");
    if (at == std::string::npos) {
        return "";
    }
    last = last.substr(at + 1);
    while (!last.empty() && last.back() == '\n') {
        last.pop_back();
    }
    return last + "\n";
}

// What the tree must be while the incident's waits are in progress.
std::string expected_tree(const std::string &name, pid_t pid, const Incident &in) {
    const auto id = [&](int i) { return std::to_string(in.id[i]); };
    return "lock waits of " + name + " (pid " + std::to_string(pid) + "): 2 waiting\n" +
           "blocking thread " + id(Incident::A) + ", transaction open <t>: " + Incident::kAUpdate +
           "\n  -> thread " + id(Incident::B) +
           " waits <t> for an InnoDB row lock on TABLE mt_db.t: " + Incident::kBUpdate +
           "\nblocking thread " + id(Incident::C) +
           ", transaction open <t>: " + Incident::kCSelect + "\n  -> thread " + id(Incident::D) +
           " waits <t> for metadata lock EXCLUSIVE on TABLE mt_db.t2: " + Incident::kDAlter + "\n";
}

// `top --batch` for ~1 s; the lock lines of its last frame.
std::string batch_tree(const std::vector<std::string> &source) {
    std::vector<std::string> argv = {
        MYSQLTRACE_BINARY, "top", "-b", "--interval", "0.3", "-d", "1"};
    argv.insert(argv.end(), source.begin(), source.end());
    auto r = run_command(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string lines = last_lock_lines(r.out);
    std::printf("%s", lines.c_str());
    return without_times(lines);
}

TEST_F(TopLocksTest, BlockingTreeThroughTheAgent) {
    const std::string control = base_ + "/agent.sock";
    BackgroundCommand agent({MYSQLTRACE_BINARY, "agent", "--output-dir", base_ + "/out",
                             "--socket-prefix", base_ + "/", "--rescan-ms", "200",
                             "--control-socket", control, "--locks"});
    ASSERT_TRUE(agent.wait_for_stderr("agent watching")) << agent.stderr_so_far();
    auto mariadb = MariadbServer::start();
    ASSERT_TRUE(mariadb) << mariadb.error().message;
    ServerOptions mo;
    mo.flavour = ServerFlavour::mysql;
    mo.extra_args = {"--performance-schema=OFF"};
    auto mysql = MariadbServer::start(mo);
    ASSERT_TRUE(mysql) << mysql.error().message;
    for (auto *s : {mariadb->get(), mysql->get()}) {
        ASSERT_TRUE(agent.wait_for_stderr("attached pid=" + std::to_string(s->pid()) + " ", 60000))
            << agent.stderr_so_far();
    }
    const std::vector<std::string> source = {"--control-socket", control};
    EXPECT_EQ(batch_tree(source), "lock waits: none now\n");

    struct Case {
        MariadbServer *server;
        std::string name;
    };
    for (const Case &c : {Case{mariadb->get(), "mariadb-" + std::to_string((*mariadb)->port())},
                          Case{mysql->get(), "mysql-" + std::to_string((*mysql)->port())}}) {
        SCOPED_TRACE(c.name);
        make_tables(*c.server);
        Incident in(*c.server);
        in.start();
        const auto t0 = Clock::now();
        EXPECT_EQ(batch_tree(source), expected_tree(c.name, c.server->pid(), in));
        std::printf("%s: tree shown %.2f s after both waits began\n", c.name.c_str(),
                    std::chrono::duration<double>(Clock::now() - t0).count());
        in.end();
        EXPECT_EQ(batch_tree(source), "lock waits: none now\n");
    }
    auto stopped = agent.stop(SIGTERM);
    EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
}

// `top --pid --locks` on a MariaDB server (with its binary log open:
// `binlog`) during the incident.
void top_pid_incident(bool binlog) {
    ServerOptions o;
    if (binlog) {
        o.extra_args = {"--log-bin=mt-bin", "--server-id=1"};
    }
    auto started = MariadbServer::start(o);
    ASSERT_TRUE(started) << started.error().message;
    auto server = std::move(started).value();
    make_tables(*server);
    Incident in(*server);
    // Only waits that begin once top is attached are seen: top first.
    BackgroundCommand top({MYSQLTRACE_BINARY, "top", "-b", "--pid", std::to_string(server->pid()),
                           "--locks", "--interval", "0.3"});
    ASSERT_TRUE(top.wait_for_stderr("Ctrl-C to stop", 60000)) << top.stderr_so_far();
    in.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    in.end();
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    auto stopped = top.stop(SIGINT);
    EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
    // A frame printed while both waited, and the last one after.
    const std::string want =
        expected_tree("mariadb-" + std::to_string(server->port()), server->pid(), in);
    bool seen = false;
    for (size_t at = stopped.out.find("mysqltrace top - "); at != std::string::npos;
         at = stopped.out.find("mysqltrace top - ", at + 1)) {
        const size_t next = stopped.out.find("mysqltrace top - ", at + 1);
        const std::string lines = last_lock_lines(stopped.out.substr(at, next - at));
        if (without_times(lines) == want && !seen) {
            seen = true;
            std::printf("%s", lines.c_str());
        }
    }
    EXPECT_TRUE(seen) << "want:\n" << want << "got:\n" << stopped.out;
    EXPECT_EQ(last_lock_lines(stopped.out), "lock waits: none now\n") << stopped.out;
}

TEST_F(TopLocksTest, BlockingTreeOfTopPid) {
    {
        SCOPED_TRACE("no binary log: A certain (trx->lock.wait_trx)");
        top_pid_incident(false);
    }
    {
        SCOPED_TRACE("binary log open: A certain, InnoDB reports it too");
        top_pid_incident(true);
    }
    // --locks is for --pid.
    auto refused = run_command({MYSQLTRACE_BINARY, "top", "-b", "--locks"});
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_EQ(refused.err,
              "mysqltrace: top --locks is for --pid; the agent traces lock waits with `locks = "
              "yes` in its configuration\n");
}

// The screen: the status line says who waits, `l` shows the tree and hides
// the table, the tree empties when the waits end, `l` again brings the
// table back. MariaDB with its binary log open (A certain).
TEST_F(TopLocksTest, BlockingTreeOnTheScreen) {
    ServerOptions o;
    o.extra_args = {"--log-bin=mt-bin", "--server-id=1"};
    auto started = MariadbServer::start(o);
    ASSERT_TRUE(started) << started.error().message;
    auto server = std::move(started).value();
    make_tables(*server);
    Incident in(*server);
    Tmux tmux(base_);
    std::string screen;
    ASSERT_TRUE(tmux.wait(
        [](const std::string &s) { return s.find("shell$") != std::string::npos; }, 10, &screen))
        << screen;
    tmux.type(std::string(MYSQLTRACE_BINARY) + " top --pid " + std::to_string(server->pid()) +
              " --locks --interval 0.3; echo TOP-EXIT=$?");
    tmux.key("Enter");
    ASSERT_TRUE(tmux.wait(
        [](const std::string &s) { return s.find("CALLS/S") != std::string::npos; }, 60, &screen))
        << screen;
    in.start();
    EXPECT_TRUE(tmux.wait(
        [](const std::string &s) {
            return s.find("2 connections wait for a lock: l shows who blocks them") !=
                   std::string::npos;
        },
        3, &screen))
        << screen;
    tmux.key("l");
    const std::string want =
        expected_tree("mariadb-" + std::to_string(server->port()), server->pid(), in);
    // The screen's lines from the tree's first, trailing blanks dropped.
    const auto tree_of = [](const std::string &s) {
        const size_t at = s.find("\nlock waits");
        if (at == std::string::npos) {
            return std::string();
        }
        std::string t = s.substr(at + 1);
        while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) {
            t.pop_back();
        }
        return without_times(t) + "\n";
    };
    EXPECT_TRUE(tmux.wait([&](const std::string &s) { return tree_of(s) == want; }, 3, &screen))
        << "want:\n"
        << want << "screen:\n"
        << screen;
    EXPECT_EQ(screen.find("CALLS/S"), std::string::npos) << screen;
    in.end();
    EXPECT_TRUE(tmux.wait(
        [&](const std::string &s) { return tree_of(s) == "lock waits: none now\n"; }, 3, &screen))
        << screen;
    tmux.key("l");
    EXPECT_TRUE(tmux.wait(
        [](const std::string &s) {
            return s.find("CALLS/S") != std::string::npos &&
                   s.find("lock waits") == std::string::npos;
        },
        3, &screen))
        << screen;
    tmux.key("q");
    EXPECT_TRUE(
        tmux.wait([](const std::string &s) { return s.find("\nTOP-EXIT=0") != std::string::npos; },
                  10, &screen))
        << screen;
}

}  // namespace
}  // namespace mysqltrace::test
