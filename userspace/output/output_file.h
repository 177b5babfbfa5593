// SPDX-License-Identifier: GPL-2.0-only
// Where rendered output goes: stdout (or stderr) or a file created 0600 and never through
// a symlink. A write error (disk full, closed pipe) disables the output with
// one clear message instead of killing the trace (as WL#4878 asks).
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "util/result.h"

namespace mysqltrace::output {

class OutputFile {
  public:
    // "-" or empty: stdout (stderr with to_stderr, for `run`, whose command
    // owns stdout).
    static Result<std::unique_ptr<OutputFile>> open(const std::string &path,
                                                    bool to_stderr = false);
    ~OutputFile();
    OutputFile(const OutputFile &) = delete;
    OutputFile &operator=(const OutputFile &) = delete;

    void write(std::string_view s);
    void flush();
    bool failed() const { return failed_; }
    const std::string &name() const { return name_; }

  private:
    OutputFile() = default;
    void fail(int err);

    FILE *f_ = nullptr;
    bool owned_ = false;
    bool failed_ = false;
    std::string name_;
};

}  // namespace mysqltrace::output
