// The xpu_timer_gen_trace_timeline executable: its help, one clear line for
// each usage mistake, exit status 1 only when nothing usable was found.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "timeline/test_dumps.h"

namespace xpu_timer::timeline {
namespace {

using testing::JobSpec;
using testing::TempDir;

struct CliRun {
  int status = -1;
  std::string out, err;
};

CliRun run_cli(const std::string& args) {
  TempDir tmp;
  const std::string cmd = std::string(XPU_TIMER_TIMELINE_BIN) + " " + args + " > " + tmp.path() +
                          "/out 2> " + tmp.path() + "/err";
  const int rc = std::system(cmd.c_str());
  CliRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = TempDir::read(tmp.path() + "/out");
  r.err = TempDir::read(tmp.path() + "/err");
  return r;
}

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(TimelineCli, HelpListsEveryFlagWithItsDefault) {
  const CliRun r = run_cli("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* flag :
       {"--path DIR", "--output FILE", "--groups SPEC", "--sampled-out-slices", "--diff A B",
        "--help", "required; no environment variable",
        "default DIR/timeline.json of the first --path", "default none; no environment variable",
        "default off; no environment variable"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
}

TEST(TimelineCli, UsageMistakesAreOneLineAndExitTwo) {
  TempDir dir;
  const std::pair<std::string, std::string> cases[] = {
      {"", "--path DIR (or --diff A B) is required"},
      {"--bogus", "unknown argument '--bogus'"},
      {"--path", "--path needs a value"},
      {"--diff " + dir.path(), "--diff needs two timelines: --diff A B"},
      {"--path " + dir.path() + " --groups tp4-",
       "--groups: 'tp4-' is not of the form "
       "tp4-cp2-dp4-pp2"},
      {"--diff " + dir.path() + " " + dir.path() + " --path " + dir.path(),
       "--diff compares its own two timelines; drop --path"},
      {"--diff " + dir.path() + ":x " + dir.path(),
       "--diff A: '" + dir.path() + ":x': expected DIR or DIR:RANK with RANK a number"},
      {"--output a --output b --path " + dir.path(), "--output given twice"},
      {"--diff " + dir.path() + " " + dir.path() + " --sampled-out-slices",
       "--sampled-out-slices applies to a trace, not to --diff"},
  };
  for (const auto& [args, why] : cases) {
    const CliRun r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(r.err, "xpu_timer_gen_trace_timeline: " + why + " (see --help)\n") << args;
  }
}

TEST(TimelineCli, WritesTheTraceIntoTheDumpFolder) {
  TempDir dir;
  testing::write_job(dir.path(), JobSpec{}, true);
  const CliRun r = run_cli("--path " + dir.path() + " --groups tp2-dp2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, dir.path() + "/timeline.json\n");
  const nlohmann::json j =
      nlohmann::json::parse(TempDir::read(dir.path() + "/timeline.json"), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_GT(j["traceEvents"].size(), 70u);
  EXPECT_EQ(lines(r.err), 1u) << r.err;  // the summary line only
  auto sampled_out_slices = [](const nlohmann::json& trace) {
    int n = 0;
    for (const auto& e : trace["traceEvents"]) {
      n += e["ph"] == "X" && e["name"] == "sampled out: GemmEx bf16 4096x4096x1024";
    }
    return n;
  };
  EXPECT_EQ(sampled_out_slices(j), 0);
  const CliRun flagged =
      run_cli("--path " + dir.path() + " --sampled-out-slices --output " + dir.path() + "/s.json");
  ASSERT_EQ(flagged.status, 0) << flagged.err;
  EXPECT_EQ(sampled_out_slices(nlohmann::json::parse(TempDir::read(dir.path() + "/s.json"))), 24);
}

TEST(TimelineCli, BadFilesAreSkippedAndOnlyNothingUsableFails) {
  TempDir dir;
  JobSpec spec;
  spec.last_rank = 0;
  testing::write_job(dir.path(), spec, false);
  dir.write("00001-00004.timeline", std::string(200, 'x'));
  dir.write("00002-00004.timeline", testing::image_bytes(spec, 0).substr(0, 100));
  const std::string out = dir.path() + "/t.json";
  CliRun r = run_cli("--path " + dir.path() + " --output " + out);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(lines(r.err), 3u) << r.err;  // two files skipped, then the summary
  EXPECT_NE(r.err.find("00001-00004.timeline: not a flight-recorder ring (bad magic); skipped"),
            std::string::npos);

  ::unlink((dir.path() + "/00000-00004.timeline").c_str());
  r = run_cli("--path " + dir.path() + " --output " + out);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(lines(r.err), 3u) << r.err;
  EXPECT_NE(r.err.find("no usable flight-recorder dump found (2 .timeline file(s) seen)"),
            std::string::npos);

  r = run_cli("--path " + dir.path() + "/nowhere");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cannot open dump folder " + dir.path() + "/nowhere: No such file"),
            std::string::npos);

  testing::write_job(dir.path(), spec, false);
  r = run_cli("--path " + dir.path() + " --output " + dir.path() + "/no/such/dir/t.json");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cannot create " + dir.path() + "/no/such/dir/t.json.tmp"),
            std::string::npos)
      << r.err;
}

TEST(TimelineCli, DiffPrintsATableAndWritesJson) {
  TempDir a, b;
  testing::write_job(a.path(), JobSpec{}, false);
  JobSpec slow;
  slow.gemm_ns = 300 * testing::kUs;
  testing::write_job(b.path(), slow, false);
  const CliRun r =
      run_cli("--diff " + a.path() + " " + b.path() + ":0 --output " + a.path() + "/d.json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const size_t gemm = r.out.find("GemmEx"), ar = r.out.find("AllReduce");
  ASSERT_NE(gemm, std::string::npos) << r.out;
  EXPECT_LT(gemm, ar) << r.out;  // 3x the GEMM time beats 0.25 more AllReduce per rank
  // Per second of each dump (5.11 ms of A, 5.31 ms of rank 0 of B): 12 GEMMs.
  EXPECT_NE(r.out.find("    +443.132    3.00\n"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(TempDir::read(a.path() + "/d.json"));
  EXPECT_EQ(j["b"]["ranks"], 1);
  EXPECT_EQ(j["rows"][0]["op"], "GemmEx");
}

}  // namespace
}  // namespace xpu_timer::timeline
