// SPDX-License-Identifier: GPL-2.0-only
#include "sql/tables.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace mysqltrace::sql {

namespace {

struct Token {
    enum Kind { word, quoted, text, punct } kind;
    std::string value;  // a quoted identifier without its backticks
};

bool word_byte(unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '$' || c >= 0x80;
}

// Skips a quoted string or identifier from `i` (at its opening quote);
// returns the index after it, and its content (backticks: `` read as `).
size_t skip_quoted(std::string_view s, size_t i, std::string *content) {
    const char q = s[i++];
    while (i < s.size()) {
        const char c = s[i];
        if (c == '\\' && q != '`' && i + 1 < s.size()) {
            i += 2;
            continue;
        }
        if (c == q) {
            if (i + 1 < s.size() && s[i + 1] == q) {  // a doubled quote
                content->push_back(c);
                i += 2;
                continue;
            }
            return i + 1;
        }
        content->push_back(c);
        i++;
    }
    return i;
}

std::vector<Token> tokens(std::string_view s) {
    std::vector<Token> out;
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (std::isspace(c)) {
            i++;
        } else if (c == '#' || (c == '-' && s.substr(i, 3) == "-- ") ||
                   (c == '-' && s.substr(i) == "--")) {
            const size_t nl = s.find('\n', i);
            i = nl == std::string_view::npos ? s.size() : nl + 1;
        } else if (c == '/' && s.substr(i, 3) == "/*!") {
            i += 3;  // executable comment: its SQL counts; skip the version
            while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
                i++;
            }
        } else if (c == '/' && s.substr(i, 2) == "/*") {
            const size_t end = s.find("*/", i + 2);
            i = end == std::string_view::npos ? s.size() : end + 2;
        } else if (c == '*' && s.substr(i, 2) == "*/") {
            i += 2;  // the end of an executable comment
        } else if (c == '`') {
            Token t{Token::quoted, {}};
            i = skip_quoted(s, i, &t.value);
            out.push_back(std::move(t));
        } else if (c == '\'' || c == '"') {
            Token t{Token::text, {}};
            i = skip_quoted(s, i, &t.value);
            out.push_back(std::move(t));
        } else if (word_byte(c)) {
            size_t j = i;
            while (j < s.size() && word_byte(static_cast<unsigned char>(s[j]))) {
                j++;
            }
            out.push_back({Token::word, std::string(s.substr(i, j - i))});
            i = j;
        } else {
            out.push_back({Token::punct, std::string(1, static_cast<char>(c))});
            i++;
        }
    }
    return out;
}

bool is(const Token &t, std::string_view kw) {
    return t.kind == Token::word && t.value.size() == kw.size() &&
           std::equal(kw.begin(), kw.end(), t.value.begin(), [](char a, char b) {
               return a == std::toupper(static_cast<unsigned char>(b));
           });
}

bool is_punct(const Token &t, char c) {
    return t.kind == Token::punct && t.value[0] == c;
}

// Words that end a table reference where an alias could stand.
bool ends_reference(const Token &t) {
    static constexpr std::array kStop = {
        "WHERE",  "SET",       "ON",        "USING",         "JOIN",      "INNER",     "LEFT",
        "RIGHT",  "CROSS",     "NATURAL",   "OUTER",         "FULL",      "ORDER",     "GROUP",
        "HAVING", "LIMIT",     "FOR",       "LOCK",          "UNION",     "EXCEPT",    "VALUES",
        "VALUE",  "SELECT",    "PARTITION", "USE",           "FORCE",     "IGNORE",    "WINDOW",
        "INTO",   "RETURNING", "AS",        "STRAIGHT_JOIN", "INTERSECT", "PROCEDURE", "DEFAULT"};
    return std::any_of(kStop.begin(), kStop.end(), [&](const char *kw) { return is(t, kw); });
}

bool identifier(const Token &t) {
    return t.kind == Token::quoted || (t.kind == Token::word && !ends_reference(t));
}

class Reader {
  public:
    explicit Reader(std::vector<Token> t) : t_(std::move(t)) {}

    std::vector<TableName> run() {
        for (i_ = 0; i_ < t_.size(); i_++) {
            const Token &t = t_[i_];
            if (is(t, "FROM") || is(t, "JOIN") || is(t, "STRAIGHT_JOIN")) {
                references();
            } else if (is(t, "INTO")) {
                if (i_ + 1 < t_.size() && !is(t_[i_ + 1], "OUTFILE") &&
                    !is(t_[i_ + 1], "DUMPFILE")) {
                    references();
                }
            } else if (i_ == 0 && is(t, "UPDATE")) {
                while (i_ + 1 < t_.size() &&
                       (is(t_[i_ + 1], "LOW_PRIORITY") || is(t_[i_ + 1], "IGNORE"))) {
                    i_++;
                }
                references();
            }
        }
        return out_;
    }

  private:
    const Token *peek(size_t k = 1) const { return i_ + k < t_.size() ? &t_[i_ + k] : nullptr; }

    // A comma list of references after the keyword at i_; i_ ends on the
    // last token read.
    void references() {
        while (reference()) {
            // [AS] alias
            if (peek() && is(*peek(), "AS")) {
                i_++;
            }
            if (peek() && identifier(*peek())) {
                i_++;
            }
            if (!peek() || !is_punct(*peek(), ',')) {
                return;
            }
            i_++;
        }
    }

    bool reference() {
        const Token *a = peek();
        if (a == nullptr || !identifier(*a)) {
            return false;  // a subquery, a derived table, a variable
        }
        TableName n;
        i_++;
        if (peek() && is_punct(*peek(), '.') && peek(2) && identifier(*peek(2))) {
            n.schema = a->value;
            n.name = peek(2)->value;
            i_ += 2;
        } else {
            n.name = a->value;
        }
        if (n.schema.empty() && is(*a, "DUAL")) {
            return false;
        }
        out_.push_back(std::move(n));
        return true;
    }

    std::vector<Token> t_;
    size_t i_ = 0;
    std::vector<TableName> out_;
};

}  // namespace

std::vector<TableName> statement_tables(std::string_view sql) {
    return Reader(tokens(sql)).run();
}

bool only_table(std::string_view sql, std::string_view default_schema, bool complete,
                TableName *out) {
    if (!complete) {
        return false;
    }
    auto all = statement_tables(sql);
    if (all.empty()) {
        return false;
    }
    for (auto &t : all) {
        if (t.schema.empty()) {
            if (default_schema.empty()) {
                return false;
            }
            t.schema = default_schema;
        }
        if (!(t == all.front())) {
            return false;
        }
    }
    *out = all.front();
    return true;
}

}  // namespace mysqltrace::sql
