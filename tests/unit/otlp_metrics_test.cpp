// SPDX-License-Identifier: GPL-2.0-only
// The duration histograms' encoding: bucket boundaries as the semantic
// conventions give them (upper bounds inclusive), count, sum, min, max,
// one series per attribute set and resource, cumulative across exports.
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "output/otlp_json.h"
#include "output/otlp_metrics.h"

namespace {

using mysqltrace::output::DurationMetric;
using mysqltrace::output::MetricAttrs;
using mysqltrace::output::OtlpMetrics;
using nlohmann::json;

std::string resource(const char *name) {
    std::string r;
    mysqltrace::output::otlp::Attrs a(r);
    a.str("service.name", name);
    return r;
}

TEST(OtlpMetrics, BucketsAndSeries) {
    OtlpMetrics m("1.2", 1000);
    std::string out;
    EXPECT_EQ(m.take(out, 2000), 0u);
    EXPECT_EQ(out, "");
    MetricAttrs a;
    a.system = "mysql";
    a.ns = "db";
    a.operation = "SELECT";
    a.collection = "t";
    a.summary = "SELECT t";
    a.server_address = "127.0.0.1";
    a.server_port = 3306;
    const std::string app = resource("app");
    for (double s : {0.001, 0.0011, 0.0005, 10.0, 20.0}) {
        m.record(DurationMetric::client, app, a, s);
    }
    MetricAttrs e = a;
    e.status_code = "1054";
    m.record(DurationMetric::client, app, e, 0.002);
    m.record(DurationMetric::server, resource("mysql"), a, 0.07);
    EXPECT_EQ(m.series(), 3u);
    ASSERT_EQ(m.take(out, 5000), 3u);
    const json j = json::parse(out);
    ASSERT_EQ(j["resourceMetrics"].size(), 2u);
    // Resources in order of their attribute text: "app" first.
    const auto &client = j["resourceMetrics"][0];
    EXPECT_EQ(client["resource"]["attributes"][0]["value"]["stringValue"], "app");
    EXPECT_EQ(client["scopeMetrics"][0]["scope"],
              json::parse(R"({"name":"mysqltrace","version":"1.2"})"));
    const auto &metric = client["scopeMetrics"][0]["metrics"][0];
    EXPECT_EQ(metric["name"], "db.client.operation.duration");
    EXPECT_EQ(metric["unit"], "s");
    EXPECT_EQ(metric["histogram"]["aggregationTemporality"], 2);
    const auto &points = metric["histogram"]["dataPoints"];
    ASSERT_EQ(points.size(), 2u);
    // Series in order of their attribute text: db.response.status_code
    // comes before server.address.
    const auto &ok = points[1];
    EXPECT_EQ(ok["count"], "5");
    EXPECT_DOUBLE_EQ(ok["sum"].get<double>(), 0.001 + 0.0011 + 0.0005 + 10.0 + 20.0);
    EXPECT_EQ(ok["min"], 0.0005);
    EXPECT_EQ(ok["max"], 20.0);
    EXPECT_EQ(ok["startTimeUnixNano"], "1000");
    EXPECT_EQ(ok["timeUnixNano"], "5000");
    EXPECT_EQ(ok["explicitBounds"], json::parse("[0.001,0.005,0.01,0.05,0.1,0.5,1,5,10]"));
    // 0.0005 and 0.001 in (.., 0.001], 0.0011 in (0.001, 0.005], 10 in
    // (5, 10], 20 above.
    EXPECT_EQ(ok["bucketCounts"], json::parse(R"(["2","1","0","0","0","0","0","0","1","1"])"));
    EXPECT_EQ(ok["attributes"].size(), 7u);
    const auto &err = points[0];
    EXPECT_EQ(err["count"], "1");
    std::map<std::string, json> attrs;
    for (const auto &kv : err["attributes"]) {
        attrs[kv["key"]] = kv["value"];
    }
    EXPECT_EQ(attrs["db.response.status_code"]["stringValue"], "1054");
    EXPECT_EQ(attrs["error.type"]["stringValue"], "1054");
    EXPECT_EQ(attrs["server.port"]["intValue"], "3306");
    const auto &server = j["resourceMetrics"][1]["scopeMetrics"][0]["metrics"][0];
    EXPECT_EQ(server["name"], "mysqltrace.server.operation.duration");
    EXPECT_EQ(server["histogram"]["dataPoints"][0]["bucketCounts"],
              json::parse(R"(["0","0","0","0","1","0","0","0","0","0"])"));
    // Cumulative: the next export holds them all again, and more.
    m.record(DurationMetric::server, resource("mysql"), a, 0.07);
    ASSERT_EQ(m.take(out, 6000), 3u);
    const json k = json::parse(out);
    EXPECT_EQ(k["resourceMetrics"][1]["scopeMetrics"][0]["metrics"][0]["histogram"]["dataPoints"][0]
               ["count"],
              "2");
}

}  // namespace
