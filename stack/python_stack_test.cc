// Python stacks of a real interpreter, for every CPython found on the
// machine: function names, files, lines of three threads, the GIL holder and
// the mixed stack. One test per interpreter; a missing one is skipped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "stack/collector.h"
#include "stack/mixed_stack.h"
#include "tests/harness/child_process.h"

namespace xpu_timer::stack {
namespace {

using xpu_timer::testing::Child;
using xpu_timer::testing::ChildOptions;
using namespace std::chrono_literals;

const char* kScript = XPU_STACK_TEST_SCRIPT;

struct Interpreter {
  const char* name;
  const char* version;  // "3.11": what the collected python_version starts with
  const char* path;
};

void PrintTo(const Interpreter& py, std::ostream* os) { *os << py.path; }

int marker_line(const std::string& name) {
  std::ifstream in(kScript);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find("MARK:" + name) != std::string::npos) return n;
  return -1;
}

std::string describe_py(const ThreadStack& t) {
  std::string out = "thread " + std::to_string(t.tid) +
                    " gil=" + (t.holds_gil ? (*t.holds_gil ? "yes" : "no") : "null") + "\n";
  for (const auto& f : t.python)
    out += "  py " + f.func + " " + f.file + ":" + std::to_string(f.line) + "\n";
  for (const auto& f : t.mixed)
    out += std::string("  mixed ") + (f.python ? "py " : "c  ") + f.func + "\n";
  return out;
}

std::string describe_py(const ProcessStack& s) {
  std::string out;
  for (const auto& e : s.errors) out += "error: " + e + "\n";
  for (const auto& t : s.threads) out += describe_py(t);
  return out;
}

const ThreadStack* thread_with_top(const ProcessStack& s, const std::string& func) {
  for (const auto& t : s.threads)
    if (!t.python.empty() && t.python[0].func == func) return &t;
  return nullptr;
}

// The state the script reaches: main in inner_blocked, the waiter in
// wait_on_lock, the spinner in spin_holding_gil and holding the GIL.
bool settled(const ProcessStack& s) {
  const ThreadStack* spinner = thread_with_top(s, "spin_holding_gil");
  const ThreadStack* main = thread_with_top(s, "inner_blocked");
  return spinner && main && thread_with_top(s, "wait_on_lock") && spinner->holds_gil &&
         *spinner->holds_gil && main->python[0].line == marker_line("read") && main->state == 'S';
}

class PythonStack : public ::testing::TestWithParam<Interpreter> {};

TEST_P(PythonStack, ThreadsFramesLinesGilAndMixedStack) {
  const Interpreter& py = GetParam();
  if (access(py.path, X_OK) != 0) GTEST_SKIP() << py.path << " not found on this machine";
  // The script says "ready" on fd 10, its readiness pipe.
  ChildOptions ready_on_fd10;
  ready_on_fd10.ready_fd = 10;
  Child target({py.path, kScript, "{ready_fd}"}, {}, ready_on_fd10);
  ASSERT_EQ(target.wait_ready_line(), "ready");

  // The readiness line is written just before the blocking calls: retry
  // (bounded) until every thread is where the script puts it.
  CollectResult r;
  for (int attempt = 0; attempt < 60; ++attempt) {
    r = collect_stacks(target.pid(), CollectOptions{});
    ASSERT_TRUE(r.attached) << describe_py(r.stack);
    EXPECT_TRUE(xpu_timer::testing::no_thread_stopped(target.pid()));
    if (settled(r.stack)) break;
    std::this_thread::sleep_for(50ms);
  }
  const ProcessStack& s = r.stack;
  ASSERT_TRUE(s.python_version.has_value()) << describe_py(s);
  EXPECT_EQ(s.python_version->rfind(std::string(py.version) + ".", 0), 0u) << *s.python_version;
  ASSERT_TRUE(settled(s)) << describe_py(s);
  EXPECT_EQ(s.threads.size(), 3u) << describe_py(s);

  // Main thread: exact frames, files and lines.
  const ThreadStack* main = thread_with_top(s, "inner_blocked");
  EXPECT_EQ(main->tid, target.pid());
  ASSERT_EQ(main->python.size(), 4u) << describe_py(*main);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"inner_blocked", "read"}, {"middle", "middle"}, {"outer", "outer"}, {"<module>", "module"}};
  for (size_t k = 0; k < expected.size(); ++k) {
    EXPECT_EQ(main->python[k].func, expected[k].first);
    EXPECT_EQ(main->python[k].file, kScript);
    EXPECT_EQ(main->python[k].line, marker_line(expected[k].second)) << expected[k].first;
  }
  ASSERT_TRUE(main->holds_gil.has_value());
  EXPECT_FALSE(*main->holds_gil);

  // Thread names are the OS's (/proc/PID/task/TID/comm): the one a thread
  // gave itself (PyTorch names its threads so), else the process's.
  const std::string process_name = std::string(py.path).substr(std::string(py.path).rfind('/') + 1);
  EXPECT_EQ(main->name, process_name.substr(0, 15));

  // Workers: our function on top, threading's bootstrap below.
  const ThreadStack* waiter = thread_with_top(s, "wait_on_lock");
  EXPECT_EQ(waiter->name, "pt_waiter");
  EXPECT_EQ(waiter->python[0].line, marker_line("lock"));
  EXPECT_EQ(waiter->python[0].file, kScript);
  EXPECT_EQ(waiter->python.back().func, "_bootstrap");
  EXPECT_NE(waiter->python.back().file.find("threading.py"), std::string::npos);
  ASSERT_TRUE(waiter->holds_gil.has_value());
  EXPECT_FALSE(*waiter->holds_gil);
  const ThreadStack* spinner = thread_with_top(s, "spin_holding_gil");
  EXPECT_EQ(spinner->python[0].line, marker_line("spin"));
  // The reader takes the OS's name only: without xpu-timer's library in the
  // process, and before CPython 3.14 (which names them itself), a
  // threading.Thread that named no OS thread has the process's, not "spinner".
  EXPECT_EQ(spinner->name, process_name.substr(0, 15));
  EXPECT_NE(spinner->tid, waiter->tid);

  // Mixed stacks: the Python frames, in order, in place of every
  // _PyEval_EvalFrameDefault activation; native frames around them.
  for (const ThreadStack* t : {main, waiter, spinner}) {
    std::vector<std::string> py_in_mixed;
    bool eval_left = false;
    size_t native_count = 0;
    for (const auto& f : t->mixed) {
      if (f.python)
        py_in_mixed.push_back(f.func);
      else
        ++native_count;
      if (!f.python && is_eval_frame_function(f.func)) eval_left = true;
    }
    std::vector<std::string> py_funcs;
    for (const auto& f : t->python) py_funcs.push_back(f.func);
    EXPECT_EQ(py_in_mixed, py_funcs) << describe_py(*t);
    EXPECT_FALSE(eval_left) << describe_py(*t);
    EXPECT_GT(native_count, 0u) << describe_py(*t);
    // On a thread blocked in C the read/lock call sits above the Python frames.
    if (t != spinner) {
      EXPECT_FALSE(t->mixed.front().python) << describe_py(*t);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllInterpreters, PythonStack,
    ::testing::Values(
        Interpreter{"pyenv3_8", "3.8", "/root/.pyenv/versions/3.8.18/bin/python3.8"},
        Interpreter{"pyenv3_9", "3.9", "/root/.pyenv/versions/3.9.18/bin/python3.9"},
        Interpreter{"pyenv3_10", "3.10", "/root/.pyenv/versions/3.10.13/bin/python3.10"},
        Interpreter{"pyenv3_11", "3.11", "/root/.pyenv/versions/3.11.7/bin/python3.11"},
        Interpreter{"pyenv3_12", "3.12", "/root/.pyenv/versions/3.12.1/bin/python3.12"},
        Interpreter{"pyenv3_13", "3.13", "/root/.pyenv/versions/3.13.0/bin/python3.13"},
        Interpreter{"debian3_11", "3.11", "/usr/bin/python3.11"}),
    [](const ::testing::TestParamInfo<Interpreter>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace xpu_timer::stack
