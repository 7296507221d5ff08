#include "supervisor/ranks/crash_message.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "common/rank_messages.h"

namespace xpu_timer::supervisor {
namespace {

std::unique_ptr<proto::CrashReportMsg> valid_report() {
  auto m = std::make_unique<proto::CrashReportMsg>();
  std::memset(m.get(), 0, sizeof(*m));
  m->header = proto::make_header(proto::MsgType::kCrashReport, sizeof(*m));
  m->pid = 4242;
  m->rank = 3;
  m->signal = 11;
  m->si_code = 1;
  m->nframes = 2;
  m->nmodules = 1;
  m->frames[0].pc = 0x1000;
  m->frames[0].module = 0;
  m->frames[0].module_offset = 0x10;
  std::strcpy(m->frames[0].function, "sim_crash_segv");
  m->frames[1].module = -1;
  std::strcpy(m->modules[0].path, "/lib/libsim.so");
  std::strcpy(m->thread_name, "trainer");
  return m;
}

TEST(CrashMessage, ValidReportIsParsed) {
  auto m = valid_report();
  std::string error;
  auto r = parse_crash_report(m.get(), sizeof(*m), &error);
  ASSERT_TRUE(r.has_value()) << error;
  EXPECT_EQ(r->pid, 4242);
  EXPECT_EQ(r->rank, 3);
  EXPECT_EQ(r->signal, 11);
  EXPECT_EQ(r->thread_name, "trainer");
  ASSERT_EQ(r->frames.size(), 2u);
  EXPECT_EQ(r->frames[0].function, "sim_crash_segv");
  EXPECT_EQ(r->frames[0].module, "/lib/libsim.so");
  EXPECT_EQ(r->frames[1].module, "");
}

TEST(CrashMessage, WrongSizesCountsAndFieldsAreRefused) {
  std::string error;
  auto m = valid_report();
  EXPECT_FALSE(parse_crash_report(m.get(), sizeof(*m) - 1, &error).has_value());
  EXPECT_NE(error.find("header says"), std::string::npos) << error;
  m->nframes = proto::kCrashMaxFrames + 1;
  EXPECT_FALSE(parse_crash_report(m.get(), sizeof(*m), &error).has_value());
  m = valid_report();
  m->frames[0].module = 5;  // beyond nmodules: no module, not a crash
  auto r = parse_crash_report(m.get(), sizeof(*m), &error);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->frames[0].module, "");
  m = valid_report();
  std::memset(m->frames[0].function, 'x', sizeof(m->frames[0].function));  // unterminated
  r = parse_crash_report(m.get(), sizeof(*m), &error);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->frames[0].function.size(), sizeof(m->frames[0].function));
  m = valid_report();
  m->signal = 0;
  EXPECT_FALSE(parse_crash_report(m.get(), sizeof(*m), &error).has_value());
  m = valid_report();
  m->header.version = 1;
  EXPECT_FALSE(parse_crash_report(m.get(), sizeof(*m), &error).has_value());
  EXPECT_NE(error.find("stale"), std::string::npos);
}

std::string python_message(const std::string& body) {
  return proto::encode_python_exception(body);
}

TEST(CrashMessage, PythonExceptionJsonIsParsedAndGarbageRefused) {
  const std::string ok = python_message(
      R"({"pid":12,"rank":1,"time":5.5,"type":{"module":"builtins","qualname":"RuntimeError",)"
      R"("mro":[["builtins","RuntimeError"],["builtins","Exception"]]},"message":"boom",)"
      R"("args":["'boom'"],"traceback":[{"file":"/x/t.py","func":"crash","line":86}],)"
      R"("formatted":"Traceback..."})");
  std::string error;
  auto r = parse_python_exception(ok.data(), ok.size(), &error);
  ASSERT_TRUE(r.has_value()) << error;
  EXPECT_EQ(r->pid, 12);
  EXPECT_EQ(r->type_qualname, "RuntimeError");
  EXPECT_EQ(r->message, "boom");
  ASSERT_EQ(r->traceback.size(), 1u);
  EXPECT_EQ(r->traceback[0].func, "crash");
  EXPECT_EQ(r->mro.size(), 2u);
  for (const std::string& bad : {std::string("{"), std::string("[]"), std::string("{\"pid\":1}"),
                                 std::string("{\"pid\":\"x\",\"rank\":0,\"type\":{}}")}) {
    const std::string m = python_message(bad);
    EXPECT_FALSE(parse_python_exception(m.data(), m.size(), &error).has_value()) << bad;
  }
}

// A pid, rank or line that is not an int (a fraction, or out of int's range)
// is refused, not converted: out of range that conversion is undefined
// behaviour (found by rank_messages_fuzz under UBSan). A bad line number is 0.
TEST(CrashMessage, PythonExceptionNumbersOutsideIntAreRefused) {
  const std::string tail =
      R"("type":{"qualname":"E"},"traceback":[{"file":"f.py","func":"g","line":1e10}]})";
  std::string error;
  for (const std::string& ids : {std::string(R"({"pid":17000000000.05,"rank":0,)"),
                                 std::string(R"({"pid":12.5,"rank":0,)"),
                                 std::string(R"({"pid":12,"rank":4294967296,)")}) {
    const std::string m = python_message(ids + tail);
    EXPECT_FALSE(parse_python_exception(m.data(), m.size(), &error).has_value()) << ids;
  }
  const std::string m = python_message(R"({"pid":12,"rank":3,)" + tail);
  auto r = parse_python_exception(m.data(), m.size(), &error);
  ASSERT_TRUE(r.has_value()) << error;
  EXPECT_EQ(r->rank, 3);
  ASSERT_EQ(r->traceback.size(), 1u);
  EXPECT_EQ(r->traceback[0].line, 0);
}

}  // namespace
}  // namespace xpu_timer::supervisor
