// The xpu_timer_stacktrace_viewer binary: outputs, exit codes and messages.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "flamegraph/bench/synthetic_dump.h"
#include "flamegraph/test_folder.h"

namespace xpu_timer::flamegraph {
namespace {

struct ViewerRun {
  int rc = -1;
  std::string out, err;
};

ViewerRun run_viewer(const TestFolder& tmp, const std::string& args) {
  const std::string out = tmp.path() + "/viewer.out", err = tmp.path() + "/viewer.err";
  const std::string cmd =
      std::string(XPU_TIMER_VIEWER_BIN) + " " + args + " > " + out + " 2> " + err;
  const int status = std::system(cmd.c_str());
  ViewerRun r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = TestFolder::read(out);
  r.err = TestFolder::read(err);
  return r;
}

TEST(ViewerCli, WritesSixOutputsIntoOutFolder) {
  TestFolder dump, out, logs;
  SyntheticDumpSpec spec;
  spec.world_size = 4;
  spec.threads_per_rank = 5;
  spec.leak_rank = 2;
  spec.no_file_ranks = {3};
  std::string error;
  ASSERT_TRUE(write_synthetic_dump(dump.path(), spec, &error)) << error;
  const ViewerRun r =
      run_viewer(logs, "--path " + dump.path() + " --out " + out.path() + " --progress");
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* name : {"cpp_stack", "cpp_stack.svg", "py_stack", "py_stack.svg", "mixed_stack",
                           "mixed_stack.svg"}) {
    EXPECT_NE(r.out.find(out.path() + "/" + name + "\n"), std::string::npos) << name;
    EXPECT_FALSE(TestFolder::read(out.path() + "/" + name).empty()) << name;
  }
  EXPECT_NE(r.err.find("] 3/3 stack files"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("merged 3 of 3 stack file(s), world size 4"), std::string::npos) << r.err;
  const std::string py = TestFolder::read(out.path() + "/py_stack");
  EXPECT_NE(py.find(";stuck_in_host_code@/job/sim_trainer.py:88@2|0-1/3 1\n"), std::string::npos)
      << py;
  EXPECT_NE(py.find(";all_reduce@torch/distributed/distributed_c10d.py:2501@0-1|2-3 2\n"),
            std::string::npos)
      << py;
}

TEST(ViewerCli, EmptyFolderIsOneClearMessageAndExitOne) {
  TestFolder dump, logs;
  const ViewerRun r = run_viewer(logs, "--path " + dump.path());
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("no .stacktrace file in " + dump.path()), std::string::npos) << r.err;
}

TEST(ViewerCli, OnlyBrokenFilesIsExitOneWithOneLinePerFile) {
  TestFolder dump, logs;
  dump.write("00000-00002.stacktrace", "{\"version\":1,");
  dump.write("00001-00002.stacktrace",
             "\x7f"
             "ELF");
  const ViewerRun r = run_viewer(logs, "--path " + dump.path());
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(dump.path() + "/00000-00002.stacktrace: not valid JSON"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(dump.path() + "/00001-00002.stacktrace: not valid JSON"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("none of the 2 .stacktrace file(s)"), std::string::npos) << r.err;
}

TEST(ViewerCli, MissingPathIsAUsageError) {
  TestFolder logs;
  const ViewerRun r = run_viewer(logs, "");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("usage: xpu_timer_stacktrace_viewer --path DIR"), std::string::npos);
}

}  // namespace
}  // namespace xpu_timer::flamegraph
