// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace server --duty PCT --format digests-json`: a paced workload of
// three statement classes with known counts (cross-checked with the
// server's Com_select / Com_insert), traced with the probe attached 20% of
// the time; every class's true count lies within the printed 95% bound and
// the bound is not absurdly wide. With --duty 100 the counts are exact.
// On every flavour the harness starts.
#include <chrono>
#include <cmath>
#include <iostream>
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
using mysqltrace::test::connect_to;
using mysqltrace::test::MariadbServer;
using mysqltrace::test::read_json_lines;
using mysqltrace::test::run_query;
using mysqltrace::test::server_tracer_argv;
using mysqltrace::test::ServerFlavour;
using mysqltrace::test::ServerOptions;
using nlohmann::json;

// The classes, by how their digest text begins.
constexpr const char *kSelect = "select b from t where a = ";
constexpr const char *kInsert = "insert into log values ";
constexpr const char *kFailing = "select * from no_such_table ";

class ServerDuty : public ::testing::TestWithParam<ServerFlavour> {
  protected:
    void SetUp() override {
        MYSQLTRACE_REQUIRE_ROOT();
        ServerOptions opts;
        opts.flavour = GetParam();
        auto s = MariadbServer::start(opts);
        ASSERT_TRUE(s.ok()) << s.error().message;
        server_ = std::move(s).value();
        ASSERT_TRUE(server_
                        ->query("CREATE DATABASE duty_db; CREATE TABLE duty_db.t (a INT PRIMARY "
                                "KEY, b VARCHAR(10)); INSERT INTO duty_db.t VALUES (1, 'a'), (2, "
                                "'b'), (3, 'c'); CREATE TABLE duty_db.log (i INT, s VARCHAR(10))")
                        .ok());
        out_ = server_->root_dir() + "/digests.json";
    }

    uint64_t global_status(MYSQL *m, const std::string &name) {
        EXPECT_EQ(mysql_query(m, ("SHOW GLOBAL STATUS LIKE '" + name + "'").c_str()), 0);
        MYSQL_RES *res = mysql_store_result(m);
        uint64_t v = 0;
        if (res != nullptr) {
            if (MYSQL_ROW row = mysql_fetch_row(res)) {
                v = std::stoull(row[1]);
            }
            mysql_free_result(res);
        }
        return v;
    }

    // Runs `rounds` rounds of 3 selects, 1 insert and (every 5th round) a
    // failing select, sleeping `pause` after each round: a steady rate.
    struct Counts {
        uint64_t select = 0, insert = 0, failing = 0;
    };
    // `keep`: the connection is left open there (its COM_QUIT takes a query
    // id), else closed.
    Counts workload(int rounds, std::chrono::microseconds pause, MYSQL **keep = nullptr) {
        Counts c;
        MYSQL *m = connect_to(*server_, 0, "duty_db");
        for (int i = 0; i < rounds; i++) {
            for (int k = 1; k <= 3; k++) {
                EXPECT_EQ(run_query(m, "select b from t where a = " + std::to_string(k)), 0u);
                c.select++;
            }
            EXPECT_EQ(run_query(m, "insert into log values (" + std::to_string(i) + ", 'x')"), 0u);
            c.insert++;
            if (i % 5 == 0) {
                EXPECT_EQ(run_query(m, "select * from no_such_table where a = 1"), 1146u);
                c.failing++;
            }
            std::this_thread::sleep_for(pause);
        }
        if (keep != nullptr) {
            *keep = m;
        } else {
            mysql_close(m);
        }
        return c;
    }

    // The digest lines of the final summary, by the class their digest
    // text begins with (a class matched twice is a test failure).
    std::map<std::string, json> digests(json *summary) {
        std::map<std::string, json> by_class;
        for (auto &e : read_json_lines(out_)) {
            if (e["kind"] == "digest_summary") {
                *summary = e;
                by_class.clear();  // only the last summary's
            } else if (e["kind"] == "digest" && e["digest"].is_string()) {
                const auto digest = e["digest"].get<std::string>();
                for (const char *c : {kSelect, kInsert, kFailing}) {
                    if (digest.starts_with(c)) {
                        EXPECT_FALSE(by_class.contains(c)) << digest;
                        by_class[c] = e;
                    }
                }
            }
        }
        return by_class;
    }

    std::unique_ptr<MariadbServer> server_;
    std::string out_;
};

TEST_P(ServerDuty, EstimatesHoldTheTrueCounts) {
    MYSQL *status = connect_to(*server_, 0, "duty_db");
    const uint64_t select0 = global_status(status, "Com_select");
    const uint64_t insert0 = global_status(status, "Com_insert");
    auto tracer = std::make_unique<BackgroundCommand>(
        server_tracer_argv(*server_, {"--stages", "off", "--duty", "20", "--duty-period", "0.5",
                                      "--format", "digests-json", "--output", out_}));
    ASSERT_TRUE(tracer->wait_for_stderr("Ctrl-C to stop")) << tracer->stop(SIGKILL).err;
    // ~8 s at ~800 statements a second: 16 windows. The connection stays
    // open until the tracer has stopped: its COM_QUIT would take a query id.
    MYSQL *work = nullptr;
    const Counts c = workload(1600, std::chrono::microseconds(4000), &work);
    auto r = tracer->stop(SIGINT);
    mysql_close(work);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("scaled by the server's "), std::string::npos) << r.err;
    // The server counted what the workload says it ran (the failing select
    // counts as a select where it reached execution; the checks ask only
    // for the classes that always do).
    EXPECT_GE(global_status(status, "Com_select") - select0, c.select);
    EXPECT_EQ(global_status(status, "Com_insert") - insert0, c.insert);
    mysql_close(status);

    json summary;
    auto by_digest = digests(&summary);
    EXPECT_EQ(summary["estimate"], true);
    EXPECT_EQ(summary["confidence"], 0.95);
    EXPECT_EQ(summary["drops"], 0);
    const double fraction = summary["on_fraction"].get<double>();
    EXPECT_GT(fraction, 0.1) << summary.dump();
    EXPECT_LT(fraction, 0.3) << summary.dump();
    EXPECT_GE(summary["windows"].get<int>(), 10) << summary.dump();
    // Scaled by the server's query id counter, whose delta over the run is
    // exact: one id per statement of a COM_QUERY (docs/server.md), and no
    // other client ran one meanwhile.
    EXPECT_EQ(summary["scaling"], "query_id") << summary.dump();
    EXPECT_EQ(summary["query_ids"].get<uint64_t>(), c.select + c.insert + c.failing)
        << summary.dump();
    std::cout << "query ids " << summary["query_ids"] << ", in the windows "
              << summary["query_ids_on"] << "\n";
    double estimated = 0;
    uint64_t seen = 0;
    for (const auto &[digest, truth] :
         {std::pair{kSelect, c.select}, {kInsert, c.insert}, {kFailing, c.failing}}) {
        SCOPED_TRACE(digest);
        ASSERT_TRUE(by_digest.contains(digest)) << r.out;
        const json &d = by_digest[digest];
        const double est = d["count"].get<double>();
        const double bound = d["count_bound"].get<double>();
        std::cout << digest << "... : " << truth << " run, estimated " << est << " +- " << bound
                  << " (" << d["bound_from"] << ", " << d["seen"] << " seen)\n";
        EXPECT_LE(std::abs(est - static_cast<double>(truth)), bound)
            << d.dump() << " truth " << truth;
        EXPECT_GT(bound, 0) << d.dump();
        EXPECT_LT(bound, 0.5 * static_cast<double>(truth)) << d.dump();
        EXPECT_LT(d["seen"].get<uint64_t>(), truth) << d.dump();
        estimated += est;
        seen += d["seen"].get<uint64_t>();
    }
    // The classes are all the statements, and the windows saw those whose
    // query ids they hold but at their edges: one connection has at most one
    // statement across an edge (its id taken before the attach returned, its
    // probe after; or its id before the detach, its probe during it), so the
    // two differ by at most one per window, and the estimates add up to the
    // exact total within that.
    const auto windows = summary["windows"].get<int64_t>();
    const auto in_windows = summary["query_ids_on"].get<int64_t>();
    EXPECT_LE(std::abs(static_cast<int64_t>(seen) - in_windows), windows) << summary.dump();
    EXPECT_NEAR(estimated, summary["query_ids"].get<double>(),
                summary["query_ids"].get<double>() * static_cast<double>(windows) /
                        static_cast<double>(in_windows) +
                    2)
        << summary.dump();
    const json &failing = by_digest[kFailing];
    EXPECT_EQ(failing["errors_seen"], failing["seen"]);
    EXPECT_EQ(failing["errors"], failing["count"]);
    const json &select = by_digest[kSelect];
    EXPECT_EQ(select["rows_sent_avg"], 1.0);
    EXPECT_EQ(select["errors_seen"], 0);
    EXPECT_GT(select["latency_ns"]["p50"].get<uint64_t>(), 0u);
    EXPECT_LE(select["latency_ns"]["p50"].get<uint64_t>(),
              select["latency_ns"]["p99"].get<uint64_t>());
}

TEST_P(ServerDuty, AlwaysOnIsExact) {
    auto tracer = std::make_unique<BackgroundCommand>(server_tracer_argv(
        *server_,
        {"--stages", "sampled", "--duty", "100", "--format", "digests-json", "--output", out_}));
    ASSERT_TRUE(tracer->wait_for_stderr("Ctrl-C to stop")) << tracer->stop(SIGKILL).err;
    const Counts c = workload(200, std::chrono::microseconds(0));
    // The last statement's probe fires after the client has its reply.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto r = tracer->stop(SIGINT);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json summary;
    auto by_digest = digests(&summary);
    EXPECT_EQ(summary["estimate"], false);
    EXPECT_EQ(summary["on_fraction"], 1.0);
    for (const auto &[digest, truth] :
         {std::pair{kSelect, c.select}, {kInsert, c.insert}, {kFailing, c.failing}}) {
        SCOPED_TRACE(digest);
        ASSERT_TRUE(by_digest.contains(digest)) << r.out;
        const json &d = by_digest[digest];
        EXPECT_EQ(d["count"], static_cast<double>(truth)) << d.dump();
        EXPECT_EQ(d["count_bound"], 0.0) << d.dump();
        EXPECT_EQ(d["seen"], truth) << d.dump();
        EXPECT_EQ(d["bound_from"], "exact");
    }
    EXPECT_EQ(by_digest[kFailing]["errors"], static_cast<double>(c.failing));
}

INSTANTIATE_TEST_SUITE_P(Flavours, ServerDuty,
                         ::testing::ValuesIn(mysqltrace::test::all_flavours()),
                         [](const auto &info) {
                             return mysqltrace::test::flavour_name(info.param);
                         });

}  // namespace
