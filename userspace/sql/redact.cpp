// SPDX-License-Identifier: GPL-2.0-only
#include "sql/redact.h"

#include <strings.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace mysqltrace::sql {

namespace {

bool is_space(char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0;
}

// Identifier characters, including every byte of a multi-byte UTF-8 name.
bool is_word_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) || c == '_' || c == '$' || u >= 0x80;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

struct Token {
    enum Kind : uint8_t { word, value, ident, punct };
    Kind kind = punct;
    char c = 0;  // punct
    size_t begin = 0, end = 0;
};

// The tokens of `sql`, comments dropped (executable comments' bodies kept).
// `backslash`: whether a backslash escapes the next character in strings.
void tokenize(std::string_view sql, bool backslash, std::vector<Token> *out) {
    out->clear();
    const size_t n = sql.size();
    int exec_depth = 0;
    size_t i = 0;
    // Where a quoted string starting at `q` ends (past its closing quote, or
    // at the end of a cut text).
    auto string_end = [&](size_t q) {
        const char quote = sql[q];
        size_t j = q + 1;
        while (j < n) {
            if (sql[j] == '\\' && backslash && quote != '`') {
                j += 2;
                continue;
            }
            if (sql[j] == quote) {
                if (j + 1 < n && sql[j + 1] == quote) {
                    j += 2;
                    continue;
                }
                return j + 1;
            }
            ++j;
        }
        return n;
    };
    while (i < n) {
        const char c = sql[i];
        if (is_space(c)) {
            ++i;
            continue;
        }
        // "--" opens a comment only when a space, control character or the
        // end follows it.
        if (c == '#' || (c == '-' && i + 1 < n && sql[i + 1] == '-' &&
                         (i + 2 == n || static_cast<unsigned char>(sql[i + 2]) <= ' '))) {
            const size_t end = sql.find('\n', i);
            i = end == std::string_view::npos ? n : end;
            continue;
        }
        if (c == '/' && i + 1 < n && sql[i + 1] == '*') {
            size_t j = i + 2;
            if (j < n && sql[j] == '!') {
                j += 1;
            } else if (j + 1 < n && sql[j] == 'M' && sql[j + 1] == '!') {
                j += 2;
            } else {
                const size_t end = sql.find("*/", j);
                i = end == std::string_view::npos ? n : end + 2;
                continue;
            }
            while (j < n && std::isdigit(static_cast<unsigned char>(sql[j]))) {
                ++j;
            }
            ++exec_depth;
            i = j;
            continue;
        }
        if (c == '*' && exec_depth > 0 && i + 1 < n && sql[i + 1] == '/') {
            --exec_depth;
            i += 2;
            continue;
        }
        if (c == '\'' || c == '"' || c == '`') {
            const size_t end = string_end(i);
            out->push_back({c == '`' ? Token::ident : Token::value, 0, i, end});
            i = end;
            continue;
        }
        if (is_word_char(c)) {
            size_t j = i;
            while (j < n && is_word_char(sql[j])) {
                ++j;
            }
            const std::string_view w = sql.substr(i, j - i);
            // A string's prefix belongs to it: N'..', X'..', B'..' (adjacent)
            // and _charset '..' (spaces allowed).
            size_t k = j;
            if (w[0] == '_') {
                while (k < n && is_space(sql[k])) {
                    ++k;
                }
            }
            const bool prefix = (w.size() == 1 && std::strchr("nNxXbB", w[0]) != nullptr) ||
                                (w[0] == '_' && w.size() > 1);
            if (prefix && k < n && (sql[k] == '\'' || sql[k] == '"')) {
                const size_t end = string_end(k);
                out->push_back({Token::value, 0, i, end});
                i = end;
                continue;
            }
            const bool number = std::isdigit(static_cast<unsigned char>(c)) != 0;
            out->push_back({number ? Token::value : Token::word, 0, i, j});
            i = j;
            continue;
        }
        out->push_back({Token::punct, c, i, i + 1});
        ++i;
    }
}

// Functions whose arguments are secret: all of them, or all but the first.
enum class SecretArgs : uint8_t { none, all, from_second };

SecretArgs secret_function(std::string_view w) {
    static constexpr std::array<std::string_view, 5> all = {"PASSWORD", "OLD_PASSWORD", "ENCRYPT",
                                                            "KDF", "VALIDATE_PASSWORD_STRENGTH"};
    static constexpr std::array<std::string_view, 6> keys = {
        "AES_ENCRYPT", "AES_DECRYPT", "DES_ENCRYPT", "DES_DECRYPT", "ENCODE", "DECODE"};
    for (auto f : all) {
        if (iequals(w, f)) {
            return SecretArgs::all;
        }
    }
    for (auto f : keys) {
        if (iequals(w, f)) {
            return SecretArgs::from_second;
        }
    }
    return SecretArgs::none;
}

// Whether s starts with `upper` (ASCII capitals) in any case.
bool iequals_upper(std::string_view s, std::string_view upper) {
    for (size_t i = 0; i < upper.size(); i++) {
        if ((static_cast<unsigned char>(s[i]) & ~0x20u) != static_cast<unsigned char>(upper[i])) {
            return false;
        }
    }
    return true;
}

// Whether `s` mentions anything that can introduce a secret; a text without
// any of these is left alone at the cost of this scan.
bool mentions_secret_keyword(std::string_view s) {
    static constexpr std::array<std::string_view, 7> words = {
        "PASSWORD", "IDENTIFIED", "ENCRYPT", "DECRYPT", "ENCODE", "DECODE", "KDF"};
    // By the words' first letter, in either case, their common second letter
    // (in capitals): one table look-up per byte, a second one per letter
    // that starts a word.
    static constexpr auto kSecond = [] {
        std::array<char, 256> t{};
        for (auto w : words) {
            t[static_cast<unsigned char>(w[0])] = w[1];
            t[static_cast<unsigned char>(w[0]) | 0x20u] = w[1];
        }
        return t;
    }();
    for (size_t i = 0; i + 1 < s.size(); i++) {
        const char second = kSecond[static_cast<unsigned char>(s[i])];
        if (second == 0 ||
            (static_cast<unsigned char>(s[i + 1]) & ~0x20u) != static_cast<unsigned char>(second)) {
            continue;
        }
        // ASCII upper case by bit: s[i] is one of the letters above.
        const char c = static_cast<char>(static_cast<unsigned char>(s[i]) & ~0x20u);
        for (auto w : words) {
            if (w[0] == c && i + w.size() <= s.size() && iequals_upper(s.substr(i), w)) {
                return true;
            }
        }
    }
    return false;
}

// Adds the byte ranges of `tokens` that hold secrets to `ranges`.
void find_secrets(std::string_view sql, const std::vector<Token> &tokens,
                  std::vector<std::pair<size_t, size_t>> *ranges) {
    struct Call {
        int depth;
        SecretArgs args;
        int arg;
    };
    std::vector<Call> calls;
    bool identified = false, set_password = false, dynamic = false;
    bool pending = false;  // the next value is a secret
    SecretArgs opening = SecretArgs::none;
    int depth = 0;
    size_t index = 0;  // of the token within its statement
    std::string_view first;
    for (size_t t = 0; t < tokens.size(); t++, index++) {
        const Token &tok = tokens[t];
        const std::string_view text = sql.substr(tok.begin, tok.end - tok.begin);
        const bool call_opens =
            t + 1 < tokens.size() && tokens[t + 1].kind == Token::punct && tokens[t + 1].c == '(';
        switch (tok.kind) {
            case Token::value: {
                bool secret = pending;
                for (const Call &c : calls) {
                    secret |= c.args == SecretArgs::all || c.arg > 0;
                }
                // PREPARE s FROM '...', EXECUTE IMMEDIATE '...': the statement
                // is a string; one that may hold a secret is hidden whole.
                secret |= dynamic && mentions_secret_keyword(text);
                if (secret) {
                    ranges->emplace_back(tok.begin, tok.end);
                }
                pending = false;
                break;
            }
            case Token::word:
                pending = false;
                if (index == 0) {
                    first = text;
                    dynamic = iequals(text, "PREPARE");
                } else if (index == 1) {
                    set_password = iequals(first, "SET") && iequals(text, "PASSWORD");
                    dynamic |= iequals(first, "EXECUTE") && iequals(text, "IMMEDIATE");
                }
                if (call_opens) {
                    opening = secret_function(text);
                } else if (iequals(text, "PASSWORD") || iequals(text, "MASTER_PASSWORD") ||
                           iequals(text, "SOURCE_PASSWORD")) {
                    pending = true;
                }
                if (iequals(text, "IDENTIFIED")) {
                    identified = true;
                } else if ((identified && (iequals(text, "BY") || iequals(text, "USING") ||
                                           iequals(text, "AS"))) ||
                           ((identified || set_password) && iequals(text, "REPLACE"))) {
                    pending = true;
                }
                break;
            case Token::ident:
                pending = false;
                break;
            case Token::punct:
                if (tok.c == ';' && depth == 0) {
                    calls.clear();
                    identified = set_password = dynamic = pending = false;
                    opening = SecretArgs::none;
                    index = SIZE_MAX;  // the next token is the statement's first
                    break;
                }
                if (tok.c == '(') {
                    ++depth;
                    if (opening != SecretArgs::none) {
                        calls.push_back({depth, opening, 0});
                    }
                    opening = SecretArgs::none;
                    pending = false;
                } else if (tok.c == ')') {
                    if (!calls.empty() && calls.back().depth == depth) {
                        calls.pop_back();
                    }
                    depth = depth > 0 ? depth - 1 : 0;
                    pending = false;
                } else if (tok.c == ',') {
                    if (!calls.empty() && calls.back().depth == depth) {
                        calls.back().arg++;
                    }
                    pending = false;
                } else if (tok.c == '=') {
                    // SET PASSWORD ... = '...'; PASSWORD = '...' keeps pending.
                    pending |= set_password;
                } else {
                    pending = false;
                }
                break;
        }
    }
}

}  // namespace

std::string redact_sql(std::string_view sql, bool *changed) {
    std::string out(sql);
    const bool any = redact_in_place(&out);
    if (changed != nullptr) {
        *changed = any;
    }
    return out;
}

void redact_error_message(std::string *message) {
    const size_t near = message->find(" near '");
    if (near != std::string::npos) {
        message->replace(near, std::string::npos, " near ");
        message->append(kRedacted);
    }
}

bool may_hold_secret(std::string_view sql) {
    return mentions_secret_keyword(sql);
}

bool redact_in_place(std::string *sql) {
    if (!mentions_secret_keyword(*sql)) {
        return false;
    }
    std::vector<Token> tokens;
    std::vector<std::pair<size_t, size_t>> ranges;
    tokenize(*sql, true, &tokens);
    find_secrets(*sql, tokens, &ranges);
    // Without a backslash both readings are the same text. Where they part,
    // which one the server used cannot be told, nor where a secret written
    // after that point starts or ends (a string may swallow its keyword in one
    // reading and the value in the other): everything from there on goes.
    if (sql->find('\\') != std::string::npos) {
        std::vector<Token> plain;
        tokenize(*sql, false, &plain);
        find_secrets(*sql, plain, &ranges);
        const size_t n = std::min(tokens.size(), plain.size());
        size_t t = 0;
        while (t < n && tokens[t].begin == plain[t].begin && tokens[t].end == plain[t].end &&
               tokens[t].kind == plain[t].kind) {
            ++t;
        }
        if (t < tokens.size() || t < plain.size()) {
            const size_t from = std::min(t < tokens.size() ? tokens[t].begin : sql->size(),
                                         t < plain.size() ? plain[t].begin : sql->size());
            ranges.emplace_back(from, sql->size());
        }
    }
    if (ranges.empty()) {
        return false;
    }
    std::sort(ranges.begin(), ranges.end());
    std::string out;
    out.reserve(sql->size());
    size_t at = 0;
    for (size_t r = 0; r < ranges.size();) {
        size_t begin = ranges[r].first, end = ranges[r].second;
        // Overlapping readings merge into one redaction.
        for (++r; r < ranges.size() && ranges[r].first < end; ++r) {
            end = std::max(end, ranges[r].second);
        }
        begin = std::max(begin, at);
        out.append(*sql, at, begin - at);
        out.append(kRedacted);
        at = end;
    }
    out.append(*sql, at, std::string::npos);
    *sql = std::move(out);
    return true;
}

}  // namespace mysqltrace::sql
