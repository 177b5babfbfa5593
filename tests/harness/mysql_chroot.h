// SPDX-License-Identifier: GPL-2.0-only
// The Debian sid chroot that the harness's MySQL flavour runs mysqld from,
// as scripts/mysql-sandbox.sh builds and enters it: its path, and the mount
// points the script leaves in it for a server's directory.
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

// `mysql-sandbox.sh exec` records in DIR/chroot-mountpoints the directories
// it created in the chroot as mount points for DIR (host paths, outermost
// first). Removes them, innermost first, once no namespace uses them; one
// still in use by another server is not empty and stays.
void remove_mountpoints_of(const std::string &dir);

}  // namespace mysqltrace::test::harness
