// xpu_timer_stack: dump the native and Python stacks of any process, like
// `py-spy dump`, or write a stack file for the flame graph viewer.
#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "stack/collector.h"
#include "stack/stack_file.h"
#include "stack/stack_text.h"

namespace {

void usage() {
  fprintf(stderr,
          "usage: xpu_timer_stack --pid PID [--json] [--native-only|--python-only]\n"
          "                       [--rank R --world-size W --out FILE] [--in-child]\n"
          "                       [--stop-timeout-ms MS]\n");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xpu_timer::stack;
  enum { kPid = 1, kJson, kNative, kPython, kRank, kWorld, kOut, kChild, kTimeout, kHelp };
  static const option kOptions[] = {
      {"pid", required_argument, nullptr, kPid},
      {"json", no_argument, nullptr, kJson},
      {"native-only", no_argument, nullptr, kNative},
      {"python-only", no_argument, nullptr, kPython},
      {"rank", required_argument, nullptr, kRank},
      {"world-size", required_argument, nullptr, kWorld},
      {"out", required_argument, nullptr, kOut},
      {"in-child", no_argument, nullptr, kChild},
      {"stop-timeout-ms", required_argument, nullptr, kTimeout},
      {"help", no_argument, nullptr, kHelp},
      {nullptr, 0, nullptr, 0},
  };
  pid_t pid = 0;
  bool json = false;
  bool in_child = false;
  std::string out;
  CollectOptions opt;
  TextView view = TextView::kMixed;
  int c;
  while ((c = getopt_long(argc, argv, "", kOptions, nullptr)) != -1) {
    switch (c) {
      case kPid:
        pid = atoi(optarg);
        break;
      case kJson:
        json = true;
        break;
      case kNative:
        opt.python = false;
        view = TextView::kNativeOnly;
        break;
      case kPython:
        opt.native = false;
        view = TextView::kPythonOnly;
        break;
      case kRank:
        opt.rank = atoi(optarg);
        break;
      case kWorld:
        opt.world_size = atoi(optarg);
        break;
      case kOut:
        out = optarg;
        break;
      case kChild:
        in_child = true;
        break;
      case kTimeout:
        opt.stop_timeout = std::chrono::milliseconds(atoi(optarg));
        break;
      case kHelp:
        usage();
        return 0;
      default:
        usage();
        return 2;
    }
  }
  if (pid <= 0 || (!opt.python && !opt.native) || opt.world_size <= 0 || opt.rank < 0) {
    usage();
    return 2;
  }
  CollectResult r = in_child ? collect_stacks_in_child(pid, opt) : collect_stacks(pid, opt);
  if (!r.attached) {
    fprintf(stderr, "xpu_timer_stack: %s\n",
            r.stack.errors.empty() ? "cannot attach" : r.stack.errors.front().c_str());
    return 1;
  }
  if (!out.empty()) {
    std::string err;
    if (!write_stack_file(r.stack, out, &err)) {
      fprintf(stderr, "xpu_timer_stack: %s\n", err.c_str());
      return 1;
    }
  }
  if (json) {
    printf("%s\n", to_json(r.stack).dump(1).c_str());
  } else if (out.empty()) {
    fputs(format_stack_text(r.stack, view).c_str(), stdout);
  }
  return 0;
}
