#include "stack/stack_cli_options.h"

#include <gtest/gtest.h>

namespace xpu_timer::stack {
namespace {

TEST(StackCliOptions, AllFlagsBothForms) {
  const StackCliParse r =
      parse_stack_cli({"--pid=42", "--json", "--native-only", "--rank", "2", "--world-size=4",
                       "--out", "/tmp/x.stacktrace", "--in-child", "--stop-timeout-ms", "250"});
  ASSERT_EQ(r.status, StackCliParse::Status::kOk) << r.error;
  EXPECT_EQ(r.options.pid, 42);
  EXPECT_TRUE(r.options.json);
  EXPECT_TRUE(r.options.in_child);
  EXPECT_FALSE(r.options.collect.python);
  EXPECT_TRUE(r.options.collect.native);
  EXPECT_EQ(r.options.view, TextView::kNativeOnly);
  EXPECT_EQ(r.options.collect.rank, 2);
  EXPECT_EQ(r.options.collect.world_size, 4);
  EXPECT_EQ(r.options.out, "/tmp/x.stacktrace");
  EXPECT_EQ(r.options.collect.stop_timeout.count(), 250);
}

TEST(StackCliOptions, DefaultsAreTheOnesTheHelpNames) {
  const StackCliParse r = parse_stack_cli({"--pid", "7"});
  ASSERT_EQ(r.status, StackCliParse::Status::kOk) << r.error;
  EXPECT_FALSE(r.options.json);
  EXPECT_EQ(r.options.view, TextView::kMixed);
  EXPECT_EQ(r.options.collect.rank, 0);
  EXPECT_EQ(r.options.collect.world_size, 1);
  EXPECT_EQ(r.options.collect.stop_timeout.count(), 500);
  const std::string help = stack_cli_help();
  for (const char* line : {"  --pid PID               the process to stop, unwind and release\n"
                           "                          required; no environment variable\n",
                           "  --rank R                rank recorded in the stack file\n"
                           "                          default 0; no environment variable\n",
                           "  --world-size W          world size recorded in the stack file\n"
                           "                          default 1; no environment variable\n",
                           "  --stop-timeout-ms MS    how long to wait for PID's threads to stop\n"
                           "                          default 500; no environment variable\n",
                           "  --json                  print the stack file (JSON) instead of text\n"
                           "                          default off; no environment variable\n"}) {
    EXPECT_NE(help.find(line), std::string::npos) << line << help;
  }
  for (const char* flag : {"--native-only", "--python-only", "--out FILE", "--in-child"}) {
    EXPECT_NE(help.find(std::string("  ") + flag + " "), std::string::npos) << flag;
  }
}

TEST(StackCliOptions, EveryUsageErrorSaysWhatWasWrong) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--pid", "abc"}, "--pid: 'abc' is not a process id"},
      {{"--pid", "0"}, "--pid: '0' is not a process id"},
      {{"--pid", "-5"}, "--pid: '-5' is not a process id"},
      {{"--pid", "12ab"}, "--pid: '12ab' is not a process id"},
      {{"--pid"}, "--pid needs a value (PID)"},
      {{}, "--pid is required: which process?"},
      {{"--json"}, "--pid is required: which process?"},
      {{"--pid", "1", "--rank", "x"}, "--rank: 'x' is not a rank (a whole number >= 0)"},
      {{"--pid", "1", "--world-size", "0"},
       "--world-size: '0' is not a world size (a whole number >= 1)"},
      {{"--pid", "1", "--rank", "4", "--world-size", "4"}, "--rank 4 is not below --world-size 4"},
      {{"--pid", "1", "--stop-timeout-ms", "soon"},
       "--stop-timeout-ms: 'soon' is not a number of milliseconds (1 to 3600000)"},
      {{"--pid", "1", "--native-only", "--python-only"},
       "--native-only and --python-only exclude each other"},
      {{"--pid", "1", "--json=yes"}, "--json takes no value"},
      {{"--pid", "1", "--out", ""}, "--out: the file name is empty"},
      {{"--pid", "1", "--frobnicate"}, "unknown option '--frobnicate' (see --help)"},
      {{"1234"}, "unexpected argument '1234' (see --help)"},
  };
  for (const auto& [args, message] : cases) {
    const StackCliParse r = parse_stack_cli(args);
    EXPECT_EQ(r.status, StackCliParse::Status::kError) << message;
    EXPECT_EQ(r.error, message);
  }
  EXPECT_EQ(parse_stack_cli({"--pid", "abc", "--help"}).status, StackCliParse::Status::kError);
  EXPECT_EQ(parse_stack_cli({"--help", "--pid", "abc"}).status, StackCliParse::Status::kHelp);
}

}  // namespace
}  // namespace xpu_timer::stack
