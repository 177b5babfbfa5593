// SPDX-License-Identifier: GPL-2.0-only
#include "output/output_file.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fd_io.h"

namespace mysqltrace::output {

namespace {

// O_NOFOLLOW: never write through a symlink someone planted at the path.
// O_EXCL after a rotation: the name was just renamed away, so anything there
// now was put there by someone else.
// A busy trace writes tens of MB/s: 256 KiB per write() rather than the
// block size. glibc's setvbuf() ignores the size when it is given no buffer
// (it allocates st_blksize, 4 KiB on ext4), so the buffer is ours; 4 KiB
// writes cost the kernel ~0.4 us more per 700-byte line than 256 KiB ones.
// The trace loop flushes on every tick, so lines still show.
constexpr size_t kBufferBytes = 1 << 18;

FILE *create(const std::string &path, bool exclusive, char *buffer, int &err) {
    int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC);
    int fd = ::open(path.c_str(), flags, 0600);
    if (fd < 0) {
        err = errno;
        return nullptr;
    }
    FILE *f = fdopen(fd, "w");
    if (f == nullptr) {
        err = errno;
        ::close(fd);
        return nullptr;
    }
    std::setvbuf(f, buffer, _IOFBF, kBufferBytes);
    return f;
}

// FILE.<keep-1> -> FILE.<keep> (replacing the oldest), ..., FILE -> FILE.1.
// rename() moves a symlink itself, never what it points to.
int shift_files(const std::string &path, unsigned keep) {
    if (keep == 0) {
        return ::unlink(path.c_str()) != 0 && errno != ENOENT ? errno : 0;
    }
    for (unsigned i = keep; i > 1; i--) {
        std::string from = path + "." + std::to_string(i - 1);
        if (::rename(from.c_str(), (path + "." + std::to_string(i)).c_str()) != 0 &&
            errno != ENOENT) {
            return errno;
        }
    }
    // ENOENT: FILE was removed under us; there is nothing to keep.
    if (::rename(path.c_str(), (path + ".1").c_str()) != 0 && errno != ENOENT) {
        return errno;
    }
    return 0;
}

}  // namespace

Result<std::unique_ptr<OutputFile>> OutputFile::open(const std::string &path, bool to_stderr,
                                                     const Rotation &rotation) {
    // A reader that goes away (| head) must end in a message, not SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    std::unique_ptr<OutputFile> o(new OutputFile());
    if (path.empty() || path == "-") {
        if (rotation.max_bytes > 0) {
            return Error{EINVAL, "rotation needs an output file, not standard output"};
        }
        o->f_ = to_stderr ? stderr : stdout;
        o->name_ = to_stderr ? "standard error" : "standard output";
        // stderr is unbuffered by default (one write per event would be
        // slow), stdout buffered by the block size unless it is a terminal,
        // which keeps its line buffering. Messages through std::cerr share
        // stderr's buffer and flush it. The stream outlives this object, so its
        // buffer is static; set once, before anything was written.
        static char stdout_buffer[kBufferBytes];
        static char stderr_buffer[kBufferBytes];
        static bool stdout_set = false;
        static bool stderr_set = false;
        bool &set = to_stderr ? stderr_set : stdout_set;
        if (!set && (to_stderr || !isatty(fileno(o->f_)))) {
            std::fflush(o->f_);
            std::setvbuf(o->f_, to_stderr ? stderr_buffer : stdout_buffer, _IOFBF, kBufferBytes);
            set = true;
        }
        return o;
    }
    if (rotation.max_bytes > 0) {
        struct stat st {};
        if (lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
            if (int e = shift_files(path, rotation.keep); e != 0) {
                return make_error(e, "cannot rotate " + path);
            }
        }
    }
    int err = 0;
    o->buffer_ = std::make_unique<char[]>(kBufferBytes);
    o->f_ = create(path, false, o->buffer_.get(), err);
    if (o->f_ == nullptr) {
        return make_error(err, "cannot create " + path);
    }
    o->owned_ = true;
    o->name_ = path;
    o->rotation_ = rotation;
    return o;
}

OutputFile::~OutputFile() {
    flush();
    if (owned_ && f_ != nullptr && fclose(f_) != 0 && !failed_) {
        fail("writing", errno);
    }
}

void OutputFile::fail(const char *doing, int err) {
    failed_ = true;
    std::fprintf(stderr, "mysqltrace: %s %s failed: %s; this output is disabled\n", doing,
                 name_.c_str(), std::strerror(err));
}

void OutputFile::rotate() {
    FILE *old = f_;
    f_ = nullptr;
    if (fclose(old) != 0) {
        fail("writing", errno);
        return;
    }
    int err = shift_files(name_, rotation_.keep);
    if (err == 0) {
        f_ = create(name_, true, buffer_.get(), err);
    }
    if (f_ == nullptr) {
        fail("rotating", err);
        return;
    }
    size_ = 0;
}

void OutputFile::end_line() {
    if (failed_) {
        pending_.clear();
        return;
    }
    if (rotation_.max_bytes > 0 && line_start_ > 0 &&
        size_ + pending_.size() > rotation_.max_bytes) {
        // The lines before this one end the current file; this one may
        // start the next.
        write_now({pending_.data(), line_start_}, true);
        pending_.erase(0, line_start_);
    }
    if (pending_.size() >= kBatchBytes) {
        write_pending();
    }
}

void OutputFile::write_pending() {
    if (!pending_.empty()) {
        write_now(pending_, true);
        pending_.clear();
    }
}

void OutputFile::write(std::string_view s) {
    write_pending();
    write_now(s);
}

void OutputFile::write_now(std::string_view s, bool direct) {
    if (failed_ || s.empty()) {
        return;
    }
    if (rotation_.max_bytes > 0 && size_ > 0 && size_ + s.size() > rotation_.max_bytes) {
        rotate();
        if (failed_) {
            return;
        }
    }
    if (direct) {
        // A batch of lines goes to the file as it is, past the stream's
        // buffer (a copy of every byte less); what the stream holds goes
        // first, so that the order holds (stderr shares it with messages).
        if (fflush(f_) != 0) {
            fail("writing", errno);
            return;
        }
        if (int e = write_all(fileno(f_), s); e != 0) {
            fail("writing", e);
            return;
        }
    } else if (fwrite(s.data(), 1, s.size(), f_) != s.size()) {
        fail("writing", errno);
        return;
    }
    size_ += s.size();
}

void OutputFile::flush() {
    write_pending();
    if (!failed_ && f_ != nullptr && fflush(f_) != 0) {
        fail("writing", errno);
    }
}

}  // namespace mysqltrace::output
