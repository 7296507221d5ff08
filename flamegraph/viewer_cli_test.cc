// The xpu_timer_stacktrace_viewer binary: outputs, exit codes and messages.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
  EXPECT_EQ(r.err,
            "xpu_timer_stacktrace_viewer: --path is required: the folder of .stacktrace files\n"
            "usage: xpu_timer_stacktrace_viewer --path DIR [--out DIR] [--progress] "
            "[--threads N]\n");
}

TEST(ViewerCli, EveryUsageErrorSaysWhatWasWrong) {
  TestFolder logs;
  const std::pair<const char*, const char*> cases[] = {
      {"--path /x --threads abc", "--threads: 'abc' is not a number of threads (1 to 256)"},
      {"--path /x --threads 0", "--threads: '0' is not a number of threads (1 to 256)"},
      {"--path /x --threads=300", "--threads: '300' is not a number of threads (1 to 256)"},
      {"--path", "--path needs a value (DIR)"},
      {"--path=", "--path: the folder name is empty"},
      {"--path /x --progress=yes", "--progress takes no value"},
      {"--path /x --frobnicate", "unknown option '--frobnicate' (see --help)"},
      {"/x", "unexpected argument '/x' (see --help)"},
  };
  for (const auto& [args, message] : cases) {
    const ViewerRun r = run_viewer(logs, args);
    EXPECT_EQ(r.rc, 2) << args;
    EXPECT_EQ(r.err, std::string("xpu_timer_stacktrace_viewer: ") + message +
                         "\nusage: xpu_timer_stacktrace_viewer --path DIR [--out DIR] "
                         "[--progress] [--threads N]\n")
        << args;
  }
}

TEST(ViewerCli, HelpListsEveryFlagWithItsDefault) {
  TestFolder logs;
  const ViewerRun r = run_viewer(logs, "--help");
  EXPECT_EQ(r.rc, 0);
  for (const char* lines :
       {"  --path DIR              folder of the RRRRR-WWWWW.stacktrace files (and hang.json)\n"
        "                          required; no environment variable\n",
        "  --out DIR               folder the outputs are written to (created if missing)\n"
        "                          default the --path DIR; no environment variable\n",
        "  --progress              progress bar on stderr\n"
        "                          default on when stderr is a terminal; no environment "
        "variable\n",
        "  --threads N             decoding threads, 1 to 256\n"
        "                          default 2; no environment variable\n",
        "  -h, --help              this help\n"}) {
    EXPECT_NE(r.out.find(lines), std::string::npos) << lines << r.out;
  }
}

TEST(ViewerCli, HangJsonOfTheDumpFolderNamesTheHangInTheGraphs) {
  TestFolder dump_dir, logs;
  const std::string stacks = dump_dir.path() + "/stacks-20261122-101010.000";
  SyntheticDumpSpec spec;
  spec.world_size = 4;
  spec.threads_per_rank = 2;
  spec.leak_rank = 2;
  std::string error;
  ASSERT_EQ(std::system(("mkdir " + stacks).c_str()), 0);
  ASSERT_TRUE(write_synthetic_dump(stacks, spec, &error)) << error;
  // As the supervisor writes it: in --dump-dir, naming the stacks folder.
  dump_dir.write("hang.json", R"js({"hung":true,
    "summary":"ranks 0,1,3 stuck in AllReduce #6 on comm 06543c4e36ee6c61 for 5.3 s; rank 2 missing (last completed #5 on that comm)",
    "ranks":[{"rank":0,"state":"stuck"},{"rank":1,"state":"stuck"},{"rank":2,"state":"missing"},
             {"rank":3,"state":"stuck"}],
    "stacks":{"dir":")js" + stacks +
                                  R"js("}})js");
  const ViewerRun r = run_viewer(logs, "--path " + stacks);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("hang verdict from " + stacks +
                       "/../hang.json: ranks 0,1,3 stuck in "
                       "AllReduce #6"),
            std::string::npos)
      << r.err;
  const std::string svg = TestFolder::read(stacks + "/py_stack.svg");
  EXPECT_NE(svg.find("<title>hang: ranks 0,1,3 stuck in AllReduce #6 on comm 06543c4e36ee6c61 for "
                     "5.3 s; rank 2 missing (last completed #5 on that comm)</title>"),
            std::string::npos);
  // The title names the culprit and where it is.
  EXPECT_NE(svg.find(">rank 2 missing, in stuck_in_host_code (/job/sim_trainer.py:88)</text>"),
            std::string::npos)
      << svg.substr(0, 3000);
  // The culprit panel shows its frame first, then the graph's frame is
  // outlined and its rank set explained.
  const size_t shown = svg.find("<title>stuck_in_host_code@/job/sim_trainer.py:88@2|0-1/3\n");
  ASSERT_NE(shown, std::string::npos) << svg.substr(0, 3000);
  EXPECT_EQ(svg.substr(svg.rfind("<g class=", shown), 13), "<g class=\"cf\"");
  const size_t leak =
      svg.find("<title>stuck_in_host_code@/job/sim_trainer.py:88@2|0-1/3\n", shown + 1);
  ASSERT_NE(leak, std::string::npos) << svg.substr(0, 3000);
  const size_t g = svg.rfind("<g class=", leak);
  EXPECT_EQ(svg.substr(g, 21), "<g class=\"f culprit\" ");
  EXPECT_NE(svg.find("through here: missing 2; elsewhere: stuck 0-1/3</title>", leak),
            std::string::npos);
  // The folded text is xpu-timer's format, unchanged by the verdict.
  EXPECT_NE(TestFolder::read(stacks + "/py_stack")
                .find(";stuck_in_host_code@/job/sim_trainer.py:88@2|0-1/3 1\n"),
            std::string::npos);
}

TEST(ViewerCli, SymlinkLoopIsSkippedWithOneWarning) {
  TestFolder dump, out, logs;
  SyntheticDumpSpec spec;
  spec.world_size = 2;
  spec.threads_per_rank = 1;
  std::string error;
  ASSERT_TRUE(write_synthetic_dump(dump.path(), spec, &error)) << error;
  const std::string loop = dump.path() + "/00005-00008.stacktrace";
  ASSERT_EQ(::symlink(loop.c_str(), loop.c_str()), 0);
  const ViewerRun r = run_viewer(logs, "--path " + dump.path() + " --out " + out.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string warning =
      loop + ": cannot open: Too many levels of symbolic links; file skipped";
  const size_t at = r.err.find(warning);
  EXPECT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(warning, at + 1), std::string::npos) << r.err;  // once
  EXPECT_NE(r.err.find("merged 2 of 3 stack file(s), world size 2"), std::string::npos) << r.err;
  EXPECT_FALSE(TestFolder::read(out.path() + "/cpp_stack.svg").empty());
}

// A FIFO (or a device) named like a stack file is refused at once with one
// warning, and the viewer neither blocks on it nor skips it silently.
TEST(ViewerCli, FifoIsSkippedWithOneWarningAndNeverWaitedOn) {
  TestFolder dump, out, logs;
  SyntheticDumpSpec spec;
  spec.world_size = 2;
  spec.threads_per_rank = 1;
  std::string error;
  ASSERT_TRUE(write_synthetic_dump(dump.path(), spec, &error)) << error;
  const std::string fifo = dump.path() + "/00001-00003.stacktrace";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const ViewerRun r = run_viewer(logs, "--path " + dump.path() + " --out " + out.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string warning = fifo + ": not a regular file (a FIFO); file skipped";
  const size_t at = r.err.find(warning);
  EXPECT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(warning, at + 1), std::string::npos) << r.err;  // once
  EXPECT_NE(r.err.find("merged 2 of 3 stack file(s), world size 2"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace xpu_timer::flamegraph
