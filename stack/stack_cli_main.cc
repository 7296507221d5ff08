// xpu_timer_stack: dump the native and Python stacks of any process, like
// `py-spy dump`, or write a stack file for the flame graph viewer.
#include <cstdio>
#include <string>
#include <vector>

#include "stack/collector.h"
#include "stack/stack_cli_options.h"
#include "stack/stack_file.h"
#include "stack/stack_text.h"

int main(int argc, char** argv) {
  using namespace xpu_timer::stack;
  const StackCliParse parsed = parse_stack_cli(std::vector<std::string>(argv + 1, argv + argc));
  if (parsed.status == StackCliParse::Status::kHelp) {
    fputs(stack_cli_help().c_str(), stdout);
    return 0;
  }
  if (parsed.status == StackCliParse::Status::kError) {
    fprintf(stderr, "xpu_timer_stack: %s\n%s\n", parsed.error.c_str(), stack_cli_usage().c_str());
    return 2;
  }
  const StackCliOptions& o = parsed.options;
  CollectResult r =
      o.in_child ? collect_stacks_in_child(o.pid, o.collect) : collect_stacks(o.pid, o.collect);
  if (!r.attached) {
    fprintf(stderr, "xpu_timer_stack: %s\n",
            r.stack.errors.empty() ? "cannot attach" : r.stack.errors.front().c_str());
    return 1;
  }
  if (!o.out.empty()) {
    std::string err;
    if (!write_stack_file(r.stack, o.out, &err)) {
      fprintf(stderr, "xpu_timer_stack: %s\n", err.c_str());
      return 1;
    }
  }
  if (o.json) {
    printf("%s\n", stack_file_text(r.stack).c_str());
  } else if (o.out.empty()) {
    fputs(format_stack_text(r.stack, o.view).c_str(), stdout);
  }
  return 0;
}
