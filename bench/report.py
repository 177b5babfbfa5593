#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Turns the raw results of bench/perf-report.sh into the markdown report.

    report.py RESULTS_DIR

RESULTS_DIR holds meta.env, matrix.txt, mysql.txt, cost.txt, hits.*, memory.txt, probes.json,
pipeline-*.json, decoder.md and profile/, each optional except meta.env.
Prints the report on stdout. Reads numbers; asserts nothing.
"""
import json
import os
import re
import statistics
import sys

NAMES = {
    "baseline": "untraced, performance_schema OFF",
    "floor": "one uprobe on log_slow_statement, counting program (one-trap floor)",
    "statements": "`mysqltrace server --stages off` (statements only)",
    "statements-json": "`mysqltrace server --stages off --format json` to a file",
    "statements-slowlog": "`mysqltrace server --stages off --format slowlog` to a file",
    "statements-multi": "`--stages off` on entry + end probes (the multi-probe path)",
    "duty": "`mysqltrace server --stages off --duty 10 --format digests-json` to a file (leave-on)",
    "duty-sampled": "the same with --stages sampled",
    "locks": "`mysqltrace server --stages off --locks` (statements + lock wait probes, no contention)",
    "sampled": "`mysqltrace server` (statements + sampled stages)",
    "exact": "`mysqltrace server --stages exact` (+ exact stages)",
    "traps": "exact-stage probes, empty programs (trap floor)",
    "waits": "`mysqltrace server --waits` (statements + sampled stages + waits)",
    "table-io": "`mysqltrace server --stages off --table-io` (statements + a wait per row)",
    "transactions": "`mysqltrace server --stages off --transactions` (statements + transactions)",
    "client": "`mysqltrace client` on sysbench",
    "client-summary": "`mysqltrace client --summary-only` on sysbench",
    "client-json": "`mysqltrace client --format json` on sysbench",
    "run": "`mysqltrace run -- sysbench` (shim)",
    "run-no-api": "`mysqltrace run --no-api -- sysbench`",
    "shim-idle": "shim preloaded, no tracer",
    "pfs-stages": "performance_schema ON, statement + stage instruments only",
    "pfs": "performance_schema ON, all instruments and consumers (full)",
}
ORDER = list(NAMES)
SHORT = {"oltp_point_select": "point_select", "oltp_read_only": "read_only",
         "oltp_read_write": "read_write"}


def load_meta(d):
    meta = {}
    with open(os.path.join(d, "meta.env")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            meta[k] = v
    return meta


def read_json(d, name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return None
    with open(p) as f:
        try:
            return json.load(f)
        except ValueError:
            return None


def read_text(d, name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return f.read()


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def med(xs):
    return statistics.median(xs) if xs else None


def pct(x, digits=1):
    return "-" if x is None else f"{x * 100:+.{digits}f}%"


def cpu_per_query(ticks, queries, clk_tck):
    """The busy, server, client and tracer ticks of a run ("-": none) as us per query,
    with "total", the three processes' sum."""
    us = {k: (num(v) or 0) / clk_tck * 1e6 / queries
          for k, v in zip(("busy", "server", "client", "tracer"), ticks)}
    us["total"] = us["server"] + us["client"] + us["tracer"]
    return us


def extra_per_round(runs, base_runs, key):
    """Per round: a run's `key` over the untraced run of the same round."""
    return [runs[r][key] - base_runs[r][key] for r in sorted(runs) if r in base_runs]


class Matrix:
    """matrix.txt: workload threads round config qps queries drops cpu_s hwm_kib
    busy server client tracer (ticks over sysbench's run, "-" where nothing applies)"""

    def __init__(self, text, clk_tck=100.0):
        self.runs = {}  # (w, t, cfg) -> {round: (qps, drops, cpu)}
        self.us = {}  # (w, t, cfg) -> {round: {"busy", "server", ...: us per query}}
        self.cells = []
        for line in (text or "").splitlines():
            f = line.split()
            if len(f) < 5:
                continue
            w, t, r, cfg = f[0], int(f[1]), int(f[2]), f[3]
            qps = float(f[4])
            drops = num(f[6]) if len(f) > 6 else None
            cpu = num(f[7]) if len(f) > 7 else None
            self.runs.setdefault((w, t, cfg), {})[r] = (qps, drops, cpu)
            q = num(f[5]) if len(f) > 5 else None
            if len(f) >= 13 and q and all(num(v) is not None for v in f[9:11]):
                self.us.setdefault((w, t, cfg), {})[r] = cpu_per_query(f[9:13], q, clk_tck)
            if (w, t) not in self.cells:
                self.cells.append((w, t))

    def cpu_us(self, w, t, cfg, key):
        """Median us of CPU per query of one part (server, client, tracer, total, busy)."""
        return med([v[key] for v in self.us.get((w, t, cfg), {}).values()])

    def cpu_extra(self, w, t, cfg, key):
        """Per round: us per query over the untraced run of the same round."""
        return extra_per_round(self.us.get((w, t, cfg), {}),
                               self.us.get((w, t, "baseline"), {}), key)

    def cpu_ratios(self, w, t, cfg):
        """Per round: the untraced run's CPU per query over this one's: the QPS ratio a
        machine with no idle time would show if CPU alone set it."""
        a, b = self.us.get((w, t, cfg), {}), self.us.get((w, t, "baseline"), {})
        return [b[r]["total"] / a[r]["total"] for r in sorted(a)
                if r in b and a[r]["total"] > 0]

    def configs(self, w, t):
        return [c for c in ORDER if (w, t, c) in self.runs]

    def ratios(self, w, t, cfg, ref="baseline"):
        a, b = self.runs.get((w, t, cfg), {}), self.runs.get((w, t, ref), {})
        return [a[r][0] / b[r][0] for r in sorted(a) if r in b and b[r][0] > 0]

    def ratio(self, w, t, cfg, ref="baseline"):
        return med(self.ratios(w, t, cfg, ref))

    def qps(self, w, t, cfg):
        return med([v[0] for v in self.runs.get((w, t, cfg), {}).values()])

    def cpu(self, w, t, cfg):
        return med([v[2] for v in self.runs.get((w, t, cfg), {}).values() if v[2] is not None])

    def drops(self, w, t, cfg):
        d = [v[1] for v in self.runs.get((w, t, cfg), {}).values() if v[1] is not None]
        return int(sum(d)) if d else None


class Cost:
    """cost.txt: workload threads round config paired-config qps queries drops cpu_s hwm_kib
    busy server client tracer (ticks), every run at the same fixed sysbench rate; an
    untraced run next to each configuration's, paired-config naming it."""

    def __init__(self, text, clk_tck):
        self.runs = {}  # (cfg, paired cfg) -> {round: {"qps", "server", ... in us per query}}
        self.cell = None
        for line in (text or "").splitlines():
            f = line.split()
            if len(f) < 14 or num(f[13]) is None or not num(f[6]):
                continue
            self.cell = (f[0], int(f[1]))
            us = cpu_per_query(f[10:14], float(f[6]), clk_tck)
            us["qps"] = float(f[5])
            self.runs.setdefault((f[3], f[4]), {})[int(f[2])] = us

    def configs(self):
        return [c for c in ORDER if (c, c) in self.runs]

    def base(self, key):
        """The untraced runs' us per query (median over all of them)."""
        return med([v[key] for (c, _), rs in self.runs.items() if c == "baseline"
                    for v in rs.values()])

    def extra(self, cfg, key):
        """us per query over the untraced run next to it, per round."""
        return extra_per_round(self.runs.get((cfg, cfg), {}),
                               self.runs.get(("baseline", cfg), {}), key)

    def held(self, cfg):
        a, b = self.runs.get((cfg, cfg), {}), self.runs.get(("baseline", cfg), {})
        return med([a[r]["qps"] / b[r]["qps"] for r in a if r in b and b[r]["qps"] > 0])


class Shim:
    """shim-calls.txt: "plain|shim REP CASE NS" (bench/shim_idle_bench, the fastest of 7
    runs); shim-count.txt: "WORKLOAD CALLS QUERIES" (mysqltrace calls on the shim's
    functions in a preloaded sysbench)."""

    def __init__(self, calls_text, count_text):
        runs = {}  # (case, rep) -> {"plain": ns, "shim": ns}, cases in the bench's order
        for line in (calls_text or "").splitlines():
            f = line.split()
            if len(f) != 4 or f[0] not in ("plain", "shim") or num(f[3]) is None:
                continue
            runs.setdefault((f[2], f[1]), {})[f[0]] = float(f[3])
        self.by_case = {}  # case -> (plain ns, shim ns, added ns), medians over reps
        for c in dict.fromkeys(k for k, _ in runs):
            pairs = [v for (k, _), v in runs.items() if k == c and len(v) == 2]
            if pairs:
                self.by_case[c] = (med([v["plain"] for v in pairs]),
                                   med([v["shim"] for v in pairs]),
                                   med([v["shim"] - v["plain"] for v in pairs]))
        self.per_query = {}  # workload -> (interposed calls, queries)
        for line in (count_text or "").splitlines():
            f = line.split()
            if len(f) == 3 and num(f[1]) and num(f[2]):
                self.per_query[f[0]] = (int(f[1]), int(f[2]))

    def added_ns(self):
        """The dearest kind of call's added ns (never below 0)."""
        xs = [v[2] for v in self.by_case.values()]
        return max(0.0, max(xs)) if xs else None

    def calls_per_query(self, w):
        c = self.per_query.get(w)
        return c[0] / c[1] if c else None


def untraced_us(m, cost, w):
    """An untraced query's CPU (server + sysbench, us) in workload w: the matrix's
    baseline at 2 threads (else its first cell of w), else the fixed-rate runs'."""
    cells = sorted((t != 2, t) for (x, t) in m.cells if x == w)
    for _, t in cells:
        us = m.cpu_us(w, t, "baseline", "total")
        if us:
            return us
    if cost.cell and cost.cell[0] == w:
        return cost.base("total")
    return None


def shim_rows(shim, m, cost):
    """Per workload: (calls a query, added ns a query, untraced us a query, loss)."""
    rows = {}
    added = shim.added_ns()
    for w in shim.per_query:
        cpq = shim.calls_per_query(w)
        base = untraced_us(m, cost, w)
        if added is None or cpq is None:
            continue
        per_query = added * cpq
        loss = None if not base else per_query / (base * 1000 + per_query)
        rows[w] = (cpq, per_query, base, loss)
    return rows


def cost_saturated_us(meta, clk_tck):
    """Untraced server + client CPU per query when sysbench runs flat out (the run that
    set the rate)."""
    f = meta.get("cost_saturated", "").split()
    if len(f) < 9 or num(f[1]) in (None, 0) or num(f[6]) is None or num(f[7]) is None:
        return None
    return (float(f[6]) + float(f[7])) / clk_tck * 1e6 / float(f[1])


def projected(sat, extra):
    return None if sat is None or extra is None else sat / (sat + extra)


def cost_table(p, cost, sat):
    def span(xs):
        return f"{med(xs):+.2f} ({min(xs):+.2f} to {max(xs):+.2f})"

    p("| configuration | extra CPU per query (median, min-max) | server | client | tracer | "
      "whole machine (sampled) | projected ratio | QPS held |")
    p("|---|---|---|---|---|---|---|---|")
    p(f"| {NAMES['baseline']} (its own CPU per query) | {cost.base('total'):.2f} us | "
      f"{cost.base('server'):.2f} us | {cost.base('client'):.2f} us | - | "
      f"{cost.base('busy'):.2f} us | 1.000 | 1.00 |")
    for c in cost.configs():
        if c == "baseline" or not cost.extra(c, "total"):
            continue
        tot = cost.extra(c, "total")
        held = cost.held(c)
        pr = projected(sat, med(tot))
        p(f"| {NAMES[c]} | {span(tot)} us | {med(cost.extra(c, 'server')):+.2f} | "
          f"{med(cost.extra(c, 'client')):+.2f} | {med(cost.extra(c, 'tracer')):+.2f} | "
          f"{med(cost.extra(c, 'busy')):+.2f} | {'-' if pr is None else f'{pr:.3f}'} | "
          f"{'-' if held is None else f'{held:.2f}'} |")
    p("")


def cell_table(p, m, w, t, seconds):
    """One cell's configurations: ratio to the cell's untraced baseline, QPS, tracer CPU."""
    p("| configuration | ratio (median) | min-max | median QPS | tracer CPU | "
      "records dropped |")
    p("|---|---|---|---|---|---|")
    for c in m.configs(w, t):
        rs = m.ratios(w, t, c)
        if not rs:
            continue
        cpu = m.cpu(w, t, c)
        dr = m.drops(w, t, c)
        cpu_s = "-" if cpu is None or seconds <= 0 else f"{cpu / seconds * 100:.0f}%"
        p(f"| {NAMES[c]} | {med(rs):.3f} | {min(rs):.3f}-{max(rs):.3f} | "
          f"{m.qps(w, t, c):.0f} | {cpu_s} | {'-' if dr is None else dr} |")
    p("")


def saturated_cpu_table(p, m, w, t):
    """Where each configuration's CPU goes when sysbench runs flat out: the matrix runs'
    own process times (exact), per query."""
    cfgs = [c for c in m.configs(w, t) if m.cpu_ratios(w, t, c)]
    if "baseline" not in cfgs or len(cfgs) < 2:
        return
    p(f"## CPU per query at saturation ({SHORT.get(w, w)}, {t} threads, the matrix runs)")
    p("")
    p("The matrix runs' own CPU times (server, sysbench and tracer utime+stime, which the "
      "kernel keeps exactly), per query, each over the untraced run of the same round "
      "(median over rounds). A configuration that costs x us more per query leaves "
      "untraced/(untraced + x) of the QPS if the CPUs are the limit: the CPU-accounted "
      "ratio. It matches the QPS ratio when the CPUs never idle and these three processes "
      "take all their time, which is what a saturated run should show; then the columns "
      "say whose CPU each lost query went to. A QPS ratio below it means time no process "
      "was charged for (idle CPUs: waiting, not working); above it, CPU taken from others.")
    p("")
    p("| configuration | QPS ratio | CPU-accounted ratio | server us/query | sysbench us/query | "
      "tracer us/query | whole machine (sampled) |")
    p("|---|---|---|---|---|---|---|")
    p(f"| {NAMES['baseline']} | 1.000 | 1.000 | {m.cpu_us(w, t, 'baseline', 'server'):.2f} | "
      f"{m.cpu_us(w, t, 'baseline', 'client'):.2f} | - | "
      f"{m.cpu_us(w, t, 'baseline', 'busy'):.2f} |")
    for c in cfgs:
        if c == "baseline":
            continue
        def x(key):
            return f"{med(m.cpu_extra(w, t, c, key)):+.2f}"
        p(f"| {NAMES[c]} | {m.ratio(w, t, c):.3f} | {med(m.cpu_ratios(w, t, c)):.3f} | "
          f"{x('server')} | {x('client')} | {x('tracer')} | {x('busy')} |")
    p("")


def status(ok):
    if ok is None:
        return "not measured"
    return "**MET**" if ok else "**NOT MET**"


def main():
    d = sys.argv[1]
    meta = load_meta(d)
    smoke = meta.get("smoke") == "1"
    seconds = float(meta.get("seconds", "0") or 0)
    ncpu = ncpu_of(meta)
    clk_tck = float(meta.get("clk_tck", "100") or 100)
    m = Matrix(read_text(d, "matrix.txt"), clk_tck)
    my = Matrix(read_text(d, "mysql.txt"), clk_tck)
    probes = read_json(d, "probes.json")
    pipes = {s: read_json(d, f"pipeline-{s}.json") for s in ("usdt", "syscall", "overload")}
    decoder = read_text(d, "decoder.md")
    cost = Cost(read_text(d, "cost.txt"), clk_tck)
    cost_sat = cost_saturated_us(meta, clk_tck)
    shim = Shim(read_text(d, "shim-calls.txt"), read_text(d, "shim-count.txt"))
    shim_by_w = shim_rows(shim, m, cost)
    out = []
    p = out.append

    p("# mysqltrace performance report")
    p("")
    if smoke:
        p("> **Smoke numbers, not the report.** One round of a tiny matrix with 2-second "
          "runs: they show that the harness works, not what mysqltrace costs. The real "
          "numbers come from a run of the standard or full matrix on a quiet machine "
          "(see Method).")
        p("")
    load = meta.get("load_start", "")
    try:
        busy = float(load.split()[0]) > 0.5 * ncpu
    except (ValueError, IndexError):
        busy = False
    p(f"Generated {meta.get('date', '?')} by `{meta.get('argv', 'bench/perf-report.sh')}`: "
      f"matrix **{meta.get('matrix', '?')}**, {meta.get('rounds', '?')} round(s) x "
      f"{meta.get('seconds', '?')} s per run, took {int(meta.get('elapsed_s', 0)) // 60} min "
      f"{int(meta.get('elapsed_s', 0)) % 60} s. "
      f"Load average at start {load or '?'}, at end {meta.get('load_end', '?')}"
      + (" — **the machine was busy: do not read these numbers as the report's**." if busy
         else "."))
    p("")
    p("## Machine")
    p("")
    p("| | |")
    p("|---|---|")
    for k, label in (("cpu", "CPU"), ("cpus", "CPUs online"), ("hypervisor", "hypervisor"),
                     ("mem", "memory"), ("kernel", "kernel"), ("os", "OS"),
                     ("mariadbd", "server"), ("mysqld", "second server"),
                     ("sysbench", "sysbench")):
        if meta.get(k):
            p(f"| {label} | {meta[k]} |")
    p("")

    # ---------------- goals ----------------
    goals = []  # (goal, where, measured, result)

    def goal(g, where, measured, ok):
        goals.append((g, where, measured, status(ok)))

    # G1: full tracing vs performance_schema full, read_only at 2 threads.
    w, t = "oltp_read_only", 2
    rw, rp = m.ratio(w, t, "waits"), m.ratio(w, t, "pfs")
    if rw is not None and rp is not None:
        lw, lp = 1 - rw, 1 - rp
        goal("statements + sampled stages + waits: QPS loss < 1/3 of performance_schema "
             "full's loss", "read_only, 2 threads",
             f"loss {lw * 100:.1f}% vs {lp * 100:.1f}% (limit {lp * 100 / 3:.1f}%)",
             lw < lp / 3)
    else:
        goal("statements + sampled stages + waits: QPS loss < 1/3 of performance_schema "
             "full's loss", "read_only, 2 threads", "-", None)
    for (w, t) in m.cells:
        if w != "oltp_point_select":
            continue
        r = m.ratio(w, t, "statements")
        goal("statements only: QPS loss <= 5%", f"point_select, {t} threads",
             "-" if r is None else f"loss {(1 - r) * 100:.1f}%", None if r is None else 1 - r <= 0.05)
    for (w, t) in m.cells:
        rs, rp = m.ratio(w, t, "sampled"), m.ratio(w, t, "pfs-stages")
        where = f"{SHORT.get(w, w)}, {t} threads"
        if rs is None or rp is None:
            continue
        ls, lp = 1 - rs, 1 - rp
        goal("statements + sampled stages: loss <= 1/2 of performance_schema statement+stage "
             "loss", where, f"loss {ls * 100:.1f}% vs {lp * 100:.1f}% (limit {lp * 50:.1f}%)",
             ls <= lp / 2)
    for (w, t) in m.cells:
        r = m.ratio(w, t, "exact", "traps")
        if r is None:
            continue
        goal("exact stages: >= 85% of the trap floor's QPS", f"{SHORT.get(w, w)}, {t} threads",
             f"{r * 100:.0f}% of it", r >= 0.85)
    for (w, t) in m.cells:
        r = m.ratio(w, t, "shim-idle")
        if r is None:
            continue
        goal("shim preloaded without a tracer: loss < 1%", f"{SHORT.get(w, w)}, {t} threads",
             f"loss {(1 - r) * 100:.1f}%", 1 - r < 0.01)
    for w, (cpq, per_query, base, loss) in shim_by_w.items():
        goal("shim preloaded without a tracer: loss < 1%, from what each interposed call "
             "costs", SHORT.get(w, w),
             f"+{shim.added_ns():.2f} ns a call x {cpq:.2f} calls a query = +{per_query:.1f} ns"
             + ("" if loss is None else f" of {base:.1f} us: loss {loss * 100:.3f}%"),
             None if loss is None else loss < 0.01)
    # The client tracers (issue 22): QPS at 2 threads, the tracer's share of
    # a core, drops at 8 threads and at 200 connections, peak RSS there.
    for cfg, limit in (("client", 0.93), ("run", 0.90)):
        for (w, t) in m.cells:
            r = m.ratio(w, t, cfg)
            if t != 2 or r is None:
                continue
            measured = f"{r:.3f}"
            if cost.cell == (w, t) and cost.extra(cfg, "total"):
                pr = projected(cost_sat, med(cost.extra(cfg, "total")))
                if pr is not None:
                    measured += f" (its CPU per query at a fixed rate projects {pr:.3f})"
            goal(f"`{cfg}`: >= {limit:.2f} of untraced QPS", f"{SHORT.get(w, w)}, {t} threads",
                 measured, r >= limit)
    cpu = m.cpu("oltp_point_select", 2, "client")
    if cpu is not None and seconds > 0:
        us, qps = m.cpu_us("oltp_point_select", 2, "client", "tracer"), m.qps(
            "oltp_point_select", 2, "client")
        goal("`client`: tracer CPU <= 8% of a core", "point_select, 2 threads",
             f"{cpu / seconds * 100:.1f}%"
             + (f" ({us:.2f} us a query at {qps:,.0f} queries/s)" if us and qps else ""),
             cpu / seconds <= 0.08)
    for cfg in ("client", "run"):
        dr = m.drops("oltp_point_select", 8, cfg)
        if dr is not None:
            goal(f"`{cfg}`: zero records dropped, default settings", "point_select, 8 threads",
                 f"{dr} dropped", dr == 0)
    for line in (read_text(d, "memory.txt") or "").splitlines():
        f = line.split()
        if len(f) < 7 or f[0] not in ("client", "run") or f[1] != "200":
            continue
        drops, hwm = num(f[4]), num(f[6])
        if drops is None or hwm is None:
            continue
        goal(f"`{f[0]}`: zero records dropped and tracer RSS <= 64 MiB",
             "point_select, 200 connections", f"{int(drops)} dropped, {hwm / 1024:.1f} MiB",
             drops == 0 and hwm <= 64 * 1024)
    pipe_summary = summarize_pipeline(pipes)
    if pipes["usdt"]:
        best = pipe_summary["usdt_zero_drop"]
        goal(">= 1,000,000 events/s kernel to rendered output, zero drops, one consumer core",
             "USDT producer", f"{best / 1e6:.2f}M/s with zero drops"
             + ("" if pipe_summary["usdt_dropped"] else
                f" (the producer's maximum: {pipe_summary['usdt_max'] / 1e6:.2f}M/s)"),
             best >= 1e6)
    else:
        goal(">= 1,000,000 events/s kernel to rendered output, zero drops, one consumer core",
             "USDT producer", "-", None)
    if any(pipes.values()):
        ex, dropped_steps = pipe_summary["all_exact"], pipe_summary["steps_with_drops"]
        # Exactness is only shown where something was dropped.
        goal("drops counted exactly (fired = delivered + dropped)", "every pipeline step",
             f"{pipe_summary['exact_steps']}/{pipe_summary['steps']} steps exact, "
             f"{dropped_steps} with drops", False if not ex else (True if dropped_steps else None))
    else:
        goal("drops counted exactly (fired = delivered + dropped)", "pipeline", "-", None)
    # Two kinds of recorded session (bench/decoder_bench.cpp): the scenario
    # fixtures (mostly handshakes, one event per ~15 bytes) and the sysbench
    # recordings (one connection's steady state). Each is shown; the goal is
    # met only if both meet it.
    for case, limit in (("decode only", 500), ("decode + render text", 250)):
        dec = decoder_mbs(decoder, case)
        goal(f"decoder >= {limit} MB/s per core", f"{case}, recorded sessions",
             "-" if dec is None else
             f"{dec[1]:.0f} MB/s sysbench recordings, {dec[0]:.0f} MB/s scenario fixtures",
             None if dec is None else min(dec) >= limit)

    p("## Goals")
    p("")
    p("Ratios are medians over rounds of each configuration's QPS divided by the untraced "
      "baseline's QPS in the same round; loss = 1 - ratio.")
    p("")
    p("| goal | where | measured | result |")
    p("|---|---|---|---|")
    for g in goals:
        p(f"| {g[0]} | {g[1]} | {g[2]} | {g[3]} |")
    p("")

    # ---------------- method ----------------
    p("## Method")
    p("")
    cells = meta.get("cells", "").split()
    p(f"- Matrix **{meta.get('matrix')}**: cells (workload:threads) {', '.join(cells) or '-'}; "
      f"configurations {', '.join(meta.get('configs', '').split())}; "
      f"{meta.get('rounds')} round(s) of {meta.get('seconds')} s per run.")
    p("- Servers: throwaway `mariadbd` instances of the same binary "
      "(`scripts/mariadb-sandbox.sh`): performance_schema OFF (untraced and every mysqltrace "
      "configuration), ON with statement and stage instruments and consumers only, and ON with "
      "every instrument and consumer. sysbench over the unix socket, 1 table x 10,000 rows, "
      "a 1 s warm-up of each workload on each server first.")
    if meta.get("mysql_cells"):
        p(f"- MySQL 9.7: cells {', '.join(meta['mysql_cells'].split())}; configurations "
          f"{', '.join(meta.get('mysql_configs', '').split())}; the same rounds and seconds, run "
          "after the matrix against throwaway `mysqld` instances from a Debian sid chroot "
          "(`scripts/mysql-sandbox.sh`, started from the host), set up as the MariaDB ones.")
    p("- In each round every cell runs every configuration once, in an order rotated from "
      "round to round (A/B/A/B...). Each QPS is divided by the untraced QPS of the same cell and "
      "round; the tables give the median and min-max of these ratios over rounds, and the "
      "median absolute QPS. Tracer CPU is the tracer process's user+system time during the "
      "sysbench run (`run`: its whole life), in % of one core.")
    p("- Pipeline: `bench/pipeline_bench rate` (selftest BPF object, RingSet, the trace loop, "
      "one rendered text line per event to /dev/null; producer and consumer pinned to "
      "different CPUs), stepping the rate up; the BPF side counts every failed reserve.")
    p("- Per-probe cost: `bench/pipeline_bench probe-cost` (firing thread's CPU time per hit, "
      "minus the same loop unprobed) and, per configuration, kernel BPF statistics (run_cnt, "
      "run_time_ns of the tracer's programs) over an untimed sysbench run.")
    if cost.cell:
        p("- CPU per query at a fixed rate: sysbench `--rate` at a share of the untraced rate, "
          "each configuration next to an untraced run in every round; the server's, sysbench's "
          "and the tracer's CPU time (utime+stime of each process, which the kernel keeps "
          "exact) and the machine's busy ticks (/proc/stat) over sysbench's run, per query.")
    if shim.by_case:
        p("- Idle shim: `bench/shim_idle_bench` (each kind of interposed call against a "
          "stand-in that returns at once, the fastest of 7 runs of "
          f"{meta.get('shim_calls_per_case', '?')} calls) without and with "
          "`LD_PRELOAD=libmysqltrace-shim.so`, alternated; the interposed calls a query makes "
          "counted by `mysqltrace calls` on the shim's functions in a preloaded sysbench "
          "(every call, over the top-level calls that send a query).")
    p("- Memory: VmHWM of the tracer process, sampled every 0.1 s, with sysbench "
      "oltp_point_select at 1 and 200 threads (connections).")
    p("- Commands (as root, after a build; `bench/perf-report.sh --help`):")
    p("  - standard (~45 min): `cmake --build build --target bench`, i.e. "
      "`bench/perf-report.sh --build build --matrix standard`")
    p("  - full (~100 min): `cmake --build build --target bench-full`, i.e. "
      "`bench/perf-report.sh --build build --matrix full`")
    p("  - smoke (~2-3 min; CI; writes no report unless `--write`): `bench/run.sh --smoke`")
    p("")

    # ---------------- matrix ----------------
    if m.cells:
        p("## What tracing costs the traced (sysbench QPS ratio to untraced)")
        p("")
        for (w, t) in m.cells:
            base = m.qps(w, t, "baseline")
            bq = [v[0] for v in m.runs.get((w, t, "baseline"), {}).values()]
            p(f"### {w}, {t} thread{'s' if t != 1 else ''}")
            p("")
            if base:
                p(f"Untraced: median {base:.0f} QPS (min-max {min(bq):.0f}-{max(bq):.0f}).")
                p("")
            cell_table(p, m, w, t, seconds)

    # ---------------- CPU per query at a fixed rate ----------------
    if cost.cell:
        w, t = cost.cell
        p("## What tracing costs in CPU (per query, at a fixed rate)")
        p("")
        p(f"{w}, {t} thread{'s' if t != 1 else ''}, sysbench held at {meta.get('cost_rate')} "
          f"events/s ({meta.get('cost_load', '?')} of the untraced server's rate just before), "
          f"{meta.get('cost_seconds')} s per run. Each configuration ran right next to an "
          "untraced run, in every round; the extra CPU is the difference of the two, per "
          "query, median and min-max over rounds. Server, client (sysbench) and tracer are "
          "each process's exact CPU time (traps and BPF programs count in the process that "
          "hit them); the whole machine's busy time is sampled at each clock tick and also "
          "counts kernel threads and this harness. The projected ratio is what share of "
          "untraced QPS that extra CPU leaves where CPU is the limit: untraced server + client "
          "CPU per query at full speed"
          + (f" ({cost_sat:.2f} us, in the run that set the rate)" if cost_sat else "")
          + " over itself plus the extra. It leaves out what the saturated matrix above also "
          "feels (a trap's latency, a reader thread competing for the 2 CPUs), so it is an "
          "upper bound of that matrix's ratio, with less of its +-15 point swing from round to "
          "round (read a median of 3 rounds as +-1 us). Each column is its own median, so "
          "the parts need not add up to the total. QPS held below 1.00: the configuration "
          "could not keep up with the rate.")
        p("")
        cost_table(p, cost, cost_sat)

    # ---------------- the idle shim ----------------
    if shim.by_case:
        p("## The idle shim: what each interposed call costs")
        p("")
        p("With no tracer attached, each call libmysqltrace-shim.so interposes should cost a "
          "semaphore check and nothing more. `bench/shim_idle_bench` times each kind against a "
          "stand-in that returns at once, without and with the shim preloaded (median over "
          "the runs of the fastest of 7); `mysqltrace calls` counts how many interposed calls "
          "a sysbench query makes. The loss is the dearest kind's added time, times the calls "
          "a query makes, over an untraced query's CPU (server + sysbench, the matrix's "
          "untraced runs): where saturated QPS swings by +-10 points, this is the shim's "
          "share exactly.")
        p("")
        p("| interposed call | without the shim | with it, no tracer | added |")
        p("|---|---|---|---|")
        for c, (a, b, x) in shim.by_case.items():
            p(f"| `{c}` | {a:.2f} ns | {b:.2f} ns | {x:+.2f} ns |")
        p("")
        if shim.per_query:
            p("| workload | interposed calls a query | added a query | untraced CPU a query | "
              "loss |")
            p("|---|---|---|---|---|")
            for w, (calls, queries) in shim.per_query.items():
                r = shim_by_w.get(w)
                if r is None:
                    continue
                cpq, per_query, base, loss = r
                p(f"| {SHORT.get(w, w)} | {cpq:.2f} ({calls} calls, {queries} queries) | "
                  f"{per_query:+.1f} ns | {'-' if base is None else f'{base:.1f} us'} | "
                  f"{'-' if loss is None else f'{loss * 100:.3f}%'} |")
            p("")

    # ---------------- MySQL 9.7 ----------------
    if my.cells or meta.get("mysql_tracer_error"):
        p("## MySQL 9.7: what tracing costs Oracle's server (QPS ratio to its own untraced)")
        p("")
        p(f"`{meta.get('mysqld', 'mysqld')}` from Debian sid (`scripts/mysql-sandbox.sh`), the "
          "same sysbench runs as above; every ratio is to this server's own untraced QPS "
          "(performance_schema OFF) in the same round.")
        p("")
        if meta.get("mysql_tracer_error"):
            p("`mysqltrace server` could not trace this mysqld, so its configurations did not "
              f"run: `{meta['mysql_tracer_error']}`")
            p("")
        for (w, t) in my.cells:
            base = my.qps(w, t, "baseline")
            p(f"### MySQL 9.7: {w}, {t} thread{'s' if t != 1 else ''}")
            p("")
            if base:
                bq = [v[0] for v in my.runs.get((w, t, "baseline"), {}).values()]
                p(f"Untraced: median {base:.0f} QPS (min-max {min(bq):.0f}-{max(bq):.0f}).")
                p("")
            cell_table(p, my, w, t, seconds)

    # ---------------- per-probe cost ----------------
    hits = load_hits(d)
    derived = {}  # config -> per-query decomposition, for the why section
    if probes or hits:
        p("## Per-probe cost vs the uprobe floor")
        p("")
        floor = None
        if probes:
            floor = probes.get("uprobe_floor", {}).get("ns")
            p(f"Measured in this run on one CPU ({probes.get('hits')} hits x {probes.get('reps')}, "
              "median; the firing thread's CPU time per hit minus the same loop unprobed). "
              "The floor is a uprobe on an emulated `push %rbp` whose program returns at once "
              "(shared/FACTS.md section 2: 0.55-0.8 us on the project's VM).")
            p("")
            p("| probe | ns per hit | x uprobe floor |")
            p("|---|---|---|")
            for k in ("uprobe_floor", "uprobe_record", "usdt_floor", "usdt_record",
                      "syscall_floor", "syscall_record"):
                v = probes.get(k)
                if v:
                    x = v["ns"] / floor if floor else 0
                    p(f"| {v['what']}{'' if v.get('complete', True) else ' (records lost)'} | "
                      f"{v['ns']:.0f} | {x:.2f} |")
            if "syscall_ns" in probes:
                x = probes["syscall_ns"] / floor if floor else 0
                p(f"| plain getppid syscall, for scale | {probes['syscall_ns']:.0f} | {x:.2f} |")
            p("")
        side = meta.get("side_cell", "")
        if hits and ":" in side:
            sw, st = side.split(":")
            st = int(st)
            p(f"mysqltrace's own probes under load ({SHORT.get(sw, sw)}, {st} threads). Program "
              "runs per query from kernel BPF statistics (an untimed run: the statistics cost a "
              "little per run), split into uprobe/USDT hits (each one a trap) and other programs "
              "(tracepoints, which also run for other processes: `client`'s per-syscall ones for "
              "the socket calls of every process, `--waits`' raw ones for every syscall on the "
              "machine; and the sampling timer). The extra time per query comes from the matrix above: "
              "min(threads, CPUs) x (1/QPS - 1/untraced QPS). It is split into the traps at the "
              "uprobe floor's cost, the programs' own run time, the tracer's own CPU per query "
              "in the same matrix runs (its utime+stime), and the rest (wakeups, cache effects, "
              "a dearer trap under load, and the noise of the QPS ratio).")
            p("")
            p("| configuration | uprobe hits per query | other program runs per query | "
              "extra us per query | traps at floor cost | BPF programs | BPF ns per query | "
              "tracer CPU | rest |")
            p("|---|---|---|---|---|---|---|---|---|")
            base = m.qps(sw, st, "baseline")
            for c in ORDER:
                h = hits.get(c)
                if not h or not h["queries"]:
                    continue
                up_q = h["uprobe_runs"] / h["queries"]
                other_q = (h["runs"] - h["uprobe_runs"]) / h["queries"]
                bpf_us = h["ns"] / h["queries"] / 1000
                r = m.ratio(sw, st, c)
                extra = None
                if base and r:
                    extra = min(st, ncpu) * (1 / (base * r) - 1 / base) * 1e6
                trap_us = up_q * floor / 1000 if floor else None
                tracer_us = m.cpu_us(sw, st, c, "tracer")
                rest = (extra - trap_us - bpf_us - (tracer_us or 0)
                        if extra is not None and trap_us is not None else None)
                derived[c] = {"up_q": up_q, "other_q": other_q, "bpf_us": bpf_us,
                              "extra": extra, "trap_us": trap_us, "tracer_us": tracer_us,
                              "rest": rest}
                p(f"| {NAMES[c]} | {up_q:.1f} | {other_q:.1f} | {fmt(extra, 1)} | "
                  f"{fmt(trap_us, 1)} | {bpf_us:.1f} | {bpf_us * 1000:.0f} | "
                  f"{fmt(tracer_us, 1)} | {fmt(rest, 1)} |")
            p("")
            t, s = derived.get("table-io"), derived.get("statements")
            if t and s and t["extra"] is not None and s["extra"] is not None:
                # Each row adds an entry and a return probe to the statement's two.
                rows_q = (t["up_q"] - s["up_q"]) / 2
                if rows_q > 0:
                    p(f"`--table-io` cost per row: {rows_q:.1f} rows per query (handler calls: "
                      f"half the extra uprobe hits), "
                      f"{(t['extra'] - s['extra']) / rows_q:.1f} us per row on top of statements "
                      f"only, of which {(t['bpf_us'] - s['bpf_us']) / rows_q:.2f} us in its BPF "
                      "programs.")
                    p("")

    # ---------------- CPU per query at saturation ----------------
    side = meta.get("side_cell", "")
    if ":" in side:
        sw, st = side.split(":")
        saturated_cpu_table(p, m, sw, int(st))

    # ---------------- pipeline ----------------
    if any(pipes.values()):
        p("## Pipeline limits")
        p("")
        p("A producer process fires a probe at a controlled rate on one CPU; the consumer "
          "(RingSet + trace loop + one rendered text line per event to /dev/null) runs on "
          "another. `fired = delivered + dropped` is checked per step, and the sequence numbers "
          "of the delivered events are checked for gaps (which must equal the drops).")
        p("")
        titles = {"usdt": "USDT probe (1-byte nop site), 4 MiB ring per CPU",
                  "syscall": "getppid under the sys_enter raw tracepoint (a cheaper producer "
                             "than a trap), 4 MiB ring per CPU",
                  "overload": "overload: USDT, unthrottled, 16 KiB rings (below the 64 KiB "
                              "wakeup threshold: drained only on the loop's 100 ms tick)"}
        for s in ("usdt", "syscall", "overload"):
            j = pipes[s]
            if not j:
                continue
            p(f"### {titles[s]}")
            p("")
            p("| target/s | achieved/s | fired | delivered | dropped | exact | consumer CPU |")
            p("|---|---|---|---|---|---|---|")
            for st in j["steps"]:
                tgt = "max" if st["target"] == 0 else f"{st['target'] / 1e3:.0f}k"
                p(f"| {tgt} | {st['rate'] / 1e3:.0f}k | {st['fired']} | {st['delivered']} | "
                  f"{st['dropped']} | {'yes' if st['exact'] else 'NO'} | "
                  f"{st['consumer_cpu_pct']:.0f}% |")
            p("")
        for line in pipe_summary["notes"]:
            p(f"- {line}")
        p("")

    if decoder:
        p("## Decoder throughput (one core)")
        p("")
        p(decoder.strip())
        p("")

    mem = read_text(d, "memory.txt")
    if mem:
        p("## Memory: the tracer's peak RSS")
        p("")
        p("sysbench oltp_point_select with 1 and 200 threads, one connection each, "
          f"{meta.get('mem_seconds', '?')} s.")
        p("")
        p("| tracer | connections | peak RSS (VmHWM) | sysbench QPS | records dropped |")
        p("|---|---|---|---|---|")
        for line in mem.splitlines():
            f = line.split()
            if len(f) < 7:
                continue
            cfg, conns, qps, drops, hwm = f[0], f[1], float(f[2]), f[4], num(f[6])
            p(f"| {NAMES.get(cfg, cfg)} | {conns} | "
              f"{'-' if hwm is None else f'{hwm / 1024:.1f} MiB'} | {qps:.0f} | {drops} |")
        p("")

    # ---------------- why ----------------
    p("## Why goals are missed: profiles")
    p("")
    missed = [g for g in goals if "NOT MET" in g[3]]
    if not missed:
        p("Every measured goal is met.")
        p("")
    else:
        p("Not met: " + "; ".join(f"{g[0]} ({g[1]})" for g in missed) + ".")
        p("")
    why_lines(p, m, meta, seconds, pipe_summary, probes, derived)
    prof = os.path.join(d, "profile")
    run = read_text(prof, "run.txt")
    if read_text(prof, "perf-unavailable.txt"):
        p("`perf record` does not work on this machine: no system profile.")
        p("")
    elif run:
        f = run.split()
        p(f"`perf record -e cpu-clock -a` while `mysqltrace server --stages off` traced "
          f"{f[1]} ({float(f[2]):.0f} QPS in that run). Share of all CPU samples by process:")
        p("")
        for name, title in (("by-comm.txt", None),
                            ("mysqltrace.txt", "Top of the tracer process (dso, symbol):"),
                            ("mariadbd.txt", "Top of the server process (dso, symbol):")):
            txt = read_text(prof, name)
            if not txt or not txt.strip():
                continue
            if title:
                p(title)
                p("")
            p("```")
            p(txt.rstrip())
            p("```")
            p("")
    trap = trap_share(read_text(prof, "mariadbd-kernel.txt"), read_text(prof, "by-comm.txt"))
    if trap:
        p(trap)
        p("")
    cg = callgrind_summary(prof, decoder)
    if cg:
        p(cg)
        p("")
    top = callgrind_top(read_text(prof, "cg.top.txt") or "")
    if top:
        p("Where the decoder's instructions go (callgrind, own instructions):")
        p("")
        p("| share | function |")
        p("|---|---|")
        for row in top[:12]:
            p(row)
        p("")
    sys.stdout.write("\n".join(out) + "\n")


def fmt(x, digits):
    return "-" if x is None else f"{x:.{digits}f}"


def load_hits(d):
    text = read_text(d, "hits.txt")
    if not text:
        return {}
    res = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 3:
            continue
        c = f[0]
        a, b = read_json(d, f"hits.{c}.ps0"), read_json(d, f"hits.{c}.ps1")
        if not a or not b:
            continue
        res[c] = {"queries": int(f[2]), "runs": b["run_cnt"] - a["run_cnt"],
                  "ns": b["run_time_ns"] - a["run_time_ns"],
                  "uprobe_runs": b.get("uprobe_run_cnt", 0) - a.get("uprobe_run_cnt", 0)}
    return res


def summarize_pipeline(pipes):
    s = {"usdt_zero_drop": 0, "usdt_max": 0, "usdt_dropped": False, "all_exact": True,
         "steps": 0, "exact_steps": 0, "steps_with_drops": 0, "notes": []}
    for name, j in pipes.items():
        if not j:
            continue
        zero = 0
        for st in j["steps"]:
            s["steps"] += 1
            s["exact_steps"] += 1 if st["exact"] else 0
            s["all_exact"] &= bool(st["exact"])
            if st["dropped"]:
                s["steps_with_drops"] += 1
            elif st["exact"]:
                zero = max(zero, st["delivered"] / st["seconds"] if st["seconds"] else 0)
        top = max((st["rate"] for st in j["steps"]), default=0)
        cpu_at_top = max((st["consumer_cpu_pct"] for st in j["steps"]), default=0)
        drops = any(st["dropped"] for st in j["steps"])
        if name == "usdt":
            s["usdt_zero_drop"], s["usdt_max"], s["usdt_dropped"] = zero, top, drops
        if name in ("usdt", "syscall"):
            if drops:
                s["notes"].append(f"{name}: highest rate with zero drops {zero / 1e6:.2f}M/s; "
                                  "above it the consumer falls behind and drops are counted.")
            else:
                s["notes"].append(f"{name}: no drops at any rate; the producer topped out at "
                                  f"{top / 1e6:.2f}M/s (one CPU firing probes), the consumer "
                                  f"used at most {cpu_at_top:.0f}% of its core: the producer, "
                                  "not the pipeline, was the limit.")
        if name == "overload":
            st = j["steps"][0] if j["steps"] else None
            if st:
                s["notes"].append(
                    f"overload: {st['fired']} fired = {st['delivered']} delivered + "
                    f"{st['dropped']} dropped: {'exact' if st['exact'] else 'NOT exact'}.")
    return s


def decoder_mbs(text, case="decode only"):
    """(scenario fixtures, sysbench recordings) MB/s of one case's row."""
    if not text:
        return None
    mt = re.search(r"\|\s*" + re.escape(case) +
                   r"\s*\|\s*([0-9.]+)\s*\|\s*[0-9.]+\s*\|\s*([0-9.]+)\s*\|", text)
    return (float(mt.group(1)), float(mt.group(2))) if mt else None


def ncpu_of(meta):
    try:
        return int(meta.get("cpus", "2") or 2)
    except ValueError:
        return 2


def why_lines(p, m, meta, seconds, pipe, probes, derived):
    side = meta.get("side_cell", "")
    lines = []
    if ":" in side and m.cells and seconds > 0:
        w, t = side.split(":")
        t = int(t)
        cpus = []
        for c in ("statements", "sampled", "waits", "exact", "client", "run"):
            cpu = m.cpu(w, t, c)
            if cpu is not None:
                cpus.append(f"{c} {cpu / seconds * 100:.0f}%")
        if cpus:
            lines.append(f"Tracer CPU on {SHORT.get(w, w)} at {t} threads, in % of one core "
                         f"(the machine has {meta.get('cpus', '?')}): " + ", ".join(cpus) +
                         ". On a saturated machine the tracer's CPU comes out of the server's "
                         "and the client's.")
    if probes and probes.get("uprobe_floor"):
        fl = probes["uprobe_floor"]["ns"]
        rec = probes.get("uprobe_record", {}).get("ns")
        lines.append(f"One uprobe hit costs {fl:.0f} ns here with an empty program"
                     + (f", {rec:.0f} ns writing one record" if rec else "")
                     + ": every probe a statement passes adds at least that much to it.")
    for c in ("statements", "sampled", "waits", "exact"):
        v = derived.get(c)
        if not v or v["extra"] is None:
            continue
        txt = f"`{c}` costs {v['extra']:.1f} us per query: {v['up_q']:.1f} traps"
        if v["trap_us"] is not None:
            txt += f" ({v['trap_us']:.1f} us at the uprobe floor's cost)"
        if v["other_q"] >= 0.05:
            txt += f", {v['other_q']:.1f} other program runs"
        txt += f", {v['bpf_us']:.1f} us in BPF programs"
        if v["tracer_us"] is not None:
            txt += f", {v['tracer_us']:.1f} us the tracer's own CPU"
        txt += "." if v["rest"] is None else f", {v['rest']:.1f} us the rest."
        lines.append(txt)
    st = derived.get("statements")
    if ":" in side and st and st["trap_us"]:
        w, t = side.split(":")
        base = m.qps(w, int(t), "baseline")
        if base:
            # The machine's time per untraced query, over all the CPUs it used.
            per_q = min(int(t), ncpu_of(meta)) / base * 1e6
            allowed = per_q * 0.05 / 0.95
            lines.append(f"An untraced query takes {per_q:.1f} us of the machine here "
                         f"({SHORT.get(w, w)}, {t} threads): a 5% loss allows {allowed:.2f} us "
                         f"more per query, and `statements`' {st['up_q']:.0f} traps alone cost "
                         f"{st['trap_us']:.2f} us at the uprobe floor (a "
                         f"{st['trap_us'] / (per_q + st['trap_us']) * 100:.1f}% loss by "
                         "themselves)" +
                         (": the goal cannot be met on this machine with those traps, whatever "
                          "the rest costs." if st["trap_us"] >= allowed else
                          f": everything else may cost {allowed - st['trap_us']:.2f} us."))
    dropped = sorted({c for (w, t, c) in m.runs if (m.drops(w, t, c) or 0) > 0},
                     key=ORDER.index)
    if dropped:
        lines.append("Records were dropped (and counted) in some runs of " +
                     ", ".join(f"`{c}`" for c in dropped) + ": where the traced programs keep "
                     "every CPU busy, the reader falls behind faster than raising its priority "
                     "lets it catch up, and the rings, rather than the traced programs, give "
                     "way. A larger `--ring-kib` gives it longer to catch up.")
    if not pipe["usdt_dropped"] and pipe["usdt_max"] and pipe["usdt_max"] < 1e6:
        lines.append(f"The USDT producer could fire only {pipe['usdt_max'] / 1e6:.2f}M/s on "
                     "one CPU (the trap cost bounds it), so the 1M/s goal cannot be reached "
                     "with a single USDT producer here; see the syscall-tracepoint producer "
                     "for the pipeline's own capacity.")
    for line in lines:
        p(f"- {line}")
    if lines:
        p("")


def callgrind_summary(prof, decoder):
    ir, md = read_text(prof, "cg.ir"), read_text(prof, "cg.md") or ""
    mt = re.search(r"totals: (\d+) passes, (\d+) bytes, (\d+) events", md)
    if not ir or not ir.strip() or not mt:
        return None
    total = int(ir.split()[0])
    passes, nbytes, events = (int(x) for x in mt.groups())
    if nbytes <= 0:
        return None
    s = (f"callgrind, decoding only ({passes} passes over both kinds of recorded session, "
         f"{nbytes // passes} bytes and {events // passes} events per pass): "
         f"{total / nbytes:.0f} instructions per wire byte, "
         f"{total / events if events else 0:.0f} per event. ")
    s += ("500 MB/s on one core leaves a few instructions per byte (about 6 cycles at 3 GHz); "
          "these sessions carry one event per "
          f"{nbytes / events if events else 0:.0f} bytes (the scenario fixtures one per 15), "
          "so the per-event cost decides.")
    return s


# Kernel functions that run because a uprobe trapped or a BPF program ran.
TRAP_SYMS = re.compile(r"uprobe|int3|swbp|bpf|exc_debug|single_?step|handle_bp|"
                       r"notify_die|xol|utask|uretprobe")


def trap_share(kernel, by_comm):
    if not kernel:
        return None
    total = trapped = 0.0
    names = {}
    for line in kernel.splitlines():
        mt = re.match(r"^\s*([\d.]+)%\s+\[k\]\s+(\S+)", line)
        if not mt:
            continue
        share = float(mt.group(1))
        total += share
        if TRAP_SYMS.search(mt.group(2)):
            trapped += share
            names[mt.group(2)] = names.get(mt.group(2), 0) + share
    server = None
    for line in (by_comm or "").splitlines():
        mt = re.match(r"^\s*([\d.]+)%\s+mariadbd\s*$", line)
        if mt:
            server = float(mt.group(1))
    top = ", ".join(f"`{n}` {v:.1f}%" for n, v in
                    sorted(names.items(), key=lambda kv: -kv[1])[:5])
    s = (f"In the server's threads, kernel functions of uprobe handling and BPF took "
         f"{trapped:.1f}% of all CPU samples" + (f" (the server had {server:.1f}%)" if server
                                                else "") + f"; all kernel time there {total:.1f}%.")
    if top:
        s += f" Largest: {top}."
    return s


def callgrind_top(text):
    rows = []
    for line in text.splitlines():
        mt = re.match(r"^\s*([\d,]+)\s+\(\s*([\d.]+)%\)\s+(.*?)(?:\s+\[[^\]]*\])?$", line)
        if not mt or "PROGRAM TOTALS" in line:
            continue
        fn = mt.group(3)
        obj = re.search(r"\[([^\]]*)\]\s*$", line)
        # "file:function": keep the function.
        head, sep, tail = fn.partition(":")
        if sep and ("/" in head or head.startswith("???") or head.endswith((".c", ".h", ".cpp", ".S", ".tcc"))):
            fn = tail
        if fn.startswith("0x") and obj:
            fn += " in " + os.path.basename(obj.group(1))
        if len(fn) > 110:
            fn = fn[:107] + "..."
        rows.append(f"| {mt.group(2)}% | `{fn}` |")
    return rows


if __name__ == "__main__":
    main()
