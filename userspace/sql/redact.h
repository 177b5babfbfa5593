// SPDX-License-Identifier: GPL-2.0-only
// Removes secrets from SQL text before it reaches any output: the one
// redaction engine of the client and the server side, every renderer and
// exporter. Each secret value is replaced by '<redacted>':
//   IDENTIFIED BY|USING|AS '...'   (CREATE/ALTER USER, GRANT; every factor)
//   IDENTIFIED BY PASSWORD '...', ... REPLACE '...'
//   SET PASSWORD [FOR u] = '...' [REPLACE '...']
//   PASSWORD|MASTER_PASSWORD|SOURCE_PASSWORD [=] '...'  (CHANGE MASTER,
//       CHANGE REPLICATION SOURCE, START REPLICA|SLAVE, START
//       GROUP_REPLICATION, CREATE|ALTER SERVER ... OPTIONS (PASSWORD '...'))
//   every argument of PASSWORD(), OLD_PASSWORD(), ENCRYPT(), KDF(),
//       VALIDATE_PASSWORD_STRENGTH()
//   the key arguments (all but the first) of AES_ENCRYPT(), AES_DECRYPT(),
//       DES_ENCRYPT(), DES_DECRYPT(), ENCODE(), DECODE()
// A value is a quoted string (with its _charset/N/X/B prefix), a number or a
// 0x/0b literal. The scan understands quotes, backticks, escapes and
// comments (executable /*! ... */ comments are scanned as SQL), so a keyword
// inside a string or comment does not trigger, and a value cut by the
// capture is redacted to its end. Whether a backslash escapes a quote depends
// on the session's sql_mode (NO_BACKSLASH_ESCAPES), which a tracer cannot
// know: the text is scanned both ways and whatever either reading finds
// secret is redacted.
#pragma once

#include <string>
#include <string_view>

namespace mysqltrace::sql {

inline constexpr std::string_view kRedacted = "'<redacted>'";

// Returns sql with secret values replaced; *changed (if given) tells
// whether anything was replaced.
std::string redact_sql(std::string_view sql, bool *changed = nullptr);

// Redacts `*sql` in place; returns whether anything was replaced. Texts
// without any secret-bearing keyword are left untouched at the cost of one
// scan (the server calls this for every statement).
bool redact_in_place(std::string *sql);
// False when redact_in_place() would leave `sql` alone for certain (it
// mentions no keyword that can introduce a secret).
bool may_hold_secret(std::string_view sql);

// A parse error quotes the statement from where parsing failed (MySQL's and
// MariaDB's ER_PARSE_ERROR: "... near '<text>' at line N"). Called for the
// message of a statement whose text had secrets: the quote goes.
void redact_error_message(std::string *message);

}  // namespace mysqltrace::sql
