// Merging of small hand-written stack files into folded lines, checked exactly.
#include <gtest/gtest.h>

#include <string>

#include "flamegraph/folded_writer.h"
#include "flamegraph/merged_stacks.h"
#include "stack/stack_file.h"

namespace xpu_timer::flamegraph {
namespace {

// World of 7: ranks 0-3 in all_reduce -> ncclAllReduce, rank 6 in
// stuck_in_host_code, ranks 4 and 5 have no file. Every rank also has an idle
// thread without Python frames.
std::string stack_file(int rank, bool leak, const char* state = "S (sleeping)") {
  const std::string main_native =
      leak ? R"([{"pc":"0x1","func":"stuck_in_host_code","module":"/bin/trainer","offset":"0x1"},)"
           : R"([{"pc":"0x1","func":"ncclAllReduce","module":"/x/libnccl.so.2","offset":"0x1"},)";
  const std::string main_python =
      leak
          ? R"([{"func":"stuck_in_host_code","file":"/job/train.py","line":5},
                 {"func":"train","file":"/job/train.py","line":12}])"
          : R"([{"func":"all_reduce","file":"/v/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py","line":2501},
                 {"func":"train","file":"/job/train.py","line":10}])";
  const std::string main_mixed =
      leak ? R"([{"kind":"python","func":"stuck_in_host_code","file":"/job/train.py","line":5},
                 {"kind":"native","func":"main","module":"/bin/trainer","line":null}])"
           : R"([{"kind":"native","func":"ncclAllReduce","module":"/x/libnccl.so.2"},
                 {"kind":"python","func":"train","file":"/job/train.py","line":10},
                 {"kind":"native","func":"main","module":"/bin/trainer"}])";
  return R"({"version":1,"rank":)" + std::to_string(rank) +
         R"(,"world_size":7,"pid":100,"host":"n","process_state":")" + state +
         R"(","collected_at":1.5,"stopped_ms":2.0,"python_version":"3.12.3","errors":[],
  "threads":[
   {"tid":1,"name":"python3","state":"S","holds_gil":true,
    "native":)" +
         main_native +
         R"({"pc":"0x2","func":"main","module":"/bin/trainer","offset":"0x2","file":null,"line":null,"inlined":false}],
    "python":)" +
         main_python + R"(,
    "mixed":)" +
         main_mixed + R"(},
   {"tid":2,"name":"worker","state":"S","holds_gil":false,
    "native":[{"pc":"0x3","func":"pthread_cond_wait","module":"/lib/libc.so.6"},
              {"pc":"0x4","func":"start_thread","module":"/lib/libc.so.6"}],
    "python":[],
    "mixed":[{"kind":"native","func":"pthread_cond_wait","module":"/lib/libc.so.6"},
             {"kind":"native","func":"start_thread","module":"/lib/libc.so.6"}]}]})";
}

stack::ProcessStack parse(const std::string& text) {
  std::string error;
  std::optional<stack::ProcessStack> f = stack::parse_stack_file(text, &error);
  EXPECT_TRUE(f) << error;
  return f.value_or(stack::ProcessStack{});
}

MergeResult merge_example() {
  StackMerger merger;
  for (int rank : {0, 1, 2, 3}) EXPECT_TRUE(merger.add(parse(stack_file(rank, false))));
  EXPECT_TRUE(merger.add(parse(stack_file(6, true))));
  return merger.finish();
}

TEST(Merge, CppViewFoldsStuckAndLeakRanksIncludingRanksWithoutFile) {
  const MergeResult m = merge_example();
  EXPECT_EQ(m.world_size, 7u);
  EXPECT_EQ(folded_stacks(m.view(View::kCpp)),
            "state:S (sleeping)@process@0-3/6|4-5;main@trainer@0-3/6|4-5;"
            "ncclAllReduce@libnccl.so.2@0-3|4-6 4\n"
            "state:S (sleeping)@process@0-3/6|4-5;main@trainer@0-3/6|4-5;"
            "stuck_in_host_code@trainer@6|0-5 1\n"
            "state:S (sleeping)@process@0-3/6|4-5;start_thread@libc.so.6@0-3/6|4-5;"
            "pthread_cond_wait@libc.so.6@0-3/6|4-5 5\n");
}

TEST(Merge, PyViewHasOnlyThreadsWithPythonFrames) {
  const MergeResult m = merge_example();
  EXPECT_EQ(folded_stacks(m.view(View::kPy)),
            "state:S (sleeping)@process@0-3/6|4-5;train@/job/train.py:10@0-3|4-6;"
            "all_reduce@torch/distributed/distributed_c10d.py:2501@0-3|4-6 4\n"
            "state:S (sleeping)@process@0-3/6|4-5;train@/job/train.py:12@6|0-5;"
            "stuck_in_host_code@/job/train.py:5@6|0-5 1\n");
}

TEST(Merge, MixedViewInterleavesNativeAndPython) {
  const MergeResult m = merge_example();
  EXPECT_EQ(folded_stacks(m.view(View::kMixed)),
            "state:S (sleeping)@process@0-3/6|4-5;main@trainer@0-3/6|4-5;"
            "stuck_in_host_code@/job/train.py:5@6|0-5 1\n"
            "state:S (sleeping)@process@0-3/6|4-5;main@trainer@0-3/6|4-5;"
            "train@/job/train.py:10@0-3|4-6;ncclAllReduce@libnccl.so.2@0-3|4-6 4\n"
            "state:S (sleeping)@process@0-3/6|4-5;start_thread@libc.so.6@0-3/6|4-5;"
            "pthread_cond_wait@libc.so.6@0-3/6|4-5 5\n");
}

TEST(Merge, TotalsCountThreadStacksOfAllRanks) {
  const MergeResult m = merge_example();
  const MergedView& cpp = m.view(View::kCpp);
  EXPECT_EQ(cpp.nodes[kRootNode].total, 10u);  // 5 ranks x 2 threads
  EXPECT_EQ(m.view(View::kPy).nodes[kRootNode].total, 5u);
}

TEST(Merge, ProcessStatesAreSeparateRoots) {
  StackMerger merger;
  ASSERT_TRUE(merger.add(parse(stack_file(0, false))));
  ASSERT_TRUE(merger.add(parse(stack_file(1, false, "D (disk sleep)"))));
  const std::string folded = folded_stacks(merger.finish().view(View::kPy));
  EXPECT_EQ(folded,
            "state:D (disk sleep)@process@1|0/2-6;train@/job/train.py:10@1|0/2-6;"
            "all_reduce@torch/distributed/distributed_c10d.py:2501@1|0/2-6 1\n"
            "state:S (sleeping)@process@0|1-6;train@/job/train.py:10@0|1-6;"
            "all_reduce@torch/distributed/distributed_c10d.py:2501@0|1-6 1\n");
}

TEST(Merge, SecondFileOfTheSameRankIsRefused) {
  StackMerger merger;
  ASSERT_TRUE(merger.add(parse(stack_file(2, false))));
  EXPECT_FALSE(merger.add(parse(stack_file(2, true))));
  const MergeResult m = merger.finish();
  EXPECT_EQ(m.view(View::kCpp).nodes[kRootNode].total, 2u);
}

TEST(Merge, IdenticalThreadsOfOneRankCountTwiceButNameTheRankOnce) {
  const std::string thread =
      R"({"tid":1,"native":[{"func":"poll","module":"/lib/libc.so.6"}],"python":[],"mixed":[]})";
  StackMerger merger;
  ASSERT_TRUE(merger.add(parse(
      R"js({"version":1,"rank":1,"world_size":2,"process_state":"R (running)","threads":[)js" +
      thread + "," + thread + "]}")));
  EXPECT_EQ(folded_stacks(merger.finish().view(View::kCpp)),
            "state:R (running)@process@1|0;poll@libc.so.6@1|0 2\n");
}

TEST(Merge, ThreadWithoutNativeFramesCountsUnderItsState) {
  StackMerger merger;
  ASSERT_TRUE(merger.add(parse(
      R"js({"version":1,"rank":0,"world_size":1,"process_state":"Z (zombie)","threads":[{"tid":1,"native":[]}]})js")));
  const MergeResult m = merger.finish();
  EXPECT_EQ(folded_stacks(m.view(View::kCpp)), "state:Z (zombie)@process@0| 1\n");
  EXPECT_EQ(folded_stacks(m.view(View::kPy)), "");
}

}  // namespace
}  // namespace xpu_timer::flamegraph
