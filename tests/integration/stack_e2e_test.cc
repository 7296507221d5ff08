// End to end: the supervisor collects the stacks of every rank of a real
// 4-rank simulated Python job, on a hang and on POST /dump/stacks, writes one
// .stacktrace per rank and the rank-merged flame graphs, reports them under
// "stacks" in GET /hang and hang.json, serves the graphs over GET /dumps (where
// their script still runs in a browser), and leaves every rank running. And
// the threads of a stack file have their Python names, under each CPython.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "flamegraph/chromium_driver.h"
#include "flamegraph/test_folder.h"
#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {
namespace stack_e2e {

using namespace std::chrono_literals;

constexpr int kRanks = 4;

std::vector<std::string> job_args(bool hang) {
  std::vector<std::string> args = {"--steps",      "100000",    "--step-ms", "20",
                                   "--collective", "allreduce", "--bytes",   "65536"};
  if (hang) {
    args.insert(args.end(), {"--hang-rank", "2", "--hang-step", "5"});
  }
  return args;
}

// GET /hang until its "stacks" is finished (and, when `dir` is given, is that
// folder's); null on timeout.
nlohmann::json wait_stacks_done(SupervisedJob& job, const std::string& dir,
                                std::chrono::milliseconds timeout) {
  nlohmann::json stacks;
  wait_until(
      [&] {
        const auto hang = job.get_json("/hang");
        if (!hang.is_object() || !hang.contains("stacks") || !hang["stacks"].is_object()) {
          return false;
        }
        const auto& s = hang["stacks"];
        if (s.value("in_progress", true)) return false;
        if (!dir.empty() && s.value("dir", "") != dir) return false;
        stacks = s;
        return true;
      },
      timeout);
  return stacks;
}

// States (/proc/PID/task/TID/stat) of every thread of pid, e.g. "SSR".
std::string thread_states(pid_t pid) {
  std::string states;
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(task_dir.c_str());
  if (d == nullptr) return states;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(task_dir + "/" + e->d_name + "/stat");
    std::string line;
    if (!std::getline(f, line)) continue;
    const auto rp = line.rfind(')');
    if (rp != std::string::npos && rp + 2 < line.size()) states += line[rp + 2];
  }
  ::closedir(d);
  return states;
}

// Every rank still runs and no thread of it is left stopped by us ('T'
// stopped, 't' tracing stop).
void expect_ranks_running(const std::map<int, pid_t>& pids) {
  for (const auto& [rank, pid] : pids) {
    EXPECT_TRUE(process_alive(pid)) << "rank " << rank << " (pid " << pid << ") is gone";
    const std::string states = thread_states(pid);
    EXPECT_FALSE(states.empty()) << "rank " << rank;
    EXPECT_EQ(states.find_first_of("Tt"), std::string::npos)
        << "rank " << rank << " (pid " << pid << ") left stopped: thread states " << states;
  }
}

// The per-rank part of "stacks": every rank attached, stopped < max_stop_ms,
// with its file on disk.
void expect_all_ranks_collected(const nlohmann::json& stacks, const std::map<int, pid_t>& pids,
                                double max_stop_ms) {
  const std::string dir = stacks.at("dir").get<std::string>();
  ASSERT_EQ(stacks.at("ranks").size(), static_cast<size_t>(kRanks)) << stacks.dump(2);
  for (int rank = 0; rank < kRanks; ++rank) {
    const auto& r = stacks.at("ranks").at(rank);
    EXPECT_EQ(r.at("rank").get<int>(), rank);
    EXPECT_EQ(r.at("pid").get<pid_t>(), pids.at(rank));
    EXPECT_TRUE(r.at("attached").get<bool>()) << r.dump();
    const double stopped = r.at("stopped_ms").get<double>();
    EXPECT_GT(stopped, 0.0) << r.dump();
    EXPECT_LT(stopped, max_stop_ms) << "rank " << rank << " stopped too long";
    EXPECT_GE(r.at("threads").get<int>(), 1);
    char name[32];
    std::snprintf(name, sizeof(name), "%05d-%05d.stacktrace", rank, kRanks);
    EXPECT_EQ(r.at("file"), dir + "/" + name);
    EXPECT_TRUE(file_exists(dir + "/" + name)) << name;
    const auto file = nlohmann::json::parse(read_file(dir + "/" + name), nullptr, false);
    ASSERT_TRUE(file.is_object()) << name;
    EXPECT_EQ(file.at("rank").get<int>(), rank);
    EXPECT_EQ(file.at("world_size").get<int>(), kRanks);
    EXPECT_EQ(file.at("pid").get<pid_t>(), pids.at(rank));
  }
  EXPECT_TRUE(stacks.at("render_error").is_null()) << stacks.dump(2);
  for (const char* out : {"cpp_stack", "py_stack", "mixed_stack", "cpp_stack.svg", "py_stack.svg",
                          "mixed_stack.svg"}) {
    EXPECT_TRUE(file_exists(dir + "/" + out)) << out;
  }
  EXPECT_GE(stacks.at("collect_s").get<double>(), 0.0);
  EXPECT_LT(stacks.at("collect_s").get<double>(), 15.0);
}

bool contains_match(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern));
}

// The flame graph `name` as GET /dumps serves it: the same bytes, and under
// its Content-Security-Policy its script still runs in a browser (a search
// from the URL marks the matches).
void expect_served_graph_runs(SupervisedJob& job, const std::string& name, const std::string& svg) {
  const auto served = http_get(job.port(), "/dumps/" + name);
  ASSERT_TRUE(served.has_value());
  EXPECT_EQ(served->status, 200);
  EXPECT_TRUE(served->body == svg) << served->body.size() << " bytes served of " << svg.size();
  EXPECT_NE(served->head.find("\r\nContent-Security-Policy: default-src 'none'; "),
            std::string::npos)
      << served->head;
  if (!flamegraph::chromium_available()) {
    std::cout << "[ SKIPPED  ] " << flamegraph::kChromium << " not installed: the served graph "
              << "was not opened in a browser\n";
    return;
  }
  flamegraph::TestFolder browser;
  const std::string dom =
      flamegraph::chromium_dom(browser, "http://127.0.0.1:" + std::to_string(job.port()) +
                                            "/dumps/" + name + "#search=stuck_in_host_code");
  // Rank 2 alone is in stuck_in_host_code.
  EXPECT_TRUE(contains_match(dom, R"(<svg [^>]*data-matched-ranks="1")")) << dom.substr(0, 1500);
}

TEST(StackE2E, HangCollectsEveryRankMergesAndLeavesThemRunning) {
  SupervisedJob job("stacks-hang", {"--hang-timeout", "2"}, sim_job(kRanks, true, job_args(true)));
  ASSERT_TRUE(job.wait_registered(kRanks, 20s)) << job.log();
  const std::map<int, pid_t> pids = job.rank_pids();
  ASSERT_EQ(pids.size(), static_cast<size_t>(kRanks));

  const nlohmann::json stacks = wait_stacks_done(job, "", 40s);
  ASSERT_TRUE(stacks.is_object()) << "no finished stacks in /hang; console:\n" << job.log();
  EXPECT_EQ(stacks.at("reason"), "hang");
  expect_all_ranks_collected(stacks, pids, 500.0);
  const std::string dir = stacks.at("dir").get<std::string>();
  EXPECT_EQ(dir.rfind(job.dump_dir() + "/stacks-", 0), 0u) << dir;

  // Rank 2 never reached the collective: alone in host code, the others leak
  // there; the others wait in the collective's sync, rank 2 leaks there.
  const std::string py = read_file(dir + "/py_stack");
  EXPECT_TRUE(contains_match(py, R"(stuck_in_host_code@[^;@]*@2\|0-1/3)")) << py;
  EXPECT_TRUE(contains_match(py, R"(train_step@[^;@]*@0-1/3\|2)")) << py;
  const std::string cpp = read_file(dir + "/cpp_stack");
  EXPECT_TRUE(contains_match(cpp, R"(sim_sync@libsim_workload\.so[^;@]*@0-1/3\|2)")) << cpp;
  EXPECT_TRUE(contains_match(cpp, R"(@libnccl\.so\.2[^;@]*@0-1/3\|2)")) << cpp;
  const std::string mixed = read_file(dir + "/mixed_stack");
  EXPECT_TRUE(contains_match(mixed, R"(stuck_in_host_code@[^;@]*@2\|0-1/3)")) << mixed;
  // The folder holds the verdict, and its graphs name the hang and outline
  // rank 2's frames: it is the missing rank, not a stuck one.
  EXPECT_TRUE(file_exists(dir + "/hang.json"));
  const std::string svg = read_file(dir + "/py_stack.svg");
  EXPECT_NE(svg.find("<text id=\"verdict\""), std::string::npos) << dir;
  EXPECT_TRUE(contains_match(
      svg, R"(<g class="f culprit" [^>]*data-culprit="2"><title>stuck_in_host_code@)"))
      << dir;
  // The title names the culprit and where it is; the panel above the graph
  // shows its frame.
  EXPECT_TRUE(contains_match(svg, R"(>rank 2 missing, in stuck_in_host_code \()")) << dir;
  EXPECT_TRUE(contains_match(svg, R"(<g class="cf" data-node="f\d+"><title>stuck_in_host_code@)"))
      << dir;
  expect_served_graph_runs(job, dir.substr(dir.rfind('/') + 1) + "/py_stack.svg", svg);

  // hang.json was rewritten with the same finished section.
  ASSERT_TRUE(wait_until(
      [&] {
        const auto h =
            nlohmann::json::parse(read_file(job.dump_dir() + "/hang.json"), nullptr, false);
        return h.is_object() && h.value("hung", false) && h["stacks"].is_object() &&
               !h["stacks"].value("in_progress", true);
      },
      5s))
      << read_file(job.dump_dir() + "/hang.json");
  const auto hang_file = nlohmann::json::parse(read_file(job.dump_dir() + "/hang.json"));
  // The same folder, unless the hang grew (a rank found stuck one poll
  // later) and a second collection followed: then the newer one.
  const std::string file_dir = hang_file.at("stacks").at("dir").get<std::string>();
  EXPECT_GE(file_dir, dir);
  EXPECT_EQ(file_dir.rfind(job.dump_dir() + "/stacks-", 0), 0u) << file_dir;
  // One hang document (common/hang_document.h): GET /hang, hang.json and the
  // folder's hang.json have the same keys, the version among them.
  const auto keys = [](const nlohmann::json& j) {
    std::set<std::string> k;
    for (const auto& item : j.items()) k.insert(item.key());
    return k;
  };
  const auto live = job.get_json("/hang");
  const auto in_folder = nlohmann::json::parse(read_file(dir + "/hang.json"), nullptr, false);
  EXPECT_EQ(hang_file.at("version"), 1) << hang_file.dump(2);
  EXPECT_EQ(keys(live), keys(hang_file)) << live.dump(2);
  EXPECT_EQ(keys(in_folder), keys(hang_file)) << in_folder.dump(2);
  const std::string log = job.log();
  const auto at = log.find(": " + dir + "\n");
  ASSERT_NE(at, std::string::npos) << log;
  const std::string line = log.substr(log.rfind('\n', at) + 1, at - log.rfind('\n', at) - 1);
  EXPECT_TRUE(contains_match(line, R"(stacks of 4 ranks in [0-9.]+ s \(max stop [0-9]+ ms\)$)"))
      << line;

  expect_ranks_running(pids);
}

TEST(StackE2E, OnHangKillEndsTheJobOnlyAfterTheStacksAreIn) {
  SupervisedJob job("stacks-kill",
                    {"--hang-timeout", "2", "--on-hang", "kill", "--kill-grace", "3"},
                    sim_job(kRanks, true, job_args(true)));
  auto status = job.child().wait_for(50s);
  ASSERT_TRUE(status.has_value()) << "supervisor still running after --on-hang kill\n" << job.log();
  const auto hang = nlohmann::json::parse(read_file(job.dump_dir() + "/hang.json"), nullptr, false);
  ASSERT_TRUE(hang.is_object()) << job.log();
  const auto& stacks = hang.at("stacks");
  ASSERT_TRUE(stacks.is_object()) << hang.dump(2);
  EXPECT_FALSE(stacks.at("in_progress").get<bool>()) << hang.dump(2);
  ASSERT_EQ(stacks.at("ranks").size(), static_cast<size_t>(kRanks));
  for (const auto& r : stacks.at("ranks")) {
    EXPECT_TRUE(r.at("attached").get<bool>()) << r.dump();
    EXPECT_TRUE(r.at("file").is_string()) << r.dump();
  }
  // The termination is logged after the collection's summary line.
  const std::string log = job.log();
  const auto collected = log.find("stacks of 4 ranks in");
  const auto killed = log.find("--on-hang kill (stacks collected)");
  ASSERT_NE(collected, std::string::npos) << log;
  ASSERT_NE(killed, std::string::npos) << log;
  EXPECT_LT(collected, killed) << log;
  // The hang changes once the killed ranks exit: that is no new hang to
  // collect, so the one folder is all there is.
  EXPECT_EQ(log.find("collecting the stacks", log.find("collecting the stacks") + 1),
            std::string::npos)
      << log;
}

TEST(StackE2E, PostDumpStacksOnAHealthyJobCollectsEveryRank) {
  SupervisedJob job("stacks-request", {"--hang-timeout", "30"},
                    sim_job(kRanks, true, job_args(false)));
  ASSERT_TRUE(job.wait_registered(kRanks, 20s)) << job.log();
  const std::map<int, pid_t> pids = job.rank_pids();
  ASSERT_EQ(pids.size(), static_cast<size_t>(kRanks));
  EXPECT_TRUE(job.get_json("/hang").at("stacks").is_null());

  auto get = http_get(job.port(), "/dump/stacks");
  ASSERT_TRUE(get.has_value());
  EXPECT_EQ(get->status, 405);

  auto reply = http_post(job.port(), "/dump/stacks");
  ASSERT_TRUE(reply.has_value()) << job.log();
  ASSERT_EQ(reply->status, 202) << reply->body;
  const auto started = nlohmann::json::parse(reply->body);
  const std::string dir = started.at("dir").get<std::string>();
  EXPECT_EQ(dir.rfind(job.dump_dir() + "/stacks-", 0), 0u) << dir;
  EXPECT_EQ(started.at("ranks"), nlohmann::json({0, 1, 2, 3}));
  // A second request while the first runs is refused, naming the folder.
  auto again = http_post(job.port(), "/dump/stacks");
  ASSERT_TRUE(again.has_value());
  if (again->status != 202) {  // 202 only if the first finished within this round trip
    EXPECT_EQ(again->status, 409) << again->body;
    EXPECT_EQ(nlohmann::json::parse(again->body).at("dir"), dir);
  }

  const nlohmann::json stacks = wait_stacks_done(job, again->status == 202 ? "" : dir, 30s);
  ASSERT_TRUE(stacks.is_object()) << job.log();
  EXPECT_EQ(stacks.at("reason"), "request");
  // Busy ranks reach their ptrace stop only when the scheduler runs each of
  // their running threads: on the 2 cores CI shares with other jobs (load
  // 16 seen) that alone took 570 ms, so this bound is the stop timeout's
  // order, not the 500 ms the hang test (sleeping ranks) holds to.
  expect_all_ranks_collected(stacks, pids, 2000.0);
  const auto hang = job.get_json("/hang");
  EXPECT_FALSE(hang.at("hung").get<bool>());
  // A healthy job has no hang.json, with or without stacks.
  EXPECT_FALSE(file_exists(job.dump_dir() + "/hang.json"));
  // Every rank's main thread runs the training loop. (Where exactly differs
  // from rank to rank in a running job, and so does the process state that
  // roots the merged stacks.)
  for (const auto& r : stacks.at("ranks")) {
    const auto file = nlohmann::json::parse(read_file(r.at("file").get<std::string>()));
    const auto& main_thread = file.at("threads").at(0);
    EXPECT_EQ(main_thread.at("tid"), file.at("pid"));
    bool in_main = false;
    for (const auto& f : main_thread.at("python")) {
      const std::string path = f.at("file").get<std::string>();
      in_main |= f.at("func") == "main" && path.size() >= 14 &&
                 path.compare(path.size() - 14, 14, "sim_trainer.py") == 0;
    }
    EXPECT_TRUE(in_main) << main_thread.dump();
  }
  const std::string py = read_file(stacks.at("dir").get<std::string>() + "/py_stack");
  EXPECT_TRUE(contains_match(py, R"(<module>@[^;@]*sim_trainer\.py:[0-9]+@)")) << py;

  expect_ranks_running(pids);
  // And training goes on: completions keep growing after the collection.
  auto completed = [&] {
    uint64_t sum = 0;
    for (const auto& r : job.get_json("/ranks")) sum += r.value("completed_total", uint64_t{0});
    return sum;
  };
  const uint64_t before = completed();
  EXPECT_TRUE(wait_until([&] { return completed() > before; }, 10s));
}

// sim_trainer.py --named-threads under `py` (one rank), its stacks taken on
// POST /dump/stacks once its loop is done: the name in the stack file of the
// thread running each of the trainer's functions (main, NamedThreads.*).
std::map<std::string, std::string> thread_names_by_function(const PythonInterpreter& py,
                                                            const std::string& name,
                                                            std::vector<std::string> env) {
  std::map<std::string, std::string> names;
  env.push_back("XPU_TIMER_OPTIMIZER_HOOK=__main__:register_step_hook");
  SupervisedJob job(name, {"--hang-timeout", "300"},
                    python_sim_job(1, py.path,
                                   {"--steps", "3", "--gemms-per-step", "1", "--bytes", "4096",
                                    "--optimizer-steps", "--await-probes", "--named-threads",
                                    "--end-sleep-s", "60"}),
                    env);
  EXPECT_TRUE(job.wait_python_loops(1)) << job.log();
  // The rank said its loop is done; the supervisor may not have taken its
  // registration in yet (a POST then finds no rank to stop: 503).
  EXPECT_TRUE(job.wait_registered(1, std::chrono::seconds(60))) << job.log();
  const auto reply = http_post(job.port(), "/dump/stacks");
  EXPECT_TRUE(reply.has_value() && reply->status == 202)
      << (reply.has_value() ? std::to_string(reply->status) + " " + reply->body : "no reply")
      << "\n"
      << job.log();
  if (!reply.has_value() || reply->status != 202) return names;
  const std::string dir = nlohmann::json::parse(reply->body).at("dir").get<std::string>();
  const nlohmann::json stacks = wait_stacks_done(job, dir, std::chrono::seconds(30));
  EXPECT_TRUE(stacks.is_object()) << job.log();
  if (!stacks.is_object()) return names;
  const auto file = nlohmann::json::parse(
      read_file(stacks.at("ranks").at(0).at("file").get<std::string>()), nullptr, false);
  EXPECT_TRUE(file.is_object()) << stacks.dump(2);
  if (!file.is_object()) return names;
  for (const auto& t : file.at("threads")) {
    for (const auto& f : t.value("python", nlohmann::json::array())) {
      const std::string func = f.value("func", "");
      if (func == "main" || func == "prefetch" || func == "prefetch_worker" || func == "own_name")
        names[func] = t.value("name", "");
    }
  }
  return names;
}

std::string process_name(const PythonInterpreter& py) {
  const std::string path = py.path;
  return path.substr(path.rfind('/') + 1).substr(0, 15);  // the main thread's comm
}

// Before 3.14 CPython gives OS threads no names; the library's probes give
// each threading.Thread its Python name, cut to 15 bytes, unless it named
// itself; the main thread keeps the process's name. A thread started after
// the probes (by a renamed thread, whose name it inherits) gets its own at
// the next optimizer step.
class ThreadNamesE2E : public ::testing::TestWithParam<PythonInterpreter> {};

TEST_P(ThreadNamesE2E, StackFileNamesPythonThreadsByTheirPythonNames) {
  const PythonInterpreter& py = GetParam();
  if (access(py.path, X_OK) != 0) GTEST_SKIP() << py.path << " is not installed";
  const auto names = thread_names_by_function(py, std::string("names-") + py.name, {});
  const std::map<std::string, std::string> want = {{"main", process_name(py)},
                                                   {"prefetch", "data-prefetch"},
                                                   {"prefetch_worker", "prefetch-worker"},
                                                   {"own_name", "pt_selfnamed"}};
  EXPECT_EQ(names, want);
}

INSTANTIATE_TEST_SUITE_P(Interpreters, ThreadNamesE2E, ::testing::ValuesIn(python_interpreters()),
                         [](const ::testing::TestParamInfo<PythonInterpreter>& info) {
                           return std::string(info.param.name);
                         });

TEST(ThreadNamesE2E, OptedOutThreadsKeepTheirOsNames) {
  const PythonInterpreter py = python_interpreters().at(0);
  if (access(py.path, X_OK) != 0) GTEST_SKIP() << py.path << " is not installed";
  const auto names = thread_names_by_function(py, "names-off", {"XPU_TIMER_NAME_THREADS=0"});
  const std::map<std::string, std::string> want = {{"main", process_name(py)},
                                                   {"prefetch", process_name(py)},
                                                   {"prefetch_worker", process_name(py)},
                                                   {"own_name", "pt_selfnamed"}};
  EXPECT_EQ(names, want);
}

}  // namespace stack_e2e
}  // namespace xpu_timer::testing
