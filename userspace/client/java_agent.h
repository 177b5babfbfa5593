// SPDX-License-Identifier: GPL-2.0-only
// JVMs: the JDK's TLS is Java code, so no native symbol carries its
// cleartext. mysqltrace's Java agent (java/: mysqltrace-agent.jar,
// mysqltrace-probes.jar, libmysqltrace-java.so) instruments the TLS
// sockets' application streams to fire USDT probes in
// libmysqltrace-java.so. This finds that library in a process, and loads
// the agent into a running JVM through HotSpot's attach mechanism (the
// protocol of `jcmd PID JVMTI.agent_load`, spoken here directly).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <sys/types.h>

#include "util/result.h"

namespace mysqltrace::client {

// The file name of the agent's native library.
inline constexpr const char *kJavaProbesLibrary = "libmysqltrace-java.so";

// True when process `pid` runs HotSpot (it maps libjvm.so).
bool is_jvm(pid_t pid);

// libmysqltrace-java.so as mapped by process `pid`, reachable from here;
// nullopt when the process has not loaded it.
Result<std::optional<std::string>> find_java_probes(pid_t pid);

struct JavaAgentFiles {
    std::string jar;      // mysqltrace-agent.jar (mysqltrace-probes.jar beside it)
    std::string library;  // libmysqltrace-java.so
};

// The agent's files: the build tree's when they are there, else the
// installed ones; an error when neither are (mysqltrace built without a
// JDK).
Result<JavaAgentFiles> java_agent_files();

// Loads `jar` with `options` into JVM `pid` (JVMTI agent_load of
// "instrument"): starts the JVM's attach listener if it is not running
// (a trigger file and SIGQUIT, sent only if the JVM catches SIGQUIT),
// sends the command and waits up to `timeout` for the agent's agentmain to
// return. The JVM must see `jar` at that path.
Result<void> load_java_agent(pid_t pid, const std::string &jar, const std::string &options,
                             std::chrono::milliseconds timeout);

}  // namespace mysqltrace::client
