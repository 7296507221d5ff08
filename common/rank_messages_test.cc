#include "common/rank_messages.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

namespace xpu_timer::proto {
namespace {

// pid, rank, local_rank, world_size, local_world_size, group_rank, hostname, status_path
RegisterInfo sample_registration() {
  return RegisterInfo{77, {5, 1, 8, 4, 1}, "node1", "/dev/shm/x/rank-5-77.page"};
}

std::string decode_error(const void* data, size_t len) {
  std::string error;
  EXPECT_FALSE(decode_message(data, len, &error).has_value());
  return error;
}

TEST(RankMessages, RegisterRoundTrips) {
  RegisterMsg m;
  ASSERT_TRUE(encode_register(sample_registration(), &m));
  EXPECT_EQ(m.header.magic, kMessageMagic);
  EXPECT_EQ(m.header.bytes, sizeof(RegisterMsg));
  std::string error;
  EXPECT_EQ(decode_message(&m, sizeof(m), &error), MsgType::kRegister) << error;
  RegisterMsg back;
  ASSERT_TRUE(decode_register(&m, sizeof(m), &back, &error)) << error;
  EXPECT_EQ(back.pid, 77);
  EXPECT_EQ(back.rank, 5);
  EXPECT_EQ(back.local_rank, 1);
  EXPECT_EQ(back.world_size, 8);
  EXPECT_EQ(back.local_world_size, 4);
  EXPECT_EQ(back.group_rank, 1);
  EXPECT_STREQ(back.hostname, "node1");
  EXPECT_STREQ(back.status_path, "/dev/shm/x/rank-5-77.page");
}

TEST(RankMessages, RegisterCutsAStringThatDoesNotFitAndSaysSo) {
  const std::string long_host(200, 'h');
  RegisterInfo info = sample_registration();
  info.hostname = long_host.c_str();
  RegisterMsg m;
  EXPECT_FALSE(encode_register(info, &m));
  EXPECT_EQ(std::string(m.hostname), long_host.substr(0, sizeof(m.hostname) - 1));
  RegisterMsg back;
  std::string error;
  EXPECT_TRUE(decode_register(&m, sizeof(m), &back, &error)) << error;
}

TEST(RankMessages, HeadersThatAreNotOursAreRefusedWithOneLine) {
  RegisterMsg m;
  encode_register(sample_registration(), &m);
  EXPECT_EQ(decode_error(&m, 3), "message of 3 bytes is too short");
  EXPECT_EQ(decode_error(&m, sizeof(m) - 1), "message of " + std::to_string(sizeof(m) - 1) +
                                                 " bytes, header says " +
                                                 std::to_string(sizeof(m)));
  RegisterMsg bad = m;
  bad.header.magic = 1;
  EXPECT_EQ(decode_error(&bad, sizeof(bad)), "bad message magic");
  bad = m;
  bad.header.version = 99;
  EXPECT_EQ(decode_error(&bad, sizeof(bad)), "protocol version 99, supervisor speaks " +
                                                 std::to_string(kMessageVersion) +
                                                 " (stale libxpu_timer_inject.so?)");
  bad = m;
  bad.header.type = 9;
  EXPECT_EQ(decode_error(&bad, sizeof(bad)), "unknown message type 9");
  // A register header on a packet of another size: the header and the type disagree.
  bad = m;
  bad.header.bytes = sizeof(bad) - 8;
  EXPECT_EQ(decode_error(&bad, sizeof(bad) - 8),
            "register message of " + std::to_string(sizeof(bad) - 8) + " bytes, expected " +
                std::to_string(sizeof(bad)));
}

TEST(RankMessages, TypedDecodersRefuseAnotherTypeAndBadFields) {
  RegisterMsg m;
  encode_register(sample_registration(), &m);
  std::string error;
  auto crash = std::make_unique<CrashReportMsg>();
  EXPECT_FALSE(decode_crash_report(&m, sizeof(m), crash.get(), &error));
  EXPECT_EQ(error, "a register message where a crash report was expected");
  std::memset(m.hostname, 'x', sizeof(m.hostname));
  RegisterMsg back;
  EXPECT_FALSE(decode_register(&m, sizeof(m), &back, &error));
  EXPECT_EQ(error, "hostname is not NUL-terminated");
}

TEST(RankMessages, CrashReportRoundTripsAndCountsAreBounded) {
  auto m = std::make_unique<CrashReportMsg>();
  std::memset(m.get(), 0, sizeof(*m));
  m->header = make_header(MsgType::kCrashReport, sizeof(CrashReportMsg));
  m->pid = 4242;
  m->signal = 11;
  m->nframes = 2;
  m->frames[1].pc = 0x1234;
  std::string error;
  auto back = std::make_unique<CrashReportMsg>();
  ASSERT_TRUE(decode_crash_report(m.get(), sizeof(*m), back.get(), &error)) << error;
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(back->frames[1].pc, 0x1234u);
  m->nmodules = kCrashMaxModules + 1;
  EXPECT_FALSE(decode_crash_report(m.get(), sizeof(*m), back.get(), &error));
  EXPECT_EQ(error, "frame or module count out of range");
}

TEST(RankMessages, PythonExceptionRoundTripsAndMustHaveABody) {
  const std::string msg = encode_python_exception(R"({"pid":12})");
  ASSERT_EQ(msg.size(), sizeof(MsgHeader) + 10);
  std::string error;
  const auto body = decode_python_exception(msg.data(), msg.size(), &error);
  ASSERT_TRUE(body.has_value()) << error;
  EXPECT_EQ(*body, R"({"pid":12})");
  const std::string empty = encode_python_exception("");
  EXPECT_EQ(decode_error(empty.data(), empty.size()), "empty exception report");
  EXPECT_EQ(encode_python_exception(std::string(kMaxMessageBytes, 'x')), "");
}

}  // namespace
}  // namespace xpu_timer::proto
