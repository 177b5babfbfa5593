// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server --format slowlog` read by pt-query-digest (Debian's
// percona-toolkit) as users read it, against the server's own slow log
// (slow_query_log=1, long_query_time=0) written for the same workload: per
// fingerprint, the same query counts and the same rows sent, examined and
// (where the server logs it) affected; and no warning from pt-query-digest.
#include <chrono>
#include <map>
#include <string>
#include <thread>
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
using mysqltrace::test::run_command;
using mysqltrace::test::run_prepared;
using mysqltrace::test::run_query;
using mysqltrace::test::server_tracer_argv;
using mysqltrace::test::ServerFlavour;
using mysqltrace::test::ServerOptions;
using nlohmann::json;

// What pt-query-digest reports for one fingerprint.
struct Digest {
    uint64_t count = 0;
    uint64_t rows_sent = 0, rows_examined = 0;
    uint64_t rows_affected = 0;  // pt-query-digest leaves out metrics that are all 0
    // Sum of Lock_time, seconds: compared apart, within a tolerance.
    double lock_time = 0;
    bool operator==(const Digest &o) const {
        return count == o.count && rows_sent == o.rows_sent && rows_examined == o.rows_examined &&
               rows_affected == o.rows_affected;
    }
};

std::ostream &operator<<(std::ostream &o, const Digest &d) {
    return o << "{count " << d.count << ", sent " << d.rows_sent << ", examined " << d.rows_examined
             << ", affected " << d.rows_affected << "}";
}

uint64_t sum(const json &metrics, const char *name) {
    return metrics.contains(name) ? std::stoull(metrics[name]["sum"].get<std::string>()) : 0;
}

// pt-query-digest's classes of the statements of connection `thread_id` in
// `log`, by fingerprint; `warnings` gets what it printed on stderr.
std::map<std::string, Digest> digest(const std::string &log, unsigned long thread_id,
                                     std::string *warnings) {
    auto r =
        run_command({"/usr/bin/pt-query-digest", "--output", "json", "--limit", "100%", "--filter",
                     "($event->{Thread_id} || 0) == " + std::to_string(thread_id), log});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    *warnings = r.err;
    std::map<std::string, Digest> out;
    const json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    if (j.is_discarded() || !j.contains("classes")) {
        return out;
    }
    for (const auto &c : j["classes"]) {
        const auto &m = c["metrics"];
        Digest d;
        d.count = c["query_count"].get<uint64_t>();
        d.rows_sent = sum(m, "Rows_sent");
        d.rows_examined = sum(m, "Rows_examined");
        d.rows_affected = sum(m, "Rows_affected");
        if (m.contains("Lock_time")) {
            d.lock_time = std::stod(m["Lock_time"]["sum"].get<std::string>());
        }
        out[c["fingerprint"].get<std::string>()] = d;
    }
    return out;
}

class ServerSlowlog : public ::testing::TestWithParam<ServerFlavour> {
  protected:
    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        ServerOptions opts;
        opts.flavour = GetParam();
        auto s = MariadbServer::start(opts);
        ASSERT_TRUE(s.ok()) << s.error().message;
        server_ = std::move(s).value();
    }

    std::unique_ptr<MariadbServer> server_;
};

TEST_P(ServerSlowlog, PtQueryDigestReadsWhatTheServerLogs) {
    const std::string server_log = server_->root_dir() + "/server-slow.log";
    const std::string traced_log = server_->root_dir() + "/traced-slow.log";
    // Sessions copy long_query_time when they connect: set it before the
    // test's connection. The harness's own session is told apart by thread id.
    ASSERT_TRUE(server_
                    ->query("CREATE DATABASE slow_db; CREATE TABLE slow_db.t (a INT PRIMARY "
                            "KEY, b VARCHAR(10)); INSERT INTO slow_db.t VALUES (1, 'a'), (2, "
                            "'b'), (3, 'c'); SET GLOBAL slow_query_log_file = '" +
                            server_log +
                            "'; SET GLOBAL long_query_time = 0; SET GLOBAL slow_query_log = 1")
                    .ok());
    auto tracer = std::make_unique<BackgroundCommand>(server_tracer_argv(
        *server_, {"--stages", "off", "--format", "slowlog", "--output", traced_log}));
    ASSERT_TRUE(tracer->wait_for_stderr("Ctrl-C to stop")) << tracer->stop(SIGKILL).err;

    MYSQL *m = mysql_init(nullptr);
    ASSERT_NE(
        mysql_real_connect(m, nullptr, server_->user().c_str(), server_->password().c_str(),
                           "slow_db", 0, server_->socket_path().c_str(), CLIENT_MULTI_STATEMENTS),
        nullptr)
        << mysql_error(m);
    const unsigned long id = mysql_thread_id(m);
    for (int a = 1; a <= 3; a++) {
        ASSERT_EQ(run_query(m, "select b from t where a = " + std::to_string(a)), 0u);
    }
    ASSERT_EQ(run_query(m, "select a, b from t where a >= 2"), 0u);
    ASSERT_EQ(run_query(m, "insert into t values (4, 'd')"), 0u);
    ASSERT_EQ(run_query(m, "insert into t values (5, 'e'), (6, 'f')"), 0u);
    ASSERT_EQ(run_query(m, "update t set b = 'z' where a <= 2"), 0u);
    EXPECT_EQ(run_query(m, "select * from no_such_table"), 1146u);
    ASSERT_EQ(run_query(m, "select 1;  select count(*) from t;delete from t where a = 6"), 0u);
    ASSERT_EQ(run_query(m, "select b from t where a = 42"), 0u);
    // An EXECUTE is logged with its values (other formats show its `?`).
    run_prepared(m, "select a from t where a < ?", 3);
    mysql_close(m);
    // Both logs are written as each statement ends; let the last records
    // reach the tracer before it stops.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    auto r = tracer->stop(SIGINT);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(" 0 records dropped; interrupted\n"), std::string::npos) << r.err;

    std::string server_warnings, traced_warnings;
    auto want = digest(server_log, id, &server_warnings);
    auto got = digest(traced_log, id, &traced_warnings);
    EXPECT_EQ(traced_warnings, "");
    // Commands the servers log apart from SQL (connect, quit) differ by
    // flavour and by log_slow_admin_statements; the SQL is what is compared.
    std::erase_if(want, [](const auto &c) { return c.first.starts_with("administrator"); });
    std::erase_if(got, [](const auto &c) { return c.first.starts_with("administrator"); });
    if (GetParam() == ServerFlavour::mysql) {
        // MySQL's log has no Rows_affected (log_slow_extra is off): ours
        // against the statements' own counts instead.
        EXPECT_EQ(got["insert into t values(?+)"].rows_affected, 3u);
        EXPECT_EQ(got["update t set b = ? where a <= ?"].rows_affected, 2u);
        EXPECT_EQ(got["delete from t where a = ?"].rows_affected, 1u);
        for (auto &[fingerprint, d] : got) {
            d.rows_affected = 0;
        }
    }
    // select b ... (4 literals), select a, b ..., insert (both), update,
    // the failing select, the three parts of the multi-statement query and
    // the EXECUTE.
    EXPECT_EQ(want.size(), 9u) << server_warnings;
    EXPECT_EQ(got, want);
    EXPECT_EQ(got["select b from t where a = ?"], (Digest{4, 3, 3, 0}));
    // Lock_time is read from the same THD fields the server's log prints,
    // just before it: nonzero where the server's is, and within a
    // millisecond per statement of it (no timing is asserted).
    for (const auto &[fingerprint, w] : want) {
        const Digest &g = got[fingerprint];
        EXPECT_EQ(g.lock_time > 0, w.lock_time > 0) << fingerprint;
        EXPECT_NEAR(g.lock_time, w.lock_time, 0.001 * static_cast<double>(w.count)) << fingerprint;
    }
    EXPECT_GT(got["select b from t where a = ?"].lock_time, 0.0);
    EXPECT_EQ(got["update t set b = ? where a <= ?"],
              (Digest{1, 0, 2, GetParam() == ServerFlavour::mysql ? 0u : 2u}));
    // A fingerprint hides the values: the text itself, as the server logs it.
    for (const std::string &log : {server_log, traced_log}) {
        EXPECT_NE(read_file(log).find("\nselect a from t where a < 3;\n"), std::string::npos)
            << log;
    }
}

INSTANTIATE_TEST_SUITE_P(Flavours, ServerSlowlog,
                         ::testing::ValuesIn(mysqltrace::test::all_flavours()),
                         [](const testing::TestParamInfo<ServerFlavour> &info) {
                             return mysqltrace::test::flavour_name(info.param);
                         });

}  // namespace
