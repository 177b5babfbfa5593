// SPDX-License-Identifier: GPL-2.0-only
#include "priv/client_session.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>

#include "priv/cli_util.h"

namespace mysqltrace::test {

namespace {

std::map<std::pair<ServerFlavour, bool>, std::unique_ptr<MariadbServer>> &peer_servers() {
    static std::map<std::pair<ServerFlavour, bool>, std::unique_ptr<MariadbServer>> servers;
    return servers;
}

}  // namespace

MariadbServer *peer_server(ServerFlavour flavour, bool tls) {
    auto &slot = peer_servers()[{flavour, tls}];
    if (!slot) {
        ServerOptions o;
        o.flavour = flavour;
        o.tls = tls;
        o.extra_args = {"--max-allowed-packet=64M"};
        if (flavour == ServerFlavour::mysql) {
            o.extra_args.push_back("--local-infile=ON");
        }
        auto s = MariadbServer::start(o);
        EXPECT_TRUE(s.ok()) << s.error().message;
        if (!s.ok()) {
            return nullptr;
        }
        auto r = (*s)->query(
            "CREATE DATABASE mt; CREATE TABLE mt.t (a INT, b VARCHAR(10));"
            "INSERT INTO mt.t VALUES (1, 'one'), (2, 'two')");
        EXPECT_TRUE(r.ok()) << r.error().message;
        if (!r.ok()) {
            return nullptr;
        }
        slot = std::move(s).value();
    }
    return slot.get();
}

void stop_peer_servers() {
    peer_servers().clear();
}

std::string trace_path_for_test(const MariadbServer &server) {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '.');
    return server.root_dir() + "/" + name + ".trace";
}

std::string testprog(const std::string &name) {
    return std::string(MYSQLTRACE_TESTPROGS_DIR) + "/" + name;
}

GatedClient::GatedClient(const std::vector<std::string> &argv, const std::string &stderr_path) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
        return;
    }
    pid_ = fork();
    if (pid_ == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(in[0], 0);
        dup2(out[1], 1);
        if (!stderr_path.empty()) {
            int fd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            dup2(fd, 2);
        }
        std::vector<char *> args = {const_cast<char *>("/bin/sh"), const_cast<char *>("-c"),
                                    const_cast<char *>("read _gate && exec \"$@\""),
                                    const_cast<char *>("gate")};
        for (const auto &a : argv) {
            args.push_back(const_cast<char *>(a.c_str()));
        }
        args.push_back(nullptr);
        execv("/bin/sh", args.data());
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
}

GatedClient::~GatedClient() {
    if (to_ >= 0) {
        close(to_);
    }
    if (from_ >= 0) {
        close(from_);
    }
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
}

void GatedClient::open_gate() {
    // `read` in the shell consumes exactly one line; the rest of stdin
    // belongs to the client.
    [[maybe_unused]] ssize_t n = write(to_, "\n", 1);
}

void GatedClient::send(const std::string &line) {
    std::string l = line + "\n";
    if (write(to_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) {
        buffer_ += "<write failed>\n";  // the next read_line() says so
    }
}

std::string GatedClient::command(const std::string &line) {
    send(line);
    return read_line();
}

std::string GatedClient::read_line() {
    for (;;) {
        size_t nl = buffer_.find('\n');
        if (nl != std::string::npos) {
            std::string answer = buffer_.substr(0, nl);
            buffer_.erase(0, nl + 1);
            return answer;
        }
        char buf[4096];
        ssize_t n = read(from_, buf, sizeof(buf));
        if (n <= 0) {
            return "<eof>";
        }
        buffer_.append(buf, static_cast<size_t>(n));
    }
}

int GatedClient::finish() {
    close(to_);
    to_ = -1;
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TracedSession run_traced(const std::vector<std::string> &client_argv,
                         const std::vector<Step> &steps,
                         const std::vector<std::string> &tracer_args, const std::string &out_path,
                         const std::vector<std::string> &tracer_prefix) {
    TracedSession s;
    GatedClient client(client_argv);
    std::vector<std::string> argv = tracer_prefix;
    for (const auto &a :
         {std::string(MYSQLTRACE_BINARY), std::string("client"), std::string("--pid"),
          std::to_string(client.pid()), std::string("--output"), out_path}) {
        argv.push_back(a);
    }
    argv.insert(argv.end(), tracer_args.begin(), tracer_args.end());
    BackgroundCommand tracer(argv);
    if (!tracer.wait_for_stderr("Ctrl-C to stop")) {
        auto r = tracer.stop(SIGKILL);
        s.tracer_stderr = r.err;
        return s;
    }
    client.open_gate();
    for (const auto &step : steps) {
        s.answers.push_back(client.command(step.command));
    }
    client.finish();
    // The tracer ends by itself once the traced process has exited.
    auto r = tracer.wait();
    s.tracer_exit = r.exit_code;
    s.tracer_stderr = r.err;
    s.trace = read_file(out_path);
    s.normalised = normalise_trace(s.trace);
    return s;
}

std::string attach_and_check(GatedClient &c, const MariadbServer &server,
                             const std::string &expected, const std::vector<Step> &steps,
                             const std::string &out_path,
                             const std::vector<std::string> &tracer_args) {
    std::vector<std::string> argv = {MYSQLTRACE_BINARY,       "-v",       "client", "--pid",
                                     std::to_string(c.pid()), "--output", out_path};
    argv.insert(argv.end(), tracer_args.begin(), tracer_args.end());
    BackgroundCommand tracer(argv);
    EXPECT_TRUE(tracer.wait_for_stderr("Ctrl-C to stop")) << tracer.stderr_so_far();
    for (const auto &step : steps) {
        EXPECT_EQ(c.command(step.command), step.answer) << step.command;
    }
    c.finish();
    auto r = tracer.wait();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped; traced process exited\n"), std::string::npos)
        << r.err;
    EXPECT_TRUE(matches_expected(
        expected, normalise_trace(read_file(out_path), {{server.root_dir(), "<dir>"}})));
    return r.err;
}

std::vector<std::string> server_address_args(const MariadbServer &server, bool tcp) {
    if (tcp) {
        return {"--host", server.host(), "--port", std::to_string(server.port())};
    }
    return {"--socket", server.socket_path()};
}

std::vector<Step> basic_steps() {
    return {{"connect", "ok"},
            {"query select a, b from mt.t order by a", "ok 1 2"},
            {"query select 1 from dual where 1 = 0", "ok 1 0"},
            {"query select * from mt.nosuch", "error 1146 Table 'mt.nosuch' doesn't exist"},
            {"query insert into mt.t values (3, 'three')", "ok 0 0"},
            {"query delete from mt.t where a = 3", "ok 0 0"},
            {"ping", "ok"},
            {"quit", "ok"}};
}

TracedSession run_under_run(const std::vector<std::string> &client_argv,
                            const std::vector<Step> &steps,
                            const std::vector<std::string> &tracer_args,
                            const std::string &out_path) {
    TracedSession s;
    std::vector<std::string> argv = {MYSQLTRACE_BINARY, "run", "--output", out_path};
    argv.insert(argv.end(), tracer_args.begin(), tracer_args.end());
    argv.push_back("--");
    argv.insert(argv.end(), client_argv.begin(), client_argv.end());
    const std::string err_path = out_path + ".stderr";
    {
        GatedClient client(argv, err_path);
        client.open_gate();
        for (const auto &step : steps) {
            s.answers.push_back(client.command(step.command));
        }
        s.tracer_exit = client.finish();
    }
    s.tracer_stderr = read_file(err_path);
    s.trace = read_file(out_path);
    s.normalised = normalise_trace(s.trace);
    return s;
}

std::string normalise_trace(const std::string &trace,
                            const std::vector<std::pair<std::string, std::string>> &paths) {
    struct Rule {
        std::regex re;
        const char *with;
    };
    static const std::vector<Rule> rules = [] {
        std::vector<Rule> r;
        auto add = [&r](const char *re, const char *with) {
            r.push_back({std::regex(re, std::regex::ECMAScript | std::regex::multiline), with});
        };
        add(R"(^\d\d:\d\d:\d\d\.\d{6} \d+/\d+ )", "");
        add(R"(Connection id: \d+)", "Connection id: <id>");
        add(R"(Server version: .*)", "Server version: <version>");
        add(R"(Connection attributes: .*)", "Connection attributes: <attributes>");
        add(R"(server wait: [^;\n]+; total: [^;\n]+)", "server wait: <t>; total: <t>");
        add(R"(Uptime: .*)", "Uptime: <statistics>");
        // API call lines of `mysqltrace run`.
        add(R"((api: \w+)\(0x[0-9a-f]+\))", "$1(<handle>)");
        add(R"(; time: [^;\n]+(; server wait: [^;\n]+; in client: [^;\n]+)?)", "; time: <t>");
        add(R"(; server thread: \d+)", "; server thread: <id>");
        // The login packet carries the client's pid among its attributes.
        add(R"(((?:event: SEND_AUTH_RESPONSE|    CHANGE_USER: .*)\n(?:    .*\n)*.*event: PACKET_SENT\n    packet sent: )\d+)",
            "$1<n>");
        // Statement ids count per server, so they depend on the tests before.
        add(R"((Prepared statement |STMT_EXECUTE: |STMT_CLOSE: |statement: )\d+)", "$1<stmt>");
        // How much of a huge statement was copied depends on how the kernel
        // split the client's writes.
        add(R"(statement cut by the capture: \d+ of)", "statement cut by the capture: <n> of");
        add(R"((COM_CHANGE_USER -> \w+; rows: 0; bytes sent: )\d+)", "$1<n>");
        // The statistics string's length moves with the uptime's digits.
        add(R"((COM_STATISTICS -> REPLY; .*bytes received: )\d+)", "$1<n>");
        return r;
    }();
    std::string out = trace;
    for (const auto &[path, token] : paths) {
        for (size_t at; (at = out.find(path)) != std::string::npos;) {
            out.replace(at, path.size(), token);
        }
    }
    for (const auto &rule : rules) {
        out = std::regex_replace(out, rule.re, rule.with);
    }
    return out;
}

::testing::AssertionResult matches_expected(const std::string &name, const std::string &actual) {
    std::string path =
        std::string(MYSQLTRACE_SOURCE_DIR) + "/tests/priv/expected/" + name + ".trace";
    const char *update = std::getenv("MYSQLTRACE_UPDATE_EXPECTED");
    if (update != nullptr && std::string(update) == "1") {
        std::ofstream(path) << actual;
        return ::testing::AssertionSuccess() << "updated " << path;
    }
    std::ifstream in(path);
    if (!in) {
        return ::testing::AssertionFailure()
               << "no expected trace " << path
               << " (run with MYSQLTRACE_UPDATE_EXPECTED=1 to write it from this run):\n"
               << actual;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str() == actual) {
        return ::testing::AssertionSuccess();
    }
    // Show the first differing line: a whole-trace dump drowns the point.
    std::istringstream want(ss.str()), got(actual);
    std::string w, g;
    for (int line = 1;; line++) {
        bool hw = static_cast<bool>(std::getline(want, w));
        bool hg = static_cast<bool>(std::getline(got, g));
        if (!hw && !hg) {
            break;
        }
        if (!hw || !hg || w != g) {
            return ::testing::AssertionFailure()
                   << path << ":" << line << " differs\n  expected: " << (hw ? w : "<end>")
                   << "\n  actual:   " << (hg ? g : "<end>") << "\nwhole actual trace:\n"
                   << actual;
        }
    }
    return ::testing::AssertionFailure() << "traces differ";
}

}  // namespace mysqltrace::test
