// SPDX-License-Identifier: GPL-2.0-only
// Decoder throughput: MB/s of wire bytes per core through the WL#6226
// machine, on the recorded sessions of tests/data/protocol, with and without
// rendering text. Prints one markdown table; no assertions (a benchmark, not
// a test).
//   decoder_bench [SECONDS_PER_CASE] [--passes N] [--decode-only]
// --passes runs exactly N passes over the sessions per case instead of timing
// (for callgrind, which then collects inside run_case() only).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "output/protocol_text.h"
#include "protocol/wl6226.h"
#include "unit/protocol_fixture.h"

namespace {

using namespace mysqltrace::protocol;
using Clock = std::chrono::steady_clock;

struct Session {
    std::string name;
    std::vector<fixture::FixtureRecord> records;
    uint64_t bytes = 0;
};

// Replays one session into a fresh tracer; returns the events it produced.
uint64_t replay(const Session &s, bool render, std::string *sink) {
    uint64_t events = 0;
    ConnectionTracer t(1, TracerOptions{}, [&](const ProtocolEvent &ev) {
        events++;
        if (render) {
            *sink += mysqltrace::output::render_protocol_text(ev);
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
    if (sink->size() > (1u << 20)) {
        sink->clear();
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
__attribute__((noinline)) Totals run_case(const std::vector<Session> &sessions, bool render,
                                          double seconds, long passes, std::string *sink) {
    Totals t;
    const auto start = Clock::now();
    long done = 0;
    do {
        for (const auto &s : sessions) {
            t.events += replay(s, render, sink);
            t.bytes += s.bytes;
        }
        done++;
        t.elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (passes > 0 ? done < passes : t.elapsed < seconds);
    return t;
}

}  // namespace

int main(int argc, char **argv) {
    double seconds = 2.0;
    long passes = 0;
    bool decode_only = false;
    for (int i = 1; i < argc; i++) {
        const std::string arg = argv[i];
        if (arg == "--passes" && i + 1 < argc) {
            passes = std::atol(argv[++i]);
        } else if (arg == "--decode-only") {
            decode_only = true;
        } else {
            seconds = std::atof(argv[i]);
        }
    }
    const std::filesystem::path dir = std::string(MYSQLTRACE_SOURCE_DIR) + "/tests/data/protocol";
    std::vector<Session> sessions;
    for (const auto &e : std::filesystem::directory_iterator(dir)) {
        std::ifstream in(e.path());
        Session s;
        s.name = e.path().stem().string();
        s.records = fixture::parse_fixture(in);
        for (const auto &r : s.records) {
            s.bytes += r.bytes.size() + r.missing;
        }
        sessions.push_back(std::move(s));
    }
    uint64_t total_bytes = 0;
    for (const auto &s : sessions) {
        total_bytes += s.bytes;
    }
    std::printf(
        "| decoder (one core, %zu recorded sessions, %llu wire bytes per pass) | MB/s | events/s "
        "|\n",
        sessions.size(), static_cast<unsigned long long>(total_bytes));
    std::printf("|---|---|---|\n");
    std::string sink;
    for (bool render : {false, true}) {
        if (render && decode_only) {
            break;
        }
        const Totals t = run_case(sessions, render, seconds, passes, &sink);
        std::printf("| %s | %.1f | %.0f |\n", render ? "decode + render text" : "decode only",
                    static_cast<double>(t.bytes) / t.elapsed / 1e6,
                    static_cast<double>(t.events) / t.elapsed);
        if (passes > 0) {
            std::printf("totals: %ld passes, %llu bytes, %llu events\n", passes,
                        static_cast<unsigned long long>(t.bytes),
                        static_cast<unsigned long long>(t.events));
        }
    }
    return 0;
}
