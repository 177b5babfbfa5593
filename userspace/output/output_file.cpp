// SPDX-License-Identifier: GPL-2.0-only
#include "output/output_file.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace mysqltrace::output {

Result<std::unique_ptr<OutputFile>> OutputFile::open(const std::string &path, bool to_stderr) {
    // A reader that goes away (| head) must end in a message, not SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    std::unique_ptr<OutputFile> o(new OutputFile());
    if (path.empty() || path == "-") {
        o->f_ = to_stderr ? stderr : stdout;
        o->name_ = to_stderr ? "standard error" : "standard output";
        if (to_stderr) {
            // Unbuffered by default: one write per event would be slow.
            // Messages through std::cerr share the buffer and flush it.
            std::setvbuf(stderr, nullptr, _IOFBF, 1 << 16);
        }
        return o;
    }
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        return make_error(errno, "cannot create " + path);
    }
    o->f_ = fdopen(fd, "w");
    if (o->f_ == nullptr) {
        int e = errno;
        ::close(fd);
        return make_error(e, "cannot open " + path);
    }
    o->owned_ = true;
    o->name_ = path;
    return o;
}

OutputFile::~OutputFile() {
    flush();
    if (owned_ && f_ != nullptr && fclose(f_) != 0 && !failed_) {
        fail(errno);
    }
}

void OutputFile::fail(int err) {
    failed_ = true;
    std::fprintf(stderr, "mysqltrace: writing %s failed: %s; this output is disabled\n",
                 name_.c_str(), std::strerror(err));
}

void OutputFile::write(std::string_view s) {
    if (failed_ || s.empty()) {
        return;
    }
    if (fwrite(s.data(), 1, s.size(), f_) != s.size()) {
        fail(errno);
    }
}

void OutputFile::flush() {
    if (!failed_ && f_ != nullptr && fflush(f_) != 0) {
        fail(errno);
    }
}

}  // namespace mysqltrace::output
