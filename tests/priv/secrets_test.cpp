// SPDX-License-Identifier: GPL-2.0-only
// Passwords and keys never reach a trace unless --show-secrets: an admin's
// password statements (and parse errors that quote them: MySQL 9.7 refuses
// three of them) traced by `server` in every format at once, and by `run` on
// the client side, against both servers.
#include <dirent.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mysql.h>
#include <nlohmann/json.hpp>

#include "harness/mariadb_server.h"
#include "priv/cli_util.h"
#include "priv/priv.h"
#include "priv/server_session.h"

namespace {

using mysqltrace::test::BackgroundCommand;
using mysqltrace::test::MariadbServer;
using mysqltrace::test::read_file;
using mysqltrace::test::read_json_lines;
using mysqltrace::test::run_command;
using mysqltrace::test::server_tracer_argv;
using mysqltrace::test::ServerFlavour;
using mysqltrace::test::ServerOptions;
using nlohmann::json;

// Each secret is "hunter" plus a digit; the last statement fails to parse,
// and the server's message quotes it.
const std::vector<std::string> kStatements = {
    "create user 'u1'@'localhost' identified by 'hunter2secret'",
    "alter user 'u1'@'localhost' identified by 'hunter3secret'",
    "set password for 'u1'@'localhost' = password('hunter4secret')",
    "grant select on *.* to 'u2'@'localhost' identified by 'hunter5secret'",
    "select aes_encrypt('x', 'hunter6secret')",
    "create user u3 identified by 'hunter7secret' garbage",
};
const std::vector<std::string> kRedacted = {
    "create user 'u1'@'localhost' identified by '<redacted>'",
    "alter user 'u1'@'localhost' identified by '<redacted>'",
    "set password for 'u1'@'localhost' = password('<redacted>')",
    "grant select on *.* to 'u2'@'localhost' identified by '<redacted>'",
    "select aes_encrypt('x', '<redacted>')",
    "create user u3 identified by '<redacted>' garbage",
};

class Secrets : public ::testing::TestWithParam<ServerFlavour> {
  protected:
    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        ServerOptions o;
        o.flavour = GetParam();
        auto s = MariadbServer::start(o);
        ASSERT_TRUE(s.ok()) << s.error().message;
        server_ = std::move(s).value();
    }

    // Runs kStatements on a new connection; returns its connection id.
    unsigned long run_statements() {
        MYSQL *m = mysql_init(nullptr);
        EXPECT_NE(mysql_real_connect(m, nullptr, "root", nullptr, nullptr, 0,
                                     server_->socket_path().c_str(), 0),
                  nullptr)
            << mysql_error(m);
        const unsigned long id = mysql_thread_id(m);
        for (const std::string &sql : kStatements) {
            if (mysql_query(m, sql.c_str()) == 0) {
                mysql_free_result(mysql_store_result(m));
            }
        }
        mysql_close(m);
        return id;
    }

    BackgroundCommand trace(const std::vector<std::string> &extra) {
        return BackgroundCommand(server_tracer_argv(*server_, extra));
    }

    std::unique_ptr<MariadbServer> server_;
};

TEST_P(Secrets, ServerRedactsEveryFormat) {
    const std::string dir = server_->root_dir();
    BackgroundCommand text = trace({"--stages", "off", "--output", dir + "/t.txt"});
    BackgroundCommand js =
        trace({"--stages", "sampled", "--format", "json", "--output", dir + "/t.json"});
    BackgroundCommand profile =
        trace({"--stages", "exact", "--format", "profile", "--output", dir + "/t.profile"});
    BackgroundCommand files =
        trace({"--stages", "exact", "--format", "pfs-sql", "--output", dir + "/pfs"});
    for (BackgroundCommand *c : {&text, &js, &profile, &files}) {
        ASSERT_TRUE(c->wait_for_stderr("Ctrl-C to stop"));
    }
    const unsigned long id = run_statements();
    std::string all;
    for (BackgroundCommand *c : {&text, &js, &profile, &files}) {
        auto r = c->stop();
        EXPECT_EQ(r.exit_code, 0) << r.err;
        all += r.out + r.err;
    }
    // The JSON trace holds each statement, redacted, in order.
    std::vector<std::string> texts;
    std::string parse_error;
    for (const json &j : read_json_lines(dir + "/t.json")) {
        if (j.value("kind", "") == "statement" && j.value("THREAD_ID", 0UL) == id &&
            j["SQL_TEXT"].is_string()) {
            texts.push_back(j["SQL_TEXT"]);
            if (j.value("MYSQL_ERRNO", 0) == 1064) {
                parse_error = j["MESSAGE_TEXT"];
            }
        }
    }
    EXPECT_EQ(texts, kRedacted);
    EXPECT_NE(parse_error.find("near '<redacted>'"), std::string::npos) << parse_error;
    // No byte of a secret anywhere: text, JSON, profile, every trace file.
    all += read_file(dir + "/t.txt") + read_file(dir + "/t.json") + read_file(dir + "/t.profile");
    size_t files_seen = 0;
    if (DIR *d = opendir((dir + "/pfs").c_str())) {
        while (dirent *e = readdir(d)) {
            if (e->d_name[0] != '.') {
                all += read_file(dir + "/pfs/" + e->d_name);
                files_seen++;
            }
        }
        closedir(d);
    }
    EXPECT_GE(files_seen, 1u);
    EXPECT_EQ(all.find("hunter"), std::string::npos);
    for (const char *out : {"/t.txt", "/t.profile"}) {
        EXPECT_NE(read_file(dir + out).find("identified by '<redacted>'"), std::string::npos)
            << out;
    }
}

TEST_P(Secrets, ServerShowSecretsIsTheOnlyWayOut) {
    const std::string out = server_->root_dir() + "/t.json";
    BackgroundCommand c =
        trace({"--stages", "off", "--format", "json", "--show-secrets", "--output", out});
    ASSERT_TRUE(c.wait_for_stderr("Ctrl-C to stop"));
    const unsigned long id = run_statements();
    EXPECT_EQ(c.stop().exit_code, 0);
    std::vector<std::string> texts;
    for (const json &j : read_json_lines(out)) {
        if (j.value("kind", "") == "statement" && j.value("THREAD_ID", 0UL) == id &&
            j["SQL_TEXT"].is_string()) {
            texts.push_back(j["SQL_TEXT"]);
        }
    }
    EXPECT_EQ(texts, kStatements);
}

TEST_P(Secrets, ClientSideRedactsStatementsAndTheirErrors) {
    // From a file, so that --force goes on after an error.
    const std::string script = server_->root_dir() + "/admin.sql";
    {
        std::ofstream f(script);
        for (const std::string &s : kStatements) {
            f << s << ";\n";
        }
    }
    for (const char *format : {"text", "json"}) {
        auto dropped = server_->query("DROP USER IF EXISTS 'u1'@'localhost', 'u2'@'localhost'");
        ASSERT_TRUE(dropped.ok()) << dropped.error().message;
        const std::string out = server_->root_dir() + "/run." + format;
        auto r = run_command(
            {MYSQLTRACE_BINARY, "run", "--format", format, "--output", out, "--", "/bin/sh", "-c",
             "exec /usr/bin/mariadb --no-defaults --socket=" + server_->socket_path() +
                 " --user=root --force < " + script});
        EXPECT_NE(r.err.find("ERROR 1064"), std::string::npos) << r.err;
        const std::string trace = read_file(out);
        EXPECT_EQ(trace.find("hunter"), std::string::npos) << format << ":\n" << trace;
        for (const std::string &s : kRedacted) {
            EXPECT_NE(trace.find(s), std::string::npos) << format << ": " << s;
        }
        EXPECT_NE(trace.find("near '<redacted>'"), std::string::npos) << format;
    }
}

INSTANTIATE_TEST_SUITE_P(Servers, Secrets, ::testing::ValuesIn(mysqltrace::test::all_flavours()),
                         ::testing::PrintToStringParamName());

}  // namespace
