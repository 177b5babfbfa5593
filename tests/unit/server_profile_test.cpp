// SPDX-License-Identifier: GPL-2.0-only
// Which server profile a binary gets from its symbols, and the MySQL 8
// profile's THD layout, read off tests/testprogs/mysql8_abi_standin (a
// stand-in with MySQL 8's mangled entry points, not a server).
#include <unistd.h>

#include <gtest/gtest.h>

#include "elf/elf_file.h"
#include "server/server_target.h"
#include "server/thd_layout.h"

namespace {

using mysqltrace::elf::ElfFile;
using mysqltrace::server::derive_thd_layout;
using mysqltrace::server::detect_profile;
using mysqltrace::server::ServerProfile;

constexpr const char *kStandin = MYSQLTRACE_TESTPROGS_DIR "/mysql8_abi_standin";

TEST(ServerProfile, Mysql8FromItsDispatchCommand) {
    auto f = ElfFile::open(kStandin);
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto p = detect_profile(**f, "pid 1");
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->profile, ServerProfile::mysql8);
    EXPECT_EQ(p->dispatch, "_Z16dispatch_commandP3THDPK8COM_DATA19enum_server_command");
    EXPECT_EQ(p->statement, "_Z20dispatch_sql_commandP3THDP12Parser_state");
    EXPECT_EQ(p->enter_stage, "_ZN3THD11enter_stageEPK17PSI_stage_info_v1PS0_PKcS5_j");
}

// The stand-in's accessors have C++ linkage, as MySQL 8's do: found by
// their mangled names only in the MySQL 8 profile. Its fake THD keeps
// thread_id at +0x128, the query string at +0x190, the stage name at +0x1d8.
TEST(ServerProfile, Mysql8LayoutFromCxxAccessors) {
    auto f = ElfFile::open(kStandin);
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto l = derive_thd_layout(**f, /*mysql8=*/true);
    ASSERT_TRUE(l.ok()) << l.error().message;
    EXPECT_EQ(l->thread_id, 0x128);
    EXPECT_EQ(l->query_string, 0x190);
    EXPECT_EQ(l->proc_info, 0x1d8);  // from the out-of-line THD::enter_stage
    EXPECT_EQ(l->stage_key, 0x1e0);
    EXPECT_EQ(l->stmt_da, -1);  // no accessor for it: unknown, not guessed
    EXPECT_EQ(l->main_da, -1);
    EXPECT_EQ(l->db, -1);
    // The C++ names are looked up whatever the server: the same layout.
    auto any = derive_thd_layout(**f);
    ASSERT_TRUE(any.ok()) << any.error().message;
    EXPECT_EQ(any->thread_id, 0x128);
    EXPECT_EQ(any->query_string, 0x190);
}

TEST(ServerProfile, NotAServer) {
    auto f = ElfFile::open("/proc/self/exe");
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto p = detect_profile(**f, "pid 1");
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().message,
              "pid 1 is not a MySQL/MariaDB server (no dispatch_command symbol)");
}

TEST(ServerProfile, MariadbWhenInstalled) {
    if (::access("/usr/sbin/mariadbd", R_OK) != 0) {
        GTEST_SKIP() << "no /usr/sbin/mariadbd";
    }
    auto f = ElfFile::open("/usr/sbin/mariadbd");
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto p = detect_profile(**f, "pid 1");
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->profile, ServerProfile::mariadb);
    EXPECT_EQ(p->statement, "_Z11mysql_parseP3THDPcjP12Parser_state");
    EXPECT_TRUE(p->enter_stage.empty());
}

}  // namespace
