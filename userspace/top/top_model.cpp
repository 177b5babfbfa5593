// SPDX-License-Identifier: GPL-2.0-only
#include "top/top_model.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <tuple>

namespace mysqltrace::top {

namespace {

std::string class_key(const ServerSnapshot &s, const ClassSnapshot &c) {
    std::string k = s.name + '\x1f' + std::to_string(s.pid);
    for (const auto *part : {&c.schema, &c.user, &c.event_name, &c.digest}) {
        k += '\x1f';
        k += *part;
    }
    return k;
}

// A counter's growth; a counter that went down (a new tracer) counts from 0.
uint64_t delta(uint64_t now, uint64_t before) {
    return now >= before ? now - before : now;
}

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
    return buf;
}

std::string pad_left(const std::string &s, size_t w) {
    return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

std::string pad_right(const std::string &s, size_t w) {
    return s.size() >= w ? s : s + std::string(w - s.size(), ' ');
}

std::string or_dash(const std::string &s) {
    return s.empty() ? "-" : s;
}

// The text a class shows: its digest, or for a command its event name.
std::string class_text(const ClassSnapshot &c) {
    return c.digest.empty() ? c.event_name : c.digest;
}

bool contains_nocase(std::string_view hay, std::string_view needle) {
    return std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) ==
                      std::tolower(static_cast<unsigned char>(b));
           }) != hay.end();
}

}  // namespace

const char *sort_name(SortKey key) {
    switch (key) {
        case SortKey::time:
            return "total time";
        case SortKey::calls:
            return "calls/s";
        case SortKey::mean:
            return "mean latency";
        case SortKey::p99:
            return "p99 latency";
        case SortKey::errors:
            return "errors";
        case SortKey::rows:
            return "rows examined/sent";
    }
    return "?";
}

std::optional<SortKey> sort_key_named(std::string_view name) {
    static const std::pair<std::string_view, SortKey> kNames[] = {
        {"time", SortKey::time}, {"calls", SortKey::calls},   {"mean", SortKey::mean},
        {"p99", SortKey::p99},   {"errors", SortKey::errors}, {"rows", SortKey::rows}};
    for (const auto &[n, k] : kNames) {
        if (n == name) {
            return k;
        }
    }
    return std::nullopt;
}

void Model::update(Snapshot next) {
    if (!current_.servers.empty() || current_.now_ns != 0) {
        previous_ = std::move(current_);
        have_previous_ = true;
    }
    current_ = std::move(next);
}

double Model::interval_s() const {
    if (!have_previous_ || current_.now_ns <= previous_.now_ns) {
        return 0;
    }
    return static_cast<double>(current_.now_ns - previous_.now_ns) / 1e9;
}

std::vector<Row> Model::all_rows() const {
    std::map<std::string, const ClassSnapshot *> before;
    if (have_previous_) {
        for (const auto &s : previous_.servers) {
            for (const auto &c : s.classes) {
                before.emplace(class_key(s, c), &c);
            }
        }
    }
    const double dt = interval_s();
    std::vector<Row> rows;
    uint64_t interval_time = 0;
    for (const auto &s : current_.servers) {
        for (const auto &c : s.classes) {
            Row r;
            r.key = class_key(s, c);
            r.server = &s;
            r.cls = &c;
            if (have_previous_) {
                auto it = before.find(r.key);
                const ClassSnapshot zero;
                const ClassSnapshot &b = it == before.end() ? zero : *it->second;
                r.d_calls = delta(c.calls, b.calls);
                r.d_time_ns = delta(c.time_ns, b.time_ns);
                r.d_errors = delta(c.errors, b.errors);
            }
            if (dt > 0) {
                r.calls_s = static_cast<double>(r.d_calls) / dt;
                r.errors_s = static_cast<double>(r.d_errors) / dt;
            }
            if (r.d_calls > 0) {
                r.mean_ns = r.d_time_ns / r.d_calls;
            } else if (c.calls > 0) {
                r.mean_ns = c.time_ns / c.calls;
            }
            // A class that sends no rows (a write): rows examined per call.
            r.examined_per_sent =
                static_cast<double>(c.rows_examined) /
                static_cast<double>(std::max<uint64_t>(c.rows_sent ? c.rows_sent : c.calls, 1));
            interval_time += r.d_time_ns;
            rows.push_back(std::move(r));
        }
    }
    if (interval_time > 0) {
        for (auto &r : rows) {
            r.time_share = static_cast<double>(r.d_time_ns) / static_cast<double>(interval_time);
        }
    }
    return rows;
}

std::vector<Row> Model::rows() const {
    auto rows = all_rows();
    std::erase_if(rows, [&](const Row &r) {
        return (!filter.schema.empty() && r.cls->schema != filter.schema) ||
               (!filter.user.empty() && r.cls->user != filter.user) ||
               (!filter.text.empty() && !contains_nocase(class_text(*r.cls), filter.text));
    });
    // Largest first: the interval's figure, then the total's; ties by text.
    auto measure = [this](const Row &r) -> std::tuple<double, double> {
        const auto &c = *r.cls;
        switch (sort) {
            case SortKey::time:
                return {static_cast<double>(r.d_time_ns), static_cast<double>(c.time_ns)};
            case SortKey::calls:
                return {static_cast<double>(r.d_calls), static_cast<double>(c.calls)};
            case SortKey::mean:
                return {static_cast<double>(r.mean_ns), static_cast<double>(c.time_ns)};
            case SortKey::p99:
                return {static_cast<double>(c.p99_ns), static_cast<double>(c.time_ns)};
            case SortKey::errors:
                return {static_cast<double>(r.d_errors), static_cast<double>(c.errors)};
            case SortKey::rows:
                return {r.examined_per_sent, static_cast<double>(c.rows_examined)};
        }
        return {0, 0};
    };
    std::ranges::stable_sort(rows, [&](const Row &a, const Row &b) {
        const auto ma = measure(a), mb = measure(b);
        if (ma != mb) {
            return ma > mb;
        }
        if (a.cls->time_ns != b.cls->time_ns) {
            return a.cls->time_ns > b.cls->time_ns;
        }
        return a.key < b.key;
    });
    return rows;
}

std::optional<Row> Model::find(const std::string &key) const {
    for (auto &r : all_rows()) {
        if (r.key == key) {
            return std::move(r);
        }
    }
    return std::nullopt;
}

Totals Model::totals() const {
    Totals t;
    t.servers = current_.servers.size();
    std::map<std::pair<std::string, int>, const ServerSnapshot *> before;
    for (const auto &s : previous_.servers) {
        before.emplace(std::pair{s.name, s.pid}, &s);
    }
    uint64_t d_statements = 0, d_errors = 0;
    for (const auto &s : current_.servers) {
        t.statements += s.statements;
        t.errors += s.errors;
        t.dropped += s.dropped;
        t.undecodable += s.undecodable;
        if (have_previous_) {
            auto it = before.find({s.name, s.pid});
            d_statements += delta(s.statements, it == before.end() ? 0 : it->second->statements);
            d_errors += delta(s.errors, it == before.end() ? 0 : it->second->errors);
        }
    }
    if (const double dt = interval_s(); dt > 0) {
        t.statements_s = static_cast<double>(d_statements) / dt;
        t.errors_s = static_cast<double>(d_errors) / dt;
    }
    return t;
}

std::string cut(std::string_view s, size_t width) {
    std::string out;
    size_t cols = 0, i = 0;
    bool whole = true;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t len = 1;
        if (c >= 0xf0) {
            len = 4;
        } else if (c >= 0xe0) {
            len = 3;
        } else if (c >= 0xc0) {
            len = 2;
        }
        len = std::min(len, s.size() - i);
        if (cols + 1 > width || (cols + 1 == width && i + len < s.size())) {
            whole = false;
            break;
        }
        if (c < 0x20 || c == 0x7f) {
            out += ' ';
        } else {
            out.append(s.substr(i, len));
        }
        cols++;
        i += len;
    }
    if (!whole && width > 0) {
        out += '~';
    }
    return out;
}

std::string short_duration(uint64_t ns) {
    const double v = static_cast<double>(ns);
    if (ns < 1000) {
        return std::to_string(ns) + "ns";
    }
    if (ns < 1'000'000) {
        return fixed(v / 1e3, ns < 100'000 ? 1 : 0) + "us";
    }
    if (ns < 1'000'000'000) {
        return fixed(v / 1e6, ns < 100'000'000 ? 1 : 0) + "ms";
    }
    if (ns < 60'000'000'000) {
        return fixed(v / 1e9, 2) + "s";
    }
    const uint64_t s = ns / 1'000'000'000;
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%llum%02llus", static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
    return buf;
}

std::vector<std::string> header_lines(const Model &m, const std::string &source, size_t width) {
    const Totals t = m.totals();
    std::vector<std::string> out;
    std::string l1 = "mysqltrace top - " + std::to_string(t.servers) + " server" +
                     (t.servers == 1 ? "" : "s") + " (" + source + "), sorted by " +
                     sort_name(m.sort);
    if (!m.filter.empty()) {
        l1 += ", only";
        if (!m.filter.schema.empty()) {
            l1 += " db=" + m.filter.schema;
        }
        if (!m.filter.user.empty()) {
            l1 += " user=" + m.filter.user;
        }
        if (!m.filter.text.empty()) {
            l1 += " text~" + m.filter.text;
        }
    }
    out.push_back(cut(l1, width));
    std::string l2 = "statements: " + fixed(t.statements_s, 1) + "/s, " +
                     std::to_string(t.statements) + " total   errors: " + fixed(t.errors_s, 1) +
                     "/s, " + std::to_string(t.errors) +
                     " total   lost records: " + std::to_string(t.dropped) +
                     "   undecodable: " + std::to_string(t.undecodable);
    out.push_back(cut(l2, width));
    return out;
}

namespace {

constexpr size_t kServerW = 16, kSchemaW = 12, kUserW = 12;

std::string columns(bool server_column, const std::string &server,
                    const std::vector<std::string> &nums, const std::string &schema,
                    const std::string &user, const std::string &text, size_t width) {
    static constexpr size_t kNumW[] = {8, 6, 9, 8, 7, 7, 8, 7};
    std::string line;
    if (server_column) {
        line += pad_right(cut(server, kServerW), kServerW) + " ";
    }
    for (size_t i = 0; i < nums.size(); i++) {
        line += pad_left(nums[i], kNumW[i]) + " ";
    }
    line += pad_right(cut(schema, kSchemaW), kSchemaW) + " " +
            pad_right(cut(user, kUserW), kUserW) + " ";
    if (line.size() >= width) {
        return cut(line, width);
    }
    return line + cut(text, width - line.size());
}

}  // namespace

std::string table_title(bool server_column, size_t width) {
    return columns(server_column, "SERVER",
                   {"CALLS/S", "TIME%", "CALLS", "TOTAL", "MEAN", "P99", "EXAM/ROW", "ERRORS"},
                   "SCHEMA", "USER", "DIGEST", width);
}

std::string table_line(const Row &r, bool server_column, size_t width) {
    const auto &c = *r.cls;
    const std::string ratio =
        c.rows_examined == 0 && c.rows_sent == 0 ? "-" : fixed(r.examined_per_sent, 1);
    return columns(server_column, r.server->name,
                   {fixed(r.calls_s, 1), fixed(r.time_share * 100, 1), std::to_string(c.calls),
                    short_duration(c.time_ns), short_duration(r.mean_ns), short_duration(c.p99_ns),
                    ratio, std::to_string(c.errors)},
                   or_dash(c.schema), or_dash(c.user), class_text(c), width);
}

std::vector<std::string> detail_lines(const Row &r, size_t width) {
    const auto &c = *r.cls;
    std::vector<std::string> out;
    out.push_back(cut("server " + r.server->name + " (pid " + std::to_string(r.server->pid) +
                          ")   schema " + or_dash(c.schema) + "   user " + or_dash(c.user) + "   " +
                          c.event_name,
                      width));
    // The whole digest, over up to 4 lines.
    const std::string text = class_text(c);
    for (size_t at = 0, n = 0; at < text.size() && n < 4 && width > 0; at += width, n++) {
        out.push_back(cut(std::string_view(text).substr(at), width));
    }
    const uint64_t mean = c.calls ? c.time_ns / c.calls : 0;
    out.push_back(cut("calls " + std::to_string(c.calls) + " (" + fixed(r.calls_s, 1) +
                          "/s)   errors " + std::to_string(c.errors) + "   total " +
                          short_duration(c.time_ns) + "   mean " + short_duration(mean) +
                          "   p50 " + short_duration(c.p50_ns) + "   p99 " +
                          short_duration(c.p99_ns) + "   max " + short_duration(c.max_ns),
                      width));
    out.push_back(cut("rows sent " + std::to_string(c.rows_sent) + "   examined " +
                          std::to_string(c.rows_examined) + "   affected " +
                          std::to_string(c.rows_affected),
                      width));
    out.emplace_back();
    out.push_back(cut(pad_right("STAGE", 40) + pad_left("SHARE", 7) + pad_left("TIME", 9), width));
    if (c.stages.empty()) {
        out.push_back("(no sampled stage time)");
    }
    for (const auto &st : c.stages) {
        const double share =
            c.time_ns ? 100.0 * static_cast<double>(st.ns) / static_cast<double>(c.time_ns) : 0;
        out.push_back(cut(pad_right(cut(st.name, 39), 40) + pad_left(fixed(share, 1) + "%", 7) +
                              pad_left(short_duration(st.ns), 9),
                          width));
    }
    out.emplace_back();
    out.push_back(cut("RECENT STATEMENTS (newest first)", width));
    out.push_back(cut("DURATION      SENT  EXAMINED  ERROR        CONN  TEXT", width));
    for (const auto &s : c.recent) {
        std::string l = pad_left(short_duration(s.duration_ns), 8) +
                        pad_left(std::to_string(s.rows_sent), 10) +
                        pad_left(std::to_string(s.rows_examined), 10) +
                        pad_left(s.error ? std::to_string(s.error) : "-", 7) +
                        pad_left(std::to_string(s.thread_id), 12) + "  ";
        out.push_back(width > l.size() ? l + cut(s.text, width - l.size()) : cut(l, width));
    }
    return out;
}

}  // namespace mysqltrace::top
