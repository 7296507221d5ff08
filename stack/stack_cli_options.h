// Command line of xpu_timer_stack. Pure parsing, so every usage error's
// message is unit-tested; the main thread calls it once.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "stack/collector.h"
#include "stack/stack_text.h"

namespace xpu_timer::stack {

struct StackCliOptions {
  pid_t pid = 0;
  bool json = false;
  bool in_child = false;
  std::string out;
  CollectOptions collect;
  TextView view = TextView::kMixed;
};

struct StackCliParse {
  enum class Status { kOk, kHelp, kError };
  Status status = Status::kOk;
  StackCliOptions options;
  std::string error;  // one line naming the flag and what was wrong, for kError
};

// `args` without argv[0]. Accepts "--flag value" and "--flag=value".
StackCliParse parse_stack_cli(const std::vector<std::string>& args);

std::string stack_cli_usage();  // "usage: xpu_timer_stack --pid PID ..."
std::string stack_cli_help();   // usage, then every flag with its default

}  // namespace xpu_timer::stack
