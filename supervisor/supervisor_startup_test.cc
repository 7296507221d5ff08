// The real xpu_timer_supervisor refuses to start a job it could not report
// on: an unusable --dump-dir, or a busy port the user gave, is one error
// line and exit status 2 before the job exists. The default port, when busy,
// falls back to a free one with a warning naming it (docs/usage.md "When the
// supervisor refuses to start").
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/harness/child_process.h"

namespace {

using namespace std::chrono_literals;
using xpu_timer::testing::Child;
using xpu_timer::testing::ChildOptions;
using xpu_timer::testing::describe;
using xpu_timer::testing::ExitStatus;
using xpu_timer::testing::read_file;

// A TCP socket listening on 127.0.0.1:`port` (0: any), held by the test.
class Listener {
 public:
  explicit Listener(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(fd_, 1) != 0) {
      error_ = errno;
      return;
    }
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~Listener() {
    if (fd_ >= 0) close(fd_);
  }
  int port() const { return port_; }  // 0 when bind or listen failed
  int error() const { return error_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  int error_ = 0;
};

class SupervisorStartupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/xpu_sup_startup.XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
    marker_ = dir_ + "/job_ran";
  }
  void TearDown() override {
    supervisor_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Runs the supervisor with `args` over a job that leaves marker_ behind,
  // says "ready" on fd 3 and waits for its stdin to close, then exits 0.
  void start(const std::vector<std::string>& args, std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {XPU_TIMER_SUPERVISOR_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(),
                {"--", "sh", "-c", "touch " + marker_ + "; echo ready >&3; cat >/dev/null"});
    env.insert(env.end(), {"XPU_TIMER_INJECT_LIB=/nonexistent/lib.so",
                           "XPU_TIMER_HANG_TIMEOUT=", "XPU_TIMER_HANG_KILL="});
    ChildOptions options;
    options.ready_fd = 3;
    supervisor_ = Child::start(argv, env, options);
  }

  // The supervisor ended with status 2, printed `line` (after its log
  // prefix) and never started the job.
  void expect_refused(const std::string& line) {
    const std::optional<ExitStatus> status = supervisor_->wait_for(30s);
    ASSERT_TRUE(status.has_value()) << "still running:\n" << supervisor_->output();
    EXPECT_TRUE(status->exited && status->code == 2) << describe(*status);
    const std::string out = supervisor_->output();
    EXPECT_NE(out.find("ERROR] " + line + "; the job was not started\n"), std::string::npos) << out;
    EXPECT_NE(access(marker_.c_str(), F_OK), 0) << "the job ran:\n" << out;
  }

  std::string dir_;
  std::string marker_;
  std::unique_ptr<Child> supervisor_;
};

TEST_F(SupervisorStartupTest, DumpDirThatIsAFileIsRefused) {
  const std::string file = dir_ + "/a_file";
  std::ofstream(file) << "x";
  start({"--port", "0", "--dump-dir", file});
  expect_refused("--dump-dir " + file + " is unusable: " + file + " is not a directory");
}

TEST_F(SupervisorStartupTest, DumpDirThatCannotBeCreatedIsRefused) {
  const std::string file = dir_ + "/a_file";
  std::ofstream(file) << "x";
  const std::string below = file + "/dumps";
  start({"--port", "0", "--dump-dir", below});
  expect_refused("--dump-dir " + below + " is unusable: cannot create " + below + ": " +
                 strerror(ENOTDIR));
}

TEST_F(SupervisorStartupTest, DumpDirThatTakesNoFileIsRefused) {
  // /proc is a folder in which nobody, root included, creates a file; the
  // reason is whatever the same open() says here.
  errno = 0;
  const int fd = open("/proc/supervisor.log", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  const int why = errno;
  ASSERT_LT(fd, 0) << "/proc took a file";
  start({"--port", "0", "--dump-dir", "/proc"});
  expect_refused("--dump-dir /proc is unusable: cannot write /proc/supervisor.log: " +
                 std::string(strerror(why)));
}

TEST_F(SupervisorStartupTest, BusyPortGivenWithPortOrEnvironmentIsRefused) {
  const Listener held(0);
  ASSERT_NE(held.port(), 0) << strerror(held.error());
  const std::string port = std::to_string(held.port());
  start({"--port", port, "--dump-dir", dir_ + "/dump"});
  expect_refused("cannot listen on 127.0.0.1:" + port + ": Address already in use");
  supervisor_.reset();
  start({"--dump-dir", dir_ + "/dump"}, {"XPU_TIMER_BASEPORT=" + port});
  expect_refused("cannot listen on 127.0.0.1:" + port + ": Address already in use");
}

TEST_F(SupervisorStartupTest, BusyDefaultPortFallsBackToAFreeOneAndSaysWhich) {
  // Held by this test, or already by someone else: busy either way.
  const Listener held(18888);
  ASSERT_TRUE(held.port() == 18888 || held.error() == EADDRINUSE) << strerror(held.error());
  const std::string dump = dir_ + "/dump";
  start({"--dump-dir", dump}, {"XPU_TIMER_BASEPORT="});
  ASSERT_EQ(supervisor_->wait_ready_line(30s), "ready") << supervisor_->output();
  std::string text;
  ASSERT_TRUE(xpu_timer::testing::wait_until(
      [&] { return !(text = read_file(dump + "/supervisor.port")).empty(); }, 30s))
      << supervisor_->output();
  const int port = std::atoi(text.c_str());
  EXPECT_NE(port, 18888);
  EXPECT_GT(port, 0);
  const std::string out = supervisor_->output();
  EXPECT_NE(out.find("WARN] default port 18888 in use: listening on port " + std::to_string(port) +
                     " instead (" + dump + "/supervisor.port); give --port to choose one\n"),
            std::string::npos)
      << out;
  supervisor_->close_stdin();  // the job ends, and the supervisor with it
  const std::optional<ExitStatus> status = supervisor_->wait_for(30s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->exited && status->code == 0) << describe(*status) << "\n" << out;
}

}  // namespace
