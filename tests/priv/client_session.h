// SPDX-License-Identifier: GPL-2.0-only
// Drives a scripted MySQL client (tests/testprogs/*_client*) under
// `mysqltrace client` and compares the normalised trace with the expected
// one kept next to the tests (tests/priv/expected/<name>.trace).
#pragma once

#include <string>
#include <utility>
#include <vector>
#include <sys/types.h>

#include <gtest/gtest.h>

#include "harness/mariadb_server.h"

namespace mysqltrace::test {

// The clients' peer server of `flavour`, with TLS if `tls`: one per
// (flavour, tls) for the tests of a process, started by the first call, with
// LOCAL INFILE on (off by default since MySQL 8.0), packets up to 64 MiB and
// a table mt.t of two rows. nullptr (and a test failure) if it did not start.
MariadbServer *peer_server(ServerFlavour flavour, bool tls);
// Stops every peer server; for a suite's TearDownTestSuite.
void stop_peer_servers();
// Where the running test writes its trace: `server`'s directory, named by
// the test.
std::string trace_path_for_test(const MariadbServer &server);

// A client process that waits at a gate (`sh -c 'read; exec ...'`, same pid
// after exec) so the tracer can attach before the client does anything.
class GatedClient {
  public:
    // stderr_path: where the process's stderr goes (default: inherited).
    explicit GatedClient(const std::vector<std::string> &argv, const std::string &stderr_path = {});
    ~GatedClient();
    pid_t pid() const { return pid_; }
    void open_gate();
    // Sends one line to the client's stdin.
    void send(const std::string &line);
    // Sends one command line and returns the client's one-line answer.
    std::string command(const std::string &line);
    // The client's next line of output ("<eof>" when it closed stdout).
    std::string read_line();
    // Closes stdin and waits for the client to exit; returns its exit code.
    int finish();

  private:
    pid_t pid_ = -1;
    int to_ = -1;
    int from_ = -1;
    std::string buffer_;
};

struct Step {
    std::string command;
    std::string answer;  // expected answer, exactly
};

struct TracedSession {
    int tracer_exit = -1;
    std::string tracer_stderr;
    std::string trace;       // as written
    std::string normalised;  // times, pids and ids replaced
    std::vector<std::string> answers;
};

// Runs `client_argv` at a gate, attaches `mysqltrace client --pid` with
// `tracer_args`, plays `steps`, lets the client exit, and collects the trace.
// `tracer_prefix`: a command that runs mysqltrace (its argv appended) in its
// own pid, e.g. a shell that prepares a mount namespace and execs it.
TracedSession run_traced(const std::vector<std::string> &client_argv,
                         const std::vector<Step> &steps,
                         const std::vector<std::string> &tracer_args, const std::string &out_path,
                         const std::vector<std::string> &tracer_prefix = {});

// Attaches `mysqltrace -v client --pid` (with `tracer_args`) to the client
// `c`, already past its gate, plays `steps` and lets the client exit; expects
// every answer, a clean end (no record dropped, the traced process exited)
// and the trace of tests/priv/expected/<expected>.trace, `server`'s
// directory written <dir>. Returns the tracer's stderr. For clients that
// must run before the tracer looks at them: a Go executable mapped, a JVM
// to load the agent into.
std::string attach_and_check(GatedClient &c, const MariadbServer &server,
                             const std::string &expected, const std::vector<Step> &steps,
                             const std::string &out_path,
                             const std::vector<std::string> &tracer_args = {});

// A scripted client's options naming `server`: --host and --port with
// `tcp`, --socket otherwise.
std::vector<std::string> server_address_args(const MariadbServer &server, bool tcp);

// Connect; a query with rows, one without, one that fails; an insert and a
// delete; ping; quit: every scripted client's first test.
std::vector<Step> basic_steps();

// Runs `mysqltrace run <tracer_args> -- <client_argv>`, plays `steps` through
// it (the command's stdin and stdout pass through mysqltrace), and collects
// the trace; tracer_exit is mysqltrace's exit code, which is the client's.
TracedSession run_under_run(const std::vector<std::string> &client_argv,
                            const std::vector<Step> &steps,
                            const std::vector<std::string> &tracer_args,
                            const std::string &out_path);

// Replaces what differs between runs (timestamps, pids, connection ids,
// durations, versions, paths listed in `paths`) with fixed tokens.
std::string normalise_trace(const std::string &trace,
                            const std::vector<std::pair<std::string, std::string>> &paths = {});

// Compares with tests/priv/expected/<name>.trace; with
// MYSQLTRACE_UPDATE_EXPECTED=1 writes `actual` there instead.
::testing::AssertionResult matches_expected(const std::string &name, const std::string &actual);

std::string testprog(const std::string &name);

}  // namespace mysqltrace::test
