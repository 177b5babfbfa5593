// SPDX-License-Identifier: GPL-2.0-only
// The real-server harness every other priv test builds on: it must report the
// server it really started, keep parallel servers apart, and leave nothing
// behind (no directory, no mount, no process), even when the test process is
// killed. Every case runs on each flavour: MariaDB and Oracle MySQL 9.7.
#include "harness/mariadb_server.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mysql.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "priv/priv.h"

namespace mysqltrace::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::unique_ptr<MariadbServer> start_or_fail(const ServerOptions &opts) {
    auto server = MariadbServer::start(opts);
    if (!server) {
        ADD_FAILURE() << "MariadbServer::start: " << server.error().message;
        return nullptr;
    }
    return std::move(server).value();
}

Rows query_or_fail(MariadbServer &server, const std::string &sql) {
    auto rows = server.query(sql);
    if (!rows) {
        ADD_FAILURE() << rows.error().message;
        return {};
    }
    return rows.value();
}

// A reaped pid is gone; one reparented to init may linger as a zombie for a
// moment, which counts as dead too.
bool process_gone(pid_t pid) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) {
        return true;
    }
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) {
        return true;
    }
    auto paren = line.rfind(')');
    return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

bool wait_gone(pid_t pid, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!process_gone(pid)) {
        if (std::chrono::steady_clock::now() >= deadline) {
            return false;
        }
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

struct MysqlCloser {
    void operator()(MYSQL *m) const { mysql_close(m); }
};

bool mounted_anywhere(const std::string &path) {
    std::ifstream mounts("/proc/self/mountinfo");
    std::string line;
    while (std::getline(mounts, line)) {
        if (line.find(path) != std::string::npos) {
            return true;
        }
    }
    return false;
}

// Runs a command (no shell metacharacters in its arguments) and returns its
// standard output.
std::string run_output(const std::vector<std::string> &args) {
    std::string cmd;
    for (const auto &a : args) {
        cmd += "'" + a + "' ";
    }
    cmd += "2>/dev/null";
    std::string out;
    if (FILE *f = ::popen(cmd.c_str(), "r")) {
        char buf[512];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
            out.append(buf, n);
        }
        ::pclose(f);
    }
    return out;
}

class ServerHarness : public testing::TestWithParam<ServerFlavour> {
  protected:
    ServerOptions options() const {
        ServerOptions opts;
        opts.flavour = GetParam();
        return opts;
    }
    bool mysql() const { return GetParam() == ServerFlavour::mysql; }
};

TEST_P(ServerHarness, AnswersWithTheAddressItReports) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto server = start_or_fail(options());
    ASSERT_TRUE(server);

    EXPECT_EQ(server->flavour(), GetParam());
    EXPECT_GT(server->pid(), 0);
    const std::string proc = "/proc/" + std::to_string(server->pid());
    // The pid is the server's own, whatever ran in between (for MySQL:
    // mysql-sandbox.sh, unshare, sh, chroot, each exec'ing the next).
    EXPECT_EQ(fs::read_symlink(proc + "/exe"), server->binary_path());
    EXPECT_EQ(fs::read_symlink(proc + "/root"), server->chroot_dir());
    if (mysql()) {
        EXPECT_EQ(server->binary_path(), server->chroot_dir() + "/usr/sbin/mysqld");
        EXPECT_EQ(server->version().rfind("9.", 0), 0u) << server->version();
    } else {
        EXPECT_EQ(server->binary_path(), "/usr/sbin/mariadbd");
        EXPECT_EQ(server->chroot_dir(), "/");
        EXPECT_NE(server->version().find("MariaDB"), std::string::npos) << server->version();
    }
    EXPECT_EQ(query_or_fail(*server, "SELECT VERSION()"), (Rows{{server->version()}}));
    EXPECT_NE(server->port(), 0);
    EXPECT_EQ(server->host(), "127.0.0.1");
    // performance_schema is each server's default: OFF on MariaDB, ON on MySQL.
    EXPECT_EQ(
        query_or_fail(*server, "SELECT @@port, @@socket, @@performance_schema, @@bind_address"),
        (Rows{{std::to_string(server->port()), server->socket_path(), mysql() ? "1" : "0",
               "127.0.0.1"}}));
    // Paths inside MySQL's chroot are the host's: the directory is mounted
    // at its own path there.
    const std::string pid_file = mysql() ? "/mysqld.pid" : "/mariadbd.pid";
    EXPECT_EQ(query_or_fail(*server, "SELECT @@datadir, @@log_bin, @@pid_file"),
              (Rows{{server->datadir() + "/", "0", server->root_dir() + pid_file}}));
    EXPECT_TRUE(fs::is_regular_file(server->error_log_path()));
    EXPECT_EQ(fs::path(server->root_dir()).filename().string().rfind("mysqltrace-serv-", 0), 0u);
}

TEST_P(ServerHarness, QueryKeepsSessionAndReturnsLastResultSet) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto server = start_or_fail(options());
    ASSERT_TRUE(server);

    EXPECT_EQ(query_or_fail(*server,
                            "CREATE DATABASE d; USE d; CREATE TABLE t (a INT, b VARCHAR(10));"
                            "INSERT INTO t VALUES (2, 'x'), (1, NULL)"),
              Rows{});
    EXPECT_EQ(query_or_fail(*server, "SELECT a, b FROM t ORDER BY a"),
              (Rows{{"1", "NULL"}, {"2", "x"}}));
    EXPECT_EQ(query_or_fail(*server, "SELECT 1; DO 0; SELECT 'last', DATABASE()"),
              (Rows{{"last", "d"}}));

    auto bad = server->query("SELEC 1");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("1064"), std::string::npos) << bad.error().message;
    // A SQL error leaves the session (and its current database) usable.
    EXPECT_EQ(query_or_fail(*server, "SELECT DATABASE()"), (Rows{{"d"}}));
}

TEST_P(ServerHarness, PasswordUserLogsInOverTcpAndRootOverSocket) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto server = start_or_fail(options());
    ASSERT_TRUE(server);

    // The harness logged in over TCP once already (MySQL: filling
    // caching_sha2_password's cache); start from an empty cache.
    query_or_fail(*server, "FLUSH PRIVILEGES");
    std::unique_ptr<MYSQL, MysqlCloser> tcp(mysql_init(nullptr));
    ASSERT_TRUE(tcp);
    unsigned protocol = MYSQL_PROTOCOL_TCP;
    mysql_optionsv(tcp.get(), MYSQL_OPT_PROTOCOL, &protocol);
    ASSERT_NE(mysql_real_connect(tcp.get(), server->host().c_str(), server->user().c_str(),
                                 server->password().c_str(), nullptr, server->port(), nullptr, 0),
              nullptr)
        << mysql_error(tcp.get());
    ASSERT_EQ(mysql_query(tcp.get(), "SELECT CURRENT_USER(), USER(), @@port"), 0)
        << mysql_error(tcp.get());
    MYSQL_RES *res = mysql_store_result(tcp.get());
    ASSERT_NE(res, nullptr);
    MYSQL_ROW row = mysql_fetch_row(res);
    ASSERT_NE(row, nullptr);
    EXPECT_STREQ(row[0], "mt@%");
    EXPECT_STREQ(row[1], "mt@127.0.0.1");
    EXPECT_EQ(row[2], std::to_string(server->port()));
    mysql_free_result(res);
    // Plain TCP, the hardest case for MySQL's caching_sha2_password with
    // nothing cached: libmariadb fetched the server's RSA key itself.
    ASSERT_EQ(mysql_query(tcp.get(), "SHOW SESSION STATUS LIKE 'Ssl_cipher'"), 0)
        << mysql_error(tcp.get());
    res = mysql_store_result(tcp.get());
    ASSERT_NE(res, nullptr);
    row = mysql_fetch_row(res);
    ASSERT_NE(row, nullptr);
    EXPECT_STREQ(row[1], "");
    mysql_free_result(res);

    std::unique_ptr<MYSQL, MysqlCloser> root(mysql_init(nullptr));
    ASSERT_TRUE(root);
    ASSERT_NE(mysql_real_connect(root.get(), "localhost", "root", nullptr, nullptr, 0,
                                 server->socket_path().c_str(), 0),
              nullptr)
        << mysql_error(root.get());
    ASSERT_EQ(mysql_query(root.get(), "SELECT CURRENT_USER()"), 0);
    res = mysql_store_result(root.get());
    ASSERT_NE(res, nullptr);
    row = mysql_fetch_row(res);
    ASSERT_NE(row, nullptr);
    EXPECT_STREQ(row[0], "root@localhost");
    mysql_free_result(res);

    EXPECT_EQ(query_or_fail(*server,
                            "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES"
                            " WHERE GRANTEE = \"'mt'@'%'\" AND IS_GRANTABLE = 'YES'"
                            " AND PRIVILEGE_TYPE = 'SUPER'"),
              (Rows{{"SUPER"}}));
}

TEST_P(ServerHarness, TwoServersAtOnceAreDistinctAndBothAnswer) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto a = start_or_fail(options());
    auto b = start_or_fail(options());
    ASSERT_TRUE(a);
    ASSERT_TRUE(b);

    EXPECT_NE(a->pid(), b->pid());
    EXPECT_NE(a->port(), b->port());
    EXPECT_NE(a->socket_path(), b->socket_path());
    EXPECT_NE(a->datadir(), b->datadir());
    EXPECT_NE(a->error_log_path(), b->error_log_path());
    EXPECT_EQ(query_or_fail(*a, "SELECT @@port, @@socket"),
              (Rows{{std::to_string(a->port()), a->socket_path()}}));
    EXPECT_EQ(query_or_fail(*b, "SELECT @@port, @@socket"),
              (Rows{{std::to_string(b->port()), b->socket_path()}}));

    // Writes to one never show in the other: separate datadirs for real.
    query_or_fail(*a, "CREATE DATABASE only_in_a");
    EXPECT_EQ(query_or_fail(*b,
                            "SELECT COUNT(*) FROM information_schema.SCHEMATA"
                            " WHERE SCHEMA_NAME = 'only_in_a'"),
              (Rows{{"0"}}));
}

TEST_P(ServerHarness, DestructionStopsServerAndRemovesDirectory) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto server = start_or_fail(options());
    ASSERT_TRUE(server);
    const pid_t pid = server->pid();
    const std::string root_dir = server->root_dir();
    ASSERT_TRUE(fs::is_directory(server->datadir()));
    ASSERT_TRUE(fs::exists(server->socket_path()));

    // MySQL's server sees its directory at the same path inside the chroot,
    // on a tmpfs of its own namespace: nothing of it in the shared chroot.
    const std::string mountpoint = server->chroot_dir() + root_dir;
    if (mysql()) {
        EXPECT_FALSE(fs::exists(mountpoint));
    }

    server.reset();
    EXPECT_EQ(::kill(pid, 0), -1);
    EXPECT_EQ(errno, ESRCH);
    EXPECT_FALSE(fs::exists(root_dir));
    if (mysql()) {
        EXPECT_FALSE(fs::exists(mountpoint));
    }
    EXPECT_FALSE(mounted_anywhere(root_dir));
}

TEST_P(ServerHarness, MountsStayInTheServersNamespace) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto server = start_or_fail(options());
    ASSERT_TRUE(server);
    EXPECT_FALSE(mounted_anywhere(server->root_dir()));
    std::ifstream theirs("/proc/" + std::to_string(server->pid()) + "/mountinfo");
    std::string text((std::istreambuf_iterator<char>(theirs)), std::istreambuf_iterator<char>());
    if (mysql()) {
        EXPECT_NE(text.find(" " + server->root_dir() + " "), std::string::npos) << text;
    }
}

TEST_P(ServerHarness, CliCommandLogsInOverTheSocket) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto server = start_or_fail(options());
    ASSERT_TRUE(server);
    auto args = server->cli_command();
    args.insert(args.end(), {"--batch", "--skip-column-names", "-e",
                             "SELECT CURRENT_USER(), @@socket, VERSION()"});
    EXPECT_EQ(run_output(args),
              "mt@localhost\t" + server->socket_path() + "\t" + server->version() + "\n");
}

TEST_P(ServerHarness, StopIsCleanAndIdempotent) {
    MYSQLTRACE_REQUIRE_ROOT();
    auto server = start_or_fail(options());
    ASSERT_TRUE(server);
    const pid_t pid = server->pid();
    auto stopped = server->stop();
    ASSERT_TRUE(stopped) << stopped.error().message;
    EXPECT_EQ(::kill(pid, 0), -1);
    auto again = server->stop();
    EXPECT_TRUE(again);

    std::ifstream log(server->error_log_path());
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("Shutdown complete"), std::string::npos) << text;
}

TEST_P(ServerHarness, PerformanceSchemaOptionEnablesEverything) {
    MYSQLTRACE_REQUIRE_ROOT();
    ServerOptions opts = options();
    opts.performance_schema = true;
    auto server = start_or_fail(opts);
    ASSERT_TRUE(server);

    EXPECT_EQ(query_or_fail(*server, "SELECT @@performance_schema"), (Rows{{"1"}}));
    EXPECT_EQ(query_or_fail(*server,
                            "SELECT COUNT(*) FROM performance_schema.setup_consumers"
                            " WHERE ENABLED <> 'YES'"),
              (Rows{{"0"}}));
    EXPECT_EQ(query_or_fail(*server,
                            "SELECT COUNT(*) FROM performance_schema.setup_instruments"
                            " WHERE ENABLED <> 'YES'"),
              (Rows{{"0"}}));
}

TEST_P(ServerHarness, ExtraArgsReachTheServer) {
    MYSQLTRACE_REQUIRE_ROOT();
    ServerOptions opts = options();
    opts.extra_args = {"--max-connections=77", "--character-set-server=latin1"};
    auto server = start_or_fail(opts);
    ASSERT_TRUE(server);
    EXPECT_EQ(query_or_fail(*server, "SELECT @@max_connections, @@character_set_server"),
              (Rows{{"77", "latin1"}}));
}

TEST_P(ServerHarness, WorksWithoutTemplate) {
    MYSQLTRACE_REQUIRE_ROOT();
    ServerOptions opts = options();
    opts.use_template = false;
    auto server = start_or_fail(opts);
    ASSERT_TRUE(server);
    EXPECT_EQ(query_or_fail(*server, "SELECT CURRENT_USER()"), (Rows{{"mt@localhost"}}));
}

TEST_P(ServerHarness, BadStartReportsTheErrorLog) {
    MYSQLTRACE_REQUIRE_ROOT();
    ServerOptions opts = options();
    opts.extra_args = {"--no-such-option-for-mysqltrace"};
    auto server = MariadbServer::start(opts);
    ASSERT_FALSE(server);
    EXPECT_NE(server.error().message.find("no-such-option-for-mysqltrace"), std::string::npos)
        << server.error().message;
}

// A test binary killed outright (ctest timeout) runs no destructor: its
// server must die with it, and the next start sweeps the leftover directory.
TEST_P(ServerHarness, KilledOwnerTakesServerAlongAndLeftoversAreSwept) {
    MYSQLTRACE_REQUIRE_ROOT();
    // The orphaned server is reparented to us, so we can see how it ended.
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::close(fds[0]);
        auto server = MariadbServer::start(options());
        std::string msg =
            server ? std::to_string(server.value()->pid()) + " " + server.value()->root_dir() + "\n"
                   : "0 " + server.error().message + "\n";
        if (::write(fds[1], msg.data(), msg.size()) < 0) {
            ::_exit(1);
        }
        for (;;) {
            ::pause();
        }
    }
    ::close(fds[1]);
    std::string msg;
    char buf[512];
    ssize_t n;
    while (msg.find('\n') == std::string::npos && (n = ::read(fds[0], buf, sizeof(buf))) > 0) {
        msg.append(buf, static_cast<size_t>(n));
    }
    ::close(fds[0]);
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);

    const pid_t server_pid = static_cast<pid_t>(std::strtol(msg.c_str(), nullptr, 10));
    ASSERT_GT(server_pid, 0) << msg;
    const std::string root_dir = msg.substr(msg.find(' ') + 1, msg.find('\n') - msg.find(' ') - 1);
    EXPECT_TRUE(wait_gone(server_pid, 10s)) << "mariadbd " << server_pid << " outlived its owner";
    int status = 0;
    EXPECT_EQ(::waitpid(server_pid, &status, 0), server_pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
    // Any harness user on the machine sweeps it (tests in parallel, other
    // checkouts): it may be gone already; if not, this start removes it.
    SCOPED_TRACE(fs::is_directory(root_dir) ? "left over until the next start"
                                            : "swept by a parallel harness user");

    auto next = start_or_fail(options());
    ASSERT_TRUE(next);
    EXPECT_FALSE(fs::exists(root_dir));
    if (mysql()) {
        EXPECT_FALSE(fs::exists(next->chroot_dir() + root_dir));
    }
}

INSTANTIATE_TEST_SUITE_P(Flavours, ServerHarness, testing::ValuesIn(all_flavours()),
                         [](const testing::TestParamInfo<ServerFlavour> &info) {
                             return flavour_name(info.param);
                         });

}  // namespace
}  // namespace mysqltrace::test
