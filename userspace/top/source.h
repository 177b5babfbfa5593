// SPDX-License-Identifier: GPL-2.0-only
// Where `mysqltrace top` gets its snapshots: the local agent's control
// socket (every server it traces), or a tracer of its own attached to one
// server (--pid), as the agent attaches one.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "top/snapshot.h"
#include "util/result.h"

namespace mysqltrace::top {

class Source {
  public:
    virtual ~Source() = default;
    virtual Result<Snapshot> snapshot() = 0;
    // Readable when poll() has work (-1: never).
    virtual int fd() const { return -1; }
    virtual Result<void> poll() { return {}; }
    // "agent /run/mysqltrace/agent.sock", "pid 42".
    virtual std::string describe() const = 0;
    // Said once attached (probes, notes), for the batch mode's stderr.
    virtual std::vector<std::string> notes() const { return {}; }
};

// The agent listening at `path`; the first snapshot is asked at once, so a
// missing agent is this call's error.
Result<std::unique_ptr<Source>> agent_source(const std::string &path);

// A statement tracer of our own on server `pid`, writing no file; with
// `locks`, its lock waits too (server --locks' probes).
Result<std::unique_ptr<Source>> attach_source(pid_t pid, bool locks = false);

}  // namespace mysqltrace::top
