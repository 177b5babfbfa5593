// SPDX-License-Identifier: GPL-2.0-only
#include "harness/mariadb_server.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mysql.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "harness/child_process.h"
#include "harness/mysql_chroot.h"

namespace mysqltrace::test {

namespace {

namespace fs = std::filesystem;
using namespace harness;
using namespace std::chrono_literals;

// Only directories the harness made carry it: the stale sweep must not take
// another tool's (TempDir's "mysqltrace-test-", the package test's). As long as
// "mysqltrace-test-": the LOCAL INFILE traces carry paths of this length.
constexpr const char *kDirPrefix = "mysqltrace-serv-";
constexpr const char *kOwnerFile = "owner.pid";
constexpr const char *kUser = "mt";
constexpr const char *kPassword = "mtpass";
// Passed to both mariadb-install-db and mariadbd: a mismatch would make
// InnoDB rebuild its redo log on every start.
constexpr const char *kInnodbLogSize = "--innodb-log-file-size=16M";
// MySQL's redo log is 100 MB by default, most of a datadir to copy per
// test; 8 MB is its minimum and plenty for tests.
constexpr const char *kMysqlRedoCapacity = "--innodb-redo-log-capacity=8M";
// Bump when the datadir contents change, to invalidate cached templates.
constexpr const char *kTemplateVersion = "1";
constexpr int kPortAttempts = 8;

// FLUSH PRIVILEGES loads the grant tables, which the bootstrap server runs
// without; CREATE USER is refused until then. Two hosts because a socket
// login is 'localhost' and a TCP login under --skip-name-resolve is
// '127.0.0.1'.
constexpr const char *kInitSql =
    "FLUSH PRIVILEGES;\n"
    "CREATE USER 'mt'@'localhost' IDENTIFIED VIA mysql_native_password "
    "USING PASSWORD('mtpass');\n"
    "CREATE USER 'mt'@'%' IDENTIFIED VIA mysql_native_password USING PASSWORD('mtpass');\n"
    "GRANT ALL PRIVILEGES ON *.* TO 'mt'@'localhost' WITH GRANT OPTION;\n"
    "GRANT ALL PRIVILEGES ON *.* TO 'mt'@'%' WITH GRANT OPTION;\n";

// Runs at the end of mysqld --initialize-insecure (root gets an empty
// password). caching_sha2_password is MySQL 9's only password plugin;
// libmariadb speaks it, fetching the server's RSA key on its own for a full
// authentication over plain TCP.
constexpr const char *kMysqlInitSql =
    "CREATE USER 'mt'@'localhost' IDENTIFIED WITH caching_sha2_password BY 'mtpass';\n"
    "CREATE USER 'mt'@'%' IDENTIFIED WITH caching_sha2_password BY 'mtpass';\n"
    "GRANT ALL PRIVILEGES ON *.* TO 'mt'@'localhost' WITH GRANT OPTION;\n"
    "GRANT ALL PRIVILEGES ON *.* TO 'mt'@'%' WITH GRANT OPTION;\n";

constexpr const char *kPfsConsumers[] = {
    "events-stages-current",
    "events-stages-history",
    "events-stages-history-long",
    "events-statements-current",
    "events-statements-history",
    "events-statements-history-long",
    "events-transactions-current",
    "events-transactions-history",
    "events-transactions-history-long",
    "events-waits-current",
    "events-waits-history",
    "events-waits-history-long",
    "global-instrumentation",
    "statements-digest",
    "thread-instrumentation",
};

std::string temp_base() {
    std::string base = "/tmp";
    const char *env = std::getenv("TMPDIR");
    if (env != nullptr && env[0] == '/') {
        base = env;
        while (base.size() > 1 && base.back() == '/') {
            base.pop_back();
        }
    }
    // The socket lives in the server's directory and sun_path holds only 107
    // characters; a long TMPDIR would make mariadbd fail late and obscurely.
    const size_t needed = base.size() + std::strlen("/mysqltrace-serv-XXXXXX/mysql.sock");
    if (needed >= sizeof(sockaddr_un::sun_path)) {
        base = "/tmp";
    }
    return base;
}

const char *init_sql(ServerFlavour flavour) {
    return flavour == ServerFlavour::mysql ? kMysqlInitSql : kInitSql;
}

std::string server_name(ServerFlavour flavour) {
    return flavour == ServerFlavour::mysql ? "mysqld" : "mariadbd";
}

bool owner_alive(const std::string &owner_text) {
    std::istringstream in(owner_text);
    long pid = 0;
    unsigned long long start = 0;
    if (!(in >> pid >> start) || pid <= 0) {
        return false;
    }
    auto now = process_start_time(static_cast<pid_t>(pid));
    return now && *now == start;
}

// A test binary that was SIGKILLed (ctest timeout, OOM) never ran its
// destructors; its server died with it (PDEATHSIG) but the directory stays.
void sweep_stale_dirs(const std::string &base) {
    DIR *dir = ::opendir(base.c_str());
    if (dir == nullptr) {
        return;
    }
    const size_t prefix_len = std::strlen(kDirPrefix);
    std::vector<std::string> stale;
    while (dirent *ent = ::readdir(dir)) {
        if (std::strncmp(ent->d_name, kDirPrefix, prefix_len) != 0) {
            continue;
        }
        std::string path = base + "/" + ent->d_name;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
            continue;
        }
        auto owner = read_file(path + "/" + kOwnerFile);
        if (owner) {
            if (owner_alive(*owner)) {
                continue;
            }
        } else if (::time(nullptr) - st.st_mtime < 60) {
            // Just made by mkdtemp, owner file not written yet.
            continue;
        }
        stale.push_back(path);
    }
    ::closedir(dir);

    for (const auto &path : stale) {
        // Normally dead already through PDEATHSIG; check the command line
        // names this datadir before killing, as the pid may have been reused.
        for (const char *name : {"/mariadbd.pid", "/mysqld.pid"}) {
            auto pid_text = read_file(path + name);
            if (!pid_text) {
                continue;
            }
            long pid = std::strtol(pid_text->c_str(), nullptr, 10);
            auto cmdline =
                pid > 0 ? read_file("/proc/" + std::to_string(pid) + "/cmdline") : std::nullopt;
            if (cmdline && cmdline->find("--datadir=" + path + "/data") != std::string::npos) {
                ::kill(static_cast<pid_t>(pid), SIGKILL);
            }
        }
        std::error_code ec;
        fs::remove_all(path, ec);
    }
}

void init_client_library() {
    // mysql_init() is not thread-safe until the library has been initialised.
    static std::once_flag once;
    std::call_once(once, [] { mysql_library_init(0, nullptr, nullptr); });
}

struct MysqlCloser {
    void operator()(MYSQL *m) const { mysql_close(m); }
};
using MysqlPtr = std::unique_ptr<MYSQL, MysqlCloser>;

std::string mysql_error_text(MYSQL *m) {
    std::string s = std::to_string(mysql_errno(m));
    const char *state = mysql_sqlstate(m);
    if (state != nullptr && state[0] != '\0') {
        s += " (" + std::string(state) + ")";
    }
    return s + ": " + mysql_error(m);
}

// Over the unix socket, or loopback TCP when port is not 0.
Result<MysqlPtr> connect_socket(const std::string &socket, unsigned read_timeout_s,
                                uint16_t port = 0) {
    init_client_library();
    MysqlPtr m(mysql_init(nullptr));
    if (!m) {
        return Error{ENOMEM, "mysql_init failed"};
    }
    unsigned protocol = port != 0 ? MYSQL_PROTOCOL_TCP : MYSQL_PROTOCOL_SOCKET;
    unsigned connect_timeout = 2;
    mysql_optionsv(m.get(), MYSQL_OPT_PROTOCOL, &protocol);
    mysql_optionsv(m.get(), MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
    if (read_timeout_s > 0) {
        mysql_optionsv(m.get(), MYSQL_OPT_READ_TIMEOUT, &read_timeout_s);
        mysql_optionsv(m.get(), MYSQL_OPT_WRITE_TIMEOUT, &read_timeout_s);
    }
    const bool tcp = port != 0;
    if (mysql_real_connect(m.get(), tcp ? "127.0.0.1" : "localhost", kUser, kPassword, nullptr,
                           port, tcp ? nullptr : socket.c_str(),
                           CLIENT_MULTI_STATEMENTS) == nullptr) {
        return Error{0, "cannot connect to " + (tcp ? "port " + std::to_string(port) : socket) +
                            ": " + mysql_error_text(m.get())};
    }
    return m;
}

Result<Rows> run_query(MYSQL *m, const std::string &sql) {
    if (mysql_real_query(m, sql.data(), sql.size()) != 0) {
        return Error{0, "query failed: " + mysql_error_text(m) + ": " + sql};
    }
    Rows rows;
    for (;;) {
        MYSQL_RES *res = mysql_store_result(m);
        if (res != nullptr) {
            rows.clear();
            unsigned ncols = mysql_num_fields(res);
            while (MYSQL_ROW row = mysql_fetch_row(res)) {
                unsigned long *lengths = mysql_fetch_lengths(res);
                std::vector<std::string> out;
                out.reserve(ncols);
                for (unsigned i = 0; i < ncols; ++i) {
                    out.emplace_back(row[i] == nullptr ? std::string("NULL")
                                                       : std::string(row[i], lengths[i]));
                }
                rows.push_back(std::move(out));
            }
            mysql_free_result(res);
        } else if (mysql_field_count(m) != 0) {
            return Error{0, "cannot read result: " + mysql_error_text(m) + ": " + sql};
        }
        int next = mysql_next_result(m);
        if (next < 0) {
            break;
        }
        if (next > 0) {
            return Error{0, "query failed: " + mysql_error_text(m) + ": " + sql};
        }
    }
    return rows;
}

// The kernel picks a port that is free now; it can still be taken before
// mariadbd binds it, which launch() detects and retries.
Result<uint16_t> pick_free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return sys_error(errno, "socket");
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0) {
        int err = errno;
        ::close(fd);
        return sys_error(err, "cannot get a free loopback port");
    }
    ::close(fd);
    return static_cast<uint16_t>(ntohs(addr.sin_port));
}

std::string hex64(uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

// Names a template by everything that shapes its contents, so an upgraded
// server package or a changed harness never reuses an old datadir. The
// flavour's name leads, so that each flavour replaces only its own.
std::string template_key(const ServerOptions &opts, const std::string &binary_path) {
    std::string id = kTemplateVersion;
    id += '\n';
    id += init_sql(opts.flavour);
    id += opts.flavour == ServerFlavour::mysql ? kMysqlRedoCapacity : kInnodbLogSize;
    std::vector<std::string> paths = {binary_path};
    if (opts.flavour == ServerFlavour::mariadb) {
        paths.push_back(opts.install_db_path);
    }
    for (const auto &path : paths) {
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0) {
            id += path + ":" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
                  std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
                  std::to_string(st.st_mtim.tv_nsec);
        }
    }
    uint64_t h = 1469598103934665603ULL;  // FNV-1a
    for (unsigned char c : id) {
        h = (h ^ c) * 1099511628211ULL;
    }
    return flavour_name(opts.flavour) + "-" + hex64(h);
}

class FileLock {
  public:
    explicit FileLock(int fd) : fd_(fd) {}
    ~FileLock() {
        if (fd_ >= 0) {
            ::close(fd_);  // releases the flock
        }
    }
    FileLock(const FileLock &) = delete;
    FileLock &operator=(const FileLock &) = delete;

  private:
    int fd_;
};

// Opens and exclusively locks the per-user template directory's lock file,
// or returns -1 when the cache cannot be used safely (someone else owns the
// path in a shared /tmp, or another process holds the lock for too long).
int lock_template_dir(const std::string &dir) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        return -1;
    }
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
        (st.st_mode & 077) != 0) {
        return -1;
    }
    std::string lock_path = dir + "/lock";
    int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        return -1;
    }
    // Another process may be running mariadb-install-db (1-2 s); bounded so
    // a wedged one cannot hang every test.
    const auto deadline = Clock::now() + 180s;
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if ((errno != EWOULDBLOCK && errno != EINTR) || Clock::now() >= deadline) {
            ::close(fd);
            return -1;
        }
        std::this_thread::sleep_for(20ms);
    }
    return fd;
}

}  // namespace

std::string flavour_name(ServerFlavour flavour) {
    return flavour == ServerFlavour::mysql ? "mysql" : "mariadb";
}

std::vector<ServerFlavour> all_flavours() {
    return {ServerFlavour::mariadb, ServerFlavour::mysql};
}

Result<std::unique_ptr<MariadbServer>> MariadbServer::start(const ServerOptions &opts) {
    std::unique_ptr<MariadbServer> server(new MariadbServer());
    server->stop_timeout_ = opts.stop_timeout;
    server->flavour_ = opts.flavour;
    server->binary_path_ = opts.mariadbd_path;
    // From here on the destructor cleans up whatever was created.
    if (auto r = server->make_root_dir(); !r) {
        return r.error();
    }
    if (opts.flavour == ServerFlavour::mysql) {
        server->sandbox_script_ = sandbox_script(opts.mysql_sandbox_script);
        auto chroot = mysql_chroot(server->sandbox_script_, server->root_dir_);
        if (!chroot) {
            return chroot.error();
        }
        server->chroot_dir_ = chroot.value();
        server->binary_path_ = server->chroot_dir_ + kMysqldInChroot;
        server->pid_file_path_ = server->root_dir_ + "/mysqld.pid";
    }
    if (auto r = server->prepare_datadir(opts); !r) {
        return r.error();
    }
    for (int attempt = 1;; ++attempt) {
        auto launched = server->launch(opts);
        if (!launched) {
            return launched.error();
        }
        if (launched.value()) {
            break;
        }
        if (attempt == kPortAttempts) {
            return Error{EADDRINUSE, server_name(opts.flavour) +
                                         " could not bind a free loopback port in " +
                                         std::to_string(kPortAttempts) + " attempts"};
        }
    }
    if (opts.flavour == ServerFlavour::mysql) {
        // caching_sha2_password takes a full authentication (over plain TCP
        // an RSA key exchange, 3 more round trips) the first time an account
        // logs in, the fast path after. The socket account has logged in
        // already; log in over TCP once too, so that every client sees the
        // fast path whichever test comes first. FLUSH PRIVILEGES empties the
        // cache for a test that wants the full exchange.
        auto warm = connect_socket(server->socket_path_, 5, server->port_);
        if (!warm) {
            return warm.error();
        }
    }
    auto version = server->query("SELECT VERSION()");
    if (!version || version.value().size() != 1 || version.value()[0].size() != 1) {
        return Error{0, "cannot read the server's version: " +
                            (version ? std::string("unexpected rows") : version.error().message)};
    }
    server->version_ = version.value()[0][0];
    return server;
}

MariadbServer::~MariadbServer() {
    close_session();
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        (void)wait_child(pid_, Clock::now() + 60s);
        pid_ = -1;
    }
    if (!root_dir_.empty()) {
        std::error_code ec;
        fs::remove_all(root_dir_, ec);
    }
}

Result<void> MariadbServer::make_root_dir() {
    const std::string base = temp_base();
    sweep_stale_dirs(base);
    std::string templ = base + "/" + kDirPrefix + "XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
        return sys_error(errno, "cannot create a temporary directory in " + base);
    }
    root_dir_ = templ;
    datadir_ = root_dir_ + "/data";
    socket_path_ = root_dir_ + "/mysql.sock";
    error_log_path_ = root_dir_ + "/error.log";
    pid_file_path_ = root_dir_ + "/mariadbd.pid";

    auto start = process_start_time(::getpid());
    return write_file(root_dir_ + "/" + kOwnerFile,
                      std::to_string(::getpid()) + " " + std::to_string(start.value_or(0)) + "\n");
}

Result<void> MariadbServer::install_datadir(const ServerOptions &opts, const std::string &dest) {
    const std::string init_sql_path = root_dir_ + "/init.sql";
    if (auto r = write_file(init_sql_path, init_sql(flavour_)); !r) {
        return r;
    }
    if (flavour_ == ServerFlavour::mysql) {
        return run_logged(
            {sandbox_script_, "exec", root_dir_, "--", kMysqldInChroot, "--no-defaults",
             "--user=root", "--initialize-insecure", "--datadir=" + dest,
             "--init-file=" + init_sql_path, "--tmpdir=" + root_dir_, kMysqlRedoCapacity},
            "mysqld --initialize-insecure", "install.log");
    }
    std::vector<std::string> args = {
        opts.install_db_path,
        "--no-defaults",
        "--datadir=" + dest,
        "--skip-test-db",
        "--skip-name-resolve",
        "--auth-root-authentication-method=socket",
        "--extra-file=" + init_sql_path,
        // Every mariadbd deletes #sql* files in its tmpdir at startup; in a
        // shared /tmp that would include this bootstrap's temporary tables.
        "--tmpdir=" + root_dir_,
        kInnodbLogSize,
    };
    if (::geteuid() == 0) {
        args.push_back("--user=root");
    }
    return run_logged(args, "mariadb-install-db", "install.log");
}

Result<void> MariadbServer::run_logged(const std::vector<std::string> &args,
                                       const std::string &what, const std::string &log_name) {
    const std::string log = root_dir_ + "/" + log_name;
    auto pid = spawn(args, log, true);
    if (!pid) {
        return pid.error();
    }
    auto status = wait_child(pid.value(), Clock::now() + 180s);
    if (!status) {
        // Its own process group, so the bootstrap server goes too.
        ::kill(-pid.value(), SIGKILL);
        ::waitpid(pid.value(), nullptr, 0);
        return Error{ETIMEDOUT, what + " did not finish in 180 s; log:\n" + log_tail(log)};
    }
    if (*status != -1 && !(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)) {
        return Error{0, what + " " + describe_status(*status) + "; log:\n" + log_tail(log)};
    }
    return {};
}

Result<std::vector<std::string>> MariadbServer::prepare_sysbench_point_select(int table_size) {
    for (const char *sql :
         {"CREATE DATABASE IF NOT EXISTS sbtest", "DROP TABLE IF EXISTS sbtest.sbtest1"}) {
        if (auto r = query(sql); !r) {
            return r.error();
        }
    }
    std::vector<std::string> args = sysbench_point_select(table_size);
    auto prepare = args;
    prepare.push_back("prepare");
    if (auto r = run_logged(prepare, "sysbench prepare", "sysbench-prepare.log"); !r) {
        return r.error();
    }
    return args;
}

Result<void> MariadbServer::prepare_datadir(const ServerOptions &opts) {
    if (!opts.use_template) {
        return install_datadir(opts, datadir_);
    }
    // Not the single-flavour harness's "mysqltrace-template-UID": that one
    // removes every template but its own, which would make two checkouts
    // (of before and after flavours) rebuild each other's all the time.
    const std::string cache_dir =
        temp_base() + "/mysqltrace-templates-" + std::to_string(::geteuid());
    int lock_fd = lock_template_dir(cache_dir);
    if (lock_fd < 0) {
        return install_datadir(opts, datadir_);
    }
    FileLock lock(lock_fd);
    const std::string key = template_key(opts, binary_path_);
    const std::string templ = cache_dir + "/" + key;

    std::error_code ec;
    if (!fs::is_directory(templ, ec)) {
        // Built inside our own directory so that a crash mid-way leaves
        // only something the stale sweep removes; the rename publishes it.
        const std::string build = root_dir_ + "/template-build";
        if (auto r = install_datadir(opts, build); !r) {
            return r;
        }
        if (::rename(build.c_str(), templ.c_str()) != 0) {
            // Unusual (cache on another filesystem): use the fresh datadir.
            if (::rename(build.c_str(), datadir_.c_str()) != 0) {
                return sys_error(errno, "cannot move " + build + " to " + datadir_);
            }
            return {};
        }
        // Templates of this flavour's older packages or harness versions
        // (and unprefixed ones from before flavours).
        const std::string prefix = flavour_name(flavour_) + "-";
        for (const auto &entry : fs::directory_iterator(cache_dir, ec)) {
            const std::string name = entry.path().filename().string();
            const bool ours = name.rfind(prefix, 0) == 0 || name.find('-') == std::string::npos;
            if (name != "lock" && name != key && ours) {
                std::error_code ignored;
                fs::remove_all(entry.path(), ignored);
            }
        }
    }
    fs::copy(templ, datadir_, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    if (ec) {
        return Error{ec.value(),
                     "cannot copy template " + templ + " to " + datadir_ + ": " + ec.message()};
    }
    return {};
}

Result<void> MariadbServer::make_certificate() {
    const std::vector<std::string> args = {"/usr/bin/openssl",
                                           "req",
                                           "-x509",
                                           "-newkey",
                                           "rsa:2048",
                                           "-nodes",
                                           "-keyout",
                                           root_dir_ + "/key.pem",
                                           "-out",
                                           root_dir_ + "/cert.pem",
                                           "-days",
                                           "2",
                                           "-subj",
                                           "/CN=localhost"};
    const std::string log = root_dir_ + "/openssl.log";
    auto pid = spawn(args, log, true);
    if (!pid) {
        return pid.error();
    }
    auto status = wait_child(pid.value(), Clock::now() + 60s);
    if (!status || *status == -1 || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
        if (!status) {
            ::kill(pid.value(), SIGKILL);
            ::waitpid(pid.value(), nullptr, 0);
        }
        return Error{0, "openssl could not make a certificate; log:\n" + log_tail(log)};
    }
    return {};
}

Result<bool> MariadbServer::launch(const ServerOptions &opts) {
    auto port = pick_free_port();
    if (!port) {
        return port.error();
    }
    port_ = port.value();

    // The server's @@system_time_zone (which Connector/J reads at login, and
    // the expected traces show) comes from its TZ: the same on any machine.
    setenv("TZ", "UTC", 1);
    std::vector<std::string> args;
    if (flavour_ == ServerFlavour::mysql) {
        // exec all the way down: the pid we get is mysqld's.
        args = {sandbox_script_, "exec", root_dir_, "--", kMysqldInChroot};
    } else {
        args = {opts.mariadbd_path};
    }
    args.insert(args.end(), {
                                "--no-defaults",  // must come first
                                "--datadir=" + datadir_,
                                "--socket=" + socket_path_,
                                "--port=" + std::to_string(port_),
                                "--bind-address=127.0.0.1",
                                "--pid-file=" + pid_file_path_,
                                "--log-error=" + error_log_path_,
                                "--tmpdir=" + root_dir_,
                                "--skip-log-bin",
                                "--skip-name-resolve",
                            });
    if (flavour_ == ServerFlavour::mysql) {
        // The X plugin would listen on 33060; FILE tests want any path.
        args.insert(args.end(), {"--mysqlx=OFF", "--secure-file-priv=", kMysqlRedoCapacity});
    } else {
        args.push_back(kInnodbLogSize);
    }
    if (::geteuid() == 0) {
        args.push_back("--user=root");
    }
    if (opts.performance_schema) {
        args.push_back("--performance-schema=ON");
        args.push_back("--performance-schema-instrument=%=ON");
        for (const char *consumer : kPfsConsumers) {
            args.push_back(std::string("--performance-schema-consumer-") + consumer + "=ON");
        }
        if (flavour_ == ServerFlavour::mysql) {
            args.push_back("--performance-schema-consumer-events-statements-cpu=ON");
        }
    } else if (flavour_ == ServerFlavour::mariadb) {
        args.push_back("--performance-schema=OFF");
    }
    if (opts.tls) {
        if (auto r = make_certificate(); !r) {
            return r.error();
        }
        args.push_back("--ssl-ca=" + root_dir_ + "/cert.pem");
        args.push_back("--ssl-cert=" + root_dir_ + "/cert.pem");
        args.push_back("--ssl-key=" + root_dir_ + "/key.pem");
    }
    args.insert(args.end(), opts.extra_args.begin(), opts.extra_args.end());

    // Only this attempt's part of the log counts when a retry follows.
    const size_t log_start = file_size(error_log_path_);
    auto pid = spawn(args, error_log_path_, false);
    if (!pid) {
        return pid.error();
    }
    pid_ = pid.value();

    const auto deadline = Clock::now() + opts.start_timeout;
    std::string last_error = "no attempt made";
    for (;;) {
        if (auto status = wait_child(pid_, Clock::now()); status) {
            pid_ = -1;
            std::string tail = log_tail(error_log_path_, log_start);
            if (tail.find("Bind on TCP/IP port") != std::string::npos) {
                return false;
            }
            return Error{0, server_name(flavour_) + " " + describe_status(*status) +
                                " before answering; error log:\n" + tail};
        }
        auto conn = connect_socket(socket_path_, 5);
        if (conn) {
            auto rows = run_query(conn.value().get(), "SELECT 1");
            if (rows && rows.value() == Rows{{"1"}}) {
                return true;
            }
            last_error = rows ? "SELECT 1 returned unexpected rows" : rows.error().message;
        } else {
            last_error = conn.error().message;
        }
        if (Clock::now() >= deadline) {
            auto err = Error{ETIMEDOUT, server_name(flavour_) + " (pid " + std::to_string(pid_) +
                                            ") did not answer within " +
                                            std::to_string(opts.start_timeout.count()) +
                                            " s (last: " + last_error + "); error log:\n" +
                                            log_tail(error_log_path_, log_start)};
            (void)stop();
            return err;
        }
        std::this_thread::sleep_for(20ms);
    }
}

std::vector<std::string> MariadbServer::cli_command() const {
    std::vector<std::string> args;
    if (flavour_ == ServerFlavour::mysql) {
        // Through the script, so the socket is visible in the chroot.
        args = {sandbox_script_, "exec", root_dir_, "--", kMysqlCliInChroot};
    } else {
        args = {"/usr/bin/mariadb"};
    }
    args.insert(args.end(), {"--no-defaults", "--protocol=socket", "--socket=" + socket_path_,
                             "--user=" + user(), "--password=" + password()});
    return args;
}

void MariadbServer::close_session() {
    if (session_ != nullptr) {
        mysql_close(session_);
        session_ = nullptr;
    }
}

Result<Rows> MariadbServer::query(const std::string &sql) {
    if (session_ == nullptr) {
        auto conn = connect_socket(socket_path_, 0);
        if (!conn) {
            return conn.error();
        }
        session_ = conn.value().release();
    }
    auto rows = run_query(session_, sql);
    // Client-side errors (2000 and up: server gone, lost connection) leave
    // the session unusable; reconnect next time.
    if (!rows && mysql_errno(session_) >= 2000) {
        close_session();
    }
    return rows;
}

Result<void> MariadbServer::stop() {
    close_session();
    if (pid_ <= 0) {
        return {};
    }
    const pid_t pid = pid_;
    pid_ = -1;
    ::kill(pid, SIGTERM);
    if (wait_child(pid, Clock::now() + stop_timeout_)) {
        return {};
    }
    ::kill(pid, SIGKILL);
    wait_child(pid, Clock::now() + 60s);
    return Error{ETIMEDOUT, server_name(flavour_) + " (pid " + std::to_string(pid) +
                                ") did not stop within " + std::to_string(stop_timeout_.count()) +
                                " s; killed it"};
}

}  // namespace mysqltrace::test
