#include "stack/user_frames.h"

#include <gtest/gtest.h>

namespace xpu_timer::stack {
namespace {

PythonFrame py(const std::string& func, const std::string& file, int line) {
  PythonFrame f;
  f.func = func;
  f.file = file;
  f.line = line;
  return f;
}

NativeFrame native(const std::string& func, const std::string& module, const std::string& file = "",
                   int line = 0) {
  NativeFrame f;
  f.func = func;
  f.module = module;
  f.file = file;
  f.line = line;
  return f;
}

ProcessStack process(std::vector<ThreadStack> threads) {
  ProcessStack p;
  p.pid = 100;
  p.threads = std::move(threads);
  return p;
}

ThreadStack thread(pid_t tid, const std::string& name) {
  ThreadStack t;
  t.tid = tid;
  t.name = name;
  return t;
}

constexpr char kTorchC10d[] =
    "/venv/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py";
constexpr char kTrain[] = "/home/u/train.py";

TEST(UserFrames, RankInACollectiveIsWhereTheUserCalledTorch) {
  // What the main thread of a PyTorch rank waiting in a collective looks like:
  // torch.distributed's wrappers, then the training loop.
  ThreadStack main = thread(100, "python3");
  main.python = {py("all_reduce", kTorchC10d, 2501), py("wrapper",
                 "/venv/lib/python3.12/site-packages/torch/distributed/c10d_logger.py", 83),
                 py("train_step", kTrain, 42), py("main", kTrain, 80), py("<module>", kTrain, 90)};
  const std::vector<CodeFrame> where = user_frames(process({main}));
  ASSERT_EQ(where.size(), 2u);
  EXPECT_EQ(where[0], (CodeFrame{"train_step", kTrain, 42, true}));
  EXPECT_EQ(where[1], (CodeFrame{"main", kTrain, 80, true}));
  EXPECT_EQ(where_phrase(where), "train_step (train.py:42) <- main (train.py:80)");
}

TEST(UserFrames, PythonRuntimeInternalsAreSkipped) {
  // A rank waiting on a queue: threading's wait, queue's get, then the user.
  ThreadStack main = thread(100, "python3");
  main.python = {py("wait", "/usr/lib/python3.11/threading.py", 320),
                 py("get", "/usr/lib/python3.11/queue.py", 171),
                 py("timed_next", "<string>", 12), py("next_batch", kTrain, 17),
                 py("train", kTrain, 30)};
  EXPECT_EQ(where_phrase(user_frames(process({main}))),
            "next_batch (train.py:17) <- train (train.py:30)");
}

TEST(UserFrames, AnInstalledPackageOtherThanTorchIsTheUsers) {
  ThreadStack main = thread(100, "python3");
  const std::string megatron = "/venv/lib/python3.12/site-packages/megatron/core/train.py";
  main.python = {py("forward_step", megatron, 9), py("train", kTrain, 30)};
  EXPECT_EQ(user_frames(process({main}))[0], (CodeFrame{"forward_step", megatron, 9, true}));
}

TEST(UserFrames, OnlyLibraryFramesGiveTheInnermost) {
  ThreadStack main = thread(100, "python3");
  main.python = {py("select", "/usr/lib/python3.11/selectors.py", 415),
                 py("_run_module_as_main", "<frozen runpy>", 198)};
  EXPECT_EQ(where_phrase(user_frames(process({main}))),
            "select (selectors.py:415) <- _run_module_as_main (<frozen runpy>:198)");
}

TEST(UserFrames, TheMainThreadNotOursNorAnotherThread) {
  ThreadStack ours = thread(101, "xpu_timer_poll");
  ours.native = {native("poll_loop", "/opt/xpu/lib/libxpu_timer_inject.so")};
  ThreadStack other = thread(102, "pt_autograd_0");
  other.python = {py("backward_hook", kTrain, 5)};
  ThreadStack main = thread(100, "python3");
  main.python = {py("step", kTrain, 50)};
  // Listed out of order: the main thread is found by its tid.
  const std::vector<CodeFrame> where = user_frames(process({ours, other, main}));
  ASSERT_EQ(where.size(), 1u);
  EXPECT_EQ(where[0], (CodeFrame{"step", kTrain, 50, true}));
}

TEST(UserFrames, WithoutAMainThreadTheFirstThreadNotOurs) {
  ThreadStack ours = thread(101, "xpu_timer_poll");
  ours.native = {native("poll_loop", "/opt/xpu/lib/libxpu_timer_inject.so")};
  ThreadStack other = thread(102, "worker");
  other.native = {native("work", "/opt/app/bin/app", "app.cc", 7)};
  EXPECT_EQ(where_phrase(user_frames(process({ours, other}))), "work (app.cc:7)");
  EXPECT_TRUE(user_frames(process({ours})).empty());
  EXPECT_TRUE(user_frames(process({})).empty());
}

TEST(UserFrames, NativeSkipsTheRuntimeAndGpuLibraries) {
  // The C++ trainer's hung rank: pause() in libc under the user's function.
  ThreadStack main = thread(100, "sim_trainer");
  main.native = {native("__GI___pause", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
                 native("??", ""),
                 native("ncclAllReduce", "/opt/nccl/lib/libnccl.so.2"),
                 native("stuck_in_host_code", "/b/sim_trainer", "/src/sim_trainer_main.cc", 29),
                 native("main", "/b/sim_trainer", "/src/sim_trainer_main.cc", 173),
                 native("__libc_start_call_main", "/usr/lib/x86_64-linux-gnu/libc.so.6")};
  EXPECT_EQ(where_phrase(user_frames(process({main}))),
            "stuck_in_host_code (sim_trainer_main.cc:29) <- main (sim_trainer_main.cc:173)");
}

TEST(UserFrames, NativeWithoutDebugInformationNamesTheModule) {
  ThreadStack main = thread(100, "app");
  main.native = {native("spin", "/opt/app/bin/app")};
  const std::vector<CodeFrame> where = user_frames(process({main}));
  ASSERT_EQ(where.size(), 1u);
  EXPECT_EQ(where[0], (CodeFrame{"spin", "/opt/app/bin/app", 0, false}));
  EXPECT_EQ(where_phrase(where), "spin (app)");
}

TEST(UserFrames, NativeOnlyLibrariesGiveTheInnermostNamedFrame) {
  ThreadStack main = thread(100, "app");
  main.native = {native("??", ""), native("epoll_wait", "/lib/libc.so.6"),
                 native("start_thread", "/lib/libc.so.6")};
  EXPECT_EQ(where_phrase(user_frames(process({main}))),
            "epoll_wait (libc.so.6) <- start_thread (libc.so.6)");
}

TEST(UserFrames, HostileNamesAreBounded) {
  ThreadStack main = thread(100, "python3");
  main.python = {py(std::string(5000, 'f') + "\n", kTrain, -3)};
  const std::vector<CodeFrame> where = user_frames(process({main}));
  ASSERT_EQ(where.size(), 1u);
  EXPECT_EQ(where[0].function.size(), kMaxCodeFrameText);
  EXPECT_EQ(where[0].line, 0);
  const std::vector<CodeFrame> cut = bounded_where(
      {CodeFrame{"a\tb", "", 1, true}, CodeFrame{"c", "", 2, true}, CodeFrame{"d", "", 3, true}});
  ASSERT_EQ(cut.size(), kMaxWhereFrames);
  EXPECT_EQ(cut[0].function, "a?b");
}

TEST(UserFrames, LibraryNames) {
  EXPECT_TRUE(is_library_python_file("/usr/lib/python3.12/threading.py"));
  EXPECT_TRUE(is_library_python_file("/usr/local/lib64/python3.9/selectors.py"));
  EXPECT_TRUE(is_library_python_file("<frozen importlib._bootstrap>"));
  EXPECT_TRUE(is_library_python_file(kTorchC10d));
  EXPECT_TRUE(is_library_python_file("/usr/lib/python3/dist-packages/torch/nn/module.py"));
  EXPECT_FALSE(is_library_python_file("/venv/lib/python3.12/site-packages/torchvision/io.py"));
  EXPECT_FALSE(is_library_python_file("/home/u/lib/model.py"));
  EXPECT_FALSE(is_library_python_file(""));
  EXPECT_TRUE(is_library_module("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"));
  EXPECT_TRUE(is_library_module("/opt/xpu/lib/libxpu_timer_inject.so"));
  EXPECT_FALSE(is_library_module("/opt/app/bin/app"));
  EXPECT_FALSE(is_library_module(""));
}

}  // namespace
}  // namespace xpu_timer::stack
