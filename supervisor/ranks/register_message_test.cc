#include "supervisor/ranks/register_message.h"

#include <gtest/gtest.h>

#include <cstring>

#include "common/rank_messages.h"

namespace xpu_timer::supervisor {
namespace {

proto::RegisterMsg valid() {
  // pid 77, rank 5 (local 1) of 8 (4 a node), node 1.
  const proto::RegisterInfo info{77, {5, 1, 8, 4, 1}, "node1", "/dev/shm/x/rank-5-77.page"};
  proto::RegisterMsg m;
  EXPECT_TRUE(proto::encode_register(info, &m));
  return m;
}

std::string error_of(const proto::RegisterMsg& m, size_t len = sizeof(proto::RegisterMsg)) {
  std::string error;
  EXPECT_FALSE(parse_register_message(&m, len, &error).has_value());
  return error;
}

TEST(RegisterMessage, Valid) {
  const proto::RegisterMsg m = valid();
  std::string error;
  const auto reg = parse_register_message(&m, sizeof(m), &error);
  ASSERT_TRUE(reg.has_value()) << error;
  EXPECT_EQ(reg->pid, 77);
  EXPECT_EQ(reg->rank, 5);
  EXPECT_EQ(reg->local_rank, 1);
  EXPECT_EQ(reg->group_rank, 1);
  EXPECT_EQ(reg->host, "node1");
  EXPECT_EQ(reg->status_path, "/dev/shm/x/rank-5-77.page");
}

TEST(RegisterMessage, RejectsWhatIsWrongWithOneLine) {
  proto::RegisterMsg m = valid();
  EXPECT_EQ(error_of(m, 3), "message of 3 bytes is too short");
  EXPECT_EQ(error_of(m, sizeof(m) - 1), "message of " + std::to_string(sizeof(m) - 1) +
                                            " bytes, header says " + std::to_string(sizeof(m)));
  m.header.magic = 1;
  EXPECT_EQ(error_of(m), "bad message magic");
  m = valid();
  m.header.version = 99;
  EXPECT_EQ(error_of(m), "protocol version 99, supervisor speaks " +
                             std::to_string(proto::kMessageVersion) +
                             " (stale libxpu_timer_inject.so?)");
  m = valid();
  m.header.type = 9;
  EXPECT_EQ(error_of(m), "unknown message type 9");
  m = valid();
  m.rank = 8;
  EXPECT_EQ(error_of(m), "rank 8 outside world of 8");
  m = valid();
  m.local_world_size = 1 << 30;
  EXPECT_EQ(error_of(m), "bad local_world_size 1073741824");
  m = valid();
  m.group_rank = 2;
  EXPECT_EQ(error_of(m), "bad group_rank 2");
  m = valid();
  m.pid = 0;
  EXPECT_EQ(error_of(m), "bad pid 0");
  m = valid();
  std::memset(m.hostname, 'x', sizeof(m.hostname));
  EXPECT_EQ(error_of(m), "hostname is not NUL-terminated");
  m = valid();
  std::strcpy(m.status_path, "relative.page");
  EXPECT_EQ(error_of(m), "status_path is not an absolute path");
}

}  // namespace
}  // namespace xpu_timer::supervisor
