// Runs xpu_timer_supervisor over a simulated job the way a user would, for the
// end-to-end tests: real supervisor, real injected library, real sim ranks.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/integration/process_harness.h"

namespace xpu_timer::testing {

std::string supervisor_bin();
std::string inject_lib();
std::string sim_launch_bin();
std::string sim_trainer_bin();
std::string sim_trainer_py();
std::string sim_lib_dir();

// argv of a sim job: `xpu_timer_sim_launch --nproc N -- <trainer> ARGS...`;
// `python` picks sim_trainer.py over the C++ sim_trainer.
std::vector<std::string> sim_job(int nproc, bool python, const std::vector<std::string>& args);
// The same with sim_trainer.py under `interpreter`.
std::vector<std::string> python_sim_job(int nproc, const std::string& interpreter,
                                        const std::vector<std::string>& args);
// Environment every sim job needs (where the sim libraries are).
std::vector<std::string> sim_env();

// From Prometheus text: the value of the first sample of `family` for
// `rank` whose labels also contain `extra` (e.g. `generation="2"`); -1 when
// there is none.
double value_of(const std::string& text, const std::string& family, int rank,
                const std::string& extra = "");

// The 1-based number of the first line of the sim trainer's source
// (sim_trainer.py, or sim_trainer_main.cc when not `python`) that reads
// `text` once stripped of its indentation; 0 when none does. Tests derive
// the exact line a verdict must name from the source itself.
int sim_trainer_line(bool python, const std::string& text);
// The "where" a verdict gives a rank of a sim trainer stopped in `function`
// at the line reading `line_text`, called from `caller` at `caller_text`:
// [{"function","file","line","kind"} x 2] with the file as its base name
// (file paths differ between builds; the base name and line do not).
nlohmann::json sim_trainer_where(bool python, const std::string& function,
                                 const std::string& line_text, const std::string& caller,
                                 const std::string& caller_text);
// A rank's "where" from a hang document, files cut to their base names.
nlohmann::json where_by_base_name(const nlohmann::json& where);
// How many ranks wait on one of a hang document's roots, all levels together.
size_t root_waiter_count(const nlohmann::json& root);

class SupervisedJob {
 public:
  // Starts the supervisor with `sup_args` (before "--") over `job`.
  SupervisedJob(const std::string& name, std::vector<std::string> sup_args,
                std::vector<std::string> job, std::vector<std::string> env = {});
  // Ends a supervisor still running when the test ends (a failed assertion)
  // with SIGTERM, so that it takes its job along: the job runs in a process
  // group of its own, which killing the supervisor's group would leave behind.
  ~SupervisedJob();
  const std::string& dump_dir() const { return dump_dir_; }
  std::string log() const;  // supervisor's console (its log and the job's output)
  Child& child() { return *child_; }
  // Port from <dump-dir>/supervisor.port; 0 if it did not appear in time.
  int port();
  // GET path and parse JSON; null json on failure.
  nlohmann::json get_json(const std::string& path);
  // Waits until /ranks lists `n` ranks; false on timeout.
  bool wait_registered(int n, std::chrono::milliseconds timeout);
  // pid of each registered rank, from /ranks.
  std::map<int, pid_t> rank_pids();
  // Whether each of ranks 0..n-1 of a sim_trainer.py --await-probes job said
  // its probes were installed and its loop is done (within 120 s).
  bool wait_python_loops(int n);
  // GET /metrics until `ready` holds for the exposition (the ranks publish
  // within milliseconds); the last one read, and whether it was ready.
  std::pair<std::string, bool> metrics_when(
      const std::function<bool(const std::string&)>& ready,
      std::chrono::seconds timeout = std::chrono::seconds(30));

 private:
  std::string dump_dir_;
  std::unique_ptr<Child> child_;
  int port_ = 0;
};

// The CPython interpreters the Python probes are tested under (a test skips
// one that is not installed); `monitoring`: 3.12 or later (sys.monitoring).
struct PythonInterpreter {
  const char* name;  // the test's suffix
  const char* path;  // the interpreter itself, not a pyenv shim (which starts slowly)
  bool monitoring;
};
std::vector<PythonInterpreter> python_interpreters();

// (pid, tid) -> name of each thread of a trace (its thread_name metadata).
std::map<std::pair<int, int>, std::string> trace_thread_names(const nlohmann::json& trace);

// The trace of a POST /dump/timeline answer (its `dir`): the supervisor
// converts it on its dumper's thread after answering, and renames
// timeline.json into place when complete, so this waits for the file to
// appear (up to 60 s). Null json when it does not.
nlohmann::json wait_for_dump_trace(const std::string& reply_body);

}  // namespace xpu_timer::testing
