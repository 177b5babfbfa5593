// SPDX-License-Identifier: GPL-2.0-only
// `mysqltrace run [options] -- CMD [ARGS...]`: start CMD with the shim
// preloaded, attach to the shim's USDT probes before CMD runs any code, and
// trace every connection it (or its children) makes from CONNECTING on.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "cli/protocol_trace.h"
#include "run/launcher.h"
#include "run/shim_probes.h"
#if __has_include("mysqltrace/shim_path.h")
#include "mysqltrace/shim_path.h"
#endif

namespace mysqltrace::cli {

namespace {

struct RunArgs : ProtocolArgs {
    std::vector<std::string> argv;
    std::string shim;
    bool no_api = false;
};

// The shim next to this binary in a build tree, else where the package
// installs it. MYSQLTRACE_SHIM (or --shim) overrides both.
Result<std::string> find_shim(const std::string &given) {
    namespace fs = std::filesystem;
    std::vector<std::string> tried;
    auto usable = [&](const std::string &p) {
        tried.push_back(p);
        return access(p.c_str(), R_OK) == 0;
    };
    if (!given.empty()) {
        if (usable(given)) {
            return fs::absolute(given).string();
        }
        return Error{ENOENT, "cannot read the shim " + given};
    }
    if (const char *env = std::getenv("MYSQLTRACE_SHIM"); env != nullptr && *env != 0) {
        if (usable(env)) {
            return fs::absolute(env).string();
        }
        return Error{ENOENT, "cannot read the shim MYSQLTRACE_SHIM=" + std::string(env)};
    }
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        auto p = (self.parent_path().parent_path() / "shim" / "libmysqltrace-shim.so").string();
        if (usable(p)) {
            return p;
        }
    }
#ifdef MYSQLTRACE_SHIM_INSTALL_PATH
    if (usable(MYSQLTRACE_SHIM_INSTALL_PATH)) {
        return std::string(MYSQLTRACE_SHIM_INSTALL_PATH);
    }
#endif
    std::string where;
    for (const auto &t : tried) {
        where += (where.empty() ? "" : ", ") + t;
    }
    return Error{ENOENT, "cannot find libmysqltrace-shim.so (looked at " + where +
                             "); set MYSQLTRACE_SHIM or --shim"};
}

int run_run(const RunArgs &a, const GlobalOptions &g) {
    auto shim = find_shim(a.shim);
    if (!shim) {
        std::cerr << "mysqltrace: " << shim.error().message << "\n";
        return kExitFailure;
    }
    if (auto checked = run::check_shim_probes(*shim); !checked) {
        std::cerr << "mysqltrace: " << checked.error().message << "\n";
        return kExitFailure;
    }
    run::LaunchOptions lo;
    lo.argv = a.argv;
    lo.preload = *shim;
    auto launched = run::Launcher::start(lo);
    if (!launched) {
        std::cerr << "mysqltrace: " << launched.error().message << "\n";
        return kExitFailure;
    }
    run::Launcher &child = **launched;

    ProtocolSession s;
    s.pids = {child.pid()};
    s.follow_forks = true;
    s.shim_path = *shim;
    s.executable = std::filesystem::path(a.argv.front()).filename().string();
    s.shim_api = !a.no_api;
    s.end_with_first = true;
    s.to_stderr = true;
    s.banner = "running " + a.argv.front() + " (pid " + std::to_string(child.pid()) + ") with " +
               *shim + ", tracing it and its children";
    bool released = false;
    bool exec_failed = false;
    s.started = [&child, &released, &exec_failed] {
        released = true;
        auto r = child.release();
        exec_failed = !r;
        return r;
    };
    int interrupts = 0;
    s.on_signal = [&child, &interrupts](int signo) {
        // The terminal sends Ctrl-C to CMD as well: keep tracing until CMD
        // has exited, unless Ctrl-C comes again. Other signals are meant for
        // CMD: pass them on.
        if (signo == SIGINT) {
            if (++interrupts == 1) {
                std::cerr << "mysqltrace: waiting for the command to exit (Ctrl-C again to stop "
                             "tracing now)\n";
                return false;
            }
            return true;
        }
        child.forward_signal(signo);
        return false;
    };
    int code = run_protocol_trace(a, s, g);
    if (code != kExitOk) {
        // Never started: the launcher's destructor removes it. Started: it
        // runs on untraced, and is not ours to stop.
        if (released) {
            auto st = child.wait();
            if (exec_failed && st) {
                return st->code;  // 127 or 126, as a shell would say
            }
        }
        return code;
    }
    auto st = child.wait();
    if (!st) {
        std::cerr << "mysqltrace: " << st.error().message << "\n";
        return kExitFailure;
    }
    std::cerr.flush();
    run::exit_like(*st);
}

}  // namespace

void register_run(CLI::App &app, const GlobalOptions &global, RunFn &run) {
    auto *cmd = app.add_subcommand(
        "run",
        "Start a command with the mysqltrace shim preloaded (LD_PRELOAD) and trace every MySQL "
        "connection it and its children make, from CONNECTING on: the protocol events of "
        "`mysqltrace client`, plus the MySQL C API calls (libmariadb/libmysqlclient) with their "
        "time and client-side errors. The command's stdin, stdout and stderr are left alone and "
        "mysqltrace exits as it did. Usage: mysqltrace run [options] -- CMD [ARGS...]");
    auto a = std::make_shared<RunArgs>();
    add_protocol_options(cmd, *a);
    cmd->add_option("--shim", a->shim,
                    "The shim library to preload (default: next to this program, or installed; "
                    "also MYSQLTRACE_SHIM)");
    cmd->add_flag("--no-api", a->no_api,
                  "Do not report MySQL C API calls: only the wire, at half the probe hits per "
                  "command (mysql_real_connect entry is then not the CONNECTING time, and "
                  "client-side errors are not reported)");
    cmd->add_option("command", a->argv, "CMD [ARGS...], after --")->required();
    cmd->callback([&run, &global, a] { run = [a, &global] { return run_run(*a, global); }; });
}

}  // namespace mysqltrace::cli
