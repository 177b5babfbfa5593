// SPDX-License-Identifier: GPL-2.0-only
#include "server/command_tracer.h"

#include <cerrno>
#include <cstring>

#include "elf/elf_file.h"
#include "mysqltrace/abi/event.h"
#include "proc/maps.h"
#include "server.skel.h"

namespace mysqltrace::server {

namespace {

// MariaDB 10.x: dispatch_command(enum_server_command, THD*, char*, uint, bool).
constexpr const char *kMariadbDispatch = "_Z16dispatch_command19enum_server_commandP3THDPcjb";

}  // namespace

Result<ServerTarget> resolve_server(pid_t pid) {
    if (!proc::process_exists(pid)) {
        return Error{ESRCH, "no such process: " + std::to_string(pid)};
    }
    ServerTarget t;
    t.pid = pid;
    t.exe = "/proc/" + std::to_string(pid) + "/exe";
    auto file = elf::ElfFile::open(t.exe);
    if (!file) {
        return file.error();
    }
    auto sym = (*file)->find(kMariadbDispatch);
    if (!sym) {
        for (const auto &s : (*file)->symbols()) {
            if (s.name.rfind("_Z16dispatch_command", 0) == 0) {
                return Error{ENOTSUP, "pid " + std::to_string(pid) + " has " + s.name +
                                          ": only MariaDB servers are supported so far"};
            }
        }
        return Error{ENOENT, "pid " + std::to_string(pid) +
                                 " is not a MySQL/MariaDB server (no dispatch_command symbol)"};
    }
    t.dispatch_symbol = sym->name;
    auto code = (*file)->read(sym->vaddr, 16);
    auto off = (*file)->vaddr_to_offset(sym->vaddr);
    if (!code || !off) {
        return !code ? code.error() : off.error();
    }
    t.dispatch_site = elf::place_entry_probe(*code, *off);
    auto tid_off = elf::accessor_field_offset(**file, "thd_get_thread_id");
    if (tid_off) {
        t.thread_id_offset = *tid_off;
    }
    return t;
}

bool decode_command(std::span<const uint8_t> record, CommandEvent *out) {
    mt_server_command_event ev;
    if (record.size() < sizeof(ev)) {
        return false;
    }
    std::memcpy(&ev, record.data(), sizeof(ev));
    if (ev.hdr.type != MT_EV_SERVER_COMMAND || sizeof(ev) + ev.copied != record.size()) {
        return false;
    }
    out->ts_ns = ev.hdr.ts_ns;
    out->tid = ev.hdr.tid;
    out->thread_id = ev.thread_id;
    out->command = ev.command;
    out->packet_len = ev.packet_len;
    out->argument.assign(reinterpret_cast<const char *>(record.data() + sizeof(ev)), ev.copied);
    out->truncated = ev.copied < ev.packet_len;
    return true;
}

Result<std::unique_ptr<CommandTracer>> CommandTracer::attach(
    const ServerTarget &target, const CommandTracerOptions &opts,
    std::function<void(const CommandEvent &)> sink) {
    std::unique_ptr<CommandTracer> t(new CommandTracer());
    t->sink_ = std::move(sink);
    t->skel_ = ::server::open();
    if (t->skel_ == nullptr) {
        return make_error(errno, "cannot open the server BPF object");
    }
    t->skel_->rodata->target_tgid = static_cast<__u32>(target.pid);
    t->skel_->rodata->thd_thread_id_offset = target.thread_id_offset;
    t->skel_->rodata->max_sql = std::min<uint32_t>(opts.max_sql, MT_MAX_SQL);
    if (auto r = bpf::size_scratch_slots(t->skel_->obj); !r) {
        return r.error();
    }
    if (int err = ::server::load(t->skel_); err != 0) {
        return make_error(err, "cannot load the server BPF programs");
    }
    CommandTracer *self = t.get();
    auto rings =
        bpf::RingSet::create(t->skel_->obj, opts.ring, [self](std::span<const uint8_t> rec) {
            CommandEvent ev;
            if (decode_command(rec, &ev)) {
                self->sink_(ev);
            } else {
                self->undecodable_++;
            }
        });
    if (!rings) {
        return rings.error();
    }
    t->rings_ = std::move(rings).value();
    bpf_uprobe_opts uo{};
    uo.sz = sizeof(uo);
    bpf_link *l =
        bpf_program__attach_uprobe_opts(t->skel_->progs.server_dispatch_command, target.pid,
                                        target.exe.c_str(), target.dispatch_site.offset, &uo);
    if (l == nullptr) {
        return make_error(errno, "cannot attach a uprobe to dispatch_command in pid " +
                                     std::to_string(target.pid));
    }
    t->link_.reset(l);
    return t;
}

CommandTracer::~CommandTracer() {
    link_.reset();
    rings_.reset();
    if (skel_ != nullptr) {
        ::server::destroy(skel_);
    }
}

}  // namespace mysqltrace::server
