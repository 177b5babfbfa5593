// SPDX-License-Identifier: GPL-2.0-only
// The project's error model: library code returns Result<T> for anything that
// can fail at run time (missing pid, probe attach refused, bad input) and never
// exits the process. An Error carries an errno-style code (0 when none applies)
// and one human-readable line that the CLI prints as is.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace mysqltrace {

struct Error {
    int code = 0;  // errno value, or 0
    std::string message;
};

// Builds an Error from a negative libbpf/kernel return code or errno value.
Error make_error(int err, std::string what);

template <typename T>
class [[nodiscard]] Result {
  public:
    Result(T value) : v_(std::move(value)) {}
    Result(Error err) : v_(std::move(err)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T &value() & {
        assert(ok());
        return std::get<0>(v_);
    }
    T &&value() && {
        assert(ok());
        return std::get<0>(std::move(v_));
    }
    const T &value() const & {
        assert(ok());
        return std::get<0>(v_);
    }
    T *operator->() { return &value(); }
    const T *operator->() const { return &value(); }
    T &operator*() { return value(); }
    const T &operator*() const { return value(); }

    const Error &error() const {
        assert(!ok());
        return std::get<1>(v_);
    }

  private:
    std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
  public:
    Result() = default;
    Result(Error err) : err_(std::move(err)), ok_(false) {}

    bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    const Error &error() const {
        assert(!ok_);
        return err_;
    }

  private:
    Error err_;
    bool ok_ = true;
};

}  // namespace mysqltrace
