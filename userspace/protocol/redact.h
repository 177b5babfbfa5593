// SPDX-License-Identifier: GPL-2.0-only
// Removes secrets from SQL text before it reaches any output. Statements
// carry passwords as string literals in a few known places; each such literal
// is replaced by '<redacted>':
//   IDENTIFIED BY '...'            IDENTIFIED BY PASSWORD '...'
//   IDENTIFIED VIA|WITH p USING '...'  IDENTIFIED WITH p AS '...'
//   ... BY '...' REPLACE '...'     (MySQL ALTER USER)
//   PASSWORD('...'), OLD_PASSWORD('...') anywhere
//   SET PASSWORD [FOR u] = '...'
//   MASTER_PASSWORD = '...', OPTIONS (PASSWORD '...')
// The scan understands quotes, backticks, escapes and comments (MariaDB's
// executable /*! ... */ comments are scanned as SQL), so a keyword inside a
// string or comment does not trigger, and a literal cut by the capture is
// redacted to its end.
#pragma once

#include <string>
#include <string_view>

namespace mysqltrace::protocol {

inline constexpr std::string_view kRedacted = "'<redacted>'";

// Returns sql with secret literals replaced; *changed (if given) tells
// whether anything was replaced.
std::string redact_sql(std::string_view sql, bool *changed = nullptr);

}  // namespace mysqltrace::protocol
