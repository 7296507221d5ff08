#include "supervisor/incidents/oom_evidence.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

namespace xpu_timer::supervisor {
namespace {

// A fake /sys/fs/cgroup and /proc: the kernel's formats, written by the test.
class FakeTree {
 public:
  FakeTree() {
    char tmpl[] = "/tmp/oom_evidence_test-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    ::mkdir((root_ + "/cg").c_str(), 0700);
    ::mkdir((root_ + "/proc").c_str(), 0700);
  }
  ~FakeTree() { std::system(("rm -rf '" + root_ + "'").c_str()); }
  std::string cgroup_root() const { return root_ + "/cg"; }
  std::string proc() const { return root_ + "/proc"; }
  void rank_in(pid_t pid, const std::string& cgroup_file_text) {
    ::mkdir((proc() + "/" + std::to_string(pid)).c_str(), 0700);
    std::ofstream(proc() + "/" + std::to_string(pid) + "/cgroup") << cgroup_file_text;
  }
  void memory_events(const std::string& cgroup, uint64_t oom_kills) {
    std::system(("mkdir -p '" + cgroup_root() + cgroup + "'").c_str());
    std::ofstream(cgroup_root() + cgroup + "/memory.events")
        << "low 0\nhigh 0\nmax 12\noom 1\noom_kill " << oom_kills << "\noom_group_kill 0\n";
  }
  void vmstat(uint64_t oom_kills) {
    std::ofstream(proc() + "/vmstat") << "nr_free_pages 1000\npgfault 99\noom_kill " << oom_kills
                                      << "\nunevictable_pgs_culled 0\n";
  }

 private:
  std::string root_;
};

TEST(OomEvidence, ParsesTheKernelsCounterLinesAndRefusesOthers) {
  EXPECT_EQ(parse_oom_kill("low 0\noom 2\noom_kill 3\noom_group_kill 0\n"), 3u);
  EXPECT_EQ(parse_oom_kill("oom_kill 18446744073709551615"), 18446744073709551615ull);
  EXPECT_FALSE(parse_oom_kill("oom 2\noom_group_kill 1\n"));  // no oom_kill line
  EXPECT_FALSE(parse_oom_kill("oom_kill -1\n"));
  EXPECT_FALSE(parse_oom_kill("oom_kill 1e3\n"));
  EXPECT_FALSE(parse_oom_kill("oom_kill 99999999999999999999999\n"));
  EXPECT_FALSE(parse_oom_kill("oom_kill \n"));
  EXPECT_FALSE(parse_oom_kill(""));
  EXPECT_EQ(cgroup_v2_path("12:cpu:/x\n0::/kubepods/pod1/c2\n"), "/kubepods/pod1/c2");
  EXPECT_EQ(cgroup_v2_path("0::/\n"), "/");
  EXPECT_FALSE(cgroup_v2_path("4:memory:/docker/abc\n"));  // cgroup v1 only
  EXPECT_FALSE(cgroup_v2_path("0::/a/../../etc\n"));       // never out of the mount
  EXPECT_FALSE(cgroup_v2_path("0::relative\n"));
  EXPECT_EQ(cgroup_v1_memory_path("5:devices:/x\n4:memory:/process_api/abc\n0::/\n"),
            "/process_api/abc");
  EXPECT_EQ(cgroup_v1_memory_path("3:cpu,memory:/a\n"), "/a");
  EXPECT_FALSE(cgroup_v1_memory_path("3:memoryx:/a\n0::/b\n"));
  EXPECT_FALSE(cgroup_v1_memory_path("garbage"));
}

TEST(OomEvidence, AHybridHostsV1MemoryCgroupIsRead) {
  FakeTree t;
  // As on a Docker host with cgroup v1 controllers and an empty v2 tree.
  t.rank_in(40, "4:memory:/process_api/abc\n1:cpu:/\n0::/\n");
  const std::string dir = t.cgroup_root() + "/memory/process_api/abc";
  std::system(("mkdir -p '" + dir + "'").c_str());
  std::ofstream(dir + "/memory.oom_control") << "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n";
  t.vmstat(0);
  OomEvidence oom(t.cgroup_root(), t.proc());
  oom.note_rank(40);
  std::ofstream(dir + "/memory.oom_control") << "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n";
  EXPECT_EQ(oom.growth_since_noted(40), "memory.oom_control oom_kill went 0->1");
}

TEST(OomEvidence, ACounterThatGrewSinceTheRankWasSeenIsEvidenceOnce) {
  FakeTree t;
  t.rank_in(10, "0::/job/ranks\n");
  t.rank_in(11, "0::/job/ranks\n");
  t.memory_events("/job/ranks", 0);
  OomEvidence oom(t.cgroup_root(), t.proc());
  oom.note_rank(10);
  oom.note_rank(11);
  t.memory_events("/job/ranks", 1);  // the OOM killer took rank 10
  EXPECT_EQ(oom.growth_since_noted(10), "memory.events oom_kill went 0->1");
  // Rank 11 killed from outside later: that kill is not blamed twice.
  EXPECT_EQ(oom.growth_since_noted(11), "");
}

TEST(OomEvidence, WithoutACgroupCounterTheMachinesCountIsUsed) {
  FakeTree t;
  t.rank_in(20, "0::/\n");  // the root cgroup has no memory.events
  t.vmstat(5);
  OomEvidence oom(t.cgroup_root(), t.proc());
  oom.note_rank(20);
  t.vmstat(6);
  EXPECT_EQ(oom.growth_since_noted(20), "the machine's /proc/vmstat oom_kill went 5->6");
}

TEST(OomEvidence, NoReadableCounterOrAnUnchangedOneIsNoEvidence) {
  FakeTree t;
  t.rank_in(30, "0::/job\n");
  t.memory_events("/job", 2);
  OomEvidence oom(t.cgroup_root(), t.proc());
  oom.note_rank(30);
  EXPECT_EQ(oom.growth_since_noted(30), "");
  oom.note_rank(31);  // no /proc/31 and no vmstat: nothing to read
  EXPECT_EQ(oom.growth_since_noted(31), "");
  EXPECT_EQ(oom.growth_since_noted(32), "");  // never noted
  // A counter file that turned to garbage: no evidence, no crash.
  t.rank_in(33, "0::/job\n");
  oom.note_rank(33);
  std::ofstream(t.cgroup_root() + "/job/memory.events") << "oom_kill lots\n";
  EXPECT_EQ(oom.growth_since_noted(33), "");
}

}  // namespace
}  // namespace xpu_timer::supervisor
