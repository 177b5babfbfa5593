// SPDX-License-Identifier: GPL-2.0-only
// The one redaction engine of every output: each password-bearing form the
// servers know, and a generated corpus (every form x quoting x comments and
// whitespace x letter case x surrounding statements) in which no byte run of
// a secret may survive.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "sql/redact.h"

namespace mysqltrace::sql {
namespace {

TEST(Redact, PasswordLiterals) {
    EXPECT_EQ(redact_sql("CREATE USER 'u'@'h' IDENTIFIED BY 'secret'"),
              "CREATE USER 'u'@'h' IDENTIFIED BY '<redacted>'");
    // The escaped quote may or may not end the string (sql_mode): the rest goes.
    EXPECT_EQ(redact_sql("alter user u identified by \"p\\\"w\" require none"),
              "alter user u identified by '<redacted>'");
    EXPECT_EQ(redact_sql("CREATE USER u IDENTIFIED BY PASSWORD '*ABCDEF'"),
              "CREATE USER u IDENTIFIED BY PASSWORD '<redacted>'");
    EXPECT_EQ(redact_sql("CREATE USER u IDENTIFIED VIA ed25519 USING PASSWORD('pw')"),
              "CREATE USER u IDENTIFIED VIA ed25519 USING PASSWORD('<redacted>')");
    EXPECT_EQ(redact_sql("CREATE USER u IDENTIFIED VIA ed25519 USING 'hash' OR "
                         "mysql_native_password USING 'h2'"),
              "CREATE USER u IDENTIFIED VIA ed25519 USING '<redacted>' OR "
              "mysql_native_password USING '<redacted>'");
    EXPECT_EQ(redact_sql("CREATE USER u IDENTIFIED WITH caching_sha2_password AS 'x'"),
              "CREATE USER u IDENTIFIED WITH caching_sha2_password AS '<redacted>'");
    EXPECT_EQ(redact_sql("ALTER USER u IDENTIFIED BY 'new' REPLACE 'old'"),
              "ALTER USER u IDENTIFIED BY '<redacted>' REPLACE '<redacted>'");
    EXPECT_EQ(redact_sql("SET PASSWORD FOR 'u'@'%' = PASSWORD('pw')"),
              "SET PASSWORD FOR 'u'@'%' = PASSWORD('<redacted>')");
    EXPECT_EQ(redact_sql("set password = 'pw'"), "set password = '<redacted>'");
    EXPECT_EQ(redact_sql("SELECT PASSWORD('a'), OLD_PASSWORD ( 'b' ), 'c'"),
              "SELECT PASSWORD('<redacted>'), OLD_PASSWORD ( '<redacted>' ), 'c'");
    EXPECT_EQ(redact_sql("CHANGE MASTER TO MASTER_USER='r', MASTER_PASSWORD='pw'"),
              "CHANGE MASTER TO MASTER_USER='r', MASTER_PASSWORD='<redacted>'");
    EXPECT_EQ(redact_sql("GRANT ALL ON *.* TO u IDENTIFIED BY 'x'; SELECT 'keep' AS BY_"),
              "GRANT ALL ON *.* TO u IDENTIFIED BY '<redacted>'; SELECT 'keep' AS BY_");
    // Cut by the capture inside the literal: redacted to the end.
    EXPECT_EQ(redact_sql("CREATE USER u IDENTIFIED BY 'sec"),
              "CREATE USER u IDENTIFIED BY '<redacted>'");
    // MariaDB executable comments are SQL.
    EXPECT_EQ(redact_sql("/*!80000 CREATE USER u IDENTIFIED BY 'x' */"),
              "/*!80000 CREATE USER u IDENTIFIED BY '<redacted>' */");
}

TEST(Redact, LeavesEverythingElse) {
    bool changed = true;
    const std::string sql =
        "SELECT 'IDENTIFIED BY', password, `IDENTIFIED` FROM t -- IDENTIFIED BY 'x'\n"
        "WHERE a = 'by' /* PASSWORD('y') */ ORDER BY 'z'";
    EXPECT_EQ(redact_sql(sql, &changed), sql);
    EXPECT_FALSE(changed);
    redact_sql("SELECT PASSWORD('x')", &changed);
    EXPECT_TRUE(changed);
}

TEST(Redact, ReplicationServersAndKeyFunctions) {
    EXPECT_EQ(redact_sql("CHANGE REPLICATION SOURCE TO SOURCE_USER='r', SOURCE_PASSWORD = 'pw'"),
              "CHANGE REPLICATION SOURCE TO SOURCE_USER='r', SOURCE_PASSWORD = '<redacted>'");
    EXPECT_EQ(redact_sql("START REPLICA USER='r' PASSWORD='pw' DEFAULT_AUTH='x'"),
              "START REPLICA USER='r' PASSWORD='<redacted>' DEFAULT_AUTH='x'");
    EXPECT_EQ(redact_sql("CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (USER 'r', "
                         "PASSWORD 'pw', HOST 'h')"),
              "CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (USER 'r', "
              "PASSWORD '<redacted>', HOST 'h')");
    EXPECT_EQ(redact_sql("SELECT AES_ENCRYPT('data', 'key'), AES_DECRYPT(c, UNHEX('6b'))"),
              "SELECT AES_ENCRYPT('data', '<redacted>'), AES_DECRYPT(c, UNHEX('<redacted>'))");
    EXPECT_EQ(redact_sql("SELECT ENCRYPT('pw', 'salt'), DES_ENCRYPT('x', 0x6b6579)"),
              "SELECT ENCRYPT('<redacted>', '<redacted>'), DES_ENCRYPT('x', '<redacted>')");
    EXPECT_EQ(redact_sql("CREATE USER u IDENTIFIED BY _utf8mb4'pw' AND IDENTIFIED WITH "
                         "authentication_ldap_sasl AS N'dn'"),
              "CREATE USER u IDENTIFIED BY '<redacted>' AND IDENTIFIED WITH "
              "authentication_ldap_sasl AS '<redacted>'");
    EXPECT_EQ(redact_sql("SET PASSWORD FOR u = 'new' REPLACE 'old' RETAIN CURRENT PASSWORD"),
              "SET PASSWORD FOR u = '<redacted>' REPLACE '<redacted>' RETAIN CURRENT PASSWORD");
    // Dynamic SQL: the statement is a string.
    EXPECT_EQ(redact_sql("PREPARE s FROM 'CREATE USER u IDENTIFIED BY ''pw'''"),
              "PREPARE s FROM '<redacted>'");
    EXPECT_EQ(redact_sql("PREPARE s FROM 'SELECT ?'"), "PREPARE s FROM 'SELECT ?'");
}

// Under NO_BACKSLASH_ESCAPES 'a\' is a whole string; with backslash escapes
// it runs on into what follows. Where the two readings part, the rest of
// the text goes; where they agree, only the secrets.
TEST(Redact, BothReadingsOfABackslash) {
    EXPECT_EQ(redact_sql("SELECT 'a\\', PASSWORD('pw')"), "SELECT '<redacted>'");
    EXPECT_EQ(redact_sql("SELECT 'a\\'; SET PASSWORD = 'pw'; SELECT 'b'"), "SELECT '<redacted>'");
    EXPECT_EQ(redact_sql("ALTER USER u IDENTIFIED BY 'p\\'w'"),
              "ALTER USER u IDENTIFIED BY '<redacted>'");
    EXPECT_EQ(redact_sql("SELECT 'a\\\\', PASSWORD('pw')"),
              "SELECT 'a\\\\', PASSWORD('<redacted>')");
}

// ---- The generated corpus ----

constexpr const char *kSecret = "Qz7kWp9vRx";
constexpr const char *kSecret2 = "Hb4nTq8mZc";

std::string hex(std::string_view s) {
    static const char *digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

// Whether any 4-byte run of `secret` (or of its hex form) is in `text`.
bool leaks(const std::string &text, std::string_view secret) {
    std::string lower_text = text;
    std::transform(lower_text.begin(), lower_text.end(), lower_text.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    for (const std::string &s : {std::string(secret), hex(secret)}) {
        std::string lower = s;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        for (size_t i = 0; i + 4 <= lower.size(); i++) {
            if (lower_text.find(lower.substr(i, 4)) != std::string::npos) {
                return true;
            }
        }
    }
    return false;
}

// {S} and {T}: where the secrets go, quoted by the corpus.
const std::vector<std::string> kForms = {
    "CREATE USER 'u1'@'localhost' IDENTIFIED BY {S}",
    "ALTER USER u1 IDENTIFIED BY {S}",
    "ALTER USER u1 IDENTIFIED BY {S} REPLACE {T}",
    "CREATE USER u1 IDENTIFIED WITH caching_sha2_password BY {S}",
    "CREATE USER u1 IDENTIFIED WITH mysql_native_password AS {S}",
    "CREATE USER u1 IDENTIFIED VIA ed25519 USING PASSWORD({S})",
    "CREATE USER u1 IDENTIFIED VIA ed25519 USING {S} OR unix_socket",
    "CREATE USER u1 IDENTIFIED BY {S} AND IDENTIFIED WITH authentication_ldap_sasl AS {T}",
    "ALTER USER u1 ADD 2 FACTOR IDENTIFIED WITH authentication_ldap_simple BY {S}",
    "ALTER USER u1 MODIFY 2 FACTOR IDENTIFIED BY {S}",
    "SET PASSWORD FOR 'u1'@'localhost' = PASSWORD({S})",
    "SET PASSWORD = {S}",
    "SET PASSWORD FOR u1 = {S} REPLACE {T} RETAIN CURRENT PASSWORD",
    "GRANT SELECT ON *.* TO 'u2'@'localhost' IDENTIFIED BY {S}",
    "GRANT SELECT ON *.* TO u2 IDENTIFIED BY PASSWORD {S} WITH GRANT OPTION",
    "CHANGE MASTER TO MASTER_HOST='h', MASTER_USER='r', MASTER_PASSWORD={S}",
    "CHANGE REPLICATION SOURCE TO SOURCE_USER='r', SOURCE_PASSWORD = {S}, SOURCE_PORT=3306",
    "START REPLICA USER='r' PASSWORD={S}",
    "START SLAVE USER='r' PASSWORD={S} DEFAULT_AUTH='p'",
    "START GROUP_REPLICATION USER='r', PASSWORD={S}",
    "CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (USER 'r', PASSWORD {S}, HOST 'h')",
    "ALTER SERVER s OPTIONS (PASSWORD {S})",
    "SELECT AES_ENCRYPT('data', {S})",
    "SELECT AES_DECRYPT(c, {S}, {T}) FROM t",
    "SELECT AES_ENCRYPT('data', UNHEX({S}))",
    "SELECT DES_ENCRYPT('x', {S}), DES_DECRYPT(c, {T})",
    "SELECT ENCRYPT({S}, {T})",
    "SELECT ENCODE('x', {S}), DECODE(c, {T})",
    "SELECT OLD_PASSWORD({S}), PASSWORD({T})",
    "SELECT VALIDATE_PASSWORD_STRENGTH({S})",
    "SELECT KDF({S}, {T}, 'info', 'hkdf')",
};

// How a secret is written.
std::string quote(int style, const std::string &s) {
    switch (style) {
        case 0:
            return "'" + s + "'";
        case 1:
            return "\"" + s + "\"";
        case 2:
            return "_utf8mb4'" + s + "'";
        case 3:
            return "_latin1 '" + s + "'";
        case 4:
            return "N'" + s + "'";
        case 5:
            return "X'" + hex(s) + "'";
        case 6:
            return "0x" + hex(s);
        case 7:
            return "'" + s + "''x'";  // a doubled quote inside
        default:
            return "'" + s + "\\'x'";  // an escaped quote inside
    }
}
constexpr int kQuotings = 9;

// What stands between two tokens.
const std::vector<std::string> kGaps = {" ",       "\n\t  ", " /* IDENTIFIED BY 'c' */ ",
                                        " -- c\n", " # c\n", "/*!50700 */"};

// Letter case of the statement's words (the secrets keep theirs).
std::string recase(const std::string &s, int how) {
    std::string out = s;
    for (size_t i = 0; i < out.size(); i++) {
        const auto c = static_cast<unsigned char>(out[i]);
        if (how == 1) {
            out[i] = static_cast<char>(std::tolower(c));
        } else if (how == 2 && i % 2 == 1) {
            out[i] = static_cast<char>(std::tolower(c));
        }
    }
    return out;
}

// Around the statement: alone, in a multi-statement, after a string that
// ends in a backslash (both sql_mode readings), inside an executable comment.
std::string surround(const std::string &stmt, int how) {
    switch (how) {
        case 0:
            return stmt;
        case 1:
            return "SELECT 1; " + stmt + "; SELECT 'tail'";
        case 2:
            return "SELECT 'a\\', 1; " + stmt;
        default:
            return "/*!80000 " + stmt + " */";
    }
}

std::string replace_all(std::string s, const std::string &from, const std::string &to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
        s.replace(at, from.size(), to);
    }
    return s;
}

TEST(RedactCorpus, NoSecretByteSurvives) {
    size_t cases = 0;
    for (const std::string &form : kForms) {
        for (size_t g = 0; g < kGaps.size(); g++) {
            for (int c = 0; c < 3; c++) {
                const std::string shaped = recase(replace_all(form, " ", kGaps[g]), c);
                for (int q = 0; q < kQuotings; q++) {
                    for (int s = 0; s < 4; s++) {
                        std::string stmt = replace_all(shaped, "{S}", quote(q, kSecret));
                        stmt = replace_all(stmt, "{s}", quote(q, kSecret));
                        stmt = replace_all(stmt, "{T}", quote(q, kSecret2));
                        stmt = replace_all(stmt, "{t}", quote(q, kSecret2));
                        const std::string sql = surround(stmt, s);
                        bool changed = false;
                        const std::string out = redact_sql(sql, &changed);
                        ASSERT_FALSE(leaks(out, kSecret) || leaks(out, kSecret2))
                            << "input:  " << sql << "\noutput: " << out;
                        ASSERT_TRUE(changed) << sql;
                        cases++;
                    }
                }
            }
        }
    }
    EXPECT_EQ(cases, kForms.size() * kGaps.size() * 3 * kQuotings * 4);
}

// Texts without secrets come back byte for byte, including the cheap path
// the server takes for every statement.
TEST(RedactCorpus, OrdinaryStatementsUntouched) {
    for (const std::string &sql :
         {std::string("SELECT a, 'x\\'y', \"q\" FROM t WHERE b LIKE 'p%' -- BY 'z'\n"),
          std::string("INSERT INTO users (name, password_hash) VALUES ('bob', SHA2('x', 256))"),
          std::string("SELECT * FROM t ORDER BY 'c' /* IDENTIFIED BY 'x' */"),
          std::string("UPDATE t SET note = 'identified by' WHERE id = 1")}) {
        std::string copy = sql;
        EXPECT_FALSE(redact_in_place(&copy)) << sql;
        EXPECT_EQ(copy, sql);
    }
}

}  // namespace
}  // namespace mysqltrace::sql
