// SPDX-License-Identifier: GPL-2.0-only
#include "agent/traced_server.h"

#include <unistd.h>

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <tuple>

#include "bpf/ring_set.h"
#include "doctor/trace_plan.h"
#include "server/hooks.h"
#include "sql/redact.h"
#include "trace/trace_loop.h"

namespace mysqltrace::agent {

namespace {

std::string keep_safe(std::string s) {
    for (char &c : s) {
        if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '_' && c != '@' &&
            c != '-') {
            c = '_';
        }
    }
    return s;
}

std::string or_dash(const std::string &s) {
    return s.empty() ? "-" : s;
}

// A directory of ours: made 0750, or already there and not a symlink.
Result<void> make_dir(const std::string &path) {
    if (::mkdir(path.c_str(), 0750) != 0 && errno != EEXIST) {
        return make_error(errno, "cannot create " + path);
    }
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        return make_error(errno, "cannot stat " + path);
    }
    if (!S_ISDIR(st.st_mode)) {
        return Error{ENOTDIR, path + " exists and is not a directory"};
    }
    return {};
}

}  // namespace

std::string server_dir_name(const ServerLabels &l) {
    std::string name;
    const auto &p = l.process;
    if (p.cgroup.container) {
        name = p.cgroup.container->runtime + "-" + p.cgroup.container->id.substr(0, 12) + "-";
    } else if (!p.cgroup.unit.empty()) {
        name = p.cgroup.unit + "-";
    }
    name += l.flavour + "-";
    if (!p.ports.empty()) {
        name += std::to_string(p.ports.front());
    } else if (!p.sockets.empty()) {
        const auto &s = p.sockets.front();
        name += "sock-" + s.substr(s.rfind('/') + 1);
    } else {
        name += "pid" + std::to_string(p.id.pid);
    }
    return keep_safe(name);
}

std::string describe(const ServerLabels &l) {
    const auto &p = l.process;
    std::string ports, sockets;
    for (auto port : p.ports) {
        ports += (ports.empty() ? "" : ",") + std::to_string(port);
    }
    for (const auto &s : p.sockets) {
        sockets += (sockets.empty() ? "" : ",") + s;
    }
    std::string container = "-";
    if (p.cgroup.container) {
        container = p.cgroup.container->runtime + ":" + p.cgroup.container->id;
    }
    return "pid=" + std::to_string(p.id.pid) + " flavour=" + l.flavour +
           " version=" + or_dash(l.version) + " port=" + or_dash(ports) +
           " socket=" + or_dash(sockets) + " cgroup=" + or_dash(p.cgroup.path) +
           " unit=" + or_dash(p.cgroup.unit) + " container=" + container;
}

Result<ResolvedServer> resolve_traced_server(const ProcessLabels &labels) {
    const pid_t pid = labels.id.pid;
    auto target = server::resolve_server(pid);
    if (!target) {
        return target.error();
    }
    ServerLabels sl;
    sl.process = labels;
    sl.version = server::server_version(*target->file, pid, target->load_bias);
    sl.flavour = doctor::server_flavour(target->profile, sl.version);
    for (char &c : sl.flavour) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return ResolvedServer{std::move(sl), std::move(target).value()};
}

Result<std::unique_ptr<TracedServer>> TracedServer::start(ServerLabels labels,
                                                          server::ServerTarget target,
                                                          const TracedServerOptions &opts,
                                                          std::vector<std::string> &notes,
                                                          const TracedServer *before) {
    std::unique_ptr<TracedServer> s(new TracedServer());
    s->labels_ = std::move(labels);
    s->target_ = std::make_unique<server::ServerTarget>(std::move(target));
    s->show_secrets_ = opts.show_secrets;
    const pid_t pid = s->labels_.process.id.pid;
    if (opts.json || opts.slowlog) {
        s->dir_ = opts.output_dir + "/" + server_dir_name(s->labels_);
        if (auto made = make_dir(s->dir_); !made) {
            return made.error();
        }
    }
    auto plan = doctor::plan_trace(*s->target_, opts.stages, pid);
    notes = plan.notes;
    TracedServer *self = s.get();
    s->render_ = std::make_unique<output::ServerRenderer>(
        output::ServerFormat::json, static_cast<uint32_t>(pid), s->target_->stages,
        [self](uint64_t addr) { return self->stage_name(addr); });
    s->stats_ = std::make_unique<output::StatementStats>(
        opts.max_classes, [self](uint64_t addr) { return self->stage_name(addr); });
    server::StatementTracerOptions to;
    to.max_sql = opts.max_sql;
    to.stages = plan.stages;
    to.ring.bytes_per_cpu = opts.ring_bytes_per_cpu;
    to.show_secrets = opts.show_secrets;
    to.memory = opts.json;
    // The slow log's User@Host and the statement classes' account (sent
    // once per connection); the slow log alone prints an EXECUTE with its
    // values, as the server's own slow log does.
    to.accounts = true;
    to.prepared_text = opts.json;
    if (opts.locks) {
        s->locks_ = std::make_unique<server::LockTracker>(
            s->target_->profile == server::ServerProfile::mysql8,
            [self](uint64_t addr) { return self->stage_name(addr); });
        to.locks = true;
        to.lock_records = [self](std::span<const uint8_t> rec) { self->locks_->on_record(rec); };
    }
    auto tracer = server::StatementTracer::attach(
        *s->target_, to, [self](const server::Statement &st) { self->on_statement(st); });
    if (!tracer) {
        return tracer.error();
    }
    s->tracer_ = std::move(tracer).value();
    if (s->locks_) {
        const auto &k = s->tracer_->lock_layout();
        s->locks_->set_row_blockers(k.row_blockers);
        if (!k.missing.empty()) {
            notes.push_back("locks on this build: " + k.missing);
        }
    }
    // A restarted server (same port) appends to its directory: its last
    // files are rotated away, not truncated. Opened once the probes are in,
    // so that an attachment that fails rotates nothing away; a file that
    // `before` writes goes on, one file across the reload.
    s->rotation_ = opts.rotation;
    s->holding_ = before != nullptr;
    // Each wanted file: `before`'s when it writes that one, else opened.
    for (auto [wanted, name, mine, theirs, from_before] :
         {std::tuple{opts.json, "/statements.json", &s->json_,
                     before ? before->json_.get() : nullptr, &s->json_from_before_},
          std::tuple{opts.slowlog, "/slow.log", &s->slowlog_,
                     before ? before->slowlog_.get() : nullptr, &s->slowlog_from_before_}}) {
        if (!wanted) {
            continue;
        }
        *from_before = theirs != nullptr && theirs->name() == s->dir_ + name;
        if (!*from_before) {
            auto f = output::OutputFile::open(s->dir_ + name, false, s->rotation_);
            if (!f) {
                return f.error();
            }
            *mine = std::move(f).value();
        }
    }
    if (!opts.otlp.empty()) {
        output::OtlpResource r = output::server_resource(
            static_cast<uint32_t>(pid), s->labels_.flavour == "mariadb" ? "mariadb" : "mysql",
            s->labels_.process.ports.empty() ? 0 : s->labels_.process.ports.front());
        auto sink = output::OtlpSink::open(std::move(r), nullptr, opts.otlp, 64);
        if (!sink) {
            return sink.error();
        }
        s->otlp_ = std::move(sink).value();
    }
    return s;
}

TracedServer::~TracedServer() = default;

int TracedServer::epoll_fd() const {
    return tracer_->rings().epoll_fd();
}

Result<int> TracedServer::poll() {
    return tracer_->rings().poll(0);
}

std::string TracedServer::stage_name(uint64_t addr) const {
    return tracer_ ? tracer_->stage_name_at(addr) : std::string();
}

void TracedServer::track_kept(bool on) {
    tracking_kept_ = on;
    kept_.clear();
}

void TracedServer::on_statement(const server::Statement &st) {
    if (holding_) {
        held_.push_back(st);
        return;
    }
    if (st.end_ns >= keep_until_ns_ ||
        (!before_.empty() &&
         !before_.heir_writes(st.thread_id, st.query_id, st.end_ns, keep_from_ns_))) {
        return;  // the other attachment's (Agent::reattach)
    }
    if (tracking_kept_) {
        kept_.wrote(st.thread_id, st.query_id);
    }
    statements_++;
    if (locks_) {
        // Only what waits now is asked for: ended waits are dropped.
        locks_->on_statement(st);
        locks_->take_waits();
        locks_->take_incidents();
    }
    failed_ += st.failed() ? 1 : 0;
    stats_->add(st, tracer_->accounts().of(st.thread_id).user);
    if (json_) {
        json_->write(render_->statement(st));
    }
    if (slowlog_) {
        slowlog_->write(slow_.statement(st, tracer_->accounts().of(st.thread_id)));
    }
    if (otlp_) {
        otlp_->statement(st, *render_, {});
    }
}

void TracedServer::hand_over(TracedServer &heir, std::string &summary) {
    for (auto [wanted, mine, theirs] :
         {std::tuple{heir.json_from_before_, &json_, &heir.json_},
          std::tuple{heir.slowlog_from_before_, &slowlog_, &heir.slowlog_}}) {
        if (!wanted) {
            continue;
        }
        // One that stopped after a write error starts again, as at any
        // attach.
        if (!(*mine)->failed()) {
            *theirs = std::move(*mine);
            (*theirs)->set_rotation(heir.rotation_);
        } else if (auto f = output::OutputFile::open((*mine)->name(), false, heir.rotation_)) {
            *theirs = std::move(f).value();
        } else {
            summary += "; " + f.error().message;
        }
    }
    // Its totals go on too (/metrics' counters, `top`), unless they are
    // kept for another number of classes.
    if (heir.stats_->max_classes() == stats_->max_classes()) {
        TracedServer *h = &heir;
        stats_->set_stage_name([h](uint64_t addr) { return h->stage_name(addr); });
        heir.stats_ = std::move(stats_);
    }
    // What this one wrote is known now: the heir's statements go on after it.
    heir.before_ = std::move(kept_);
    heir.holding_ = false;
    // Records the heir reads later are of statements that ended later.
    heir.forget_before_at_ns_ = bpf::monotonic_ns() + 1'000'000'000;
    std::vector<server::Statement> held;
    held.swap(heir.held_);
    for (const auto &st : held) {
        heir.on_statement(st);
    }
}

size_t TracedServer::outputs_failed() const {
    size_t n = 0;
    for (const auto *f : {json_.get(), slowlog_.get()}) {
        n += f != nullptr && f->failed() ? 1 : 0;
    }
    return n;
}

std::vector<top::LockWaitRow> TracedServer::live_lock_waits(uint64_t now_ns) const {
    std::vector<top::LockWaitRow> out;
    if (!locks_) {
        return out;
    }
    for (const auto &w : locks_->live()) {
        top::LockWaitRow r;
        r.waiting_pid = w.waiter;
        r.blocking_pid = w.blocker.thread_id;
        r.lock_kind = w.kind == server::LockKind::metadata ? "metadata" : "row";
        r.locked_object = w.object;
        r.lock_type = w.lock_type;
        r.wait_stage = w.stage;
        r.wait_ns = now_ns > w.start_ns ? now_ns - w.start_ns : 0;
        r.blocking_query = w.blocker.sql;
        r.blocking_trx_age_ns = w.blocker.trx_start_ns != 0 && now_ns > w.blocker.trx_start_ns
                                    ? now_ns - w.blocker.trx_start_ns
                                    : 0;
        r.possible = w.possible;
        r.waiting_query = show_secrets_ ? w.waiter_sql : sql::redact_sql(w.waiter_sql);
        out.push_back(std::move(r));
    }
    return out;
}

void TracedServer::tick() {
    tracer_->refresh_clock();
    if (!before_.empty() && bpf::monotonic_ns() >= forget_before_at_ns_) {
        before_.clear();
    }
    if (locks_) {
        // Connections idle for 10 minutes with no transaction open.
        constexpr uint64_t kIdleNs = 600'000'000'000;
        const uint64_t now = bpf::monotonic_ns();
        if (now > kIdleNs) {
            locks_->prune(now - kIdleNs);
        }
    }
    if (otlp_) {
        otlp_->tick();
    }
    for (auto *f : {json_.get(), slowlog_.get()}) {
        if (f != nullptr) {
            f->flush();
        }
    }
}

std::string TracedServer::finish(TracedServer *heir) {
    auto flushed = tracer_->rings().flush();
    tracer_->flush_held();
    for (auto *f : {json_.get(), slowlog_.get()}) {
        if (f != nullptr) {
            f->flush();
        }
    }
    std::string s = std::to_string(statements_) + " statements";
    if (failed_) {
        s += ", " + std::to_string(failed_) + " failed";
    }
    if (tracer_->undecodable()) {
        s += ", " + std::to_string(tracer_->undecodable()) + " undecodable records";
    }
    s += ", " + trace::drop_summary(tracer_->rings().stats());
    if (!flushed) {
        s += " (" + flushed.error().message + ")";
    }
    for (auto *f : {json_.get(), slowlog_.get()}) {
        if (f != nullptr && f->failed()) {
            s += "; " + f->name() + " stopped after a write error";
        }
    }
    if (otlp_) {
        // A collector that is down holds the agent's end 3 s at most.
        s += ", " + otlp_->finish(std::chrono::seconds(3));
    }
    if (heir != nullptr) {
        hand_over(*heir, s);
    }
    return s;
}

}  // namespace mysqltrace::agent
