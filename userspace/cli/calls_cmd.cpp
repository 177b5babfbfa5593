// SPDX-License-Identifier: GPL-2.0-only
#include <csignal>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "bpf/ring_set.h"
#include "calls/call_tree.h"
#include "calls/functions.h"
#include "calls/match.h"
#include "calls/render.h"
#include "calls/resolver.h"
#include "calls/tracer.h"
#include "cli/command.h"
#include "output/output_file.h"
#include "proc/maps.h"
#include "trace/trace_loop.h"

namespace mysqltrace::cli {

namespace {

struct CallsArgs : TraceArgs {
    pid_t pid = 0;
    std::vector<std::string> match;
    std::string binary;
    uint32_t tid = 0;
    uint32_t max_depth = 0;
    size_t limit = 2000;
    bool force = false;
    bool retval = false;
    bool skip_costly = false;
    bool traps_only = false;
    std::vector<std::string> usdt;
};

// At most `max` names, then how many more.
template <typename Names>
std::string name_list(const Names &names, size_t max) {
    std::string out;
    size_t n = 0;
    for (const auto &s : names) {
        if (n == max) {
            out += ", and " + std::to_string(names.size() - max) + " more";
            break;
        }
        out += (n++ == 0 ? "" : ", ") + s;
    }
    return out;
}

std::vector<std::string> files_searched(const calls::Selection &sel) {
    std::vector<std::string> paths;
    for (const auto &f : sel.files) {
        if (f.searched) {
            paths.push_back(f.path);
        }
    }
    return paths;
}

int run_calls(const CallsArgs &a, const GlobalOptions &g) {
    if (a.format == "chrome" && a.rotate_size > 0) {
        std::cerr << "mysqltrace: --format chrome writes one JSON document: it cannot be "
                     "rotated (--rotate-size)\n";
        return kExitUsage;
    }
    calls::GlobSet globs(a.match);
    if (globs.empty()) {
        std::cerr << "mysqltrace: --match needs a non-empty glob\n";
        return kExitUsage;
    }
    auto selected = calls::select_functions(a.pid, globs, a.binary);
    if (!selected) {
        std::cerr << "mysqltrace: " << selected.error().message << "\n";
        return kExitFailure;
    }
    calls::Selection &sel = *selected;
    const auto searched = files_searched(sel);
    const std::string where = std::to_string(searched.size()) +
                              (searched.size() == 1 ? " file" : " files") + " of pid " +
                              std::to_string(a.pid);
    if (!sel.unsafe.empty()) {
        std::vector<std::string> names;
        for (const auto &f : sel.unsafe) {
            names.push_back(f.name.name);
        }
        std::cerr << "mysqltrace: not tracing " << names.size()
                  << " matched functions that a return probe would break (they save, switch or "
                     "unwind the stack): "
                  << name_list(names, 10) << "\n";
    }
    if (!sel.undecodable.empty()) {
        std::vector<std::string> names;
        for (const auto &f : sel.undecodable) {
            names.push_back(f.name.name);
        }
        std::cerr << "mysqltrace: not tracing " << names.size()
                  << " matched functions whose first instruction cannot be decoded: "
                  << name_list(names, 10) << "\n";
    }
    if (sel.functions.empty()) {
        std::cerr << "mysqltrace: no function matches " << globs.describe() << " in the " << where
                  << " (" << name_list(searched, 8) << ")\n";
        return kExitFailure;
    }
    std::cerr << "mysqltrace: " << sel.functions.size()
              << (sel.functions.size() == 1 ? " function matches " : " functions match ")
              << globs.describe() << " in " << where << "\n";
    if (sel.functions.size() > a.limit && !a.force) {
        std::cerr << "mysqltrace: refusing to trace " << sel.functions.size()
                  << " functions, more than --limit " << a.limit
                  << ": every call of each costs the traced thread two traps (a few us); narrow "
                     "--match or --binary, raise --limit, or pass --force\n";
        return kExitFailure;
    }
    if (const size_t costly = sel.costly(); costly > 0) {
        std::vector<std::string> names;
        for (const auto &f : sel.functions) {
            if (f.site.cost == elf::ProbeCost::single_stepped) {
                names.push_back(f.name.name + " (" + f.site.instruction + ")");
            }
        }
        std::cerr << "mysqltrace: warning: " << costly
                  << (costly == 1 ? " function begins" : " functions begin")
                  << " with an instruction the kernel must single-step: each call of "
                  << (costly == 1 ? "it" : "them") << " costs ~25 us instead of ~2 us: "
                  << name_list(names, g.verbose > 0 ? names.size() : 10)
                  << (a.skip_costly ? "; left out (--skip-costly)"
                                    : "; --skip-costly leaves them out")
                  << "\n";
        if (a.skip_costly) {
            std::erase_if(sel.functions, [](const calls::TracedFunction &f) {
                return f.site.cost == elf::ProbeCost::single_stepped;
            });
            if (sel.functions.empty()) {
                std::cerr << "mysqltrace: nothing left to trace\n";
                return kExitFailure;
            }
        }
    }
    if (g.verbose > 0) {
        for (const auto &f : sel.functions) {
            std::cerr << "mysqltrace: probe on " << f.name.signature << " in "
                      << sel.files[f.file].path << " at file offset 0x" << std::hex << f.site.offset
                      << std::dec << " (" << f.site.instruction << ", "
                      << elf::probe_cost_name(f.site.cost) << ")\n";
        }
    }
    auto usdt = calls::plan_usdt(sel.files, a.usdt);
    if (!usdt) {
        std::cerr << "mysqltrace: " << usdt.error().message << "\n";
        return kExitFailure;
    }

    auto out = open_trace_output(a);
    if (!out) {
        std::cerr << "mysqltrace: " << out.error().message << "\n";
        return kExitFailure;
    }
    auto &o = **out;
    calls::AddressResolver resolver(a.pid);
    calls::RenderOptions ro;
    ro.format = a.format == "json"     ? calls::CallFormat::json
                : a.format == "chrome" ? calls::CallFormat::chrome
                                       : calls::CallFormat::text;
    ro.retval = a.retval;
    ro.pid = static_cast<uint32_t>(a.pid);
    std::vector<std::string> names;
    for (const auto &f : sel.functions) {
        names.push_back(f.name.name);
    }
    calls::CallRenderer render(ro, std::move(names), usdt->labels,
                               [&resolver](uint64_t addr) { return resolver.resolve(addr); });
    calls::CallTreeOptions to;
    to.max_depth = a.max_depth;
    to.is_trampoline = [&resolver](uint64_t addr) { return resolver.is_trampoline(addr); };
    calls::CallTree tree([&](const calls::CallEvent &ev) { o.write(render.event(ev)); }, to);

    calls::CallTracerOptions opts;
    opts.pid = a.pid;
    opts.tid = a.tid;
    opts.traps_only = a.traps_only;
    opts.ring.bytes_per_cpu = a.ring_kib << 10;
    trace::block_stop_signals();
    auto tracer = calls::CallTracer::attach(sel, *usdt, opts,
                                            [&tree](const calls::CallRecord &r) { tree.add(r); });
    if (!tracer) {
        std::cerr << "mysqltrace: " << tracer.error().message << "\n";
        return kExitFailure;
    }
    if ((*tracer)->guard() == calls::CallTracer::Guard::stop) {
        std::cerr << "mysqltrace: this kernel refuses BPF writes to user memory (lockdown): "
                     "should an exception or a backtrace unwind through traced calls, pid "
                  << a.pid
                  << " is stopped for a moment (SIGSTOP, SIGCONT) while their return "
                     "addresses are put back\n";
    }
    o.write(render.header());
    std::cerr << "mysqltrace: tracing " << sel.functions.size()
              << (sel.functions.size() == 1 ? " function" : " functions");
    if (!usdt->sites.empty()) {
        std::cerr << " and " << usdt->labels.size() << " USDT probe"
                  << (usdt->labels.size() == 1 ? "" : "s");
    }
    std::cerr << " of pid " << a.pid;
    if (a.tid != 0) {
        std::cerr << " (thread " << a.tid << " only)";
    }
    std::cerr << (a.traps_only ? ", recording nothing (--traps-only)" : "") << "; Ctrl-C to stop\n";

    trace::LoopOptions lo;
    lo.duration_s = a.duration;
    lo.reader_nice = a.reader_nice;
    lo.targets = {a.pid};
    lo.on_tick = [&] {
        o.flush();
        if (g.verbose > 0) {
            const auto &st = tree.stats();
            std::cerr << "mysqltrace: " << st.calls << " calls, " << st.lost << " events lost\n";
        }
    };
    auto stop = trace::run_loop((*tracer)->rings(), lo);
    auto flushed = (*tracer)->rings().flush();
    tree.finish(bpf::monotonic_ns());
    o.write(render.footer());
    o.flush();
    const auto &st = tree.stats();
    std::string totals = std::to_string(st.calls) + " calls, " + std::to_string(st.returns) +
                         " returns, " + std::to_string(st.lost) + " events lost";
    if (st.unmatched) {
        totals += ", " + std::to_string(st.unmatched) + " left without a return";
    }
    if (st.orphan_returns) {
        totals += ", " + std::to_string(st.orphan_returns) + " returns without their entry";
    }
    if (st.open_at_end) {
        totals += ", " + std::to_string(st.open_at_end) + " still running";
    }
    if (st.unwinds) {
        totals += ", " + std::to_string(st.unwinds) + " unwinds";
    }
    if (st.annotations) {
        totals += ", " + std::to_string(st.annotations) + " annotations";
    }
    if (st.hidden) {
        totals += ", " + std::to_string(st.hidden) + " deeper than --max-depth not shown";
    }
    if (st.late) {
        totals += ", " + std::to_string(st.late) + " late records";
    }
    if ((*tracer)->fixups()) {
        totals += ", " + std::to_string((*tracer)->fixups()) + " unwinds fixed up";
    }
    if ((*tracer)->fixups_failed()) {
        totals += ", " + std::to_string((*tracer)->fixups_failed()) +
                  " UNWINDS NOT FIXED UP (the process may have aborted)";
    }
    if ((*tracer)->undecodable()) {
        totals += ", " + std::to_string((*tracer)->undecodable()) + " undecodable records";
    }
    return report_end(totals, (*tracer)->rings().stats(), stop, flushed);
}

}  // namespace

void register_calls(CLI::App &app, const GlobalOptions &global, RunFn &run) {
    auto *cmd = app.add_subcommand(
        "calls",
        "Trace function calls of a running process as a per-thread call tree: entry and "
        "return of every function whose name matches, nested and timestamped, with the "
        "caller, duration and (--retval) return value. Like a -finstrument-functions trace, "
        "without rebuilding: uprobes on the functions of the executable and its shared "
        "libraries, found in their ELF symbol tables. See docs/calls.md.");
    auto a = std::make_shared<CallsArgs>();
    cmd->add_option("-p,--pid", a->pid, "Process id to trace")->required();
    cmd->add_option("-m,--match", a->match,
                    "Trace the functions whose demangled name (with or without its parameter "
                    "list) matches this shell glob; `a|b` holds alternatives (repeatable)")
        ->required();
    add_trace_options(cmd, *a, {"text", "json", "chrome"});
    cmd->add_option("--binary", a->binary,
                    "Only functions of this mapped file (its path or base name, e.g. "
                    "libc.so.6); default: the executable and every shared library");
    cmd->add_option("--tid", a->tid, "Only this thread (filtered in the kernel)");
    cmd->add_option("--max-depth", a->max_depth,
                    "Do not show calls nested deeper than this (they are still traced)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--limit", a->limit, "Refuse to trace more functions than this, unless --force")
        ->capture_default_str();
    cmd->add_flag("--force", a->force, "Trace however many functions match");
    cmd->add_flag("--retval", a->retval, "Show return values (rax, as a signed integer)");
    cmd->add_flag("--skip-costly", a->skip_costly,
                  "Leave out functions whose first instruction the kernel single-steps "
                  "(~25 us per call instead of ~2 us)");
    cmd->add_option("--usdt", a->usdt,
                    "Show hits of this USDT probe (PROVIDER:NAME, globs allowed) as annotations "
                    "in the tree, with their first argument (repeatable)");
    cmd->add_flag("--traps-only", a->traps_only,
                  "Attach every probe but record nothing: what the traps alone cost "
                  "(benchmarks)");
    cmd->callback([&run, &global, a] { run = [a, &global] { return run_calls(*a, global); }; });
}

}  // namespace mysqltrace::cli
