#include "tests/integration/supervisor_fixture.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <sstream>

#include "common/env_names.h"

namespace xpu_timer::testing {

std::string supervisor_bin() { return build_dir() + "/bin/xpu_timer_supervisor"; }
std::string inject_lib() { return build_dir() + "/lib/libxpu_timer_inject.so"; }
std::string sim_launch_bin() { return build_dir() + "/bin/xpu_timer_sim_launch"; }
std::string sim_trainer_bin() { return build_dir() + "/bin/sim_trainer"; }
std::string sim_trainer_py() { return source_dir() + "/tests/simgpu/sim_trainer.py"; }

int sim_trainer_line(bool python, const std::string& text) {
  std::istringstream in(read_file(source_dir() + "/tests/simgpu/" +
                                  (python ? "sim_trainer.py" : "sim_trainer_main.cc")));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t start = line.find_first_not_of(" \t");
    if (start != std::string::npos && line.substr(start) == text) return n;
  }
  return 0;
}

nlohmann::json sim_trainer_where(bool python, const std::string& function,
                                 const std::string& line_text, const std::string& caller,
                                 const std::string& caller_text) {
  const std::string file = python ? "sim_trainer.py" : "sim_trainer_main.cc";
  const std::string kind = python ? "python" : "native";
  return nlohmann::json::array(
      {{{"function", function},
        {"file", file},
        {"line", sim_trainer_line(python, line_text)},
        {"kind", kind}},
       {{"function", caller},
        {"file", file},
        {"line", sim_trainer_line(python, caller_text)},
        {"kind", kind}}});
}

size_t root_waiter_count(const nlohmann::json& root) {
  size_t n = 0;
  for (const auto& level : root.at("waiters")) n += level.size();
  return n;
}

nlohmann::json where_by_base_name(const nlohmann::json& where) {
  nlohmann::json out = where.is_array() ? where : nlohmann::json::array();
  for (auto& f : out) {
    if (!f.is_object() || !f.contains("file") || !f["file"].is_string()) continue;
    const std::string path = f["file"].get<std::string>();
    f["file"] = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  }
  return out;
}
std::string sim_lib_dir() { return build_dir() + "/simgpu/lib"; }

std::vector<std::string> sim_job(int nproc, bool python, const std::vector<std::string>& args) {
  if (python) return python_sim_job(nproc, python3(), args);
  std::vector<std::string> argv = {sim_launch_bin(), "--nproc", std::to_string(nproc), "--",
                                   sim_trainer_bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::vector<std::string> python_sim_job(int nproc, const std::string& interpreter,
                                        const std::vector<std::string>& args) {
  std::vector<std::string> argv = {sim_launch_bin(), "--nproc",       std::to_string(nproc), "--",
                                   interpreter,      sim_trainer_py()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::vector<std::string> sim_env() {
  return {"XPU_TIMER_SIM_LIB_DIR=" + sim_lib_dir(), "PYTHONUNBUFFERED=1",
          // The tests choose every setting explicitly.
          "XPU_TIMER_HANG_TIMEOUT=", "XPU_TIMER_HANG_KILL=", "XPU_TIMER_BASEPORT=",
          std::string(proto::kEnvPreload) + "="};
}

SupervisedJob::SupervisedJob(const std::string& name, std::vector<std::string> sup_args,
                             std::vector<std::string> job, std::vector<std::string> env) {
  dump_dir_ = make_temp_dir(name);
  std::vector<std::string> argv = {supervisor_bin(), "--port", "0", "--dump-dir", dump_dir_};
  argv.insert(argv.end(), sup_args.begin(), sup_args.end());
  argv.push_back("--");
  argv.insert(argv.end(), job.begin(), job.end());
  auto full_env = sim_env();
  // A supervisor whose /metrics a test read would wait 30 s at the job's end
  // for a last scrape (--metrics-linger): a test that is about it says so
  // with the flag, which overrides this.
  full_env.push_back("XPU_TIMER_METRICS_LINGER_S=0");
  full_env.insert(full_env.end(), env.begin(), env.end());
  child_ = std::make_unique<Child>(argv, full_env, ChildOptions{dump_dir_ + "/console.log"});
}

SupervisedJob::~SupervisedJob() {
  if (!child_ || child_->wait_for(std::chrono::milliseconds(0)).has_value()) return;
  child_->signal(SIGTERM);
  if (!child_->wait_for(std::chrono::seconds(20)).has_value()) child_->kill_group();
}

std::string SupervisedJob::log() const { return read_file(dump_dir_ + "/console.log"); }

int SupervisedJob::port() {
  if (port_ != 0) return port_;
  const std::string path = dump_dir_ + "/supervisor.port";
  if (!wait_until([&] { return file_exists(path); }, std::chrono::seconds(15))) return 0;
  port_ = std::atoi(read_file(path).c_str());
  return port_;
}

nlohmann::json SupervisedJob::get_json(const std::string& path) {
  const int p = port();
  if (p == 0) return nullptr;
  auto reply = http_get(p, path);
  if (!reply || reply->status != 200) return nullptr;
  return nlohmann::json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
}

bool SupervisedJob::wait_registered(int n, std::chrono::milliseconds timeout) {
  return wait_until(
      [&] {
        auto j = get_json("/ranks");
        return j.is_array() && static_cast<int>(j.size()) >= n;
      },
      timeout);
}

std::map<int, pid_t> SupervisedJob::rank_pids() {
  std::map<int, pid_t> out;
  const nlohmann::json ranks = get_json("/ranks");
  if (!ranks.is_array()) return out;
  for (const auto& r : ranks) out[r.at("rank").get<int>()] = r.at("pid").get<pid_t>();
  return out;
}

bool SupervisedJob::wait_python_loops(int n) {
  for (int r = 0; r < n; ++r) {
    const std::string done = "rank " + std::to_string(r) + " loop done";
    if (!wait_until([&] { return log().find(done) != std::string::npos; },
                    std::chrono::seconds(120)) ||
        log().find("rank " + std::to_string(r) + " probes installed") == std::string::npos) {
      return false;
    }
  }
  return true;
}

std::pair<std::string, bool> SupervisedJob::metrics_when(
    const std::function<bool(const std::string&)>& ready, std::chrono::seconds timeout) {
  std::string text;
  const bool ok = wait_until(
      [&] {
        const auto reply = http_get(port(), "/metrics");
        if (!reply.has_value() || reply->status != 200) return false;
        text = reply->body;
        return ready(text);
      },
      timeout);
  return {text, ok};
}

double value_of(const std::string& text, const std::string& family, int rank,
                const std::string& extra) {
  std::istringstream in(text);
  std::string line;
  const std::string rank_label = "rank=\"" + std::to_string(rank) + "\"";
  while (std::getline(in, line)) {
    if (line.rfind(family + "{", 0) != 0) continue;
    if (line.find(rank_label) == std::string::npos) continue;
    if (!extra.empty() && line.find(extra) == std::string::npos) continue;
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

std::vector<PythonInterpreter> python_interpreters() {
  return {{"debian3_11", "/usr/bin/python3.11", false},
          {"pyenv3_8", "/root/.pyenv/versions/3.8.18/bin/python3.8", false},
          {"pyenv3_12", "/root/.pyenv/versions/3.12.1/bin/python3.12", true},
          {"pyenv3_13", "/root/.pyenv/versions/3.13.0/bin/python3.13", true}};
}

std::map<std::pair<int, int>, std::string> trace_thread_names(const nlohmann::json& trace) {
  std::map<std::pair<int, int>, std::string> threads;
  if (!trace.is_object() || !trace.contains("traceEvents")) return threads;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name") {
      threads[{e.at("pid").get<int>(), e.at("tid").get<int>()}] =
          e.at("args").at("name").get<std::string>();
    }
  }
  return threads;
}

nlohmann::json wait_for_dump_trace(const std::string& reply_body) {
  const nlohmann::json reply = nlohmann::json::parse(reply_body, nullptr, false);
  if (!reply.is_object() || !reply.contains("dir")) return nullptr;
  const std::string trace = reply.at("dir").get<std::string>() + "/timeline.json";
  if (!wait_until([&] { return ::access(trace.c_str(), F_OK) == 0; }, std::chrono::seconds(60))) {
    return nullptr;
  }
  return nlohmann::json::parse(read_file(trace), nullptr, false);
}

}  // namespace xpu_timer::testing
