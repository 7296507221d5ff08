#include "supervisor/job/exit_status.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervisor/job/job_launcher.h"

namespace xpu_timer::supervisor {
namespace {

int status_of_child(void (*body)()) {
  const pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(99);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(ExitStatus, ExitCodeAndSignalAreDecoded) {
  const JobExit code = job_exit_from_wait_status(status_of_child([] { _exit(3); }));
  EXPECT_FALSE(code.by_signal);
  EXPECT_EQ(code.value, 3);
  EXPECT_EQ(describe(code), "exit code 3");
  EXPECT_EQ(shell_exit_code(code), 3);

  const JobExit sig = job_exit_from_wait_status(status_of_child([] {
    signal(SIGTERM, SIG_DFL);
    raise(SIGTERM);
  }));
  EXPECT_TRUE(sig.by_signal);
  EXPECT_EQ(sig.value, SIGTERM);
  EXPECT_EQ(shell_exit_code(sig), 143);
}

TEST(ExitStatus, ExitLikeReproducesTheEnd) {
  // exit_like in a child: the grandparent (us) must see the same end.
  const int by_code = status_of_child([] { exit_like(JobExit{false, 42}); });
  ASSERT_TRUE(WIFEXITED(by_code));
  EXPECT_EQ(WEXITSTATUS(by_code), 42);

  const int by_signal = status_of_child([] {
    signal(SIGSEGV, SIG_IGN);  // exit_like must restore the default first
    exit_like(JobExit{true, SIGSEGV});
  });
  ASSERT_TRUE(WIFSIGNALED(by_signal));
  EXPECT_EQ(WTERMSIG(by_signal), SIGSEGV);
  EXPECT_FALSE(WCOREDUMP(by_signal));  // RLIMIT_CORE 0: no second core of the job's crash
}

TEST(ExitStatus, ExecFailuresMapLikeAShell) {
  EXPECT_EQ(exit_code_for_exec_errno(ENOENT), 127);
  EXPECT_EQ(exit_code_for_exec_errno(EACCES), 126);
}

}  // namespace
}  // namespace xpu_timer::supervisor
