// SPDX-License-Identifier: GPL-2.0-only
// The agent's configuration file (docs/agent.md): INI, an [agent] section
// for the outputs and the defaults of every server, and [server LABEL=VALUE
// ...] sections that change the modes of the servers whose labels match.
//
//   [agent]
//   output_dir = /var/log/mysqltrace
//   formats = json
//
//   [server port=3307]
//   formats = json, slowlog
//
// Precedence, lowest first: the built-in defaults, the [agent] section, the
// [server ...] sections that match a server (in the file's order, a later
// one over an earlier one), the command line (over everything).
//
// Hand-written rather than Debian's libinih: its build hands the handler no
// line number (INI_HANDLER_LINENO is 0), and every error here names its
// file, line and key.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/traced_server.h"
#include "util/result.h"

namespace mysqltrace::agent {

struct AgentOptions;

// One `key = value`; line 0: from the command line.
struct Setting {
    std::string key, value;
    int line = 0;
};

// A [server LABEL=VALUE ...] section: it applies to the servers every one of
// whose labels matches (port, socket, unit, flavour, container).
struct ServerSection {
    std::string title;  // "server port=3307", spaces normalised
    int line = 0;
    std::vector<std::pair<std::string, std::string>> labels;
    std::vector<Setting> settings;
};

// What a server is traced with, once every layer is applied.
struct ServerSettings {
    bool enabled = true;  // false: left alone
    TracedServerOptions opts;
    bool operator==(const ServerSettings &) const = default;
};

// The built-in defaults: json files under /var/log/mysqltrace rotated at
// 100M keeping 5, sampled stages, rings of 1 MiB per CPU, a rescan a second.
AgentOptions agent_defaults();

// Parses `text` (the contents of `path`, which errors name) over `base`:
// its defaults and its command_line, which are applied again after the
// file so that they win. Errors: "PATH:LINE: key 'K': why".
Result<AgentOptions> parse_agent_config(std::string_view text, const std::string &path,
                                        const AgentOptions &base);
// The same with the file read from `path`; "" reads none (only the command
// line applies).
Result<AgentOptions> load_agent_config(const std::string &path, const AgentOptions &base);

bool section_matches(const ServerSection &section, const ServerLabels &labels);

// The settings of one server. `matched` (if given) gets the sections that
// apply to it, "[server port=3307] (line 12)", comma-separated, "" for none.
ServerSettings settings_for(const AgentOptions &opts, const ServerLabels &labels,
                            std::string *matched = nullptr);

// "json", "slowlog" or "json,slowlog".
std::string formats_of(const TracedServerOptions &o);

// "formats=json stages=sampled rotate_size=104857600 ..." (not output_dir).
std::string describe_settings(const ServerSettings &s);
// The keys whose values differ: "formats json -> json,slowlog; enabled no
// -> yes"; "" when none.
std::string changed_settings(const ServerSettings &from, const ServerSettings &to);

// The effective configuration as an INI text (--check-config).
std::string effective_config(const AgentOptions &opts);

}  // namespace mysqltrace::agent
