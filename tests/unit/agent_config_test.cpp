// SPDX-License-Identifier: GPL-2.0-only
// The agent's configuration file: every error names its file, line and key;
// [server ...] sections apply to the servers they match, a later one over an
// earlier one, and the command line over the whole file.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/config.h"
#include "temp_dir.h"

namespace mysqltrace::agent {
namespace {

const std::string kPath = "/etc/mysqltrace/agent.conf";
const std::string kKnown =
    "(known: output_dir, rescan_ms, socket_prefix, metrics_listen, control_socket, max_classes, "
    "enabled, formats, stages, "
    "rotate_size, rotate_keep, ring_kib, max_sql, show_secrets, locks, otlp)";

AgentOptions base(std::vector<Setting> command_line = {}) {
    AgentOptions a = agent_defaults();
    a.command_line = std::move(command_line);
    return a;
}

// The error of parsing `text`, "" when it parses.
std::string error_of(const std::string &text, const AgentOptions &b = base()) {
    auto r = parse_agent_config(text, kPath, b);
    return r ? "" : r.error().message;
}

ServerLabels labels(uint16_t port, const std::string &flavour = "mariadb") {
    ServerLabels l;
    l.process.id.pid = 42;
    l.process.ports = {port};
    l.process.sockets = {"/run/mysqld/mysqld-" + std::to_string(port) + ".sock"};
    l.flavour = flavour;
    return l;
}

TEST(AgentConfig, DefaultsWithoutAFile) {
    auto r = load_agent_config("", base());
    ASSERT_TRUE(r) << r.error().message;
    const auto &o = r->defaults.opts;
    EXPECT_EQ(o.output_dir, "/var/log/mysqltrace");
    EXPECT_TRUE(o.json);
    EXPECT_FALSE(o.slowlog);
    EXPECT_EQ(o.stages, server::StageMode::sampled);
    EXPECT_EQ(o.rotation, (output::Rotation{100ull << 20, 5}));
    EXPECT_EQ(o.ring_bytes_per_cpu, 1024u << 10);
    EXPECT_EQ(o.max_sql, 65536u);
    EXPECT_FALSE(o.show_secrets);
    EXPECT_TRUE(r->defaults.enabled);
    EXPECT_EQ(r->rescan_ms, 1000);
    EXPECT_EQ(r->socket_prefix, "");
    EXPECT_EQ(r->metrics_listen, "");
    EXPECT_EQ(r->config_path, "");
    EXPECT_TRUE(r->sections.empty());
}

TEST(AgentConfig, EveryKey) {
    auto r = parse_agent_config(
        "# the agent\n"
        "[agent]\n"
        "output_dir = /srv/traces\n"
        "formats = slowlog , json   # both\n"
        "stages=off\n"
        "rotate_size = 2M\n"
        "rotate_keep = 0\n"
        "ring_kib = 4\n"
        "max_sql = 0\n"
        "show_secrets = Yes\n"
        "locks = on\n"
        "enabled = true\n"
        "   ; indented comment\n"
        "rescan_ms = 250\n"
        "socket_prefix = /run/shop/\n"
        "metrics_listen = [::1]:9715\n"
        "control_socket =\n"
        "max_classes = 20\n"
        "otlp = http://127.0.0.1:4318/prefix\n",
        kPath, base());
    ASSERT_TRUE(r) << r.error().message;
    const auto &o = r->defaults.opts;
    EXPECT_EQ(o.output_dir, "/srv/traces");
    EXPECT_TRUE(o.json);
    EXPECT_TRUE(o.slowlog);
    EXPECT_EQ(o.stages, server::StageMode::off);
    EXPECT_EQ(o.rotation, (output::Rotation{2u << 20, 0}));
    EXPECT_EQ(o.ring_bytes_per_cpu, 4u << 10);
    EXPECT_EQ(o.max_sql, 0u);
    EXPECT_TRUE(o.show_secrets);
    EXPECT_TRUE(r->defaults.enabled);
    EXPECT_EQ(r->rescan_ms, 250);
    EXPECT_EQ(r->socket_prefix, "/run/shop/");
    EXPECT_EQ(r->metrics_listen, "[::1]:9715");
    EXPECT_EQ(r->control_socket, "");
    EXPECT_EQ(o.max_classes, 20u);
    EXPECT_EQ(r->config_path, kPath);
    EXPECT_EQ(describe_settings(r->defaults),
              "enabled=yes formats=json,slowlog stages=off rotate_size=2097152 rotate_keep=0 "
              "ring_kib=4 max_sql=0 show_secrets=yes locks=yes "
              "otlp=http://127.0.0.1:4318/prefix");
}

TEST(AgentConfig, ErrorsNameFileLineAndKey) {
    const std::string at = kPath + ":";
    EXPECT_EQ(error_of("[agent]\n\nstagez = off\n"), at + "3: key 'stagez': unknown key " + kKnown);
    EXPECT_EQ(error_of("[agent]\nstages = exact\n"),
              at + "2: key 'stages': 'exact' is not one of sampled, off");
    EXPECT_EQ(error_of("[agent]\nformats = json,text\n"),
              at + "2: key 'formats': 'text' is not a format (json, slowlog)");
    EXPECT_EQ(error_of("[agent]\nformats =\n"),
              at + "2: key 'formats': no format (json, slowlog, or both: json,slowlog)");
    EXPECT_EQ(error_of("[agent]\nenabled = maybe\n"),
              at + "2: key 'enabled': 'maybe' is not yes or no");
    EXPECT_EQ(error_of("[agent]\nshow_secrets = 2\n"),
              at + "2: key 'show_secrets': '2' is not yes or no");
    for (const char *bad : {"localhost:4318", "ftp://h", "http://", "http:///v1"}) {
        EXPECT_EQ(error_of(std::string("[server port=3307]\notlp = ") + bad + "\n"),
                  at + "2: key 'otlp': '" + bad +
                      "' is not the collector's base URL, http://HOST:PORT or "
                      "https://HOST:PORT (4318 is OTLP/HTTP's port)");
    }
    EXPECT_EQ(error_of("[agent]\nrotate_size = 10T\n"),
              at + "2: key 'rotate_size': '10T' is not a size (bytes, or with a k, M or G suffix)");
    EXPECT_EQ(error_of("[agent]\nrotate_size = M\n"),
              at + "2: key 'rotate_size': 'M' is not a size (bytes, or with a k, M or G suffix)");
    EXPECT_EQ(error_of("[agent]\nrotate_keep = 1001\n"),
              at + "2: key 'rotate_keep': '1001' is not a number from 0 to 1000");
    EXPECT_EQ(error_of("[agent]\nring_kib = 3\n"),
              at + "2: key 'ring_kib': '3' is not a number from 4 to 1048576");
    EXPECT_EQ(error_of("[agent]\nmax_sql = -1\n"),
              at + "2: key 'max_sql': '-1' is not a number from 0 to 65536");
    EXPECT_EQ(error_of("[agent]\nrescan_ms = 99\n"),
              at + "2: key 'rescan_ms': '99' is not a number from 100 to 60000");
    EXPECT_EQ(error_of("[agent]\noutput_dir =\n"), at + "2: key 'output_dir': empty");
    EXPECT_EQ(error_of("[agent]\nmax_classes = 0\n"),
              at + "2: key 'max_classes': '0' is not a number from 1 to 100000");
    EXPECT_EQ(error_of("[agent]\nmetrics_listen = 9715\n"),
              at + "2: key 'metrics_listen': '9715' is not HOST:PORT (e.g. 127.0.0.1:9715, "
                   "[::1]:9715, :9715)");
    EXPECT_EQ(error_of("[agent]\nmetrics_listen = localhost:http\n"),
              at + "2: key 'metrics_listen': 'localhost:http' is not HOST:PORT (e.g. "
                   "127.0.0.1:9715, [::1]:9715, :9715)");
    EXPECT_EQ(error_of("[agent]\nstages = off\nstages = sampled\n"),
              at + "3: key 'stages': set twice in this section (also at line 2)");
    EXPECT_EQ(error_of("stages = off\n[agent]\n"),
              at + "1: key 'stages': before any section (start with [agent])");
    EXPECT_EQ(error_of("[server port=3307]\noutput_dir = /tmp\n"),
              at + "2: key 'output_dir': only in [agent], not in a [server ...] section");
    EXPECT_EQ(error_of("[server port=3307]\nformats = slowlog\nstages = all\n"),
              at + "3: key 'stages': 'all' is not one of sampled, off");
    EXPECT_EQ(error_of("[server port=3307]\nstagez = off\n"),
              at + "2: key 'stagez': unknown key " + kKnown);
}

TEST(AgentConfig, ErrorsNameFileLineAndSection) {
    const std::string at = kPath + ":";
    EXPECT_EQ(error_of("[agent]\n[agents]\n"),
              at + "2: section '[agents]': unknown section (known: [agent], [server LABEL=VALUE "
                   "...])");
    EXPECT_EQ(error_of("[agent\n"), at + "1: '[agent': a section header ends with ']'");
    EXPECT_EQ(error_of("[agent]\n[server port=1]\n[agent]\n"),
              at + "3: section '[agent]': a second one (the first is at line 1)");
    EXPECT_EQ(error_of("[server prot=3307]\n"),
              at + "1: section '[server prot=3307]': unknown label 'prot' (known: port, socket, "
                   "unit, flavour, container)");
    EXPECT_EQ(error_of("[server port]\n"),
              at + "1: section '[server port]': 'port' is not LABEL=VALUE");
    EXPECT_EQ(error_of("[server port=]\n"),
              at + "1: section '[server port=]': 'port=' is not LABEL=VALUE");
    EXPECT_EQ(error_of("[server port=70000]\n"),
              at + "1: section '[server port=70000]': '70000' is not a port");
    EXPECT_EQ(error_of("[server flavour=percona]\n"),
              at + "1: section '[server flavour=percona]': flavour 'percona' is not one of "
                   "mariadb, mysql");
    EXPECT_EQ(error_of("[agent]\n[server]\n"),
              at + "2: section '[server]': no label to match servers by (e.g. [server "
                   "port=3306]; known: port, socket, unit, flavour, container)");
    EXPECT_EQ(error_of("[agent]\nstages off\n"),
              at + "2: 'stages off': not a 'key = value', a [section] or a # comment");
    EXPECT_EQ(error_of("[agent]\n = off\n"), at + "2: '= off': no key before '='");
}

TEST(AgentConfig, CommandLineErrorsSayCommandLine) {
    EXPECT_EQ(error_of("[agent]\n", base({{"stages", "exact", 0}})),
              "command line: key 'stages': 'exact' is not one of sampled, off");
}

TEST(AgentConfig, MissingFile) {
    test::TempDir dir;
    auto r = load_agent_config(dir.path() + "/none.conf", base());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "cannot read the configuration file " + dir.path() +
                                     "/none.conf: No such file or directory");
}

TEST(AgentConfig, SectionsMatchLabels) {
    ServerLabels l = labels(3307);
    l.process.cgroup.unit = "mariadb@shop.service";
    l.process.cgroup.container =
        Container{"docker", "4f1c2b3a5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7a8"};
    auto match = [&](const std::string &title) {
        auto r = parse_agent_config("[" + title + "]\n", kPath, base());
        EXPECT_TRUE(r) << r.error().message;
        return r && section_matches(r->sections.at(0), l);
    };
    EXPECT_TRUE(match("server port=3307"));
    EXPECT_FALSE(match("server port=3306"));
    EXPECT_TRUE(match("server socket=/run/mysqld/mysqld-3307.sock"));
    EXPECT_FALSE(match("server socket=/run/mysqld/mysqld.sock"));
    EXPECT_TRUE(match("server unit=mariadb@shop.service"));
    EXPECT_FALSE(match("server unit=mariadb.service"));
    EXPECT_TRUE(match("server flavour=mariadb"));
    EXPECT_FALSE(match("server flavour=mysql"));
    EXPECT_TRUE(match("server container=4f1c2b3a5d6e"));
    EXPECT_TRUE(match("server container=docker:" + l.process.cgroup.container->id));
    EXPECT_FALSE(match("server container=4f1c2b3a5d6"));  // under 12 digits
    EXPECT_FALSE(match("server container=podman:" + l.process.cgroup.container->id));
    // Every label of a section must match.
    EXPECT_TRUE(match("server   port=3307\tflavour=mariadb"));
    EXPECT_FALSE(match("server port=3307 flavour=mysql"));
    EXPECT_FALSE(section_matches(
        parse_agent_config("[server container=4f1c2b3a5d6e]\n", kPath, base())->sections.at(0),
        labels(3307)));
}

TEST(AgentConfig, Precedence) {
    const std::string text =
        "[agent]\n"
        "formats = json\n"
        "stages = off\n"
        "max_sql = 1000\n"
        "[server port=3307]\n"
        "formats = json,slowlog\n"
        "max_sql = 2000\n"
        "[server flavour=mariadb]\n"
        "max_sql = 3000\n"
        "[server port=3308]\n"
        "enabled = no\n";
    auto r = parse_agent_config(text, kPath, base());
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->sections.size(), 3u);
    EXPECT_EQ(r->sections[0].title, "server port=3307");
    EXPECT_EQ(r->sections[0].line, 5);
    std::string matched;
    // [agent] alone.
    ServerSettings s = settings_for(*r, labels(3306, "mysql"), &matched);
    EXPECT_EQ(matched, "");
    EXPECT_EQ(describe_settings(s),
              "enabled=yes formats=json stages=off rotate_size=104857600 rotate_keep=5 "
              "ring_kib=1024 max_sql=1000 show_secrets=no locks=no otlp=");
    EXPECT_EQ(s.opts.output_dir, "/var/log/mysqltrace");
    // Two sections, the later one's max_sql over the earlier one's.
    s = settings_for(*r, labels(3307), &matched);
    EXPECT_EQ(matched, "[server port=3307] (line 5), [server flavour=mariadb] (line 8)");
    EXPECT_TRUE(s.opts.slowlog);
    EXPECT_EQ(s.opts.max_sql, 3000u);
    EXPECT_EQ(s.opts.stages, server::StageMode::off);
    s = settings_for(*r, labels(3307, "mysql"), &matched);
    EXPECT_EQ(matched, "[server port=3307] (line 5)");
    EXPECT_EQ(s.opts.max_sql, 2000u);
    s = settings_for(*r, labels(3308, "mysql"), &matched);
    EXPECT_FALSE(s.enabled);
    EXPECT_EQ(changed_settings(settings_for(*r, labels(3306, "mysql")), s), "enabled yes -> no");

    // The command line over [agent] and over every section; what it does
    // not set stays the file's.
    auto c = parse_agent_config(
        text, kPath,
        base({{"max_sql", "10", 0}, {"stages", "sampled", 0}, {"rescan_ms", "500", 0}}));
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->rescan_ms, 500);
    EXPECT_EQ(c->defaults.opts.max_sql, 10u);
    s = settings_for(*c, labels(3307));
    EXPECT_EQ(s.opts.max_sql, 10u);
    EXPECT_EQ(s.opts.stages, server::StageMode::sampled);
    EXPECT_TRUE(s.opts.slowlog);
    EXPECT_EQ(changed_settings(settings_for(*r, labels(3307)), s),
              "stages off -> sampled; max_sql 3000 -> 10");
    EXPECT_EQ(changed_settings(s, s), "");
}

TEST(AgentConfig, ReloadStartsFromTheDefaults) {
    // A key removed from the file goes back to its default, not to the
    // value of the file read before.
    auto first = parse_agent_config("[agent]\nstages = off\n", kPath, base());
    ASSERT_TRUE(first);
    auto second = parse_agent_config("[agent]\n", kPath, base());
    ASSERT_TRUE(second);
    EXPECT_EQ(second->defaults.opts.stages, server::StageMode::sampled);
}

TEST(AgentConfig, EffectiveConfig) {
    auto r = parse_agent_config(
        "[agent]\nformats = json, slowlog\n[server port=3307]\n"
        "stages = off\nenabled = no\n",
        kPath, base({{"stages", "sampled", 0}}));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(effective_config(*r), "# " + kPath +
                                        ", with the command line's settings over it\n"
                                        "[agent]\n"
                                        "output_dir = /var/log/mysqltrace\n"
                                        "rescan_ms = 1000\n"
                                        "socket_prefix =\n"
                                        "metrics_listen =\n"
                                        "control_socket = /run/mysqltrace/agent.sock\n"
                                        "max_classes = 500\n"
                                        "enabled = yes\n"
                                        "formats = json,slowlog\n"
                                        "stages = sampled  # command line\n"
                                        "rotate_size = 104857600\n"
                                        "rotate_keep = 5\n"
                                        "ring_kib = 1024\n"
                                        "max_sql = 65536\n"
                                        "show_secrets = no\n"
                                        "locks = no\n"
                                        "otlp =\n"
                                        "\n"
                                        "[server port=3307]  # line 3\n"
                                        "stages = off  # the command line's value wins\n"
                                        "enabled = no\n");
}

}  // namespace
}  // namespace mysqltrace::agent
