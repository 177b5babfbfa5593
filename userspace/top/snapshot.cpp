// SPDX-License-Identifier: GPL-2.0-only
#include "top/snapshot.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace mysqltrace::top {

namespace {

ClassSnapshot class_of(const output::StatementClass &c) {
    ClassSnapshot s;
    s.schema = c.schema;
    s.user = c.user;
    s.event_name = c.event_name;
    s.digest = c.digest;
    s.calls = c.calls;
    s.errors = c.errors;
    s.time_ns = c.time_ns;
    s.max_ns = c.max_ns;
    // A histogram bucket's middle, never above the slowest statement.
    s.p50_ns = std::min(c.latency.quantile(0.5), c.max_ns);
    s.p99_ns = std::min(c.latency.quantile(0.99), c.max_ns);
    s.rows_sent = c.rows_sent;
    s.rows_examined = c.rows_examined;
    s.rows_affected = c.rows_affected;
    for (const auto &[name, ns] : c.stage_ns) {
        s.stages.push_back({name, ns});
    }
    std::ranges::sort(s.stages, [](const StageShare &a, const StageShare &b) {
        return a.ns != b.ns ? a.ns > b.ns : a.name < b.name;
    });
    if (s.stages.size() > kTopStages) {
        s.stages.resize(kTopStages);
    }
    s.recent.assign(c.recent.rbegin(), c.recent.rend());
    return s;
}

nlohmann::json class_json(const ClassSnapshot &c) {
    nlohmann::json stages = nlohmann::json::array();
    for (const auto &st : c.stages) {
        stages.push_back({{"name", st.name}, {"ns", st.ns}});
    }
    nlohmann::json recent = nlohmann::json::array();
    for (const auto &r : c.recent) {
        recent.push_back({{"text", r.text},
                          {"end_ns", r.end_ns},
                          {"duration_ns", r.duration_ns},
                          {"thread_id", r.thread_id},
                          {"rows_sent", r.rows_sent},
                          {"rows_examined", r.rows_examined},
                          {"error", r.error}});
    }
    return {{"schema", c.schema},
            {"user", c.user},
            {"event_name", c.event_name},
            {"digest", c.digest},
            {"calls", c.calls},
            {"errors", c.errors},
            {"time_ns", c.time_ns},
            {"max_ns", c.max_ns},
            {"p50_ns", c.p50_ns},
            {"p99_ns", c.p99_ns},
            {"rows_sent", c.rows_sent},
            {"rows_examined", c.rows_examined},
            {"rows_affected", c.rows_affected},
            {"stages", std::move(stages)},
            {"recent", std::move(recent)}};
}

}  // namespace

std::vector<ClassSnapshot> snapshot_classes(const output::StatementStats &stats) {
    std::vector<ClassSnapshot> out;
    out.reserve(stats.classes().size() + 1);
    for (const auto &c : stats.classes()) {
        out.push_back(class_of(*c));
    }
    if (stats.other().calls > 0) {
        out.push_back(class_of(stats.other()));
    }
    return out;
}

nlohmann::json to_json(const Snapshot &s) {
    nlohmann::json servers = nlohmann::json::array();
    for (const auto &sv : s.servers) {
        nlohmann::json classes = nlohmann::json::array();
        for (const auto &c : sv.classes) {
            classes.push_back(class_json(c));
        }
        nlohmann::json waits = nlohmann::json::array();
        for (const auto &w : sv.lock_waits) {
            waits.push_back({{"waiting_pid", w.waiting_pid},
                             {"blocking_pid", w.blocking_pid},
                             {"lock_kind", w.lock_kind},
                             {"locked_object", w.locked_object},
                             {"lock_type", w.lock_type},
                             {"wait_stage", w.wait_stage},
                             {"wait_ns", w.wait_ns},
                             {"blocking_query", w.blocking_query},
                             {"blocking_trx_age_ns", w.blocking_trx_age_ns},
                             {"possible", w.possible},
                             {"waiting_query", w.waiting_query}});
        }
        servers.push_back({{"name", sv.name},
                           {"pid", sv.pid},
                           {"flavour", sv.flavour},
                           {"version", sv.version},
                           {"statements", sv.statements},
                           {"errors", sv.errors},
                           {"dropped", sv.dropped},
                           {"undecodable", sv.undecodable},
                           {"classes", std::move(classes)},
                           {"locks", sv.locks},
                           {"lock_waits", std::move(waits)}});
    }
    return {{"now_ns", s.now_ns}, {"servers", std::move(servers)}};
}

std::string to_json_text(const Snapshot &s) {
    // Statement texts are the server's bytes: invalid UTF-8 is replaced,
    // not an exception.
    return to_json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<Snapshot> parse_snapshot(const std::string &text) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("servers") || !j["servers"].is_array()) {
        return Error{EPROTO, "not a snapshot: " + text.substr(0, 200)};
    }
    Snapshot s;
    try {
        s.now_ns = j.at("now_ns").get<uint64_t>();
        for (const auto &js : j["servers"]) {
            ServerSnapshot sv;
            sv.name = js.at("name").get<std::string>();
            sv.pid = js.at("pid").get<int>();
            sv.flavour = js.at("flavour").get<std::string>();
            sv.version = js.at("version").get<std::string>();
            sv.statements = js.at("statements").get<uint64_t>();
            sv.errors = js.at("errors").get<uint64_t>();
            sv.dropped = js.at("dropped").get<uint64_t>();
            sv.undecodable = js.at("undecodable").get<uint64_t>();
            for (const auto &jc : js.at("classes")) {
                ClassSnapshot c;
                c.schema = jc.at("schema").get<std::string>();
                c.user = jc.at("user").get<std::string>();
                c.event_name = jc.at("event_name").get<std::string>();
                c.digest = jc.at("digest").get<std::string>();
                for (auto [field, key] : {std::pair{&c.calls, "calls"},
                                          {&c.errors, "errors"},
                                          {&c.time_ns, "time_ns"},
                                          {&c.max_ns, "max_ns"},
                                          {&c.p50_ns, "p50_ns"},
                                          {&c.p99_ns, "p99_ns"},
                                          {&c.rows_sent, "rows_sent"},
                                          {&c.rows_examined, "rows_examined"},
                                          {&c.rows_affected, "rows_affected"}}) {
                    *field = jc.at(key).get<uint64_t>();
                }
                for (const auto &st : jc.at("stages")) {
                    c.stages.push_back(
                        {st.at("name").get<std::string>(), st.at("ns").get<uint64_t>()});
                }
                for (const auto &jr : jc.at("recent")) {
                    output::RecentStatement r;
                    r.text = jr.at("text").get<std::string>();
                    r.end_ns = jr.at("end_ns").get<uint64_t>();
                    r.duration_ns = jr.at("duration_ns").get<uint64_t>();
                    r.thread_id = jr.at("thread_id").get<uint64_t>();
                    r.rows_sent = jr.at("rows_sent").get<uint64_t>();
                    r.rows_examined = jr.at("rows_examined").get<uint64_t>();
                    r.error = jr.at("error").get<uint32_t>();
                    c.recent.push_back(std::move(r));
                }
                sv.classes.push_back(std::move(c));
            }
            // An agent older than lock waits sends neither.
            sv.locks = js.value("locks", false);
            for (const auto &jw : js.value("lock_waits", nlohmann::json::array())) {
                LockWaitRow w;
                w.waiting_pid = jw.at("waiting_pid").get<uint64_t>();
                w.blocking_pid = jw.at("blocking_pid").get<uint64_t>();
                w.lock_kind = jw.at("lock_kind").get<std::string>();
                w.locked_object = jw.at("locked_object").get<std::string>();
                w.lock_type = jw.at("lock_type").get<std::string>();
                w.wait_stage = jw.at("wait_stage").get<std::string>();
                w.wait_ns = jw.at("wait_ns").get<uint64_t>();
                w.blocking_query = jw.at("blocking_query").get<std::string>();
                w.blocking_trx_age_ns = jw.at("blocking_trx_age_ns").get<uint64_t>();
                w.possible = jw.at("possible").get<bool>();
                w.waiting_query = jw.at("waiting_query").get<std::string>();
                sv.lock_waits.push_back(std::move(w));
            }
            s.servers.push_back(std::move(sv));
        }
    } catch (const nlohmann::json::exception &e) {
        return Error{EPROTO, std::string("malformed snapshot: ") + e.what()};
    }
    return s;
}

}  // namespace mysqltrace::top
