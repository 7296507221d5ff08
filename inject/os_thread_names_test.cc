#include "inject/os_thread_names.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <thread>

namespace xpu_timer::inject {
namespace {

std::string comm_of(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/comm");
  std::string line;
  std::getline(f, line);
  return line;
}

pid_t this_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// A thread that runs `first` (on itself), says its tid and waits until the
// object is destroyed: the test renames it from outside meanwhile.
class ParkedThread {
 public:
  explicit ParkedThread(std::function<void()> first = [] {})
      : thread_([this, first] {
          first();
          tid_.set_value(this_tid());
          release_.get_future().wait();
        }),
        tid_value_(tid_.get_future().get()) {}
  ~ParkedThread() {
    release_.set_value();
    thread_.join();
  }
  pid_t tid() const { return tid_value_; }

 private:
  std::promise<pid_t> tid_;
  std::promise<void> release_;
  std::thread thread_;
  pid_t tid_value_;
};

TEST(OsThreadNames, ThreadWithTheProcessNameGetsTheNameCutTo15Bytes) {
  ParkedThread t;
  ASSERT_EQ(comm_of(t.tid()), comm_of(this_tid()));  // inherited
  EXPECT_EQ(name_os_thread(t.tid(), "data-prefetch"), OsThreadNaming::kNamed);
  EXPECT_EQ(comm_of(t.tid()), "data-prefetch");
  // Named once: asking again is a no-op that says so.
  EXPECT_EQ(name_os_thread(t.tid(), "data-prefetch"), OsThreadNaming::kNamed);

  ParkedThread longer;
  EXPECT_EQ(name_os_thread(longer.tid(), "prefetch-worker-1"), OsThreadNaming::kNamed);
  EXPECT_EQ(comm_of(longer.tid()), "prefetch-worker");
}

TEST(OsThreadNames, ThreadThatNamedItselfKeepsItsName) {
  ParkedThread t([] { pthread_setname_np(pthread_self(), "pt_autograd_0"); });
  EXPECT_EQ(name_os_thread(t.tid(), "Thread-3"), OsThreadNaming::kOwnName);
  EXPECT_EQ(comm_of(t.tid()), "pt_autograd_0");
}

TEST(OsThreadNames, ThreadInheritingAGivenNameIsRenamedToo) {
  // A thread is created with the name of the thread that creates it: a
  // thread started by one we renamed holds that name without having chosen it.
  std::promise<pid_t> parent_tid, child_tid;
  std::promise<void> go, release;
  std::shared_future<void> released = release.get_future().share();
  std::thread parent([&] {
    parent_tid.set_value(this_tid());
    go.get_future().wait();
    std::thread child([&] {
      child_tid.set_value(this_tid());
      released.wait();
    });
    child.join();
  });
  const pid_t p = parent_tid.get_future().get();
  EXPECT_EQ(name_os_thread(p, "loader-main"), OsThreadNaming::kNamed);
  go.set_value();
  const pid_t child = child_tid.get_future().get();
  EXPECT_EQ(comm_of(child), "loader-main");
  EXPECT_EQ(name_os_thread(child, "loader-child"), OsThreadNaming::kNamed);
  EXPECT_EQ(comm_of(child), "loader-child");
  release.set_value();
  parent.join();
}

TEST(OsThreadNames, BadArgumentsAndOtherProcessesFailWithoutHarm) {
  EXPECT_EQ(name_os_thread(0, "x"), OsThreadNaming::kFailed);
  EXPECT_EQ(name_os_thread(-5, "x"), OsThreadNaming::kFailed);
  ParkedThread t;
  const std::string before = comm_of(t.tid());
  EXPECT_EQ(name_os_thread(t.tid(), ""), OsThreadNaming::kFailed);
  EXPECT_EQ(name_os_thread(t.tid(), std::string_view("\0abc", 4)), OsThreadNaming::kFailed);
  EXPECT_EQ(comm_of(t.tid()), before);
  // Not a thread of this process: /proc/self/task has no such entry.
  EXPECT_EQ(name_os_thread(::getppid(), "x"), OsThreadNaming::kFailed);
}

}  // namespace
}  // namespace xpu_timer::inject
