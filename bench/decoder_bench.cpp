// SPDX-License-Identifier: GPL-2.0-only
// Decoder throughput: MB/s of wire bytes per core through the WL#6226
// machine, on the recorded sessions of tests/data/protocol, with and without
// rendering text or JSON lines. Prints one markdown table; no assertions (a benchmark, not
// a test).
//   decoder_bench [SECONDS_PER_CASE] [--passes N] [--decode-only] [--summary-only]
//                 [--json-only] [--group scenario|sysbench]
// --passes runs exactly N passes over the sessions per case instead of timing
// (for callgrind, which then collects inside run_case() only); --group
// measures one kind of session only.
// --summary-only runs only the case of `mysqltrace client --summary-only`:
// events counted but not read (TracerOptions::event_contents off).
//
// Each session is one connection, replayed into a tracer of its own, as
// `mysqltrace client` keeps one per connection; the tracer has an event and a
// summary callback as there. Rendering is what `mysqltrace client` does for
// text output (or --format json): every event and command summary appended,
// with timestamps, to one reused line buffer. Times are the thread's CPU time, not wall time,
// so that other processes on a shared machine count less.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "output/output_file.h"
#include "output/protocol_json.h"
#include "output/protocol_text.h"
#include "protocol/wl6226.h"
#include "unit/protocol_fixture.h"

namespace {

using namespace mysqltrace::protocol;

double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct Session {
    std::string name;
    std::vector<fixture::FixtureRecord> records;
    uint64_t bytes = 0;
};

// Lines go to /dev/null through OutputFile, as `mysqltrace client
// --output /dev/null` writes them: rendered in place into its batch, which
// goes out by write(2).
struct Render {
    mysqltrace::output::Clock clock;
    mysqltrace::output::ProtocolTextOptions options;
    std::unique_ptr<mysqltrace::output::OutputFile> out;
    bool json = false;  // --format json's lines instead of text
};

// Replays one session into a fresh tracer (one connection); returns the
// events it produced.
uint64_t replay(const Session &s, Render *render, bool contents) {
    uint64_t events = 0;
    TracerOptions options;
    options.event_contents = contents;
    ConnectionTracer t(
        1, options,
        [&](const ProtocolEvent &ev) {
            events++;
            if (render != nullptr) {
                if (render->json) {
                    mysqltrace::output::append_protocol_json(render->out->line(), ev, {});
                } else {
                    mysqltrace::output::append_protocol_text(render->out->line(), ev,
                                                             render->options);
                }
                render->out->end_line();
            }
        },
        [&](const CommandSummary &sum) {
            if (render != nullptr) {
                if (render->json) {
                    mysqltrace::output::append_command_summary_json(render->out->line(), sum);
                } else {
                    mysqltrace::output::append_command_summary_text(render->out->line(), sum,
                                                                    render->options);
                }
                render->out->end_line();
            }
        });
    uint64_t ts = 0;
    for (const auto &r : s.records) {
        ts += 1000;
        switch (r.kind) {
            case fixture::FixtureRecord::Kind::connect:
                t.on_connect(ts, 1, 1);
                break;
            case fixture::FixtureRecord::Kind::close:
                t.on_close(ts, 1, 1);
                break;
            case fixture::FixtureRecord::Kind::data:
                t.feed(r.dir, r.src, r.bytes.data(), r.bytes.size(), r.bytes.size() + r.missing, ts,
                       1, 1);
                break;
        }
    }
    return events;
}

struct Totals {
    uint64_t bytes = 0;
    uint64_t events = 0;
    double elapsed = 0;
};

// One case, timed or for a fixed number of passes. Not inlined: callgrind
// collects inside it only (--toggle-collect='*run_case*').
__attribute__((noinline)) Totals run_case(const std::vector<Session> &sessions, Render *render,
                                          bool contents, double seconds, long passes) {
    Totals t;
    const double start = cpu_seconds();
    long done = 0;
    do {
        for (const auto &s : sessions) {
            t.events += replay(s, render, contents);
            t.bytes += s.bytes;
        }
        done++;
        t.elapsed = cpu_seconds() - start;
    } while (passes > 0 ? done < passes : t.elapsed < seconds);
    return t;
}

// The two kinds of recorded session, weighed apart: the scenario fixtures
// (tests/data/protocol/*.txt but sysbench_*) are short connections, mostly
// handshake and one example of each command, with one event per ~15 bytes;
// the sysbench_* recordings are one connection's steady state under a real
// workload (prepared statements, result sets of 1 and 100 rows).
struct Group {
    const char *name;
    std::vector<Session> sessions;
    uint64_t bytes = 0;
};

}  // namespace

int main(int argc, char **argv) {
    double seconds = 2.0;
    long passes = 0;
    bool decode_only = false;
    bool summary_only = false;
    bool json_only = false;
    std::string group;  // empty: both
    for (int i = 1; i < argc; i++) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::printf(
                "usage: decoder_bench [SECONDS_PER_CASE] [--passes N] [--decode-only]\n"
                "                     [--summary-only] [--json-only]\n"
                "Replays the recorded sessions of tests/data/protocol through the client\n"
                "protocol decoder, one tracer per session, for SECONDS_PER_CASE seconds of\n"
                "CPU time (default 2) per case and kind of session, and prints MB/s of wire\n"
                "bytes and events/s per core of CPU time: decoding only, then decoding and\n"
                "rendering text as `mysqltrace client` does, then decoding and rendering\n"
                "JSON lines (`--format json`), then decoding with events counted but not\n"
                "read (`mysqltrace client --summary-only`). Two kinds of\n"
                "session are measured apart: the scenario fixtures (short connections,\n"
                "mostly handshakes) and the sysbench_* recordings (one connection's steady\n"
                "state). --passes N runs exactly N passes per case instead (for callgrind);\n"
                "--decode-only runs the first case only, --summary-only the last only,\n"
                "--json-only the JSON case only;\n"
                "--group scenario or --group sysbench measures that kind of session only.\n"
                "Rendered lines go to /dev/null through the CLI's output file.\n");
            return 0;
        }
        if (arg == "--passes" && i + 1 < argc) {
            passes = std::atol(argv[++i]);
        } else if (arg == "--decode-only") {
            decode_only = true;
        } else if (arg == "--summary-only") {
            summary_only = true;
        } else if (arg == "--json-only") {
            json_only = true;
        } else if (arg == "--group" && i + 1 < argc) {
            group = argv[++i];
            if (group != "scenario" && group != "sysbench") {
                std::fprintf(stderr, "decoder_bench: --group is scenario or sysbench\n");
                return 2;
            }
        } else {
            seconds = std::atof(argv[i]);
        }
    }
    const std::filesystem::path dir = std::string(MYSQLTRACE_SOURCE_DIR) + "/tests/data/protocol";
    Group groups[2] = {{"scenario fixtures", {}}, {"sysbench recordings", {}}};
    for (const auto &e : std::filesystem::directory_iterator(dir)) {
        std::ifstream in(e.path());
        Session s;
        s.name = e.path().stem().string();
        s.records = fixture::parse_fixture(in);
        for (const auto &r : s.records) {
            s.bytes += r.bytes.size() + r.missing;
        }
        Group &g = groups[s.name.starts_with("sysbench_") ? 1 : 0];
        g.bytes += s.bytes;
        g.sessions.push_back(std::move(s));
    }
    std::printf("| decoder (one core, CPU time) | %s: MB/s | events/s | %s: MB/s | events/s |\n",
                groups[0].name, groups[1].name);
    std::printf("|---|---|---|---|---|\n");
    std::printf("| sessions, wire bytes a pass | %zu, %llu | | %zu, %llu | |\n",
                groups[0].sessions.size(), static_cast<unsigned long long>(groups[0].bytes),
                groups[1].sessions.size(), static_cast<unsigned long long>(groups[1].bytes));
    Render r;
    auto out = mysqltrace::output::OutputFile::open("/dev/null");
    if (!out) {
        std::fprintf(stderr, "decoder_bench: %s\n", out.error().message.c_str());
        return 1;
    }
    r.out = std::move(out).value();
    r.options.timestamps = true;
    r.options.clock = &r.clock;
    enum class Case { decode, render, json, summary_only };
    for (Case c : {Case::decode, Case::render, Case::json, Case::summary_only}) {
        if ((decode_only && c != Case::decode) || (summary_only && c != Case::summary_only) ||
            (json_only && c != Case::json)) {
            continue;
        }
        const bool render = c == Case::render || c == Case::json;
        r.json = c == Case::json;
        std::printf("| %s |", c == Case::render   ? "decode + render text"
                              : c == Case::json   ? "decode + render JSON"
                              : c == Case::decode ? "decode only"
                                                  : "decode, events only counted (--summary-only)");
        Totals all;
        for (const Group &g : groups) {
            if (!group.empty() && (&g == &groups[0]) != (group == "scenario")) {
                std::printf(" - | - |");
                continue;
            }
            const Totals t = run_case(g.sessions, render ? &r : nullptr, c != Case::summary_only,
                                      seconds, passes);
            std::printf(" %.1f | %.0f |", static_cast<double>(t.bytes) / t.elapsed / 1e6,
                        static_cast<double>(t.events) / t.elapsed);
            all.bytes += t.bytes;
            all.events += t.events;
        }
        std::printf("\n");
        if (passes > 0) {
            std::printf("totals: %ld passes, %llu bytes, %llu events\n", passes,
                        static_cast<unsigned long long>(all.bytes),
                        static_cast<unsigned long long>(all.events));
        }
    }
    return 0;
}
