// SPDX-License-Identifier: GPL-2.0-only
#include "agent/metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>

#include "mysqltrace/version.h"

namespace mysqltrace::agent {

namespace {

using output::StatementClass;

void append_uint(std::string &out, uint64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    out.append(buf, r.ptr);
}

// The shortest text that reads back as `v` ("0.0001", "2.5", "1e-09").
void append_double(std::string &out, double v) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    out.append(buf, r.ptr);
}

double seconds(uint64_t ns) {
    return static_cast<double>(ns) / 1e9;
}

void family(std::string &out, std::string_view name, std::string_view type, std::string_view help) {
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

// name{labels} value
template <typename T>
void sample(std::string &out, std::string_view name, std::string_view labels, T value) {
    out.append(name);
    if (!labels.empty()) {
        out.append("{").append(labels).append("}");
    }
    out.push_back(' ');
    if constexpr (std::is_floating_point_v<T>) {
        append_double(out, value);
    } else {
        append_uint(out, static_cast<uint64_t>(value));
    }
    out.push_back('\n');
}

// Appends key="value" to a label list.
void label(std::string &out, std::string_view key, std::string_view value) {
    if (!out.empty()) {
        out.push_back(',');
    }
    out.append(key).append("=\"");
    append_label_value(out, value);
    out.push_back('"');
}

std::string joined(const std::vector<std::string> &v) {
    std::string s;
    for (const auto &e : v) {
        s += (s.empty() ? "" : ",") + e;
    }
    return s;
}

// One server's label lists, made once per page: its own, and each of its
// classes' (its own first, other() last).
struct Prepared {
    const ServerSample *sample = nullptr;
    std::string labels;
    std::vector<const StatementClass *> classes;
    std::vector<std::string> class_labels;
};

Prepared prepare(const ServerSample &s) {
    Prepared p;
    p.sample = &s;
    const auto &l = *s.labels;
    label(p.labels, "server", server_dir_name(l));
    label(p.labels, "flavour", l.flavour);
    label(p.labels, "version", l.version);
    label(p.labels, "pid", std::to_string(l.process.id.pid));
    label(p.labels, "port",
          l.process.ports.empty() ? std::string() : std::to_string(l.process.ports.front()));
    if (s.stats == nullptr) {
        return p;
    }
    for (const auto &c : s.stats->classes()) {
        p.classes.push_back(c.get());
    }
    p.classes.push_back(&s.stats->other());
    for (const auto *c : p.classes) {
        std::string cl = p.labels;
        label(cl, "schema", c->schema);
        label(cl, "user", c->user);
        label(cl, "command", c->event_name);
        label(cl, "digest", c->digest);
        p.class_labels.push_back(std::move(cl));
    }
    return p;
}

void render_agent(std::string &out, size_t attached, const AgentSample &a) {
    family(out, "mysqltrace_build_info", "gauge", "The agent's version, as a label; always 1.");
    sample(out, "mysqltrace_build_info", "version=\"" MYSQLTRACE_VERSION "\"", 1);
    family(out, "mysqltrace_agent_servers_attached", "gauge", "Servers traced now.");
    sample(out, "mysqltrace_agent_servers_attached", "", attached);
    family(out, "mysqltrace_agent_servers_refused", "gauge",
           "Running servers not traced: the analysis of their binary or their attach failed.");
    sample(out, "mysqltrace_agent_servers_refused", "", a.refused_now);
    family(out, "mysqltrace_agent_attaches_total", "counter", "Servers attached since the start.");
    sample(out, "mysqltrace_agent_attaches_total", "", a.attaches);
    family(out, "mysqltrace_agent_detaches_total", "counter",
           "Servers detached since the start (each on its exit).");
    sample(out, "mysqltrace_agent_detaches_total", "", a.detaches);
    family(out, "mysqltrace_agent_refusals_total", "counter",
           "Server processes not traced, by reason: analysis (the binary's analysis refused "
           "it) or attach (its probes, files or pidfd failed).");
    sample(out, "mysqltrace_agent_refusals_total", "reason=\"analysis\"", a.refused_analysis);
    sample(out, "mysqltrace_agent_refusals_total", "reason=\"attach\"", a.refused_attach);
    family(out, "mysqltrace_agent_metrics_render_seconds", "gauge",
           "How long the previous /metrics page took to render.");
    sample(out, "mysqltrace_agent_metrics_render_seconds", "", a.last_render_seconds);
    if (!a.process) {
        return;
    }
    const auto &p = *a.process;
    family(out, "process_cpu_seconds_total", "counter",
           "Total user and system CPU time spent in seconds.");
    sample(out, "process_cpu_seconds_total", "", p.cpu_seconds);
    family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    sample(out, "process_resident_memory_bytes", "", p.resident_bytes);
    family(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
    sample(out, "process_virtual_memory_bytes", "", p.virtual_bytes);
    family(out, "process_start_time_seconds", "gauge",
           "Start time of the process since unix epoch in seconds.");
    sample(out, "process_start_time_seconds", "", p.start_time_seconds);
    family(out, "process_open_fds", "gauge", "Number of open file descriptors.");
    sample(out, "process_open_fds", "", p.open_fds);
    family(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
    sample(out, "process_max_fds", "", p.max_fds);
}

void render_servers(std::string &out, const std::vector<Prepared> &servers) {
    family(out, "mysqltrace_server_info", "gauge",
           "A traced server's labels, with its TCP ports and unix sockets (comma-separated), "
           "systemd unit, container (runtime:id) and cgroup; always 1.");
    for (const auto &p : servers) {
        const auto &l = p.sample->labels->process;
        std::string ports;
        for (auto port : l.ports) {
            ports += (ports.empty() ? "" : ",") + std::to_string(port);
        }
        std::string info = p.labels;
        label(info, "ports", ports);
        label(info, "sockets", joined(l.sockets));
        label(info, "unit", l.cgroup.unit);
        label(info, "container",
              l.cgroup.container ? l.cgroup.container->runtime + ":" + l.cgroup.container->id
                                 : std::string());
        label(info, "cgroup", l.cgroup.path);
        sample(out, "mysqltrace_server_info", info, 1);
    }
    struct Counter {
        const char *name, *type, *help;
        uint64_t (*value)(const ServerSample &);
    };
    static const Counter kCounters[] = {
        {"mysqltrace_tracer_probes", "gauge", "Probes attached to the server.",
         [](const ServerSample &s) { return uint64_t{s.probes}; }},
        {"mysqltrace_tracer_statements_total", "counter",
         "Statements traced (every class, other included).",
         [](const ServerSample &s) { return s.stats ? s.stats->statements() : 0; }},
        {"mysqltrace_tracer_records_total", "counter",
         "Records the probes wrote into the ring buffers.",
         [](const ServerSample &s) { return s.rings.produced; }},
        {"mysqltrace_tracer_records_dropped_busy_total", "counter",
         "Of the records dropped, those lost because every scratch slot of a CPU was in use.",
         [](const ServerSample &s) { return s.rings.busy_drops; }},
        {"mysqltrace_tracer_records_undecodable_total", "counter",
         "Records that could not be decoded.", [](const ServerSample &s) { return s.undecodable; }},
        {"mysqltrace_tracer_records_malformed_total", "counter",
         "Records whose header did not match their size.",
         [](const ServerSample &s) { return s.rings.malformed; }},
        {"mysqltrace_tracer_records_late_total", "counter",
         "Records older than one already handed on (later than the reorder window).",
         [](const ServerSample &s) { return s.rings.late; }},
        {"mysqltrace_output_files_failed", "gauge",
         "The server's files that stopped after a write error (a full disk, a removed "
         "directory); its other outputs and the other servers go on.",
         [](const ServerSample &s) { return uint64_t{s.outputs_failed}; }},
        {"mysqltrace_statement_classes", "gauge",
         "Statement classes with series of their own; later classes go to command=\"other\".",
         [](const ServerSample &s) { return s.stats ? uint64_t{s.stats->classes().size()} : 0; }},
        {"mysqltrace_statement_classes_max", "gauge",
         "The cap on statement classes with series of their own (--max-classes).",
         [](const ServerSample &s) { return s.stats ? uint64_t{s.stats->max_classes()} : 0; }},
    };
    for (const auto &c : kCounters) {
        family(out, c.name, c.type, c.help);
        for (const auto &p : servers) {
            sample(out, c.name, p.labels, c.value(*p.sample));
        }
    }
    family(out, "mysqltrace_tracer_records_dropped_total", "counter",
           "Records lost because the ring buffer of a CPU was full or its scratch slots busy, "
           "by CPU.");
    for (const auto &p : servers) {
        const auto &per_cpu = p.sample->rings.dropped_per_cpu;
        for (size_t cpu = 0; cpu < per_cpu.size(); cpu++) {
            std::string l = p.labels;
            label(l, "cpu", std::to_string(cpu));
            sample(out, "mysqltrace_tracer_records_dropped_total", l, per_cpu[cpu]);
        }
    }
}

void render_classes(std::string &out, const std::vector<Prepared> &servers) {
    // Calls one function per class of every server, for one metric family.
    auto each = [&](auto &&fn) {
        for (const auto &p : servers) {
            for (size_t i = 0; i < p.classes.size(); i++) {
                fn(*p.classes[i], p.class_labels[i]);
            }
        }
    };
    struct Counter {
        const char *name, *help;
        uint64_t StatementClass::*field;
    };
    static const Counter kCounts[] = {
        {"mysqltrace_statements_total", "Statements of the class that ended.",
         &StatementClass::calls},
        {"mysqltrace_statement_errors_total", "Statements of the class that ended in an error.",
         &StatementClass::errors},
        {"mysqltrace_statement_rows_sent_total", "Rows the class's statements sent.",
         &StatementClass::rows_sent},
        {"mysqltrace_statement_rows_examined_total", "Rows the class's statements examined.",
         &StatementClass::rows_examined},
        {"mysqltrace_statement_rows_affected_total",
         "Rows the class's statements changed (inserted, updated, deleted).",
         &StatementClass::rows_affected},
    };
    for (const auto &c : kCounts) {
        family(out, c.name, "counter", c.help);
        each([&](const StatementClass &k, const std::string &l) {
            sample(out, c.name, l, k.*c.field);
        });
    }
    family(out, "mysqltrace_statement_lock_seconds_total", "counter",
           "Time the class's statements waited for table locks (the slow log's Lock_time; 0 "
           "where the build does not say).");
    each([&](const StatementClass &k, const std::string &l) {
        sample(out, "mysqltrace_statement_lock_seconds_total", l, seconds(k.lock_ns));
    });
    constexpr std::string_view kLatency = "mysqltrace_statement_latency_seconds";
    family(out, kLatency, "histogram",
           "Statement latency, from the statement's start to its end in the server.");
    const std::string bucket = std::string(kLatency) + "_bucket";
    const std::string sum = std::string(kLatency) + "_sum";
    const std::string count = std::string(kLatency) + "_count";
    std::vector<std::string> le;
    for (double b : output::kLatencyBounds) {
        // Fixed notation, as Prometheus's client libraries write le
        // ("0.0001", not "1e-04"): a query names a bucket by this text.
        char buf[32];
        auto r = std::to_chars(buf, buf + sizeof(buf), b, std::chars_format::fixed);
        le.push_back("le=\"" + std::string(buf, r.ptr) + "\"");
    }
    le.emplace_back("le=\"+Inf\"");
    std::string l;
    each([&](const StatementClass &k, const std::string &labels) {
        uint64_t cumulative = 0;
        for (size_t i = 0; i < k.buckets.size(); i++) {
            cumulative += k.buckets[i];
            l.assign(labels).append(",").append(le[i]);
            sample(out, bucket, l, cumulative);
        }
        sample(out, sum, labels, seconds(k.time_ns));
        sample(out, count, labels, k.calls);
    });
    family(out, "mysqltrace_statement_stage_seconds_total", "counter",
           "Time the class's statements spent by stage, from the stage sampler (--stages "
           "sampled): on-CPU samples times their period, plus time off CPU.");
    std::vector<std::pair<std::string_view, uint64_t>> stages;
    each([&](const StatementClass &k, const std::string &labels) {
        stages.assign(k.stage_ns.begin(), k.stage_ns.end());
        std::ranges::sort(stages);
        for (const auto &[stage, ns] : stages) {
            l = labels;
            label(l, "stage", stage);
            sample(out, "mysqltrace_statement_stage_seconds_total", l, seconds(ns));
        }
    });
}

}  // namespace

ServerSample sample_of(const TracedServer &server) {
    ServerSample s;
    s.labels = &server.labels();
    s.stats = &server.stats();
    s.rings = server.ring_stats();
    s.undecodable = server.tracer().undecodable();
    s.probes = server.probe_count();
    s.outputs_failed = server.outputs_failed();
    return s;
}

void append_label_value(std::string &out, std::string_view v) {
    size_t i = 0;
    while (i < v.size()) {
        const auto c = static_cast<unsigned char>(v[i]);
        if (c < 0x80) {
            if (c == '\\') {
                out.append("\\\\");
            } else if (c == '"') {
                out.append("\\\"");
            } else if (c == '\n') {
                out.append("\\n");
            } else {
                out.push_back(static_cast<char>(c));
            }
            i++;
            continue;
        }
        // RFC 3629: the length from the lead byte, the second byte's range
        // (no overlong forms, no surrogates, nothing past U+10FFFF), then
        // continuation bytes.
        size_t len = 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            lo = c == 0xE0 ? 0xA0 : 0x80;
            hi = c == 0xED ? 0x9F : 0xBF;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;
        }
        bool ok = len > 0 && i + len <= v.size();
        for (size_t k = 1; ok && k < len; k++) {
            const auto b = static_cast<unsigned char>(v[i + k]);
            ok = k == 1 ? b >= lo && b <= hi : b >= 0x80 && b <= 0xBF;
        }
        if (ok) {
            out.append(v.substr(i, len));
            i += len;
        } else {
            out.append("\xEF\xBF\xBD");
            i++;
        }
    }
}

std::optional<ProcessSample> parse_process_stat(std::string_view stat, long ticks_per_second,
                                                long page_size, uint64_t boot_time) {
    const size_t paren = stat.rfind(')');
    if (paren == std::string_view::npos || ticks_per_second <= 0) {
        return std::nullopt;
    }
    // Fields from the 3rd (state) on, after the command name.
    std::vector<std::string_view> f;
    std::string_view rest = stat.substr(paren + 1);
    while (!rest.empty()) {
        const size_t start = rest.find_first_not_of(" \n");
        if (start == std::string_view::npos) {
            break;
        }
        rest.remove_prefix(start);
        const size_t end = std::min(rest.find_first_of(" \n"), rest.size());
        f.push_back(rest.substr(0, end));
        rest.remove_prefix(end);
    }
    auto field = [&](size_t n) {  // 1-based, as proc(5) numbers them
        uint64_t v = 0;
        const auto s = f[n - 3];
        std::from_chars(s.data(), s.data() + s.size(), v);
        return v;
    };
    if (f.size() < 24 - 2) {
        return std::nullopt;
    }
    const auto tps = static_cast<double>(ticks_per_second);
    ProcessSample p;
    p.cpu_seconds = static_cast<double>(field(14) + field(15)) / tps;
    p.start_time_seconds = static_cast<double>(boot_time) + static_cast<double>(field(22)) / tps;
    p.virtual_bytes = field(23);
    p.resident_bytes = field(24) * static_cast<uint64_t>(std::max(page_size, 0L));
    return p;
}

std::optional<ProcessSample> read_process_sample() {
    std::ifstream in("/proc/self/stat");
    std::string line;
    if (!std::getline(in, line)) {
        return std::nullopt;
    }
    uint64_t boot_time = 0;
    std::ifstream stat("/proc/stat");
    for (std::string l; std::getline(stat, l);) {
        if (l.starts_with("btime ")) {
            boot_time = std::stoull(l.substr(6));
            break;
        }
    }
    auto p = parse_process_stat(line, ::sysconf(_SC_CLK_TCK), ::sysconf(_SC_PAGESIZE), boot_time);
    if (!p) {
        return p;
    }
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
         it.increment(ec)) {
        p->open_fds++;
    }
    if (p->open_fds > 0) {
        p->open_fds--;  // the iterator's own
    }
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) == 0) {
        p->max_fds = lim.rlim_cur;
    }
    return p;
}

std::string render_metrics(const std::vector<ServerSample> &servers, const AgentSample &agent) {
    std::vector<Prepared> prepared;
    size_t series = 0;
    for (const auto &s : servers) {
        prepared.push_back(prepare(s));
        series += prepared.back().classes.size();
    }
    std::string out;
    // ~30 lines of ~200 bytes per class.
    out.reserve(8192 + series * 30 * 200);
    render_agent(out, servers.size(), agent);
    render_servers(out, prepared);
    render_classes(out, prepared);
    return out;
}

}  // namespace mysqltrace::agent
