// SPDX-License-Identifier: GPL-2.0-only
#include "agent/config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "agent/agent.h"
#include "agent/control_socket.h"
#include "agent/metrics_server.h"

namespace mysqltrace::agent {

namespace {

// [agent] only: what every server shares, or the agent itself.
constexpr const char *kGlobalKeys[] = {"output_dir",     "rescan_ms",      "socket_prefix",
                                       "metrics_listen", "control_socket", "max_classes"};
// [agent] (every server's default) or [server ...] (those it matches).
constexpr const char *kServerKeys[] = {"enabled",     "formats",  "stages",  "rotate_size",
                                       "rotate_keep", "ring_kib", "max_sql", "show_secrets",
                                       "locks",       "otlp"};
constexpr const char *kLabels[] = {"port", "socket", "unit", "flavour", "container"};

template <size_t N>
bool one_of(const char *const (&names)[N], std::string_view s) {
    return std::ranges::find(names, s) != std::end(names);
}

template <size_t N>
std::string list(const char *const (&names)[N]) {
    std::string out;
    for (const char *n : names) {
        out += (out.empty() ? "" : ", ") + std::string(n);
    }
    return out;
}

std::string trim(std::string_view s) {
    const auto first = s.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) {
        return "";
    }
    return std::string(s.substr(first, s.find_last_not_of(" \t\r") - first + 1));
}

std::optional<uint64_t> number(const std::string &s, uint64_t lo, uint64_t hi) {
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) {
        return std::nullopt;
    }
    return v;
}

// Bytes, or with a k, M or G suffix (powers of 1024), as --rotate-size.
std::optional<uint64_t> size(std::string s) {
    uint64_t unit = 1;
    if (!s.empty()) {
        switch (std::tolower(static_cast<unsigned char>(s.back()))) {
            case 'k':
                unit = 1ull << 10;
                break;
            case 'm':
                unit = 1ull << 20;
                break;
            case 'g':
                unit = 1ull << 30;
                break;
            default:
                break;
        }
        if (unit != 1) {
            s.pop_back();
        }
    }
    auto v = number(s, 0, UINT64_MAX / unit);
    if (!v) {
        return std::nullopt;
    }
    return *v * unit;
}

std::optional<bool> boolean(const std::string &s) {
    std::string l = s;
    std::ranges::transform(l, l.begin(), [](unsigned char c) { return std::tolower(c); });
    if (l == "yes" || l == "true" || l == "on" || l == "1") {
        return true;
    }
    if (l == "no" || l == "false" || l == "off" || l == "0") {
        return false;
    }
    return std::nullopt;
}

const char *yes_no(bool b) {
    return b ? "yes" : "no";
}

// Sets a server key; "" or why the value is refused.
std::string set_server_key(ServerSettings &s, const std::string &key, const std::string &value) {
    auto &o = s.opts;
    if (key == "enabled" || key == "show_secrets" || key == "locks") {
        auto b = boolean(value);
        if (!b) {
            return "'" + value + "' is not yes or no";
        }
        (key == "enabled" ? s.enabled : key == "locks" ? o.locks : o.show_secrets) = *b;
    } else if (key == "otlp") {
        // "" (off) or the collector's base URL, as `server --otlp` takes it.
        const size_t colon = value.find("://");
        const std::string scheme = colon == std::string::npos ? "" : value.substr(0, colon);
        if (!value.empty() && ((scheme != "http" && scheme != "https") ||
                               value.size() == colon + 3 || value[colon + 3] == '/')) {
            return "'" + value +
                   "' is not the collector's base URL, http://HOST:PORT or https://HOST:PORT "
                   "(4318 is OTLP/HTTP's port)";
        }
        o.otlp = value;
    } else if (key == "formats") {
        bool json = false, slowlog = false;
        std::istringstream in(value);
        std::string f;
        while (std::getline(in, f, ',')) {
            f = trim(f);
            if (f == "json") {
                json = true;
            } else if (f == "slowlog") {
                slowlog = true;
            } else {
                return "'" + f + "' is not a format (json, slowlog)";
            }
        }
        if (!json && !slowlog) {
            return "no format (json, slowlog, or both: json,slowlog)";
        }
        o.json = json;
        o.slowlog = slowlog;
    } else if (key == "stages") {
        if (value != "sampled" && value != "off") {
            return "'" + value + "' is not one of sampled, off";
        }
        o.stages = value == "off" ? server::StageMode::off : server::StageMode::sampled;
    } else if (key == "rotate_size") {
        auto v = size(value);
        if (!v) {
            return "'" + value + "' is not a size (bytes, or with a k, M or G suffix)";
        }
        o.rotation.max_bytes = *v;
    } else if (key == "rotate_keep") {
        auto v = number(value, 0, 1000);
        if (!v) {
            return "'" + value + "' is not a number from 0 to 1000";
        }
        o.rotation.keep = static_cast<unsigned>(*v);
    } else if (key == "ring_kib") {
        auto v = number(value, 4, 1 << 20);
        if (!v) {
            return "'" + value + "' is not a number from 4 to 1048576";
        }
        o.ring_bytes_per_cpu = *v << 10;
    } else if (key == "max_sql") {
        auto v = number(value, 0, 65536);
        if (!v) {
            return "'" + value + "' is not a number from 0 to 65536";
        }
        o.max_sql = static_cast<uint32_t>(*v);
    }
    return "";
}

std::string set_global_key(AgentOptions &a, const std::string &key, const std::string &value) {
    if (key == "output_dir") {
        if (value.empty()) {
            return "empty";
        }
        a.defaults.opts.output_dir = value;
    } else if (key == "rescan_ms") {
        auto v = number(value, 100, 60000);
        if (!v) {
            return "'" + value + "' is not a number from 100 to 60000";
        }
        a.rescan_ms = static_cast<int>(*v);
    } else if (key == "socket_prefix") {
        a.socket_prefix = value;
    } else if (key == "metrics_listen") {
        // "" (off) or HOST:PORT, as --metrics-listen takes it.
        if (!value.empty() && !parse_listen_address(value)) {
            return "'" + value + "' is not HOST:PORT (e.g. 127.0.0.1:9715, [::1]:9715, :9715)";
        }
        a.metrics_listen = value;
    } else if (key == "control_socket") {
        a.control_socket = value;
    } else if (key == "max_classes") {
        auto v = number(value, 1, 100000);
        if (!v) {
            return "'" + value + "' is not a number from 1 to 100000";
        }
        a.defaults.opts.max_classes = static_cast<size_t>(*v);
    }
    return "";
}

std::string where(const std::string &path, int line) {
    return line == 0 ? std::string("command line") : path + ":" + std::to_string(line);
}

Error config_error(const std::string &path, int line, const std::string &what) {
    return Error{EINVAL, where(path, line) + ": " + what};
}

// The settings of [agent] (or the command line, in_server false) and of a
// [server ...] section (in_server true), on `a` and `s`.
std::optional<Error> apply(AgentOptions &a, ServerSettings &s, const Setting &kv, bool in_server,
                           const std::string &path) {
    const std::string key = "key '" + kv.key + "': ";
    std::string why;
    if (one_of(kServerKeys, kv.key)) {
        why = set_server_key(s, kv.key, kv.value);
    } else if (one_of(kGlobalKeys, kv.key)) {
        if (in_server) {
            return config_error(path, kv.line,
                                key + "only in [agent], not in a [server ...] section");
        }
        why = set_global_key(a, kv.key, kv.value);
    } else {
        return config_error(
            path, kv.line,
            key + "unknown key (known: " + list(kGlobalKeys) + ", " + list(kServerKeys) + ")");
    }
    if (!why.empty()) {
        return config_error(path, kv.line, key + why);
    }
    return std::nullopt;
}

// "[server port=3307 unit=x]" -> its labels; an error names the section.
std::optional<Error> parse_server_title(ServerSection &sec, std::string_view inside,
                                        const std::string &path) {
    std::istringstream words{std::string(inside)};
    std::string w;
    words >> w;  // "server"
    sec.title = "server";
    const std::string name = "section '[" + trim(inside) + "]': ";
    while (words >> w) {
        const size_t eq = w.find('=');
        const std::string label = w.substr(0, eq);
        if (eq == std::string::npos || eq + 1 == w.size()) {
            return config_error(path, sec.line, name + "'" + w + "' is not LABEL=VALUE");
        }
        if (!one_of(kLabels, label)) {
            return config_error(
                path, sec.line,
                name + "unknown label '" + label + "' (known: " + list(kLabels) + ")");
        }
        const std::string value = w.substr(eq + 1);
        if (label == "port" && !number(value, 1, 65535)) {
            return config_error(path, sec.line, name + "'" + value + "' is not a port");
        }
        if (label == "flavour" && value != "mariadb" && value != "mysql") {
            return config_error(path, sec.line,
                                name + "flavour '" + value + "' is not one of mariadb, mysql");
        }
        sec.labels.emplace_back(label, value);
        sec.title += " " + w;
    }
    if (sec.labels.empty()) {
        return config_error(path, sec.line,
                            name + "no label to match servers by (e.g. [server port=3306]; " +
                                "known: " + list(kLabels) + ")");
    }
    return std::nullopt;
}

}  // namespace

std::string formats_of(const TracedServerOptions &o) {
    return std::string(o.json ? "json" : "") + (o.json && o.slowlog ? "," : "") +
           (o.slowlog ? "slowlog" : "");
}

AgentOptions agent_defaults() {
    AgentOptions a;
    auto &o = a.defaults.opts;
    o.output_dir = "/var/log/mysqltrace";
    o.json = true;
    o.slowlog = false;
    o.rotation = output::Rotation{100ull << 20, 5};
    o.stages = server::StageMode::sampled;
    o.max_sql = 65536;
    o.ring_bytes_per_cpu = 1024ull << 10;
    a.rescan_ms = 1000;
    a.control_socket = kDefaultControlSocket;
    return a;
}

Result<AgentOptions> parse_agent_config(std::string_view text, const std::string &path,
                                        const AgentOptions &base) {
    AgentOptions a = base;
    a.config_path = path;
    a.sections.clear();
    enum { none, agent, server } in = none;
    int agent_line = 0;
    std::map<std::string, int> seen;  // keys of the current section
    int line = 0;
    std::istringstream lines{std::string(text)};
    std::string raw;
    while (std::getline(lines, raw)) {
        line++;
        // A comment: a line starting with # or ;, or one after a blank.
        std::string s = raw;
        for (size_t i = 0; i < s.size(); i++) {
            if ((s[i] == '#' || s[i] == ';') && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
                s.resize(i);
                break;
            }
        }
        s = trim(s);
        if (s.empty()) {
            continue;
        }
        if (s.front() == '[') {
            if (s.back() != ']') {
                return config_error(path, line, "'" + s + "': a section header ends with ']'");
            }
            const std::string inside = trim(std::string_view(s).substr(1, s.size() - 2));
            seen.clear();
            if (inside == "agent") {
                if (agent_line != 0) {
                    return config_error(path, line,
                                        "section '[agent]': a second one (the first is at line " +
                                            std::to_string(agent_line) + ")");
                }
                agent_line = line;
                in = agent;
            } else if (inside == "server" || inside.starts_with("server ") ||
                       inside.starts_with("server\t")) {
                ServerSection sec;
                sec.line = line;
                if (auto err = parse_server_title(sec, inside, path)) {
                    return *err;
                }
                a.sections.push_back(std::move(sec));
                in = server;
            } else {
                return config_error(path, line,
                                    "section '[" + inside +
                                        "]': unknown section (known: [agent], [server "
                                        "LABEL=VALUE ...])");
            }
            continue;
        }
        const size_t eq = s.find('=');
        if (eq == std::string::npos) {
            return config_error(path, line,
                                "'" + s + "': not a 'key = value', a [section] or a # comment");
        }
        Setting kv{trim(std::string_view(s).substr(0, eq)),
                   trim(std::string_view(s).substr(eq + 1)), line};
        if (kv.key.empty()) {
            return config_error(path, line, "'" + s + "': no key before '='");
        }
        if (in == none) {
            return config_error(path, line,
                                "key '" + kv.key + "': before any section (start with [agent])");
        }
        if (auto [it, fresh] = seen.emplace(kv.key, line); !fresh) {
            return config_error(path, line,
                                "key '" + kv.key + "': set twice in this section (also at line " +
                                    std::to_string(it->second) + ")");
        }
        if (in == agent) {
            if (auto err = apply(a, a.defaults, kv, false, path)) {
                return *err;
            }
        } else {
            // Checked on a scratch copy now; applied per server later.
            ServerSettings scratch = a.defaults;
            if (auto err = apply(a, scratch, kv, true, path)) {
                return *err;
            }
            a.sections.back().settings.push_back(kv);
        }
    }
    for (const auto &kv : a.command_line) {
        if (auto err = apply(a, a.defaults, kv, false, path)) {
            return *err;
        }
    }
    return a;
}

Result<AgentOptions> load_agent_config(const std::string &path, const AgentOptions &base) {
    if (path.empty()) {
        return parse_agent_config("", "", base);
    }
    std::ifstream in(path);
    if (!in) {
        return Error{errno, "cannot read the configuration file " + path + ": " + strerror(errno)};
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
        return Error{EIO, "cannot read the configuration file " + path};
    }
    return parse_agent_config(text.str(), path, base);
}

bool section_matches(const ServerSection &section, const ServerLabels &labels) {
    const auto &p = labels.process;
    return std::ranges::all_of(section.labels, [&](const auto &lv) {
        const auto &[label, value] = lv;
        if (label == "port") {
            return std::ranges::count(p.ports, static_cast<uint16_t>(std::stoul(value))) > 0;
        }
        if (label == "socket") {
            return std::ranges::count(p.sockets, value) > 0;
        }
        if (label == "unit") {
            return p.cgroup.unit == value;
        }
        if (label == "flavour") {
            return labels.flavour == value;
        }
        // container: its id, runtime:id, or 12 or more of its first digits.
        if (!p.cgroup.container) {
            return false;
        }
        const auto &c = *p.cgroup.container;
        return value == c.runtime + ":" + c.id || (value.size() >= 12 && c.id.starts_with(value));
    });
}

ServerSettings settings_for(const AgentOptions &opts, const ServerLabels &labels,
                            std::string *matched) {
    ServerSettings s = opts.defaults;
    AgentOptions scratch;
    if (matched != nullptr) {
        matched->clear();
    }
    for (const auto &sec : opts.sections) {
        if (!section_matches(sec, labels)) {
            continue;
        }
        for (const auto &kv : sec.settings) {
            (void)apply(scratch, s, kv, true, opts.config_path);  // checked when parsed
        }
        if (matched != nullptr) {
            *matched += (matched->empty() ? "" : ", ") +
                        ("[" + sec.title + "] (line " + std::to_string(sec.line) + ")");
        }
    }
    for (const auto &kv : opts.command_line) {
        if (one_of(kServerKeys, kv.key)) {
            (void)apply(scratch, s, kv, true, opts.config_path);
        }
    }
    return s;
}

namespace {

std::vector<std::pair<std::string, std::string>> server_values(const ServerSettings &s) {
    const auto &o = s.opts;
    return {{"enabled", yes_no(s.enabled)},
            {"formats", formats_of(o)},
            {"stages", o.stages == server::StageMode::off ? "off" : "sampled"},
            {"rotate_size", std::to_string(o.rotation.max_bytes)},
            {"rotate_keep", std::to_string(o.rotation.keep)},
            {"ring_kib", std::to_string(o.ring_bytes_per_cpu >> 10)},
            {"max_sql", std::to_string(o.max_sql)},
            {"show_secrets", yes_no(o.show_secrets)},
            {"locks", yes_no(o.locks)},
            {"otlp", o.otlp}};
}

}  // namespace

std::string describe_settings(const ServerSettings &s) {
    std::string out;
    for (const auto &[k, v] : server_values(s)) {
        out += (out.empty() ? "" : " ") + k + "=" + v;
    }
    return out;
}

std::string changed_settings(const ServerSettings &from, const ServerSettings &to) {
    std::string out;
    auto add = [&](const std::string &k, const std::string &a, const std::string &b) {
        if (a != b) {
            out += (out.empty() ? "" : "; ") + k + " " + a + " -> " + b;
        }
    };
    add("output_dir", from.opts.output_dir, to.opts.output_dir);
    const auto a = server_values(from), b = server_values(to);
    for (size_t i = 0; i < a.size(); i++) {
        add(a[i].first, a[i].second, b[i].second);
    }
    return out;
}

std::string effective_config(const AgentOptions &opts) {
    std::ostringstream out;
    std::map<std::string, bool> from_command_line;
    for (const auto &kv : opts.command_line) {
        from_command_line[kv.key] = true;
    }
    auto line = [&](const std::string &k, const std::string &v) {
        out << k << " =" << (v.empty() ? "" : " ") << v
            << (from_command_line.count(k) ? "  # command line" : "") << "\n";
    };
    out << "# " << (opts.config_path.empty() ? "no configuration file" : opts.config_path)
        << ", with the command line's settings over it\n[agent]\n";
    line("output_dir", opts.defaults.opts.output_dir);
    line("rescan_ms", std::to_string(opts.rescan_ms));
    line("socket_prefix", opts.socket_prefix);
    line("metrics_listen", opts.metrics_listen);
    line("control_socket", opts.control_socket);
    line("max_classes", std::to_string(opts.defaults.opts.max_classes));
    for (const auto &[k, v] : server_values(opts.defaults)) {
        line(k, v);
    }
    for (const auto &sec : opts.sections) {
        out << "\n[" << sec.title << "]  # line " << sec.line << "\n";
        for (const auto &kv : sec.settings) {
            out << kv.key << " = " << kv.value
                << (from_command_line.count(kv.key) ? "  # the command line's value wins" : "")
                << "\n";
        }
    }
    return out.str();
}

}  // namespace mysqltrace::agent
