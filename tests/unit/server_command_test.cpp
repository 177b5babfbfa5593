// SPDX-License-Identifier: GPL-2.0-only
// Ring records of dispatched commands: decoding and both renderers.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mysql/commands.h"
#include "mysqltrace/abi/event.h"
#include "output/server_render.h"
#include "server/command_tracer.h"

namespace {

using mysqltrace::server::CommandEvent;
using mysqltrace::server::decode_command;

std::vector<uint8_t> record(uint32_t command, const std::string &text, uint32_t true_len) {
    mt_server_command_event ev{};
    ev.hdr.type = MT_EV_SERVER_COMMAND;
    ev.hdr.size = static_cast<uint32_t>(sizeof(ev) + text.size());
    ev.hdr.ts_ns = 123456789;
    ev.hdr.pid = 10;
    ev.hdr.tid = 11;
    ev.thread_id = 42;
    ev.command = command;
    ev.packet_len = true_len;
    ev.copied = static_cast<uint32_t>(text.size());
    std::vector<uint8_t> out(sizeof(ev) + text.size());
    std::memcpy(out.data(), &ev, sizeof(ev));
    std::memcpy(out.data() + sizeof(ev), text.data(), text.size());
    return out;
}

TEST(ServerCommand, DecodesRecord) {
    auto rec = record(3, "select 1", 8);
    CommandEvent ev;
    ASSERT_TRUE(decode_command(rec, &ev));
    EXPECT_EQ(ev.thread_id, 42u);
    EXPECT_EQ(ev.tid, 11u);
    EXPECT_EQ(ev.command, 3u);
    EXPECT_EQ(ev.argument, "select 1");
    EXPECT_FALSE(ev.truncated);
}

TEST(ServerCommand, RejectsMalformedRecords) {
    CommandEvent ev;
    auto rec = record(3, "select 1", 8);
    rec.pop_back();  // copied says 8, only 7 follow
    EXPECT_FALSE(decode_command(rec, &ev));
    EXPECT_FALSE(decode_command(std::span<const uint8_t>(rec.data(), 10), &ev));
    auto other = record(3, "", 0);
    other[0] = MT_EV_SELFTEST;
    EXPECT_FALSE(decode_command(other, &ev));
}

TEST(ServerCommand, TruncatedTextIsMarked) {
    auto rec = record(3, "select 'aaaa", 5000);
    CommandEvent ev;
    ASSERT_TRUE(decode_command(rec, &ev));
    EXPECT_TRUE(ev.truncated);
    mysqltrace::output::Clock clock;
    std::string line = mysqltrace::output::command_text(ev, clock);
    EXPECT_NE(line.find("statement/com/Query"), std::string::npos);
    EXPECT_NE(line.find("select 'aaaa... (5000 bytes)\n"), std::string::npos);
}

TEST(ServerCommand, TextEscapesControlCharacters) {
    const std::string sql = "select 'a\tb\nc\x01'";
    auto rec = record(3, sql, static_cast<uint32_t>(sql.size()));
    CommandEvent ev;
    ASSERT_TRUE(decode_command(rec, &ev));
    std::string line = mysqltrace::output::command_text(ev, mysqltrace::output::Clock());
    EXPECT_NE(line.find("select 'a\\tb\\nc\\x01'\n"), std::string::npos) << line;
}

TEST(ServerCommand, JsonUsesPerformanceSchemaColumns) {
    auto rec = record(3, "select \"x\"", 10);
    CommandEvent ev;
    ASSERT_TRUE(decode_command(rec, &ev));
    auto j = nlohmann::json::parse(mysqltrace::output::command_json(ev, 10));
    EXPECT_EQ(j["kind"], "command");
    EXPECT_EQ(j["THREAD_ID"], 42);
    EXPECT_EQ(j["EVENT_NAME"], "statement/com/Query");
    EXPECT_EQ(j["command"], "COM_QUERY");
    EXPECT_EQ(j["SQL_TEXT"], "select \"x\"");
    EXPECT_EQ(j["TIMER_START"], 123456789000ull);
    EXPECT_FALSE(j.contains("sql_bytes"));
}

TEST(ServerCommand, JsonSurvivesInvalidUtf8) {
    auto rec = record(3, std::string("select '\xff\xfe'"), 11);
    CommandEvent ev;
    ASSERT_TRUE(decode_command(rec, &ev));
    auto j = nlohmann::json::parse(mysqltrace::output::command_json(ev, 10));
    EXPECT_EQ(j["SQL_TEXT"], "select '\xEF\xBF\xBD\xEF\xBF\xBD'");
}

TEST(Commands, Names) {
    using mysqltrace::mysql::command_event_name;
    using mysqltrace::mysql::command_name;
    EXPECT_EQ(command_name(3), "COM_QUERY");
    EXPECT_EQ(command_name(250), "COM_STMT_BULK_EXECUTE");
    EXPECT_EQ(command_name(200), "COM_200");
    EXPECT_EQ(command_event_name(1), "statement/com/Quit");
    EXPECT_EQ(command_event_name(22), "statement/com/Prepare");
    EXPECT_EQ(command_event_name(200), "statement/com/200");
}

}  // namespace
