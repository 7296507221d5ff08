// xpu_timer_supervisor: runs a training job under watch (see supervisor.h)
// and ends exactly as the job ended.
#include <cstdio>
#include <string>
#include <vector>

#include "common/env_config.h"
#include "common/env_names.h"
#include "supervisor/job/exit_status.h"
#include "supervisor/log_tee.h"
#include "supervisor/options.h"
#include "supervisor/supervisor.h"

int main(int argc, char** argv) {
  using namespace xpu_timer::supervisor;
  xpu_timer::set_log_tag("xpu_timer supervisor");
  if (xpu_timer::env_bool(xpu_timer::proto::kEnvDebugMode, false)) {
    xpu_timer::set_log_level(xpu_timer::LogLevel::kDebug);
  }
  const std::vector<std::string> args(argv + 1, argv + argc);
  ParseResult parsed = parse_options(args, [](const char* name) { return std::getenv(name); });
  if (parsed.status == ParseResult::Status::kHelp) {
    std::fputs(help_text().c_str(), stdout);
    return 0;
  }
  if (parsed.status == ParseResult::Status::kError) {
    std::fprintf(stderr, "xpu_timer_supervisor: %s; %s\n", parsed.error.c_str(),
                 usage_line().c_str());
    return 2;
  }
  JobExit exit;
  {
    Supervisor supervisor(std::move(parsed.options));
    std::string error;
    if (!supervisor.prepare(&error)) {
      SUP_LOG_ERROR("%s; the job was not started", error.c_str());
      return 2;
    }
    exit = supervisor.run();
  }  // joins the HTTP threads and removes the run directory
  SUP_LOG_INFO("exiting with the job's %s", describe(exit).c_str());
  close_log_copy();
  exit_like(exit);
}
