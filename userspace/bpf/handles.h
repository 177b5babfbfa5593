// SPDX-License-Identifier: GPL-2.0-only
// RAII owners for libbpf objects. A BPF link or skeleton owned here is
// detached when its owner goes away, and the kernel drops every probe of a
// mysqltrace process that dies, so nothing outlives the tracer.
#pragma once

#include <memory>
#include <utility>
#include <unistd.h>

#include <bpf/libbpf.h>

namespace mysqltrace::bpf {

struct LinkDeleter {
    void operator()(bpf_link *l) const { bpf_link__destroy(l); }
};
using Link = std::unique_ptr<bpf_link, LinkDeleter>;

// Owns a bpftool-generated skeleton `T` (open -> load -> destroy).
template <typename T>
struct SkeletonDeleter {
    void operator()(T *s) const { T::destroy(s); }
};

// A file descriptor that closes itself.
class Fd {
  public:
    Fd() = default;
    explicit Fd(int fd) : fd_(fd) {}
    Fd(Fd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd &operator=(Fd &&o) noexcept {
        if (this != &o) {
            reset(std::exchange(o.fd_, -1));
        }
        return *this;
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    ~Fd() { reset(); }

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    void reset(int fd = -1) {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        fd_ = fd;
    }

  private:
    int fd_ = -1;
};

}  // namespace mysqltrace::bpf
