// Stacks of real native processes: known nested functions, a stripped copy,
// threads created during attach, a process exiting during collection, a
// zombie, a thread in uninterruptible sleep, no permission, and the CLI.
// After every test the target must not be left stopped.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "stack/collector.h"
#include "stack/stack_file.h"
#include "tests/harness/child_process.h"

namespace xpu_timer::stack {
namespace {

using xpu_timer::testing::Child;
using xpu_timer::testing::ChildOptions;
using xpu_timer::testing::no_thread_stopped;
using xpu_timer::testing::process_state;
using xpu_timer::testing::wait_threads_state;
using namespace std::chrono_literals;

const char* kTarget = XPU_STACK_TEST_TARGET;
const char* kTargetSource = XPU_STACK_TEST_TARGET_SOURCE;

// Line of the "// MARK:name" comment in a source file.
int marker_line(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find("MARK:" + name) != std::string::npos) return n;
  return -1;
}

const ThreadStack* find_thread(const ProcessStack& s, pid_t tid) {
  for (const auto& t : s.threads)
    if (t.tid == tid) return &t;
  return nullptr;
}

std::string describe(const ThreadStack& t) {
  std::string out;
  for (const auto& f : t.native)
    out += "  " + f.func + " " + f.module + " " + f.file + ":" + std::to_string(f.line) + "\n";
  return out;
}

// Index of the first frame named func, or -1.
int frame_index(const ThreadStack& t, const std::string& func) {
  for (size_t i = 0; i < t.native.size(); ++i)
    if (t.native[i].func == func) return static_cast<int>(i);
  return -1;
}

// The target says "ready" on its stdout, which is then the readiness pipe.
ChildOptions ready_on_stdout() {
  ChildOptions o;
  o.ready_fd = 1;
  return o;
}

// Stdout of argv run to its end (stderr: the test's own); *status its exit code.
std::string run_command(const std::vector<std::string>& argv, int* status,
                        bool with_stderr = false) {
  ChildOptions o;
  o.capture_stderr = with_stderr;
  Child c(argv, {}, o);
  *status = c.wait_exit_code(30s);
  return c.output();
}

bool wait_blocked(const Child& p) { return wait_threads_state(p.pid(), "S", 5000ms); }

TEST(NativeStack, NestedFunctionsAreDemangledInOrderWithFileAndLine) {
  Child target({kTarget, "nested"}, {}, ready_on_stdout());
  ASSERT_EQ(target.wait_ready_line(), "ready");
  ASSERT_TRUE(wait_blocked(target));
  CollectResult r = collect_stacks(target.pid(), CollectOptions{});
  ASSERT_TRUE(r.attached) << (r.stack.errors.empty() ? "" : r.stack.errors[0]);
  EXPECT_TRUE(no_thread_stopped(target.pid()));
  EXPECT_NE(process_state(target.pid()), '?');
  EXPECT_GT(r.stack.stopped_ms, 0.0);
  EXPECT_FALSE(r.stack.python_version.has_value());
  ASSERT_FALSE(r.stack.errors.empty());
  EXPECT_NE(r.stack.errors[0].find("no Python interpreter found"), std::string::npos);
  ASSERT_EQ(r.stack.threads.size(), 2u);
  const ThreadStack* main = find_thread(r.stack, target.pid());
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(&r.stack.threads[0], main) << "main thread first";
  EXPECT_EQ(main->state, 'S');
  EXPECT_FALSE(main->holds_gil.has_value());

  int inner = frame_index(*main, "stack_test::inner_blocked()");
  ASSERT_GE(inner, 0) << describe(*main);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"stack_test::inner_blocked()", "inner"},
      {"stack_test::middle_level()", "middle"},
      {"stack_test::outer_level()", "outer"},
      {"main", "main"}};
  ASSERT_LE(inner + expected.size(), main->native.size()) << describe(*main);
  for (size_t k = 0; k < expected.size(); ++k) {
    const NativeFrame& f = main->native[inner + k];
    EXPECT_EQ(f.func, expected[k].first) << describe(*main);
    EXPECT_EQ(f.module, kTarget);
    EXPECT_NE(f.file.find("native_target.cc"), std::string::npos) << f.file;
    EXPECT_EQ(f.line, marker_line(kTargetSource, expected[k].second)) << f.func;
    EXPECT_FALSE(f.inlined);
  }
  // Frames above ours are libc's pause.
  EXPECT_GE(inner, 1);
  EXPECT_NE(main->native[0].module.find("libc"), std::string::npos) << describe(*main);

  const ThreadStack& worker = r.stack.threads[1];
  int w = frame_index(worker, "stack_test::worker_blocked()");
  ASSERT_GE(w, 0) << describe(worker);
  EXPECT_EQ(worker.native[w].line, marker_line(kTargetSource, "worker"));
  // Mixed view of a native process is the native stack.
  EXPECT_EQ(main->mixed.size(), main->native.size());
}

TEST(NativeStack, StrippedBinaryGivesModuleAndOffsets) {
  char dir[] = "/tmp/xpu_stack_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string stripped = std::string(dir) + "/native_target_stripped";
  int status = 0;
  run_command({"objcopy", "--strip-all", kTarget, stripped}, &status, /*with_stderr=*/true);
  if (status != 0) GTEST_SKIP() << "objcopy --strip-all failed or is missing";

  // Offsets of our functions, from the unstripped binary (same layout).
  std::map<uint64_t, std::string> known;
  {
    Child target({kTarget, "nested"}, {}, ready_on_stdout());
    ASSERT_EQ(target.wait_ready_line(), "ready");
    ASSERT_TRUE(wait_blocked(target));
    CollectResult r = collect_stacks(target.pid(), CollectOptions{});
    ASSERT_TRUE(r.attached);
    for (const auto& f : find_thread(r.stack, target.pid())->native)
      if (f.module == kTarget) known[f.offset] = f.func;
  }
  ASSERT_GE(known.size(), 4u);

  Child target({stripped, "nested"}, {}, ready_on_stdout());
  ASSERT_EQ(target.wait_ready_line(), "ready");
  ASSERT_TRUE(wait_blocked(target));
  CollectResult r = collect_stacks(target.pid(), CollectOptions{});
  ASSERT_TRUE(r.attached);
  EXPECT_TRUE(no_thread_stopped(target.pid()));
  const ThreadStack* main = find_thread(r.stack, target.pid());
  ASSERT_NE(main, nullptr);
  size_t matched = 0;
  bool named_libc = false;
  for (const auto& f : main->native) {
    if (f.module == stripped) {
      EXPECT_TRUE(f.file.empty());
      if (known.count(f.offset)) ++matched;
    }
    if (f.module.find("libc") != std::string::npos && f.func != "??") named_libc = true;
  }
  EXPECT_EQ(matched, known.size()) << describe(*main);
  EXPECT_TRUE(named_libc) << describe(*main);
  unlink(stripped.c_str());
  rmdir(dir);
}

TEST(NativeStack, ThreadsCreatedDuringAttachAreHandled) {
  Child target({kTarget, "spawn"}, {}, ready_on_stdout());
  ASSERT_EQ(target.wait_ready_line(), "ready");
  for (int i = 0; i < 5; ++i) {
    CollectResult r = collect_stacks(target.pid(), CollectOptions{});
    ASSERT_TRUE(r.attached) << (r.stack.errors.empty() ? "" : r.stack.errors[0]);
    EXPECT_TRUE(no_thread_stopped(target.pid()));
    EXPECT_GE(r.stack.threads.size(), 3u);
    const ThreadStack* main = find_thread(r.stack, target.pid());
    ASSERT_NE(main, nullptr);
    EXPECT_GE(frame_index(*main, "stack_test::outer_level()"), 0) << describe(*main);
    for (const auto& t : r.stack.threads) {
      // Every thread we stopped was unwound (a short-lived one may have
      // exited between listing and attaching: no frames then).
      if (!t.native.empty()) {
        EXPECT_NE(t.native.back().func, "") << t.tid;
      }
    }
  }
  EXPECT_NE(process_state(target.pid()), '?');
}

TEST(NativeStack, ProcessExitingDuringCollectionGivesAResult) {
  Child target({kTarget, "exit"}, {}, ready_on_stdout());
  ASSERT_EQ(target.wait_ready_line(), "ready");
  int collections = 0;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    char st = process_state(target.pid());
    if (st == 'Z' || st == '?') break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "target did not exit";
    CollectResult r = collect_stacks(target.pid(), CollectOptions{});
    ++collections;
    if (!r.attached) {
      ASSERT_FALSE(r.stack.errors.empty());
    }
  }
  EXPECT_GE(collections, 1);
  // It exited by itself (not killed, not left stopped): status 0.
  const auto status = target.wait_for(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->exited && status->code == 0) << xpu_timer::testing::describe(*status);
}

TEST(NativeStack, ZombieIsReportedWithoutAttach) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  ASSERT_TRUE(xpu_timer::testing::wait_until([&] { return process_state(child) == 'Z'; }, 5s));
  CollectResult r = collect_stacks(child, CollectOptions{});
  EXPECT_FALSE(r.attached);
  ASSERT_FALSE(r.stack.errors.empty());
  EXPECT_NE(r.stack.errors[0].find("zombie"), std::string::npos) << r.stack.errors[0];
  EXPECT_EQ(r.stack.process_state.substr(0, 1), "Z");
  // Still our zombie to reap: we did not steal its exit status.
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status));
}

TEST(NativeStack, UninterruptibleThreadGivesPartialResultAndIsReleased) {
  Child target({kTarget, "vfork"}, {}, ready_on_stdout());
  std::string ready = target.wait_ready_line();
  ASSERT_EQ(ready.rfind("ready ", 0), 0u) << ready;
  pid_t vfork_child = static_cast<pid_t>(std::stoi(ready.substr(6)));
  ASSERT_TRUE(wait_threads_state(target.pid(), "D", 5000ms));
  CollectOptions opt;
  opt.stop_timeout = 200ms;
  auto start = std::chrono::steady_clock::now();
  CollectResult r = collect_stacks(target.pid(), opt);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  bool said_so = false;
  for (const auto& e : r.stack.errors)
    said_so = said_so || e.find("uninterruptible") != std::string::npos;
  EXPECT_TRUE(said_so) << (r.stack.errors.empty() ? "" : r.stack.errors[0]);
  ASSERT_EQ(r.stack.threads.size(), 1u);
  EXPECT_EQ(r.stack.threads[0].state, 'D');
  EXPECT_TRUE(r.stack.threads[0].native.empty());
  // Once the vfork child is gone the parent must run on, not stop for us.
  kill(vfork_child, SIGKILL);
  EXPECT_EQ(target.wait_ready_line(5000ms), "resumed");
  EXPECT_TRUE(wait_threads_state(target.pid(), "SR", 2000ms));
  EXPECT_TRUE(no_thread_stopped(target.pid()));
}

TEST(NativeStack, PermissionDeniedIsOneClearLine) {
  Child target({kTarget, "nested"}, {}, ready_on_stdout());
  ASSERT_EQ(target.wait_ready_line(), "ready");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    // An unprivileged user may not trace root's process.
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(3);
    CollectResult r = collect_stacks(target.pid(), CollectOptions{});
    std::string line = r.attached ? "attached" : (r.stack.errors.empty() ? "" : r.stack.errors[0]);
    if (write(fds[1], line.data(), line.size()) < 0) _exit(4);
    _exit(0);
  }
  close(fds[1]);
  std::string line;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) line.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) GTEST_SKIP() << "cannot drop privileges";
  EXPECT_NE(line.find("cannot attach to " + std::to_string(target.pid()) +
                      ": operation not permitted (Yama ptrace_scope="),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("needs CAP_SYS_PTRACE or being an ancestor"), std::string::npos) << line;
  EXPECT_TRUE(no_thread_stopped(target.pid()));
}

TEST(NativeStack, CollectionInForkedChildMatches) {
  Child target({kTarget, "nested"}, {}, ready_on_stdout());
  ASSERT_EQ(target.wait_ready_line(), "ready");
  ASSERT_TRUE(wait_blocked(target));
  CollectOptions opt;
  opt.rank = 3;
  opt.world_size = 8;
  CollectResult r = collect_stacks_in_child(target.pid(), opt);
  ASSERT_TRUE(r.attached) << (r.stack.errors.empty() ? "" : r.stack.errors[0]);
  EXPECT_EQ(r.stack.rank, 3);
  EXPECT_EQ(r.stack.world_size, 8);
  const ThreadStack* main = find_thread(r.stack, target.pid());
  ASSERT_NE(main, nullptr);
  EXPECT_GE(frame_index(*main, "stack_test::middle_level()"), 0) << describe(*main);
  EXPECT_TRUE(no_thread_stopped(target.pid()));
}

TEST(StackCli, DumpsTextJsonAndFile) {
  Child target({kTarget, "nested"}, {}, ready_on_stdout());
  ASSERT_EQ(target.wait_ready_line(), "ready");
  ASSERT_TRUE(wait_blocked(target));
  std::string pid = std::to_string(target.pid());
  int status = 0;
  std::string text = run_command({XPU_STACK_TEST_CLI, "--pid", pid}, &status);
  EXPECT_EQ(status, 0);
  EXPECT_NE(text.find("Thread " + pid + " (stack_test_nati)"), std::string::npos) << text;
  EXPECT_NE(text.find("stack_test::inner_blocked()"), std::string::npos) << text;

  std::string json = run_command({XPU_STACK_TEST_CLI, "--json", "--pid", pid}, &status);
  EXPECT_EQ(status, 0);
  auto doc = nlohmann::json::parse(json, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << json;
  EXPECT_EQ(doc["pid"], target.pid());
  EXPECT_EQ(doc["version"], 1);

  char dir[] = "/tmp/xpu_stack_cli_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string file = std::string(dir) + "/" + stack_file_name(2, 4);
  run_command({XPU_STACK_TEST_CLI, "--rank", "2", "--world-size", "4", "--out", file,
               "--in-child", "--pid", pid},
              &status);
  EXPECT_EQ(status, 0);
  std::string err;
  auto loaded = load_stack_file(file, &err);
  ASSERT_TRUE(loaded) << err;
  EXPECT_EQ(loaded->rank, 2);
  EXPECT_EQ(loaded->world_size, 4);
  EXPECT_EQ(loaded->threads.size(), 2u);
  unlink(file.c_str());
  rmdir(dir);
  EXPECT_TRUE(no_thread_stopped(target.pid()));

  // A pid that does not exist: non-zero exit and one clear line.
  std::string out = run_command({XPU_STACK_TEST_CLI, "--pid", "999999999"}, &status,
                                /*with_stderr=*/true);
  EXPECT_NE(status, 0);
  EXPECT_EQ(out, "xpu_timer_stack: process 999999999 does not exist\n");
}

}  // namespace
}  // namespace xpu_timer::stack
