// SPDX-License-Identifier: GPL-2.0-only
#include "top/top_screen.h"

#include <curses.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <clocale>

#include "bpf/handles.h"
#include "bpf/ring_set.h"
#include "top/lock_view.h"

namespace mysqltrace::top {

namespace {

constexpr const char *kHelp[] = {
    "mysqltrace top: statement classes (schema, user, digest) by the time they take",
    "",
    "  t   sort by total time (over the last interval, then since the start)",
    "  c   sort by calls per second",
    "  m   sort by mean latency",
    "  p   sort by p99 latency (since the start)",
    "  e   sort by errors",
    "  r   sort by rows examined per row sent (per call when none is sent)",
    "  d   show one schema (db) only; an empty answer shows every one",
    "  u   show one user only; an empty answer shows every one",
    "  /   show the classes whose digest text contains a text",
    "  space       pause / resume the refresh",
    "  up, down, page up, page down, home, end   select a class",
    "  Enter       the selected class: its top stages and recent statements",
    "  l   the blocking tree: who waits for a lock now, and who holds it (l again: back)",
    "  Esc, Enter, left   back to the list",
    "  ?   this help (any key returns)",
    "  q   quit (Ctrl-C too)",
    nullptr,
};

// Waits for what the loops react to, draining the source meanwhile.
class Waiter {
  public:
    enum class Event { refresh, input, stop, error };

    Waiter(Source &source, const TopOptions &opts, bool keys) : source_(source), keys_(keys) {
        sigset_t mask;
        sigemptyset(&mask);
        for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
            sigaddset(&mask, sig);
        }
        ::sigprocmask(SIG_BLOCK, &mask, nullptr);
        sigfd_ = bpf::Fd(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
        period_ns_ = static_cast<uint64_t>(opts.interval_s * 1e9);
        const uint64_t now = bpf::monotonic_ns();
        next_ = now + period_ns_;
        end_ =
            opts.duration_s > 0 ? now + static_cast<uint64_t>(opts.duration_s * 1e9) : UINT64_MAX;
    }

    Event wait() {
        while (true) {
            const uint64_t now = bpf::monotonic_ns();
            if (now >= end_) {
                return Event::stop;
            }
            if (now >= next_) {
                next_ = std::max(next_ + period_ns_, now + period_ns_ / 2);
                return Event::refresh;
            }
            pollfd fds[3] = {{sigfd_.get(), POLLIN, 0},
                             {source_.fd(), POLLIN, 0},
                             {keys_ ? STDIN_FILENO : -1, POLLIN, 0}};
            const uint64_t until = std::min(next_, end_);
            const int ms = static_cast<int>((until - now + 999'999) / 1'000'000);
            const int n = ::poll(fds, 3, ms);
            if (n < 0 && errno != EINTR) {
                error_ = make_error(errno, "waiting for events failed");
                return Event::error;
            }
            if (n < 0) {
                return Event::input;  // a signal ncurses handles (SIGWINCH)
            }
            if (fds[0].revents) {
                return Event::stop;
            }
            if (fds[1].revents) {
                if (auto polled = source_.poll(); !polled) {
                    error_ = polled.error();
                    return Event::error;
                }
            }
            if (fds[2].revents) {
                return Event::input;
            }
        }
    }
    const Error &error() const { return error_; }

  private:
    Source &source_;
    bool keys_;
    bpf::Fd sigfd_;
    uint64_t period_ns_ = 0, next_ = 0, end_ = 0;
    Error error_{0, ""};
};

// The terminal in curses mode for as long as it lives.
struct Curses {
    Curses() {
        initscr();
        cbreak();  // Ctrl-C stays a signal: read from the signalfd
        noecho();
        keypad(stdscr, TRUE);
        nodelay(stdscr, TRUE);
        set_escdelay(25);
        curs_set(0);
    }
    ~Curses() {
        curs_set(1);
        endwin();
    }
};

class Screen {
  public:
    Screen(Source &source, Model &model) : source_(source), model_(model) {}
    // False once the user quits.
    bool key(int ch);
    void draw();
    void set_status(std::string s) { status_ = std::move(s); }
    bool paused() const { return paused_; }

  private:
    void prompt_key(int ch);
    void line(int y, const std::string &text, int attr = A_NORMAL);

    Source &source_;
    Model &model_;
    std::vector<Row> rows_;
    std::string selected_key_;
    size_t selected_ = 0, top_ = 0;
    bool paused_ = false, detail_ = false, help_ = false, locks_ = false;
    char prompting_ = 0;  // 'd', 'u', '/': the filter being typed
    std::string input_, status_;
};

void Screen::line(int y, const std::string &text, int attr) {
    attron(attr);
    mvaddstr(y, 0, cut(text, static_cast<size_t>(COLS)).c_str());
    if (attr != A_NORMAL) {
        // A title bar spans the whole width.
        const int x = getcurx(stdscr);
        for (int i = x; i < COLS; i++) {
            addch(' ');
        }
    }
    attroff(attr);
}

void Screen::prompt_key(int ch) {
    if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
        auto &field = prompting_ == 'd'   ? model_.filter.schema
                      : prompting_ == 'u' ? model_.filter.user
                                          : model_.filter.text;
        field = input_;
        prompting_ = 0;
        selected_ = top_ = 0;
        selected_key_.clear();
    } else if (ch == 27) {
        prompting_ = 0;
    } else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
        if (!input_.empty()) {
            input_.pop_back();
        }
    } else if (ch >= 0x20 && ch < 0x7f && input_.size() < 200) {
        input_ += static_cast<char>(ch);
    }
}

bool Screen::key(int ch) {
    if (prompting_) {
        prompt_key(ch);
        return true;
    }
    if (help_) {
        help_ = false;
        return ch != 'q';
    }
    if (detail_) {
        if (ch == 27 || ch == '\n' || ch == '\r' || ch == KEY_ENTER || ch == KEY_LEFT ||
            ch == KEY_BACKSPACE || ch == 127) {
            detail_ = false;
            return true;
        }
    }
    const size_t page = static_cast<size_t>(std::max(LINES - 5, 1));
    switch (ch) {
        case 'q':
        case 'Q':
            return false;
        case '?':
        case 'h':
            help_ = true;
            break;
        case 't':
            model_.sort = SortKey::time;
            break;
        case 'c':
            model_.sort = SortKey::calls;
            break;
        case 'm':
            model_.sort = SortKey::mean;
            break;
        case 'p':
            model_.sort = SortKey::p99;
            break;
        case 'e':
            model_.sort = SortKey::errors;
            break;
        case 'r':
            model_.sort = SortKey::rows;
            break;
        case 'd':
        case 'u':
        case '/':
            prompting_ = static_cast<char>(ch);
            input_ = ch == 'd'   ? model_.filter.schema
                     : ch == 'u' ? model_.filter.user
                                 : model_.filter.text;
            break;
        case ' ':
            paused_ = !paused_;
            break;
        case KEY_UP:
        case 'k':
            selected_ = selected_ > 0 ? selected_ - 1 : 0;
            selected_key_.clear();
            break;
        case KEY_DOWN:
        case 'j':
            selected_++;
            selected_key_.clear();
            break;
        case KEY_PPAGE:
            selected_ = selected_ > page ? selected_ - page : 0;
            selected_key_.clear();
            break;
        case KEY_NPAGE:
            selected_ += page;
            selected_key_.clear();
            break;
        case KEY_HOME:
            selected_ = 0;
            selected_key_.clear();
            break;
        case KEY_END:
            selected_ = SIZE_MAX / 2;
            selected_key_.clear();
            break;
        case 'l':
        case 'L':
            locks_ = !locks_;
            detail_ = false;
            break;
        case '\n':
        case '\r':
        case KEY_ENTER:
            detail_ = !rows_.empty();
            break;
        default:
            break;
    }
    return true;
}

void Screen::draw() {
    erase();
    const auto width = static_cast<size_t>(COLS);
    const auto header = header_lines(model_, source_.describe(), width);
    int y = 0;
    for (const auto &h : header) {
        line(y++, h);
    }
    std::string status = status_;
    if (prompting_) {
        status = std::string(prompting_ == 'd'   ? "schema (db) to show, empty for all: "
                             : prompting_ == 'u' ? "user to show, empty for all: "
                                                 : "digest text to show, empty for all: ") +
                 input_ + "_";
    } else if (paused_) {
        status = "paused (space resumes)" + (status.empty() ? "" : "; " + status);
    } else if (status.empty()) {
        status = model_.has_rates() ? "? for help" : "rates after the first interval; ? for help";
        if (const size_t n = lock_waiters(model_.current()); n > 0 && !locks_) {
            status = std::to_string(n) + (n == 1 ? " connection waits" : " connections wait") +
                     " for a lock: l shows who blocks them; " + status;
        }
    }
    line(y++, status, paused_ || !status_.empty() ? A_BOLD : A_NORMAL);
    if (help_) {
        for (const char *const *h = kHelp; *h != nullptr && y < LINES; h++) {
            line(y++, *h);
        }
        refresh();
        return;
    }
    if (locks_) {
        for (const auto &l : lock_lines(model_.current(), width)) {
            if (y >= LINES) {
                break;
            }
            line(y++, l);
        }
        refresh();
        return;
    }
    rows_ = model_.rows();
    // The selection follows its class when the order changes.
    if (!selected_key_.empty()) {
        auto it = std::ranges::find(rows_, selected_key_, &Row::key);
        if (it != rows_.end()) {
            selected_ = static_cast<size_t>(it - rows_.begin());
        }
    }
    selected_ = rows_.empty() ? 0 : std::min(selected_, rows_.size() - 1);
    if (!rows_.empty()) {
        selected_key_ = rows_[selected_].key;
    }
    if (detail_) {
        auto r = model_.find(selected_key_);
        if (!r) {
            detail_ = false;
        } else {
            for (const auto &l : detail_lines(*r, width)) {
                if (y >= LINES) {
                    break;
                }
                line(y++, l);
            }
            refresh();
            return;
        }
    }
    const bool server = model_.server_column();
    line(y++, table_title(server, width), A_REVERSE);
    const auto visible = static_cast<size_t>(std::max(LINES - y, 1));
    if (selected_ < top_) {
        top_ = selected_;
    } else if (selected_ >= top_ + visible) {
        top_ = selected_ - visible + 1;
    }
    for (size_t i = top_; i < rows_.size() && y < LINES; i++) {
        line(y++, table_line(rows_[i], server, width), i == selected_ ? A_STANDOUT : A_NORMAL);
    }
    refresh();
}

}  // namespace

const char *const *help_lines() {
    return kHelp;
}

Result<void> run_screen(Source &source, Model &model, const TopOptions &opts) {
    std::setlocale(LC_ALL, "");
    if (auto first = source.snapshot(); first) {
        model.update(std::move(first).value());
    } else {
        return first.error();
    }
    Waiter waiter(source, opts, true);
    Curses curses;
    Screen screen(source, model);
    screen.draw();
    while (true) {
        switch (waiter.wait()) {
            case Waiter::Event::stop:
                return {};
            case Waiter::Event::error:
                return waiter.error();
            case Waiter::Event::refresh:
                if (!screen.paused()) {
                    if (auto next = source.snapshot(); next) {
                        model.update(std::move(next).value());
                        screen.set_status("");
                    } else {
                        screen.set_status(next.error().message);
                    }
                }
                break;
            case Waiter::Event::input:
                for (int ch = getch(); ch != ERR; ch = getch()) {
                    if (!screen.key(ch)) {
                        return {};
                    }
                }
                break;
        }
        screen.draw();
    }
}

Result<void> run_batch(Source &source, Model &model, const TopOptions &opts, std::ostream &out) {
    if (auto first = source.snapshot(); first) {
        model.update(std::move(first).value());
    } else {
        return first.error();
    }
    Waiter waiter(source, opts, false);
    while (true) {
        switch (waiter.wait()) {
            case Waiter::Event::stop:
                return {};
            case Waiter::Event::error:
                return waiter.error();
            case Waiter::Event::input:
                continue;
            case Waiter::Event::refresh:
                break;
        }
        auto next = source.snapshot();
        if (!next) {
            return next.error();
        }
        model.update(std::move(next).value());
        std::string text;
        for (const auto &h : header_lines(model, source.describe(), opts.batch_width)) {
            text += h + "\n";
        }
        const bool server = model.server_column();
        text += table_title(server, opts.batch_width) + "\n";
        for (const auto &r : model.rows()) {
            text += table_line(r, server, opts.batch_width) + "\n";
        }
        if (std::ranges::any_of(model.current().servers, &ServerSnapshot::locks)) {
            for (const auto &l : lock_lines(model.current(), opts.batch_width)) {
                text += l + "\n";
            }
        }
        out << text << "\n" << std::flush;
    }
}

}  // namespace mysqltrace::top
