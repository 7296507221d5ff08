// Target program for stack_process_test: a process in a known state. Writes
// "ready\n" (and, for some modes, more) to stdout once the state is reached.
//   nested   main thread in stack_test::outer_level -> middle_level ->
//            inner_blocked (blocked in pause), plus one worker thread blocked
//            in stack_test::worker_blocked.
//   spawn    like nested, plus a thread that keeps creating short-lived threads
//   exit     prints ready, then creates threads for a short while and exits
//   vfork    the main thread waits in vfork() (state D) for a child that
//            prints "ready <childpid>" and sleeps; prints "resumed" once the
//            child is gone.
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

namespace stack_test {

__attribute__((noinline)) void inner_blocked() {
  printf("ready\n");
  fflush(stdout);
  for (;;) pause();  // MARK:inner the test stops us here
}

__attribute__((noinline)) void middle_level() {
  inner_blocked();   // MARK:middle
  asm volatile("");  // keep the call from being a tail call
}

__attribute__((noinline)) void outer_level() {
  middle_level();  // MARK:outer
  asm volatile("");
}

__attribute__((noinline)) void worker_blocked() {
  for (;;) pause();  // MARK:worker
}

}  // namespace stack_test

namespace {

void* spawn_forever(void*) {
  for (;;) {
    std::thread t([] {
      timespec ts{0, 100 * 1000};
      nanosleep(&ts, nullptr);
    });
    t.join();
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "nested";
  if (strcmp(mode, "vfork") == 0) {
    pid_t child = vfork();
    if (child == 0) {
      // Only write/nanosleep/_exit here: we share the parent's memory.
      char msg[64];
      int n = snprintf(msg, sizeof(msg), "ready %d\n", static_cast<int>(getpid()));
      if (write(1, msg, static_cast<size_t>(n)) < 0) _exit(1);
      for (;;) pause();
    }
    waitpid(child, nullptr, 0);
    printf("resumed\n");
    fflush(stdout);
    for (;;) pause();
  }
  if (strcmp(mode, "exit") == 0) {
    printf("ready\n");
    fflush(stdout);
    pthread_t tid;
    pthread_create(&tid, nullptr, spawn_forever, nullptr);
    timespec ts{0, 30 * 1000 * 1000};
    nanosleep(&ts, nullptr);
    _exit(0);
  }
  std::thread worker(stack_test::worker_blocked);
  worker.detach();
  if (strcmp(mode, "spawn") == 0) {
    pthread_t tid;
    pthread_create(&tid, nullptr, spawn_forever, nullptr);
  }
  stack_test::outer_level();  // MARK:main
  return 0;
}
