// SPDX-License-Identifier: GPL-2.0-only
// The agent's control socket (agent/control_socket.h) without the agent:
// a request answered from the serving loop, an unknown request, the socket's
// mode and directory, a stale socket replaced, a live one refused, the
// socket removed when closed, and the client's errors.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "agent/control_socket.h"
#include "temp_dir.h"

namespace mysqltrace::agent {
namespace {

// `request` asked from another thread while this one serves, as the
// agent's loop does.
Result<std::string> ask_served(ControlSocket &socket, const std::string &request,
                               const std::string &answer) {
    std::atomic<bool> done = false;
    Result<std::string> got = Error{0, ""};
    std::thread client([&] {
        got = ask_agent(socket.path(), request, 5000);
        done = true;
    });
    int served = 0;
    while (!done) {
        socket.serve([&] {
            served++;
            return answer;
        });
        ::usleep(1000);
    }
    client.join();
    EXPECT_EQ(served, request == "snapshot" ? 1 : 0);
    return got;
}

TEST(ControlSocket, AnswersOneRequestPerConnection) {
    test::TempDir dir("mtcontrol");
    const std::string path = dir.path() + "/run/agent.sock";
    auto socket = ControlSocket::open(path);
    ASSERT_TRUE(socket) << socket.error().message;
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(::stat((dir.path() + "/run").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);

    // An answer larger than a socket buffer, written as the client reads.
    const std::string big(1 << 20, 'x');
    auto got = ask_served(**socket, "snapshot", big);
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_EQ(*got, big + "\n");
    got = ask_served(**socket, "status", big);
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_EQ(*got, "{\"error\":\"unknown request (known: snapshot)\"}\n");

    // A second listener on the same path is refused while this one lives.
    auto second = ControlSocket::open(path);
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error().message,
              "another agent answers on " + path + " (give this one its own --control-socket)");
    socket->reset();
    EXPECT_FALSE(std::filesystem::exists(path));
    auto none = ask_agent(path, "snapshot");
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().message,
              "no agent at " + path + ": start one with `mysqltrace agent` or use --pid");
}

TEST(ControlSocket, StaleSocketReplacedOtherFilesRefused) {
    test::TempDir dir("mtcontrol");
    const std::string path = dir.path() + "/agent.sock";
    // What a killed agent leaves: a socket file nothing listens on.
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0);
    ::close(fd);
    auto socket = ControlSocket::open(path);
    ASSERT_TRUE(socket) << socket.error().message;
    auto got = ask_served(**socket, "snapshot", "{}");
    ASSERT_TRUE(got) << got.error().message;
    EXPECT_EQ(*got, "{}\n");
    socket->reset();

    const std::string file = dir.path() + "/file";
    std::ofstream(file) << "not a socket\n";
    auto refused = ControlSocket::open(file);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message, "control socket " + file + " exists and is not a socket");
    EXPECT_FALSE(ControlSocket::open(dir.path() + "/" + std::string(120, 'a')));
}

}  // namespace
}  // namespace mysqltrace::agent
