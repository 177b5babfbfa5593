// SPDX-License-Identifier: GPL-2.0-only
// A throwaway server for tests, demos and benchmarks: its own temporary
// datadir, unix socket and loopback port, a password account that works over
// TCP and the socket, and guaranteed teardown (clean shutdown, then SIGKILL,
// then the directory is removed). Many servers may run at once, in one
// process or in parallel test processes. Two flavours: the host's MariaDB
// (Debian 12's mariadbd) and Oracle MySQL 9.7 from a Debian sid chroot that
// scripts/mysql-sandbox.sh builds once and caches; the MySQL server is
// started from the host (its pid is a host pid) in a private mount namespace
// where the server's directory is visible at its host path.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "util/result.h"

struct st_mysql;  // MYSQL from <mysql.h>, kept out of this header

namespace mysqltrace::test {

using Rows = std::vector<std::vector<std::string>>;

enum class ServerFlavour { mariadb, mysql };

// "mariadb" or "mysql": gtest parameter names, messages.
std::string flavour_name(ServerFlavour flavour);
// So that gtest prints a flavour parameter by name.
inline std::ostream &operator<<(std::ostream &out, ServerFlavour flavour) {
    return out << flavour_name(flavour);
}
// Every flavour the harness starts, for INSTANTIATE_TEST_SUITE_P(...,
// testing::ValuesIn(all_flavours()), ...).
std::vector<ServerFlavour> all_flavours();

struct ServerOptions {
    ServerFlavour flavour = ServerFlavour::mariadb;
    // Turns performance_schema on with every instrument and consumer enabled,
    // so tests can compare the tracer's events with the server's own. When
    // false each flavour runs its own default: OFF on MariaDB, ON with the
    // default instruments and consumers on MySQL 9.7 (add
    // "--performance-schema=OFF" to extra_args to turn it off there).
    bool performance_schema = false;
    // Serves TLS with a self-signed certificate made for this server.
    bool tls = false;
    // Appended after the harness's own server options, so they win.
    std::vector<std::string> extra_args;
    std::chrono::seconds start_timeout{60};
    std::chrono::seconds stop_timeout{30};
    // Copy a per-user cached datadir instead of running mariadb-install-db
    // or mysqld --initialize for every server (about 0.03-0.2 s instead of
    // 1-3 s).
    bool use_template = true;
    std::string mariadbd_path = "/usr/sbin/mariadbd";
    std::string install_db_path = "/usr/bin/mariadb-install-db";
    // MySQL: the script that builds the sid chroot (once, cached; ~20 s) and
    // runs programs in it; empty means the source tree's
    // scripts/mysql-sandbox.sh.
    std::string mysql_sandbox_script;
};

class MariadbServer {
  public:
    // The mariadbd child dies with the thread that calls start() (it is
    // started with PR_SET_PDEATHSIG), so call it from a thread that outlives
    // the server, e.g. the test's main thread.
    static mysqltrace::Result<std::unique_ptr<MariadbServer>> start(const ServerOptions &opts = {});

    // Kills a server still running (SIGKILL, then reaps it) and removes its
    // directory: a throwaway datadir needs no clean shutdown, which takes
    // MySQL 9.7 about 2.5 s (threads that look for it once a second). Call
    // stop() for a clean one.
    ~MariadbServer();
    MariadbServer(const MariadbServer &) = delete;
    MariadbServer &operator=(const MariadbServer &) = delete;

    ServerFlavour flavour() const { return flavour_; }
    // SELECT VERSION(), e.g. "10.11.11-MariaDB-0+deb12u1" or "9.7.4-2".
    const std::string &version() const { return version_; }
    // The server binary as the host sees it (MySQL: inside the chroot).
    const std::string &binary_path() const { return binary_path_; }
    // The root the server runs in: "/" for MariaDB, the sid chroot for MySQL.
    const std::string &chroot_dir() const { return chroot_dir_; }
    pid_t pid() const { return pid_; }
    const std::string &socket_path() const { return socket_path_; }
    uint16_t port() const { return port_; }
    std::string host() const { return "127.0.0.1"; }
    std::string user() const { return "mt"; }
    std::string password() const { return "mtpass"; }
    // sysbench oltp_point_select against this server's sbtest database
    // (over the unix socket), without the subcommand.
    std::vector<std::string> sysbench_point_select(int table_size) const {
        return {"/usr/bin/sysbench",
                "oltp_point_select",
                "--db-driver=mysql",
                "--mysql-socket=" + socket_path(),
                "--mysql-user=" + user(),
                "--mysql-password=" + password(),
                "--mysql-db=sbtest",
                "--tables=1",
                "--table-size=" + std::to_string(table_size)};
    }
    // The same arguments, once the sbtest database exists and its table has
    // been made afresh by `sysbench ... prepare` (a failure carries its log).
    mysqltrace::Result<std::vector<std::string>> prepare_sysbench_point_select(int table_size);
    // The flavour's own command-line client (mariadb, or the chroot's mysql
    // run through mysql-sandbox.sh exec, with the same pid), logged in as
    // the password user over the socket; append e.g. {"-e", "SELECT 1"}.
    std::vector<std::string> cli_command() const;
    const std::string &datadir() const { return datadir_; }
    const std::string &error_log_path() const { return error_log_path_; }
    // The temporary directory holding datadir, socket and logs; tests may
    // put their own scratch files here and they go away with the server.
    const std::string &root_dir() const { return root_dir_; }

    // Runs one or more ';'-separated statements on a kept session over the
    // socket (so USE and session variables persist between calls) and returns
    // the rows of the last statement that produced a result set, NULL as
    // "NULL". Not thread-safe.
    mysqltrace::Result<Rows> query(const std::string &sql);

    // Shuts the server down (SIGTERM, which both servers handle as a clean
    // shutdown; SIGKILL after stop_timeout) and reaps it. The datadir stays
    // until destruction. Idempotent.
    mysqltrace::Result<void> stop();

  private:
    MariadbServer() = default;

    mysqltrace::Result<void> make_root_dir();
    mysqltrace::Result<void> prepare_datadir(const ServerOptions &opts);
    mysqltrace::Result<void> install_datadir(const ServerOptions &opts, const std::string &dest);
    mysqltrace::Result<bool> launch(const ServerOptions &opts);
    mysqltrace::Result<void> make_certificate();
    // Runs a helper program to its end, its output in root_dir()/log_name.
    mysqltrace::Result<void> run_logged(const std::vector<std::string> &args,
                                        const std::string &what, const std::string &log_name);
    void close_session();

    ServerFlavour flavour_ = ServerFlavour::mariadb;
    std::string version_;
    std::string binary_path_;
    std::string chroot_dir_ = "/";
    std::string sandbox_script_;
    std::string root_dir_;
    std::string datadir_;
    std::string socket_path_;
    std::string error_log_path_;
    std::string pid_file_path_;
    uint16_t port_ = 0;
    pid_t pid_ = -1;
    std::chrono::seconds stop_timeout_{30};
    st_mysql *session_ = nullptr;
};

// The class predates the second flavour; new tests may use this name.
using TestServer = MariadbServer;

}  // namespace mysqltrace::test
