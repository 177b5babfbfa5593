// SPDX-License-Identifier: GPL-2.0-only
// Where rendered output goes: stdout (or stderr) or a file created 0600 and never through
// a symlink. A write error (disk full, closed pipe) disables the output with
// one clear message instead of killing the trace (as WL#4878 asks).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "util/result.h"

namespace mysqltrace::output {

// Size-based rotation of a file output, for long-running traces (the
// systemd service): before a write would take FILE past max_bytes, FILE.<keep>
// is dropped, FILE.<n> becomes FILE.<n+1>, FILE becomes FILE.1 and a new FILE
// is created. A write is never split, so every file holds whole events.
struct Rotation {
    uint64_t max_bytes = 0;  // 0: never rotate
    unsigned keep = 5;       // rotated files kept, FILE.1 ... FILE.<keep>; 0: none
    bool operator==(const Rotation &) const = default;
};

class OutputFile {
  public:
    // "-" or empty: stdout (stderr with to_stderr, for `run`, whose command
    // owns stdout). With rotation, an existing non-empty FILE is rotated
    // away instead of truncated, so a restarted trace keeps the last one.
    static Result<std::unique_ptr<OutputFile>> open(const std::string &path, bool to_stderr = false,
                                                    const Rotation &rotation = {});
    ~OutputFile();
    OutputFile(const OutputFile &) = delete;
    OutputFile &operator=(const OutputFile &) = delete;

    void write(std::string_view s);
    // A line rendered in place: append it to line(), then call end_line().
    // Lines reach the file in batches, which saves a stdio call per line on
    // a busy trace, and a batch is written as it is, not copied into the
    // stream's buffer first; flush() and write() send what is pending first,
    // and rotation still never splits a line nor, past the first line of a
    // file, lets one take it over its size.
    std::string &line() {
        line_start_ = pending_.size();
        return pending_;
    }
    void end_line();
    void flush();
    bool failed() const { return failed_; }
    // For the writes from now on (a file handed to a new writer).
    void set_rotation(const Rotation &rotation) { rotation_ = rotation; }
    const std::string &name() const { return name_; }

  private:
    OutputFile() = default;
    void fail(const char *doing, int err);
    // Closes FILE, shifts the numbered files and creates a new FILE; on
    // failure the output is disabled.
    void rotate();
    void write_pending();
    // Rotating first if it would go past max_bytes; direct: by write(2),
    // after what the stream holds, instead of through the stream's buffer.
    void write_now(std::string_view s, bool direct = false);

    // As much as the stream's buffer (output_file.cpp), so that a busy
    // trace's lines go out in writes as large as before.
    static constexpr size_t kBatchBytes = 256 << 10;
    std::string pending_;  // whole lines not yet written
    size_t line_start_ = 0;

    std::unique_ptr<char[]> buffer_;  // f_'s, when the file is ours
    FILE *f_ = nullptr;
    bool owned_ = false;
    bool failed_ = false;
    std::string name_;
    Rotation rotation_;
    uint64_t size_ = 0;  // bytes written to the current file
};

}  // namespace mysqltrace::output
