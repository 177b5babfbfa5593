// SPDX-License-Identifier: GPL-2.0-only
// A terminal for the tests of `mysqltrace top`: a detached tmux session
// of 200x50 on a tmux server of its own, keys sent and the screen read
// back, as a person uses it.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "priv/cli_util.h"

namespace mysqltrace::test {

// A detached tmux session of 200x50 running a plain shell, on a tmux
// server of its own (its socket in `dir`); killed with its server however
// the test ends.
class Tmux {
  public:
    explicit Tmux(const std::string &dir) : socket_(dir + "/tmux.sock") {
        auto r = tmux({"new-session", "-d", "-s", "top", "-x", "200", "-y", "50",
                       "env PS1='shell$ ' bash --norc --noprofile"});
        EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    ~Tmux() { tmux({"kill-server"}); }
    // Types `text` literally.
    void type(const std::string &text) { tmux({"send-keys", "-t", "top", "-l", text}); }
    // Named keys: Enter, Escape, Down.
    void key(const std::string &name) { tmux({"send-keys", "-t", "top", name}); }
    std::string screen() { return tmux({"capture-pane", "-p", "-t", "top"}).out; }
    // Waits until a line starting with `line_start` is on the screen with
    // the shell's prompt on a later line: the command has ended and the
    // shell has drawn its prompt (the echo comes before the prompt, so
    // waiting for the echo alone races with the prompt).
    bool wait_for_prompt_after(const std::string &line_start, double timeout_s, std::string *last) {
        return wait(
            [&](const std::string &s) {
                const auto at = s.find("\n" + line_start);
                return at != std::string::npos && s.find("\nshell$", at + 1) != std::string::npos;
            },
            timeout_s, last);
    }
    // Polls the screen until `ok` holds (true) or `timeout_s` passes (false).
    bool wait(const std::function<bool(const std::string &)> &ok, double timeout_s,
              std::string *last) {
        const auto t0 = std::chrono::steady_clock::now();
        while (true) {
            *last = screen();
            if (ok(*last)) {
                return true;
            }
            if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >
                timeout_s) {
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }

  private:
    CommandResult tmux(std::vector<std::string> args) {
        args.insert(args.begin(), {"/usr/bin/tmux", "-f", "/dev/null", "-S", socket_});
        return run_command(args);
    }
    std::string socket_;
};

}  // namespace mysqltrace::test
