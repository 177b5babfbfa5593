// SPDX-License-Identifier: GPL-2.0-only
#include "protocol/redact.h"

#include <cctype>

namespace mysqltrace::protocol {

namespace {

bool is_word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (char &c : out) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return out;
}

// The significant tokens seen so far in the current statement, as far as the
// rules need them.
struct StatementState {
    std::string prev;   // last token: upper-cased word or one punctuation char
    std::string prev2;  // the one before
    size_t tokens = 0;
    bool identified = false;       // IDENTIFIED appeared
    bool set_password = false;     // statement is SET PASSWORD ...
    bool set_password_eq = false;  // ... and its '=' has been seen
    int password_fn_depth = 0;     // inside PASSWORD( ... ) / OLD_PASSWORD( ... )
    int paren_depth = 0;
    bool fn_pending = false;  // PASSWORD just seen; '(' opens the function

    void push(std::string tok) {
        if (tokens == 0 && tok != "SET") {
            set_password = false;
        }
        if (tokens == 1 && prev == "SET" && tok == "PASSWORD") {
            set_password = true;
        }
        if (tok == "IDENTIFIED") {
            identified = true;
        }
        if (tok == "(") {
            ++paren_depth;
            if (fn_pending) {
                password_fn_depth = paren_depth;
            }
        } else if (tok == ")") {
            if (password_fn_depth == paren_depth) {
                password_fn_depth = 0;
            }
            if (paren_depth > 0) {
                --paren_depth;
            }
        }
        if (tok == "=" && set_password) {
            set_password_eq = true;
        }
        fn_pending = tok == "PASSWORD" || tok == "OLD_PASSWORD";
        prev2 = std::move(prev);
        prev = std::move(tok);
        ++tokens;
    }

    bool literal_is_secret() const {
        if (password_fn_depth > 0 || set_password_eq) {
            return true;
        }
        if (prev == "PASSWORD" || prev == "MASTER_PASSWORD") {
            return true;
        }
        if (prev == "=" && (prev2 == "PASSWORD" || prev2 == "MASTER_PASSWORD")) {
            return true;
        }
        return identified && (prev == "BY" || prev == "USING" || prev == "AS" || prev == "REPLACE");
    }
};

}  // namespace

std::string redact_sql(std::string_view sql, bool *changed) {
    std::string out;
    out.reserve(sql.size());
    StatementState st;
    int exec_comment_depth = 0;
    bool any = false;
    size_t i = 0;
    const size_t n = sql.size();
    while (i < n) {
        char c = sql[i];
        if (std::isspace(static_cast<unsigned char>(c))) {
            out += c;
            ++i;
            continue;
        }
        // Comments.
        // "--" starts a comment only when followed by a space or the end.
        if (c == '#' || (sql.substr(i, 2) == "--" &&
                         (i + 2 == n || std::isspace(static_cast<unsigned char>(sql[i + 2]))))) {
            size_t end = sql.find('\n', i);
            end = end == std::string_view::npos ? n : end;
            out.append(sql.substr(i, end - i));
            i = end;
            continue;
        }
        if (c == '/' && i + 1 < n && sql[i + 1] == '*') {
            size_t j = i + 2;
            bool executable = false;
            if (j < n && sql[j] == '!') {
                executable = true;
                ++j;
            } else if (j + 1 < n && sql[j] == 'M' && sql[j + 1] == '!') {
                executable = true;
                j += 2;
            }
            if (executable) {
                while (j < n && std::isdigit(static_cast<unsigned char>(sql[j]))) {
                    ++j;
                }
                ++exec_comment_depth;
                out.append(sql.substr(i, j - i));
                i = j;
                continue;
            }
            size_t end = sql.find("*/", j);
            end = end == std::string_view::npos ? n : end + 2;
            out.append(sql.substr(i, end - i));
            i = end;
            continue;
        }
        if (c == '*' && exec_comment_depth > 0 && i + 1 < n && sql[i + 1] == '/') {
            --exec_comment_depth;
            out.append("*/");
            i += 2;
            continue;
        }
        // Quoted strings and identifiers.
        if (c == '\'' || c == '"' || c == '`') {
            size_t j = i + 1;
            while (j < n) {
                if (sql[j] == '\\' && c != '`') {
                    j += 2;
                    continue;
                }
                if (sql[j] == c) {
                    if (j + 1 < n && sql[j + 1] == c) {
                        j += 2;
                        continue;
                    }
                    break;
                }
                ++j;
            }
            size_t end = j < n ? j + 1 : n;
            if (c != '`' && st.literal_is_secret()) {
                out.append(kRedacted);
                any = true;
            } else {
                out.append(sql.substr(i, end - i));
            }
            if (c == '`') {
                st.push("`IDENT`");
            } else {
                st.push("'LITERAL'");
            }
            i = end;
            continue;
        }
        if (is_word_char(c)) {
            size_t j = i;
            while (j < n && is_word_char(sql[j])) {
                ++j;
            }
            out.append(sql.substr(i, j - i));
            st.push(upper(sql.substr(i, j - i)));
            i = j;
            continue;
        }
        out += c;
        ++i;
        if (c == ';') {
            st = StatementState{};
            continue;
        }
        st.push(std::string(1, c));
    }
    if (changed != nullptr) {
        *changed = any;
    }
    return out;
}

}  // namespace mysqltrace::protocol
