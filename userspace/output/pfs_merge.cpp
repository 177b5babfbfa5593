// SPDX-License-Identifier: GPL-2.0-only
#include "output/pfs_merge.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <queue>
#include <fcntl.h>
#include <unistd.h>

#include "util/fd_io.h"

namespace mysqltrace::output {

namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r';
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (is_space(s.front()) || s.front() == '\n')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (is_space(s.back()) || s.back() == '\n')) {
        s.remove_suffix(1);
    }
    return s;
}

Error parse_error(std::string what) {
    return Error{0, std::move(what)};
}

// A cursor over one line.
class Scanner {
  public:
    explicit Scanner(std::string_view s) : s_(s) {}

    void skip_ws() {
        while (pos_ < s_.size() && is_space(s_[pos_])) {
            pos_++;
        }
    }
    bool at_end() const { return pos_ >= s_.size(); }
    char peek() const { return at_end() ? '\0' : s_[pos_]; }
    bool accept(char c) {
        if (peek() == c && !at_end()) {
            pos_++;
            return true;
        }
        return false;
    }
    // A keyword, case-insensitive, followed by a non-word character.
    bool accept_word(std::string_view w) {
        if (s_.size() - pos_ < w.size()) {
            return false;
        }
        for (size_t i = 0; i < w.size(); i++) {
            char c = s_[pos_ + i];
            if (c >= 'a' && c <= 'z') {
                c = static_cast<char>(c - 'a' + 'A');
            }
            if (c != w[i]) {
                return false;
            }
        }
        size_t end = pos_ + w.size();
        if (end < s_.size() && is_word_char(s_[end])) {
            return false;
        }
        pos_ = end;
        return true;
    }
    std::string_view word() {
        size_t start = pos_;
        while (pos_ < s_.size() && is_word_char(s_[pos_])) {
            pos_++;
        }
        return s_.substr(start, pos_ - start);
    }
    size_t pos() const { return pos_; }
    void set_pos(size_t p) { pos_ = p; }
    std::string_view slice(size_t from) const { return s_.substr(from, pos_ - from); }

    static bool is_word_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
    }

  private:
    std::string_view s_;
    size_t pos_ = 0;
};

enum class ValueKind { Null, Number, String };

// A quoted string after its opening quote: backslash escapes any byte, ''
// is a quote.
bool skip_string_body(Scanner &sc) {
    while (!sc.at_end()) {
        char c = sc.peek();
        sc.set_pos(sc.pos() + 1);
        if (c == '\\') {
            if (sc.at_end()) {
                return false;
            }
            sc.set_pos(sc.pos() + 1);
        } else if (c == '\'') {
            if (!sc.accept('\'')) {
                return true;
            }
        }
    }
    return false;
}

// [-+]digits[.digits][e[-+]digits], or .digits
bool skip_number(Scanner &sc) {
    if (!sc.accept('-')) {
        sc.accept('+');
    }
    bool digits = false;
    while (is_digit(sc.peek()) && !sc.at_end()) {
        sc.set_pos(sc.pos() + 1);
        digits = true;
    }
    if (sc.accept('.')) {
        while (is_digit(sc.peek()) && !sc.at_end()) {
            sc.set_pos(sc.pos() + 1);
            digits = true;
        }
    }
    if (!digits) {
        return false;
    }
    if (sc.peek() == 'e' || sc.peek() == 'E') {
        sc.set_pos(sc.pos() + 1);
        if (!sc.accept('-')) {
            sc.accept('+');
        }
        if (!is_digit(sc.peek())) {
            return false;
        }
        while (is_digit(sc.peek()) && !sc.at_end()) {
            sc.set_pos(sc.pos() + 1);
        }
    }
    return true;
}

bool parse_u64(std::string_view s, uint64_t &out) {
    if (s.empty() || s.size() > 20) {
        return false;
    }
    uint64_t v = 0;
    for (char c : s) {
        if (!is_digit(c)) {
            return false;
        }
        uint64_t d = static_cast<uint64_t>(c - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    out = v;
    return true;
}

// One input file, read a line at a time.
struct Input {
    std::string path;
    FILE *f = nullptr;
    char *buf = nullptr;
    size_t cap = 0;
    uint64_t line_no = 0;
    std::string_view line;  // current row, in buf
    uint64_t ts = 0;        // its TIMER_START (or the one before it)
    uint64_t ts_line = 0;   // the line ts came from
    bool has_ts = false;

    ~Input() {
        std::free(buf);
        if (f != nullptr) {
            std::fclose(f);
        }
    }

    // Next line without its newline; false at the end of the file.
    Result<bool> read_line(std::string_view &out) {
        errno = 0;
        ssize_t n = ::getline(&buf, &cap, f);
        if (n < 0) {
            if (std::ferror(f)) {
                return make_error(errno != 0 ? errno : EIO, path + ": read error");
            }
            return false;
        }
        line_no++;
        out = std::string_view(buf, static_cast<size_t>(n));
        if (!out.empty() && out.back() == '\n') {
            out.remove_suffix(1);
        }
        return true;
    }

    Error error(const std::string &what) const {
        return Error{0, path + ":" + std::to_string(line_no) + ": " + what};
    }

    // Moves to the next row; false at the end of the file.
    Result<bool> advance() {
        for (;;) {
            std::string_view raw;
            auto r = read_line(raw);
            if (!r) {
                return r.error();
            }
            if (!*r) {
                return false;
            }
            std::string_view l = trim(raw);
            if (l.empty()) {
                continue;
            }
            auto row = pfs_parse_insert(l);
            if (!row) {
                return error(row.error().message);
            }
            if (row->timer_start) {
                uint64_t t = *row->timer_start;
                if (has_ts && t < ts) {
                    return error("TIMER_START " + std::to_string(t) + " goes backwards (line " +
                                 std::to_string(ts_line) + " has " + std::to_string(ts) +
                                 "); a trace file must be in TIMER_START order");
                }
                ts = t;
                ts_line = line_no;
                has_ts = true;
            }
            line = l;
            return true;
        }
    }
};

struct HeapEntry {
    uint64_t ts;
    size_t file;
    bool operator>(const HeapEntry &o) const { return ts != o.ts ? ts > o.ts : file > o.file; }
};

// Buffered writes to a file descriptor.
class FdWriter {
  public:
    explicit FdWriter(int fd) : fd_(fd) {}
    bool write(std::string_view s) {
        buf_.append(s);
        return buf_.size() < (1 << 16) || flush();
    }
    // false with errno set when a write failed.
    bool flush() {
        if (write_all(fd_, buf_) != 0) {
            return false;
        }
        buf_.clear();
        return true;
    }

  private:
    int fd_;
    std::string buf_;
};

}  // namespace

Result<PfsRow> pfs_parse_insert(std::string_view line) {
    Scanner sc(trim(line));
    constexpr const char *kShape =
        "not an `INSERT INTO events_(statements|stages|waits)_current VALUES (...);` line";
    if (!sc.accept_word("INSERT")) {
        return parse_error(kShape);
    }
    sc.skip_ws();
    if (!sc.accept_word("INTO")) {
        return parse_error(kShape);
    }
    sc.skip_ws();
    bool quoted = sc.accept('`');
    std::string_view name = sc.word();
    if (quoted && !sc.accept('`')) {
        return parse_error(kShape);
    }
    PfsRow row;
    row.table = pfs_table_by_name(name);
    if (row.table == nullptr) {
        return parse_error("unknown table `" + std::string(name) +
                           "` (expected events_statements_current, events_stages_current or "
                           "events_waits_current)");
    }
    sc.skip_ws();
    if (!sc.accept_word("VALUES")) {
        return parse_error(kShape);
    }
    sc.skip_ws();
    if (!sc.accept('(')) {
        return parse_error("expected `(` after VALUES");
    }
    const auto &cols = row.table->columns;
    size_t n = 0;
    for (;;) {
        sc.skip_ws();
        size_t start = sc.pos();
        ValueKind kind;
        if (sc.accept('\'')) {
            if (!skip_string_body(sc)) {
                return parse_error("value " + std::to_string(n + 1) + ": unterminated string");
            }
            kind = ValueKind::String;
        } else if (sc.peek() == '_') {
            std::string_view intro = sc.word();
            if (intro.size() < 2 || !sc.accept('\'')) {
                return parse_error("value " + std::to_string(n + 1) + ": `" + std::string(intro) +
                                   "` is not a character set introducer before a string");
            }
            if (!skip_string_body(sc)) {
                return parse_error("value " + std::to_string(n + 1) + ": unterminated string");
            }
            kind = ValueKind::String;
        } else if (sc.accept_word("NULL")) {
            kind = ValueKind::Null;
        } else if (skip_number(sc)) {
            if (Scanner::is_word_char(sc.peek()) || sc.peek() == '.') {
                return parse_error("value " + std::to_string(n + 1) + ": malformed number");
            }
            kind = ValueKind::Number;
        } else if (sc.at_end()) {
            return parse_error("the value list ends without `);`");
        } else {
            return parse_error("value " + std::to_string(n + 1) +
                               ": expected a quoted string, NULL or a number");
        }
        std::string_view text = sc.slice(start);
        if (n < cols.size() && kind != ValueKind::Null) {
            const auto &col = cols[n];
            bool want_number = col.type == PfsColumnType::Number;
            if (want_number != (kind == ValueKind::Number)) {
                return parse_error("value " + std::to_string(n + 1) + " (" + std::string(col.name) +
                                   ") should be " + (want_number ? "a number" : "a string") +
                                   " or NULL");
            }
            if (n == kPfsTimerStartColumn) {
                uint64_t ts;
                if (!parse_u64(text, ts)) {
                    return parse_error(
                        "value " + std::to_string(n + 1) +
                        " (TIMER_START) is not an unsigned 64-bit integer: " + std::string(text));
                }
                row.timer_start = ts;
            }
        }
        n++;
        sc.skip_ws();
        if (sc.accept(',')) {
            continue;
        }
        if (sc.accept(')')) {
            break;
        }
        if (sc.at_end()) {
            return parse_error("the value list ends without `);`");
        }
        return parse_error("value " + std::to_string(n) + ": expected `,` or `)` after it");
    }
    if (n != cols.size()) {
        return parse_error(std::string(row.table->name) + " has " + std::to_string(cols.size()) +
                           " columns, this row has " + std::to_string(n) + " values");
    }
    sc.skip_ws();
    if (!sc.accept(';')) {
        return parse_error("missing `;` after the value list");
    }
    sc.skip_ws();
    if (!sc.at_end()) {
        return parse_error("unexpected text after `;`");
    }
    return row;
}

bool pfs_is_trace_header(std::string_view line) {
    line = trim(line);
    auto starts = [&](std::string_view p) { return line.substr(0, p.size()) == p; };
    return (starts("/* MySQL Trace File for ") || starts("/* mysqltrace merge of ")) &&
           line.size() >= 3 && line.substr(line.size() - 3) == " */";
}

std::string pfs_merge_header(size_t files, std::time_t when) {
    return "/* mysqltrace merge of " + std::to_string(files) + (files == 1 ? " file" : " files") +
           " on " + pfs_format_time(when) + " */\n";
}

Result<uint64_t> pfs_merge(const std::vector<std::string> &files, const MergeWrite &write,
                           const std::string &output_name) {
    std::vector<std::unique_ptr<Input>> in;
    in.reserve(files.size());
    for (const auto &path : files) {
        auto inp = std::make_unique<Input>();
        inp->path = path;
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            return make_error(errno, path);
        }
        inp->f = ::fdopen(fd, "r");
        if (inp->f == nullptr) {
            int e = errno;
            ::close(fd);
            return make_error(e, path);
        }
        std::string_view first;
        auto r = inp->read_line(first);
        if (!r) {
            return r.error();
        }
        if (!*r) {
            return Error{0, path +
                                ":1: empty file; a trace file starts with its header comment "
                                "(/* MySQL Trace File for ... */)"};
        }
        if (!pfs_is_trace_header(first)) {
            return inp->error(
                "not a trace file: the first line must be its header comment "
                "(/* MySQL Trace File for ... */)");
        }
        in.push_back(std::move(inp));
    }
    auto write_error = [&](int e) {
        return make_error(e != 0 ? e : EIO, "writing " + output_name);
    };
    if (!write(pfs_merge_header(files.size(), std::time(nullptr)))) {
        return write_error(errno);
    }
    std::priority_queue<HeapEntry, std::vector<HeapEntry>, std::greater<>> heap;
    for (size_t i = 0; i < in.size(); i++) {
        auto r = in[i]->advance();
        if (!r) {
            return r.error();
        }
        if (*r) {
            heap.push(HeapEntry{in[i]->ts, i});
        }
    }
    uint64_t rows = 0;
    while (!heap.empty()) {
        HeapEntry top = heap.top();
        heap.pop();
        Input &cur = *in[top.file];
        if (!write(cur.line) || !write("\n")) {
            return write_error(errno);
        }
        rows++;
        auto r = cur.advance();
        if (!r) {
            return r.error();
        }
        if (*r) {
            heap.push(HeapEntry{cur.ts, top.file});
        }
    }
    return rows;
}

Result<uint64_t> pfs_merge_to_path(const std::vector<std::string> &files,
                                   const std::string &output) {
    if (output.empty() || output == "-") {
        std::signal(SIGPIPE, SIG_IGN);
        FdWriter out(STDOUT_FILENO);
        auto r = pfs_merge(
            files, [&](std::string_view s) { return out.write(s); }, "standard output");
        if (!r) {
            out.flush();
            return r;
        }
        if (!out.flush()) {
            return make_error(errno, "writing standard output");
        }
        return r;
    }
    size_t slash = output.rfind('/');
    std::string dir = slash == std::string::npos ? "." : output.substr(0, slash + 1);
    std::string base = slash == std::string::npos ? output : output.substr(slash + 1);
    if (base.empty()) {
        return make_error(EISDIR, output);
    }
    std::string tmp = (slash == std::string::npos ? "" : dir) + "." + base + ".XXXXXX";
    int fd = ::mkstemp(tmp.data());  // 0600, O_EXCL
    if (fd < 0) {
        return make_error(errno, "cannot create a temporary file in " + dir);
    }
    FdWriter out(fd);
    auto r = pfs_merge(
        files, [&](std::string_view s) { return out.write(s); }, tmp);
    int err = 0;
    std::string what;
    if (r && !out.flush()) {
        err = errno;
        what = "writing " + tmp;
    }
    if (::close(fd) != 0 && r && err == 0) {
        err = errno;
        what = "writing " + tmp;
    }
    if (r && err == 0 && ::rename(tmp.c_str(), output.c_str()) != 0) {
        err = errno;
        what = "cannot rename " + tmp + " to " + output;
    }
    if (!r || err != 0) {
        ::unlink(tmp.c_str());
        return r ? make_error(err, what) : r;
    }
    return r;
}

}  // namespace mysqltrace::output
