// SPDX-License-Identifier: GPL-2.0-only
// Server side: stages, exact (a probe per stage site) or sampled (a CPU
// timer), and the scheduler's switch tracepoint that keeps CPU time.
//
// Part of server.bpf.c, which includes it after server_commands.bpf.h: it uses
// server.bpf.c's inputs, struct thread_state and helpers, and is not a
// standalone header.
#pragma once

static __always_inline __u64 current_stage(struct thread_state *st) {
    return read_u64(st->thd, off_proc_info);
}

// MySQL's THD::enter_stage(new, old, func, file, line) outside a command:
// keeps its "starting" mark for the command about to begin (begin_command).
static __always_inline void keep_starting_mark(struct pt_regs *ctx, struct thread_state *st,
                                               __u32 site) {
    __u64 info = PT_REGS_PARM2(ctx);
    __u64 thd = PT_REGS_PARM1(ctx);
    __u64 file = PT_REGS_PARM5(ctx);
    __u64 line = ctx->r9;

    barrier_var(info);
    barrier_var(thd);
    barrier_var(file);
    barrier_var(line);
    if (!info || read_u64((void *)info, 8) != starting_stage_name)
        return;
    if (!st)
        st = state_of(1);  // a connection's first command
    if (!st)
        return;
    st->pre_thd = thd;
    st->pre.ts_ns = bpf_ktime_get_ns();
    st->pre.site = site;
    st->pre.stage = starting_stage_name;
    st->pre.file = file;
    st->pre.line = (__u32)line;
}

// Exact stages: one probe per stage site, the site's index as attach cookie.
SEC("uprobe")
int server_stage(struct pt_regs *ctx) {
    struct thread_state *st;
    struct mt_stage_mark *m;
    __u64 stage = 0, now;
    __u32 n, site;

    if (!traced() || !exact_stages)
        return 0;
    site = (__u32)bpf_get_attach_cookie(ctx);
    st = state_of(0);
    if (!st || !st->active) {
        if (site >= stage_call_site && starting_stage_name)
            keep_starting_mark(ctx, st, site);
        return 0;
    }
    if (site >= cond_site) {
        // Two plain loads: clang may not merge them into one ctx access at
        // a computed offset, which the verifier refuses.
        __u64 arg2 = PT_REGS_PARM2(ctx);
        __u64 arg4 = PT_REGS_PARM4(ctx);
        __u64 info;

        barrier_var(arg2);
        barrier_var(arg4);
        info = site >= exit_cond_site ? arg2 : arg4;

        if (!info)
            return 0;                       // no stage change
        stage = read_u64((void *)info, 8);  // PSI_stage_info::m_name
        if (!stage)
            return 0;
    } else if (site >= first_dynamic_site) {
        // Restoring a saved stage that had no name leaves no stage, as
        // SHOW PROFILE also skips it.
        stage = current_stage(st);
        if (!stage)
            return 0;
    }
    n = st->ev.n_stages;
    if (n >= MT_MAX_STAGES) {
        st->ev.stages_lost++;
        if (st->end_pending && stage == cleanup_stage_name)
            finish_command(st, st->end_flags);
        return 0;
    }
    now = bpf_ktime_get_ns();
    m = &st->stages[n];
    m->ts_ns = now;
    m->site = site;
    m->stage = stage;
    m->line = 0;
    m->file = 0;
    if (site >= stage_call_site) {
        __u64 file = PT_REGS_PARM5(ctx);
        __u64 line = ctx->r9;  // argument 6 (this libbpf has no PT_REGS_PARM6)

        barrier_var(file);
        barrier_var(line);
        m->file = file;
        m->line = (__u32)line;
    }
    read_counters(st, &m->c, now);
    st->ev.n_stages = n + 1;
    if (st->end_pending && stage == cleanup_stage_name)
        finish_command(st, st->end_flags);
    return 0;
}

// Sampled stages: credit `stage` of the running statement.
static __always_inline void credit(struct thread_state *st, __u64 stage, __u32 on_cpu,
                                   __u64 off_cpu_ns) {
    for (int i = 0; i < MT_STAGE_SLOTS; i++) {
        struct mt_stage_samples *s = &st->samples[i];

        if (i >= st->ev.n_samples) {
            // A slot not used yet by this statement.
            s->stage = stage;
            s->on_cpu = 0;
            s->switches = 0;
            s->off_cpu_ns = 0;
            st->ev.n_samples = i + 1;
        } else if (s->stage != stage) {
            continue;
        }
        s->on_cpu += on_cpu;
        if (off_cpu_ns) {
            s->switches++;
            s->off_cpu_ns += off_cpu_ns;
        }
        return;
    }
    st->ev.samples_lost++;
}

SEC("perf_event")
int server_sample(void *ctx) {
    struct thread_state *st;

    if (!sampled_stages || !traced())
        return 0;
    st = state_of(0);
    if (st && (st->active || (onepass && onepass_resync(st))))
        credit(st, current_stage(st), 1, 0);
    return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(server_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
    struct thread_state *st;
    __u64 now;

    if (prev->tgid != target_tgid && next->tgid != target_tgid)
        return 0;
    now = bpf_ktime_get_ns();
    if (prev->tgid == target_tgid) {
        st = bpf_task_storage_get(&threads, prev, 0, 0);
        if (st) {
            if (st->on_since)
                st->cpu_acc += now - st->on_since;
            st->on_since = 0;
            // Still in prev's address space: its stage can be read.
            if (sampled_stages && (st->active || (onepass && onepass_resync(st)))) {
                st->off_cpu_since = now;
                st->off_cpu_stage = current_stage(st);
            }
        }
    }
    if (next->tgid == target_tgid) {
        st = bpf_task_storage_get(&threads, next, 0, 0);
        if (st) {
            st->on_since = now;
            if ((st->active || onepass) && st->off_cpu_since) {
                credit(st, st->off_cpu_stage, 0, now - st->off_cpu_since);
                st->off_cpu_since = 0;
            }
        }
    }
    return 0;
}
