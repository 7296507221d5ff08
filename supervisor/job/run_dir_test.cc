// Run directories: ours is named after our pid and records our start time; a
// new supervisor removes the folders of supervisors that are gone, and only
// those.
#include "supervisor/job/run_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "supervisor/job/process_table.h"

namespace xpu_timer::supervisor {
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// A live process that is not us (a new supervisor never judges its own pid):
// a child blocked on a pipe until the test closes it.
class LiveChild {
 public:
  LiveChild() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[1]);
      char c;
      while (::read(fds[0], &c, 1) > 0) {
      }
      ::_exit(0);
    }
    ::close(fds[0]);
    write_end_ = fds[1];
  }
  ~LiveChild() {
    ::close(write_end_);
    int status = 0;
    if (pid_ > 0) ::waitpid(pid_, &status, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int write_end_ = -1;
};

// A pid that no longer exists: a child that exited and was reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

class RunDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/run_dir_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    base_ = tmpl;
  }
  void TearDown() override {
    const std::string cmd = "rm -rf '" + base_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }

  // base/name with a page file and a socket-like file, and `owner` if given.
  std::string make(const std::string& name, const std::string& owner = "") {
    const std::string dir = base_ + "/" + name;
    EXPECT_EQ(::mkdir(dir.c_str(), 0700), 0) << dir;
    std::ofstream(dir + "/rank-0-77.page") << "page";
    std::ofstream(dir + "/supervisor.sock") << "";
    if (!owner.empty()) std::ofstream(dir + "/owner") << owner;
    return dir;
  }

  std::string base_;
};

TEST_F(RunDirTest, OursIsNamedAfterOurPidAndRecordsOurStartTime) {
  std::string error, path;
  {
    RunDir dir = RunDir::create_in({base_}, &error);
    path = dir.path();
    ASSERT_FALSE(path.empty()) << error;
    const std::string prefix = base_ + "/xpu_timer." + std::to_string(::getpid()) + ".";
    EXPECT_EQ(path.rfind(prefix, 0), 0u) << path;
    EXPECT_EQ(path.size(), prefix.size() + 6) << path;
    struct stat st;
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    std::ifstream owner(path + "/owner");
    long long pid = 0;
    unsigned long long start = 0;
    owner >> pid >> start;
    EXPECT_EQ(pid, ::getpid());
    EXPECT_EQ(start, read_proc_stat(::getpid())->start_time);
    // A second supervisor in this process (or a later one) leaves it alone.
    EXPECT_TRUE(remove_stale_run_dirs(base_).removed.empty());
    EXPECT_TRUE(exists(path + "/owner"));
  }
  EXPECT_FALSE(exists(path));
}

TEST_F(RunDirTest, RemovesOnlyFoldersOfSupervisorsThatAreGone) {
  const pid_t dead = dead_pid();
  LiveChild child;
  ASSERT_GT(child.pid(), 0);
  const std::string me = std::to_string(child.pid());
  const std::string my_start = std::to_string(read_proc_stat(child.pid())->start_time);
  const std::string dead_one =
      make("xpu_timer." + std::to_string(dead) + ".aB3dE9", std::to_string(dead) + " 12345\n");
  const std::string dead_no_owner = make("xpu_timer." + std::to_string(dead) + ".noOwnr");
  // A live pid, but another start time: the pid was reused, its supervisor is gone.
  const std::string reused = make("xpu_timer." + me + ".reUsed", me + " 1\n");
  // Live owners: with the right start time, and without an owner file.
  const std::string live = make("xpu_timer." + me + ".liveAA", "");
  const std::string live_owner = make("xpu_timer." + me + ".mine01", me + " " + my_start + "\n");
  // Not ours to judge: older naming, other names, a link, a plain file.
  const std::string old_naming = make("xpu_timer.Ab12Cd");
  const std::string other = make("other." + std::to_string(dead) + ".xxxxxx");
  const std::string long_suffix = make("xpu_timer." + std::to_string(dead) + ".toolong1");
  const std::string link = base_ + "/xpu_timer." + std::to_string(dead) + ".linkkk";
  ASSERT_EQ(::symlink(dead_one.c_str(), link.c_str()), 0);
  const std::string file = base_ + "/xpu_timer." + std::to_string(dead) + ".fileee";
  std::ofstream(file) << "x";

  // A dead pid whose socket still answers: a supervisor of another PID
  // namespace that shares this /dev/shm.
  const std::string other_ns = make("xpu_timer." + std::to_string(dead) + ".othrNs");
  const std::string sock = other_ns + "/supervisor.sock";
  ASSERT_EQ(::unlink(sock.c_str()), 0);
  const int listener = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock.c_str());
  ASSERT_EQ(::bind(listener, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener, 4), 0);

  const StaleRunDirs stale = remove_stale_run_dirs(base_);
  ::close(listener);
  std::vector<std::string> removed = stale.removed;
  std::sort(removed.begin(), removed.end());
  std::vector<std::string> expected = {dead_one, dead_no_owner, reused};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(removed, expected);
  EXPECT_TRUE(stale.problems.empty()) << stale.problems[0];
  for (const std::string& gone : expected) EXPECT_FALSE(exists(gone)) << gone;
  for (const std::string& kept :
       {live, live_owner, other_ns, old_naming, other, long_suffix, link, file}) {
    EXPECT_TRUE(exists(kept)) << kept;
  }
  EXPECT_TRUE(exists(live + "/rank-0-77.page"));
}

TEST_F(RunDirTest, CreateRemovesStaleFoldersFirst) {
  const pid_t dead = dead_pid();
  const std::string stale =
      make("xpu_timer." + std::to_string(dead) + ".s7aLe0", std::to_string(dead) + " 99\n");
  std::string error;
  RunDir dir = RunDir::create_in({base_}, &error);
  ASSERT_FALSE(dir.path().empty()) << error;
  EXPECT_FALSE(exists(stale));
}

TEST(RunDir, MissingBaseIsNotAProblem) {
  const StaleRunDirs stale = remove_stale_run_dirs("/nonexistent/run_dir_test");
  EXPECT_TRUE(stale.removed.empty());
  EXPECT_TRUE(stale.problems.empty());
}

}  // namespace
}  // namespace xpu_timer::supervisor
