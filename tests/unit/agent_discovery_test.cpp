// SPDX-License-Identifier: GPL-2.0-only
// The agent's /proc parsers, on texts shaped as the kernel, systemd, docker,
// podman and Kubernetes write them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agent/discovery.h"
#include "agent/traced_server.h"

namespace mysqltrace::agent {
namespace {

const std::string kId = "4f1c2b3a5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7a8";

TEST(AgentDiscovery, ServerExecutables) {
    EXPECT_TRUE(is_server_executable("/usr/sbin/mariadbd"));
    EXPECT_TRUE(is_server_executable("/usr/sbin/mysqld"));
    EXPECT_TRUE(is_server_executable("/usr/sbin/mysqld (deleted)"));  // upgraded under it
    EXPECT_TRUE(is_server_executable("mysqld"));
    EXPECT_FALSE(is_server_executable("/usr/bin/mysqld_safe"));
    EXPECT_FALSE(is_server_executable("/usr/bin/mariadb"));
    EXPECT_FALSE(is_server_executable("/usr/sbin/mysqld.bak"));
    EXPECT_FALSE(is_server_executable(""));
}

TEST(AgentDiscovery, StatStartTime) {
    // A command name with spaces and a ')' of its own.
    const std::string stat =
        "4242 (my sql) d)) S 1 4242 4242 0 -1 4194560 5153 0 0 0 12 7 0 0 20 0 38 0 "
        "987654 2462208000 54000 18446744073709551615 1 1 0 0 0 0 0 4096 1260 0 0 0 17 1 0 0";
    EXPECT_EQ(parse_stat_start_ticks(stat), 987654u);
    EXPECT_EQ(parse_stat_start_ticks("4242 (x) S 1 2"), std::nullopt);
    EXPECT_EQ(parse_stat_start_ticks("garbage"), std::nullopt);
}

TEST(AgentDiscovery, ContainerShapes) {
    struct Case {
        std::string path, runtime;
    };
    const Case cases[] = {
        // docker, systemd cgroup driver (cgroup v2) and cgroupfs driver (v1).
        {"/system.slice/docker-" + kId + ".scope", "docker"},
        {"/docker/" + kId, "docker"},
        // podman: systemd driver, rootless under a user's slice, cgroupfs.
        {"/machine.slice/libpod-" + kId + ".scope", "podman"},
        {"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId +
             ".scope/container",
         "podman"},
        {"/libpod_parent/libpod-" + kId, "podman"},
        // Kubernetes: containerd and CRI-O with the systemd driver, and
        // the cgroupfs driver's pod directories.
        {"/kubepods.slice/kubepods-burstable.slice/"
         "kubepods-burstable-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/cri-containerd-" +
             kId + ".scope",
         "containerd"},
        {"/kubepods.slice/kubepods-besteffort.slice/"
         "kubepods-besteffort-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/crio-" +
             kId + ".scope",
         "cri-o"},
        {"/kubepods/burstable/pod0a1b2c3d-4e5f-6789-abcd-ef0123456789/" + kId, "kubernetes"},
        {"/kubepods/pod0a1b2c3d-4e5f-6789-abcd-ef0123456789/" + kId, "kubernetes"},
    };
    for (const auto &c : cases) {
        auto got = container_of(c.path);
        ASSERT_TRUE(got.has_value()) << c.path;
        EXPECT_EQ(got->id, kId) << c.path;
        EXPECT_EQ(got->runtime, c.runtime) << c.path;
    }
}

TEST(AgentDiscovery, NotContainers) {
    for (const std::string &path : std::vector<std::string>{
             "/",
             "/system.slice/mariadb.service",
             "/user.slice/user-1000.slice/session-3.scope",
             // conmon, podman's monitor, is not the container.
             "/machine.slice/libpod-conmon-" + kId + ".scope",
             "/system.slice/crio-conmon-" + kId + ".scope",
             // Too short, not hex, no known parent.
             "/docker/" + kId.substr(1),
             "/docker/" + kId.substr(0, 63) + "g",
             "/other/" + kId,
             "/process_api/ce96b8acd4b0f56b7af858bc35717319",
         }) {
        EXPECT_EQ(container_of(path), std::nullopt) << path;
    }
}

TEST(AgentDiscovery, InnermostContainerWins) {
    const std::string inner(64, 'b');
    auto got = container_of("/docker/" + kId + "/docker/" + inner);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->id, inner);
}

TEST(AgentDiscovery, SystemdUnits) {
    EXPECT_EQ(systemd_unit_of("/system.slice/mariadb.service"), "mariadb.service");
    EXPECT_EQ(systemd_unit_of("/system.slice/system-mariadb.slice/mariadb@replica1.service"),
              "mariadb@replica1.service");
    EXPECT_EQ(systemd_unit_of("/system.slice/mysql.service/payload"), "mysql.service");
    EXPECT_EQ(systemd_unit_of("/user.slice/user-1000.slice/user@1000.service/app.slice/"
                              "db.service"),
              "db.service");
    EXPECT_EQ(systemd_unit_of("/system.slice/docker-" + kId + ".scope"), "");
    EXPECT_EQ(systemd_unit_of("/"), "");
    EXPECT_EQ(systemd_unit_of("/system.slice/.service"), "");
}

TEST(AgentDiscovery, ProcCgroupUnified) {
    auto info = parse_proc_cgroup("0::/system.slice/mariadb.service\n");
    EXPECT_EQ(info.path, "/system.slice/mariadb.service");
    EXPECT_EQ(info.unit, "mariadb.service");
    EXPECT_EQ(info.container, std::nullopt);
}

TEST(AgentDiscovery, ProcCgroupHybridAndV1) {
    // systemd's hybrid layout: v1 controllers, name=systemd, and an empty
    // unified hierarchy.
    auto hybrid = parse_proc_cgroup(
        "12:memory:/system.slice/mysql.service\n"
        "1:name=systemd:/system.slice/mysql.service\n"
        "0::/\n");
    EXPECT_EQ(hybrid.path, "/system.slice/mysql.service");
    EXPECT_EQ(hybrid.unit, "mysql.service");
    // docker on a v1 host, cgroupfs driver.
    auto v1 = parse_proc_cgroup("11:pids:/docker/" + kId + "\n4:memory:/docker/" + kId +
                                "\n1:name=systemd:/docker/" + kId + "\n");
    EXPECT_EQ(v1.path, "/docker/" + kId);
    ASSERT_TRUE(v1.container.has_value());
    EXPECT_EQ(v1.container->runtime, "docker");
    EXPECT_EQ(v1.unit, "");
    // This project's VM: only a memory controller below the root.
    auto vm = parse_proc_cgroup(
        "9:name=systemd:/\n4:memory:/process_api/ce96b8acd4b0f56b7af858bc35717319\n0::/\n");
    EXPECT_EQ(vm.path, "/process_api/ce96b8acd4b0f56b7af858bc35717319");
    EXPECT_EQ(vm.container, std::nullopt);
    EXPECT_EQ(parse_proc_cgroup("").path, "");
}

TEST(AgentDiscovery, TcpListeners) {
    const std::string tcp =
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode\n"
        "   0: 00000000:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000   106     "
        "   0 31337 1 0000000000000000 100 0 0 10 0\n"
        "   1: 0100007F:5BA0 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0     "
        "   0 1587038 1 0000000000000000 100 0 0 10 0\n"
        // An established connection of the same port: not a listener.
        "   2: 0100007F:0CEA 0100007F:D2F4 01 00000000:00000000 00:00000000 00000000   106     "
        "   0 41414 1 0000000000000000 20 4 30 10 -1\n";
    auto got = parse_tcp_listeners(tcp, false);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].address, "0.0.0.0");
    EXPECT_EQ(got[0].port, 3306);
    EXPECT_EQ(got[0].inode, 31337u);
    EXPECT_EQ(got[1].address, "127.0.0.1");
    EXPECT_EQ(got[1].port, 23456);
    EXPECT_EQ(got[1].inode, 1587038u);

    const std::string tcp6 =
        "  sl  local_address                         remote_address                        st "
        "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 00000000000000000000000000000000:0CEA 00000000000000000000000000000000:0000 0A "
        "00000000:00000000 00:00000000 00000000   106        0 27182 1 0000000000000000 100 0 "
        "0 10 0\n"
        "   1: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A "
        "00000000:00000000 00:00000000 00000000     0        0 27183 1 0000000000000000 100 0 "
        "0 10 0\n"
        "   2: 0000000000000000FFFF00000100007F:84D0 00000000000000000000000000000000:0000 0A "
        "00000000:00000000 00:00000000 00000000     0        0 27184 1 0000000000000000 100 0 "
        "0 10 0\n";
    auto got6 = parse_tcp_listeners(tcp6, true);
    ASSERT_EQ(got6.size(), 3u);
    EXPECT_EQ(got6[0].address, "::");
    EXPECT_EQ(got6[0].port, 3306);
    EXPECT_EQ(got6[0].inode, 27182u);
    EXPECT_EQ(got6[1].address, "::1");
    EXPECT_EQ(got6[1].port, 8080);
    EXPECT_EQ(got6[2].address, "::ffff:127.0.0.1");
    EXPECT_EQ(got6[2].port, 34000);
    // An ipv4 table read as ipv6 (or the reverse) yields nothing.
    EXPECT_TRUE(parse_tcp_listeners(tcp, true).empty());
    EXPECT_TRUE(parse_tcp_listeners("garbage\n: : : :", false).empty());
}

TEST(AgentDiscovery, UnixListeners) {
    const std::string unix_text =
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        "00000000356ce03d: 00000002 00000000 00010000 0001 01 1587039 /run/mysqld/mysqld.sock\n"
        // A connected stream socket of the server: not a listener.
        "00000000c3732a35: 00000003 00000000 00000000 0001 03 1587100 /run/mysqld/mysqld.sock\n"
        // Unnamed and abstract listeners; a path with a space.
        "0000000011111111: 00000002 00000000 00010000 0001 01 1587200\n"
        "0000000022222222: 00000002 00000000 00010000 0001 01 1587201 @mysql-abstract\n"
        "0000000033333333: 00000002 00000000 00010000 0001 01 1587202 /tmp/my dir/s.sock\n";
    auto got = parse_unix_listeners(unix_text);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0].path, "/run/mysqld/mysqld.sock");
    EXPECT_EQ(got[0].inode, 1587039u);
    EXPECT_EQ(got[1].path, "@mysql-abstract");
    EXPECT_EQ(got[2].path, "/tmp/my dir/s.sock");
    EXPECT_EQ(got[2].inode, 1587202u);
}

TEST(AgentDiscovery, SocketLinks) {
    EXPECT_EQ(parse_socket_link("socket:[1587039]"), 1587039u);
    EXPECT_EQ(parse_socket_link("pipe:[1234]"), std::nullopt);
    EXPECT_EQ(parse_socket_link("socket:[]"), std::nullopt);
    EXPECT_EQ(parse_socket_link("/dev/null"), std::nullopt);
}

TEST(AgentDiscovery, DirectoryNames) {
    ServerLabels l;
    l.flavour = "mariadb";
    l.process.id.pid = 42;
    EXPECT_EQ(server_dir_name(l), "mariadb-pid42");
    l.process.sockets = {"/run/mysqld/mysqld.sock"};
    EXPECT_EQ(server_dir_name(l), "mariadb-sock-mysqld.sock");
    l.process.ports = {3306, 3307};
    EXPECT_EQ(server_dir_name(l), "mariadb-3306");
    l.process.cgroup.unit = "mariadb@a b.service";
    EXPECT_EQ(server_dir_name(l), "mariadb@a_b.service-mariadb-3306");
    l.process.cgroup.container = Container{"docker", kId};
    EXPECT_EQ(server_dir_name(l), "docker-4f1c2b3a5d6e-mariadb-3306");
}

TEST(AgentDiscovery, Describe) {
    ServerLabels l;
    l.flavour = "mysql";
    l.version = "9.7.4";
    l.process.id.pid = 7;
    l.process.ports = {3306};
    l.process.sockets = {"/run/a.sock", "/run/b.sock"};
    l.process.cgroup.path = "/system.slice/mysql.service";
    l.process.cgroup.unit = "mysql.service";
    EXPECT_EQ(describe(l),
              "pid=7 flavour=mysql version=9.7.4 port=3306 socket=/run/a.sock,/run/b.sock "
              "cgroup=/system.slice/mysql.service unit=mysql.service container=-");
}

}  // namespace
}  // namespace mysqltrace::agent
