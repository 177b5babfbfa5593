// SPDX-License-Identifier: GPL-2.0-only
// The Debian sid chroot that the harness's MySQL flavour runs mysqld from,
// as scripts/mysql-sandbox.sh builds and enters it.
#pragma once

#include <string>

#include "util/result.h"

namespace mysqltrace::test::harness {

// The chroot's programs, as the server's namespace sees them.
inline constexpr const char *kMysqldInChroot = "/usr/sbin/mysqld";
inline constexpr const char *kMysqlCliInChroot = "/usr/bin/mysql";

// `configured` if set, else the source tree's scripts/mysql-sandbox.sh.
std::string sandbox_script(const std::string &configured);

// `mysql-sandbox.sh chroot` prints the chroot's path, building it first if
// needed (~20 s; the script's lock makes parallel tests wait for one build).
// Asked once per process and script; scratch_dir gets the script's log.
Result<std::string> mysql_chroot(const std::string &script, const std::string &scratch_dir);

}  // namespace mysqltrace::test::harness
