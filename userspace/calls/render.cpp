// SPDX-License-Identifier: GPL-2.0-only
#include "calls/render.h"

#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "mysqltrace/abi/event.h"
#include "output/clock.h"
#include "output/units.h"

namespace mysqltrace::calls {

namespace {

using nlohmann::ordered_json;

std::string dump(const ordered_json &j) {
    // Symbol names are bytes from the traced binary: never fail on them.
    return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

std::string repeat(const char *s, uint32_t n) {
    std::string out;
    for (uint32_t i = 0; i < n; i++) {
        out += s;
    }
    return out;
}

// Trace Event Format timestamps are microseconds; keep the ns.
std::string chrome_ts(uint64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                  static_cast<unsigned long long>(ns % 1000));
    return buf;
}

const char *unwinder_text(uint32_t u) {
    switch (u) {
        case MT_UNWIND_RAISE:
            return "exception thrown";
        case MT_UNWIND_RESUME:
            return "unwinding resumed";
        case MT_UNWIND_RETHROW:
            return "exception rethrown";
        case MT_UNWIND_FORCED:
            return "forced unwind (pthread_exit or cancellation)";
        case MT_UNWIND_WALK:
            return "stack walk (backtrace)";
    }
    return "unwind";
}

std::string unwind_note(const CallEvent &ev) {
    std::string s = ev.kind == EventKind::caught ? "exception caught" : unwinder_text(ev.func);
    if (ev.value != 0) {
        s += " (" + std::to_string(ev.value) + " return probe" + (ev.value == 1 ? "" : "s") +
             (ev.kind == EventKind::caught ? " re-armed)" : " lifted)");
    }
    return s;
}

// rax as a signed integer; a value that is a negative 32-bit int in eax
// (the upper half cleared by a 32-bit move) says so too: the return type is
// not known here.
std::string retval_text(uint64_t rax) {
    std::string s = std::to_string(static_cast<int64_t>(rax));
    if ((rax >> 32) == 0 && (rax & 0x80000000u) != 0) {
        s += " (int " + std::to_string(static_cast<int32_t>(static_cast<uint32_t>(rax))) + ")";
    }
    return s;
}

}  // namespace

CallRenderer::CallRenderer(RenderOptions opts, std::vector<std::string> functions,
                           std::vector<std::string> annotations, Locate locate)
    : opts_(std::move(opts)),
      functions_(std::move(functions)),
      annotations_(std::move(annotations)),
      locate_(std::move(locate)) {
    if (!opts_.time) {
        auto clock = std::make_shared<output::Clock>();
        opts_.time = [clock](uint64_t ns) {
            std::string s = clock->wall(ns);
            char sub[4];
            std::snprintf(sub, sizeof(sub), "%03u", static_cast<unsigned>(ns % 1000));
            return s + sub;
        };
    }
}

const std::string &CallRenderer::function(uint32_t i) const {
    static const std::string unknown = "?";
    return i < functions_.size() ? functions_[i] : unknown;
}

std::string CallRenderer::caller_of(const CallEvent &ev, std::string *site) {
    if (ev.tail_call) {
        // The return address was already the trampoline: the slot belongs to
        // the enclosing call, which jumped here instead of calling.
        *site = "tail call";
        return ev.parent >= 0 ? function(static_cast<uint32_t>(ev.parent)) : "?";
    }
    if (ev.call_site == 0) {
        *site = "";
        return ev.parent >= 0 ? function(static_cast<uint32_t>(ev.parent)) : "?";
    }
    CodeLocation loc = locate_ ? locate_(ev.call_site) : CodeLocation{};
    *site = loc.site;
    if (loc.function.empty()) {
        return "?";
    }
    return loc.function;
}

std::string CallRenderer::header() const {
    return opts_.format == CallFormat::chrome ? "{\"traceEvents\":[\n" : "";
}

std::string CallRenderer::footer() const {
    return opts_.format == CallFormat::chrome ? "\n],\"displayTimeUnit\":\"ns\"}\n" : "";
}

std::string CallRenderer::event(const CallEvent &ev) {
    std::string site;
    std::string caller;
    if (ev.kind == EventKind::call ||
        (ev.kind == EventKind::ret && ev.how != EndHow::entry_unseen)) {
        caller = caller_of(ev, &site);
    } else if (ev.kind == EventKind::ret) {
        caller = ev.parent >= 0 ? function(static_cast<uint32_t>(ev.parent)) : "?";
    }
    const std::string annotation =
        ev.kind == EventKind::usdt
            ? (ev.func < annotations_.size() ? annotations_[ev.func] : std::string("?"))
            : std::string();

    if (opts_.format == CallFormat::text) {
        std::string line = opts_.time(ev.ts_ns) + " " + std::to_string(ev.tid) + " ";
        switch (ev.kind) {
            case EventKind::call:
                line += repeat("->", ev.depth) + " " + caller + " > " + function(ev.func);
                if (!site.empty()) {
                    line += " [" + site + "]";
                }
                break;
            case EventKind::ret:
                line += repeat("<-", ev.depth) + " " + caller + " < " + function(ev.func);
                if (ev.how == EndHow::returned) {
                    line += " " + output::human_duration(ev.duration_ns);
                } else {
                    line += std::string(" (") + end_how_text(ev.how) + ")";
                }
                if (opts_.retval &&
                    (ev.how == EndHow::returned || ev.how == EndHow::entry_unseen)) {
                    line += " = " + retval_text(ev.value);
                }
                break;
            case EventKind::usdt:
                line += repeat("->", ev.depth - 1) + "# " + annotation + " " +
                        std::to_string(static_cast<int64_t>(ev.value));
                break;
            case EventKind::lost:
                line += "!! " + std::to_string(ev.lost) + " events lost here";
                break;
            case EventKind::unwind:
            case EventKind::caught:
                line += repeat("->", ev.depth - 1) + "# " + unwind_note(ev);
                break;
        }
        return line + "\n";
    }

    if (opts_.format == CallFormat::json) {
        ordered_json j;
        const char *kind = ev.kind == EventKind::call     ? "call"
                           : ev.kind == EventKind::ret    ? "return"
                           : ev.kind == EventKind::usdt   ? "usdt"
                           : ev.kind == EventKind::unwind ? "unwind"
                           : ev.kind == EventKind::caught ? "catch"
                                                          : "lost";
        j["kind"] = kind;
        j["pid"] = opts_.pid;
        j["tid"] = ev.tid;
        j["ts_ns"] = ev.ts_ns;
        j["depth"] = ev.depth;
        switch (ev.kind) {
            case EventKind::call:
            case EventKind::ret:
                j["function"] = function(ev.func);
                j["caller"] = caller;
                if (!site.empty()) {
                    j["site"] = site;
                }
                if (ev.tail_call) {
                    j["tail_call"] = true;
                }
                if (ev.kind == EventKind::ret) {
                    j["returned"] = ev.how == EndHow::returned;
                    if (ev.how == EndHow::returned) {
                        j["duration_ns"] = ev.duration_ns;
                    } else {
                        j["reason"] = end_how_text(ev.how);
                    }
                    if (opts_.retval &&
                        (ev.how == EndHow::returned || ev.how == EndHow::entry_unseen)) {
                        j["retval"] = static_cast<int64_t>(ev.value);
                    }
                }
                break;
            case EventKind::usdt:
                j["probe"] = annotation;
                j["arg"] = static_cast<int64_t>(ev.value);
                break;
            case EventKind::lost:
                j["count"] = ev.lost;
                break;
            case EventKind::unwind:
                j["unwinder"] = unwinder_text(ev.func);
                j["lifted"] = ev.value;
                break;
            case EventKind::caught:
                j["rearmed"] = ev.value;
                break;
        }
        return dump(j) + "\n";
    }

    // chrome: B/E slices per thread; annotations, losses and returns whose
    // entry was not seen are instant events on the thread.
    ordered_json j;
    ordered_json args = ordered_json::object();
    switch (ev.kind) {
        case EventKind::call:
            j["name"] = function(ev.func);
            j["cat"] = "call";
            j["ph"] = "B";
            args["caller"] = caller;
            if (!site.empty()) {
                args["site"] = site;
            }
            break;
        case EventKind::ret:
            j["name"] = function(ev.func);
            j["cat"] = "call";
            if (ev.how == EndHow::entry_unseen) {
                j["ph"] = "i";
                j["s"] = "t";
                args["return"] = end_how_text(ev.how);
            } else {
                j["ph"] = "E";
                if (ev.how != EndHow::returned) {
                    args["end"] = end_how_text(ev.how);
                }
            }
            if (opts_.retval && (ev.how == EndHow::returned || ev.how == EndHow::entry_unseen)) {
                args["retval"] = static_cast<int64_t>(ev.value);
            }
            break;
        case EventKind::usdt:
            j["name"] = annotation;
            j["cat"] = "usdt";
            j["ph"] = "i";
            j["s"] = "t";
            args["arg"] = static_cast<int64_t>(ev.value);
            break;
        case EventKind::lost:
            j["name"] = std::to_string(ev.lost) + " events lost";
            j["cat"] = "lost";
            j["ph"] = "i";
            j["s"] = "t";
            break;
        case EventKind::unwind:
        case EventKind::caught:
            j["name"] = unwind_note(ev);
            j["cat"] = "unwind";
            j["ph"] = "i";
            j["s"] = "t";
            break;
    }
    j["ts"] = 0;  // placeholder, keeps key order; replaced below
    j["pid"] = opts_.pid;
    j["tid"] = ev.tid;
    if (!args.empty()) {
        j["args"] = args;
    }
    std::string s = dump(j);
    // nlohmann would print the timestamp as a double and round it: splice
    // the exact decimal in.
    const std::string zero = "\"ts\":0";
    auto at = s.find(zero);
    if (at != std::string::npos) {
        s.replace(at, zero.size(), "\"ts\":" + chrome_ts(ev.ts_ns));
    }
    std::string out = first_ ? "" : ",\n";
    first_ = false;
    return out + s;
}

}  // namespace mysqltrace::calls
