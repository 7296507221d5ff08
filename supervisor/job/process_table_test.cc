#include "supervisor/job/process_table.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace xpu_timer::supervisor {
namespace {

TEST(ProcessTable, ParsesStatWithAWickedCommandName) {
  const auto st = parse_proc_stat(
      "1234 (a) b (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, 1234);
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->ppid, 1);
  EXPECT_EQ(st->pgrp, 1234);
  EXPECT_EQ(st->start_time, 987654u);
  EXPECT_FALSE(parse_proc_stat("").has_value());
  EXPECT_FALSE(parse_proc_stat("12 (x) S 1").has_value());
  EXPECT_FALSE(parse_proc_stat("12 x) S").has_value());
}

TEST(ProcessTable, LivenessZombiesAndPidReuse) {
  EXPECT_TRUE(process_alive(getpid()));
  const auto me = read_proc_stat(getpid());
  ASSERT_TRUE(me.has_value());
  EXPECT_TRUE(process_alive(getpid(), me->start_time));
  EXPECT_FALSE(process_alive(getpid(), me->start_time + 1));  // another process with our pid
  EXPECT_FALSE(process_alive(0));
  EXPECT_FALSE(process_alive(-5));

  const pid_t child = fork();
  if (child == 0) _exit(0);
  // Until reaped the child is a zombie: exited for us.
  for (int i = 0; i < 1000 && process_alive(child); ++i) usleep(1000);
  EXPECT_FALSE(process_alive(child));
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(process_alive(child));
}

// Out of descriptors, /proc cannot be opened: a live process stays alive (a
// connection flood once made the supervisor report its ranks dead), and a
// dead one is still dead (kill(pid, 0) says ESRCH).
TEST(ProcessTable, OutOfDescriptorsALiveProcessIsNotDead) {
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
  const pid_t live = fork();
  if (live == 0) {
    pause();
    _exit(0);
  }
  const auto live_stat = read_proc_stat(live);
  ASSERT_TRUE(live_stat.has_value());
  struct rlimit saved {};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  std::vector<int> hogs;
  // A low limit, then every descriptor below it taken.
  struct rlimit low = saved;
  low.rlim_cur = 64;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  for (;;) {
    const int fd = ::dup(0);
    if (fd < 0) break;
    hogs.push_back(fd);
  }
  const bool self_alive = process_alive(getpid());
  const bool live_alive = process_alive(live, live_stat->start_time);
  const bool dead_alive = process_alive(dead);
  const int open_errno = [] {
    const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    const int e = fd < 0 ? errno : 0;
    if (fd >= 0) ::close(fd);
    return e;
  }();
  for (int fd : hogs) ::close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  kill(live, SIGKILL);
  waitpid(live, nullptr, 0);
  ASSERT_EQ(open_errno, EMFILE);  // the situation this is about
  EXPECT_TRUE(self_alive);
  EXPECT_TRUE(live_alive);
  EXPECT_FALSE(dead_alive);
}

TEST(ProcessTable, DescendantsIncludeGrandchildren) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  if (child == 0) {
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      pause();
      _exit(0);
    }
    write(fds[1], &grandchild, sizeof(grandchild));
    pause();
    _exit(0);
  }
  pid_t grandchild = 0;
  ASSERT_EQ(read(fds[0], &grandchild, sizeof(grandchild)),
            static_cast<ssize_t>(sizeof(grandchild)));
  const auto d = descendants_of(getpid());
  EXPECT_NE(std::find(d.begin(), d.end(), child), d.end());
  EXPECT_NE(std::find(d.begin(), d.end(), grandchild), d.end());
  kill(grandchild, SIGKILL);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace xpu_timer::supervisor
