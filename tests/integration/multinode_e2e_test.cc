// End to end: a job spanning simulated nodes on one machine. A real etcd;
// per node a supervisor (--coordinator) over its own xpu_timer_sim_launch
// (--nnodes/--node-rank, one simulated job across the launchers). Every
// node must name the same culprit of a hang on another node, by global rank
// and node; losing etcd must leave the job running and each node deciding
// alone, with one warning.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/http_probe.h"
#include "tests/integration/multinode_fixture.h"

namespace xpu_timer::testing {
namespace multinode_e2e {

constexpr int kNodes = 2;
constexpr int kPerNode = 2;
constexpr double kTimeoutS = 3.0;

std::vector<std::string> node_job(int node, const std::string& sim_job_id,
                                  const std::vector<std::string>& trainer_args) {
  return testing::node_job(kPerNode, kNodes, node, sim_job_id, trainer_args);
}

class MultiNodeE2E : public MultiNodeFixture {
 protected:
  MultiNodeE2E() : MultiNodeFixture("multinode-etcd") {}

  // The supervisors of every node over the same trainer arguments.
  void start_nodes(const std::string& name, const std::vector<std::string>& trainer_args) {
    const std::string sim_id = name + "-" + std::to_string(::getpid());
    for (int node = 0; node < kNodes; ++node) {
      nodes_.push_back(std::make_unique<SupervisedJob>(
          name + "-node" + std::to_string(node),
          std::vector<std::string>{"--coordinator", etcd_->url(), "--job-id", sim_id,
                                   "--hang-timeout", "3", "--metrics-linger", "0"},
          node_job(node, sim_id, trainer_args)));
    }
    for (auto& n : nodes_) ASSERT_GT(n->port(), 0) << n->log();
  }

  // Every node's /hang once it shares the job with all the others.
  void wait_connected() {
    for (auto& n : nodes_) {
      nlohmann::json h;
      ASSERT_TRUE(wait_until(
          [&] {
            h = n->get_json("/hang");
            return h.is_object() && h["coordinator"].is_object() &&
                   h["coordinator"]["connected"] == true &&
                   h["coordinator"]["other_nodes"].size() == kNodes - 1;
          },
          std::chrono::seconds(60)))
          << h.dump(2) << n->log();
    }
  }

  // A node's /hang once `want` holds (60 s at most); null json otherwise.
  static nlohmann::json wait_hang(SupervisedJob& n,
                                  const std::function<bool(const nlohmann::json&)>& want) {
    nlohmann::json h;
    const bool found = wait_until(
        [&] {
          h = n.get_json("/hang");
          return h.is_object() && want(h);
        },
        std::chrono::seconds(60));
    return found ? h : nlohmann::json();
  }
};

// Rank 3 (node 1) stops before AllReduce #6; ranks 0-2 wait in it. Node 0
// sees none of node 1's ranks locally, yet names rank 3 on node 1 missing;
// both nodes give the same verdict within the timeout + 2 s, and each dumps
// its own ranks' stacks, which merge into one flame graph of every rank.
TEST_F(MultiNodeE2E, EveryNodeNamesTheSameCulpritOnAnotherNode) {
  start_nodes("mn-hang", {"--steps", "100000", "--step-ms", "20", "--collective", "allreduce",
                          "--bytes", "65536", "--hang-rank", "3", "--hang-step", "5"});
  std::set<std::string> summaries;
  std::vector<std::string> stack_dirs;
  for (int node = 0; node < kNodes; ++node) {
    SCOPED_TRACE("node " + std::to_string(node));
    SupervisedJob& n = *nodes_[node];
    nlohmann::json h = wait_hang(n, [](const nlohmann::json& j) { return j["hung"] == true; });
    ASSERT_TRUE(h.is_object()) << n.get_json("/hang").dump(2) << n.log();
    std::set<int> stuck, missing;
    for (const auto& r : h.at("ranks")) {
      const int rank = r.at("rank").get<int>();
      const std::string state = r.at("state").get<std::string>();
      EXPECT_EQ(r.at("node"), rank / kPerNode) << r.dump();
      if (state == "stuck") {
        stuck.insert(rank);
        EXPECT_EQ(r.at("operation").at("seq"), 6);
      } else if (state == "missing") {
        missing.insert(rank);
      } else {
        ADD_FAILURE() << "rank " << rank << " in unexpected state " << state;
      }
    }
    EXPECT_EQ(stuck, (std::set<int>{0, 1, 2}));
    EXPECT_EQ(missing, (std::set<int>{3}));
    // How long the stuck ranks had waited when the verdict came: its log
    // line says (GET /hang's pending_s keeps growing until this test reads
    // it, which a busy machine delays).
    std::smatch first;
    const std::string log = n.log();
    ASSERT_TRUE(
        std::regex_search(log, first, std::regex(R"(WARN\] hang: [^\n]*? for ([0-9.]+) s)")))
        << log;
    EXPECT_LE(std::stod(first[1].str()), kTimeoutS + 2.0) << "detected too late: " << first[0];
    // Collective #6 that rank 3 never issued is no mismatch.
    EXPECT_TRUE(h.at("mismatches").empty()) << h.dump(2);
    summaries.insert(h.at("summary").get<std::string>().substr(0, 40));
    // Its own ranks' stacks, in its own dump folder.
    ASSERT_TRUE(wait_until(
        [&] {
          h = n.get_json("/hang");
          return h["stacks"].is_object() && !h["stacks"].value("in_progress", true);
        },
        std::chrono::seconds(60)))
        << h.dump(2);
    stack_dirs.push_back(h["stacks"]["dir"].get<std::string>());
  }
  EXPECT_EQ(summaries.size(), 1u) << "the nodes disagree";

  // Node 1 took rank 3's stacks; its document carries where rank 3 is, so
  // node 0, which has no stack of it, names the place too.
  const nlohmann::json expected_where =
      sim_trainer_where(false, "stuck_in_host_code", "for (;;) pause();", "main",
                        "stuck_in_host_code(id.rank, step);");
  const std::string place =
      "rank 3 missing (last completed #5 on that comm), in stuck_in_host_code "
      "(sim_trainer_main.cc:" + std::to_string(expected_where[0]["line"].get<int>()) +
      ") <- main (sim_trainer_main.cc:" + std::to_string(expected_where[1]["line"].get<int>()) + ")";
  for (int node = 0; node < kNodes; ++node) {
    SCOPED_TRACE("node " + std::to_string(node));
    const nlohmann::json h = wait_hang(*nodes_[node], [](const nlohmann::json& j) {
      return j["ranks"].is_array() && j["ranks"].size() == 4 && !j["ranks"][3]["where"].empty();
    });
    ASSERT_TRUE(h.is_object()) << nodes_[node]->get_json("/hang").dump(2) << nodes_[node]->log();
    EXPECT_EQ(where_by_base_name(h["ranks"][3]["where"]), expected_where) << h.dump(2);
    EXPECT_NE(h["summary"].get<std::string>().find(place), std::string::npos) << h["summary"];
  }

  // The nodes' folders in one (a shared file system): one flame graph of the
  // whole job, ranks 0-2 waiting in NCCL where rank 3 never came.
  const std::string merged = dir_ + "/merged";
  ASSERT_EQ(::mkdir(merged.c_str(), 0755), 0);
  int files = 0;
  for (const std::string& d : stack_dirs) {
    for (int rank = 0; rank < kNodes * kPerNode; ++rank) {
      char name[32];
      std::snprintf(name, sizeof(name), "/%05d-%05d.stacktrace", rank, kNodes * kPerNode);
      if (!file_exists(d + name)) continue;
      std::ofstream(merged + name) << read_file(d + name);
      ++files;
    }
  }
  EXPECT_EQ(files, kNodes * kPerNode);
  std::ofstream(merged + "/hang.json") << read_file(stack_dirs[0] + "/hang.json");
  auto viewer =
      Child::start({build_dir() + "/bin/xpu_timer_stacktrace_viewer", "--path", merged}, {}, {});
  ASSERT_NE(viewer, nullptr);
  ASSERT_EQ(viewer->wait_exit_code(std::chrono::seconds(120)), 0) << viewer->output();
  const std::string cpp = read_file(merged + "/cpp_stack");
  EXPECT_TRUE(std::regex_search(cpp, std::regex(R"(@libnccl\.so\.2[^;@]*@0-2\|3)"))) << cpp;
}

// Rank 3 (node 1) issues an AllGather as collective #6 of the world
// communicator, where ranks 0-2 all-reduce; nothing hangs. Neither node sees
// every member, node 0 none of the odd one: the nodes compare their windows
// of fingerprints through etcd, and every node reports the same mismatch,
// with rank 3 on node 1 the odd one out, once.
// The root of a hang across communicators and nodes: tensor groups inside a
// node ({0,1} on node 0, {2,3} on node 1), data groups across ({0,2},
// {1,3}). Rank 3 stops before its tp all-reduce: rank 2 waits for it in tp,
// rank 1 in dp; rank 0 waits in dp for rank 2. Node 0 holds none of the
// chain's first two links, yet both nodes lead with rank 3 and the same
// chain, from the merged snapshot.
TEST_F(MultiNodeE2E, EveryNodeLeadsWithTheSameRootAndChainAcrossNodes) {
  start_nodes("mn-roots",
              {"--steps", "100000", "--step-ms", "20", "--bytes", "65536", "--parallel", "2,1,2",
               "--hang-rank", "3", "--hang-step", "5", "--hang-before-group", "tp"});
  std::set<std::string> summaries;
  for (int node = 0; node < kNodes; ++node) {
    SCOPED_TRACE("node " + std::to_string(node));
    SupervisedJob& n = *nodes_[node];
    const nlohmann::json h = wait_hang(n, [](const nlohmann::json& j) {
      if (j["hung"] != true || !j.contains("roots") || j["roots"].size() != 1) return false;
      // And where the root is, which node 1's stacks tell node 0 too.
      return root_waiter_count(j["roots"][0]) == 3 &&
             j["summary"].get<std::string>().find("in stuck_in_host_code") != std::string::npos;
    });
    ASSERT_TRUE(h.is_object()) << n.get_json("/hang").dump(2) << n.log();
    const auto& root = h.at("roots")[0];
    EXPECT_EQ(root.at("kind"), "rank") << root.dump();
    EXPECT_EQ(root.at("ranks"), nlohmann::json::array({3})) << root.dump();
    EXPECT_EQ(root.at("waiters"), nlohmann::json::parse("[[1,2],[0]]")) << root.dump();
    for (const auto& r : h.at("ranks")) {
      const int rank = r.at("rank").get<int>();
      const auto& waits = r.at("waits_for");
      if (rank == 3) {
        EXPECT_TRUE(waits.empty()) << r.dump(2);
        continue;
      }
      ASSERT_EQ(waits.size(), 1u) << r.dump(2);
      EXPECT_EQ(waits[0].at("rank"), rank == 0 ? 2 : 3) << r.dump(2);
      EXPECT_EQ(waits[0].at("comm_name"), rank == 2 ? "tp" : "dp") << r.dump(2);
    }
    const std::string summary = h.at("summary").get<std::string>();
    EXPECT_EQ(summary.rfind("rank 3 missing", 0), 0u) << summary;
    // The durations differ by when each node read; the words do not.
    summaries.insert(std::regex_replace(summary, std::regex("[0-9]+\\.[0-9] s"), "X s"));
  }
  EXPECT_EQ(summaries.size(), 1u) << *summaries.begin();
}

TEST_F(MultiNodeE2E, EveryNodeNamesTheOddRankOfACollectiveMismatchAcrossNodes) {
  start_nodes("mn-mismatch", {"--steps", "100000", "--step-ms", "20", "--collective", "allreduce",
                              "--bytes", "65536", "--comm-name", "world", "--mismatch-rank", "3",
                              "--mismatch-step", "5", "--mismatch-kind", "op"});
  for (int node = 0; node < kNodes; ++node) {
    SCOPED_TRACE("node " + std::to_string(node));
    SupervisedJob& n = *nodes_[node];
    nlohmann::json h;
    ASSERT_TRUE(wait_until(
        [&] {
          h = n.get_json("/hang");
          return h.is_object() && h["mismatches"].is_array() && !h["mismatches"].empty();
        },
        std::chrono::seconds(90)))
        << h.dump(2) << n.log();
    const nlohmann::json& m = h["mismatches"][0];
    EXPECT_EQ(m.at("seq"), 6) << m.dump(2);
    EXPECT_EQ(m.at("kind"), "op") << m.dump(2);
    EXPECT_EQ(m.at("nranks"), 4);
    EXPECT_EQ(m.at("comm_name"), "world") << m.dump(2);
    EXPECT_EQ(m.at("ranks"), nlohmann::json::array({0, 1, 2, 3})) << m.dump(2);
    EXPECT_EQ(m.at("odd_ranks"), nlohmann::json::array({3})) << m.dump(2);
    EXPECT_EQ(m.at("odd_nodes"), nlohmann::json::array({1})) << m.dump(2);
    ASSERT_EQ(m.at("fingerprints").size(), 2u) << m.dump(2);
    const nlohmann::json& most = m.at("fingerprints")[0];
    const nlohmann::json& odd = m.at("fingerprints")[1];
    EXPECT_EQ(most.at("ranks"), nlohmann::json::array({0, 1, 2}));
    EXPECT_EQ(most.at("nodes"), nlohmann::json::array({0, 1}));
    EXPECT_EQ(most.at("op"), "AllReduce");
    EXPECT_EQ(odd.at("ranks"), nlohmann::json::array({3}));
    EXPECT_EQ(odd.at("op"), "AllGather");
    EXPECT_NE(m.at("summary").get<std::string>().find("the odd one out: rank 3 on node 1"),
              std::string::npos)
        << m.dump(2);
    // Each node's own evidence: its ranks' timelines.
    EXPECT_TRUE(m.at("timeline").is_object()) << m.dump(2);
    EXPECT_EQ(h["hung"], false);
  }
  // Once per node, though both nodes may find it and the store carries it to
  // both (and node 1's own checker saw ranks 2 and 3 disagree).
  for (auto& n : nodes_) {
    nlohmann::json h = n->get_json("/hang");
    EXPECT_EQ(h["mismatches"].size(), 1u) << h.dump(2);
    const std::string log = n->log();
    const size_t first = log.find("collective mismatch:");
    EXPECT_EQ(log.find("collective mismatch:", first + 1), std::string::npos)
        << "reported twice: " << log;
  }
}

// Rank 3 (node 1) sleeps 5 ms on the host before every collective. Node 1
// names it from its ranks' arrivals; node 0, which sees none of them, names
// it from node 1's window summary in the store, confirmed by the time its
// own ranks spend in the same collectives: both give rank 3 on node 1, host.
TEST_F(MultiNodeE2E, EveryNodeNamesTheSameStragglerOnAnotherNode) {
  start_nodes("mn-slow", {"--steps", "100000", "--step-ms", "20", "--jitter-ms", "1",
                          "--bytes", "65536", "--slow-rank", "3", "--slow-ms", "5"});
  wait_connected();
  for (int node = 0; node < kNodes; ++node) {
    SCOPED_TRACE("node " + std::to_string(node));
    SupervisedJob& n = *nodes_[node];
    nlohmann::json slow;
    ASSERT_TRUE(wait_until(
        [&] {
          slow = n.get_json("/slow");
          return slow.is_object() && slow["stragglers"].is_array() &&
                 !slow["stragglers"].empty();
        },
        std::chrono::seconds(90)))
        << slow.dump(2) << n.log();
    ASSERT_EQ(slow["stragglers"].size(), 1u) << slow.dump(2);
    const nlohmann::json& s = slow["stragglers"][0];
    EXPECT_EQ(s.at("rank"), 3) << s.dump(2);
    EXPECT_EQ(s.at("node"), 1) << s.dump(2);
    EXPECT_EQ(s.at("cause"), "host") << s.dump(2);
    EXPECT_NE(slow.at("summary").get<std::string>().find("rank 3 on node 1 arrived last"),
              std::string::npos)
        << slow.dump(2);
  }
  EXPECT_NE(nodes_[0]->log().find("straggler: rank 3 on node 1"), std::string::npos)
      << nodes_[0]->log();
}

// Every rank of both nodes stops in host code (--stall-step), nothing in
// flight. A quiet job exchanges its nodes' documents every 2 minutes only,
// and a document more than 10 s old is not merged: each node sees the other's
// ranks, fresh, only because its own ranks' standing still for half the stall
// time (3 s of the 6) raises its alarm. Then every node declares the whole
// job stalled, naming all four ranks with their nodes, and touches nothing.
TEST_F(MultiNodeE2E, EveryNodeDeclaresTheJobStalledOverBothNodes) {
  start_nodes("mn-stall",
              {"--steps", "100000", "--step-ms", "20", "--bytes", "65536", "--stall-step", "5"});
  for (int node = 0; node < kNodes; ++node) {
    SCOPED_TRACE("node " + std::to_string(node));
    SupervisedJob& n = *nodes_[node];
    const nlohmann::json h =
        wait_hang(n, [](const nlohmann::json& j) { return j.value("stalled", false); });
    ASSERT_TRUE(h.is_object()) << n.get_json("/hang").dump(2) << n.log();
    EXPECT_EQ(h["hung"], false);
    EXPECT_EQ(h["summary"].get<std::string>().rfind(
                  "ranks 0-3 stalled: nothing in flight and nothing issued or completed for ", 0),
              0u)
        << h["summary"];
    ASSERT_EQ(h["ranks"].size(), static_cast<size_t>(kNodes * kPerNode)) << h.dump(2);
    for (const auto& r : h["ranks"]) {
      EXPECT_EQ(r.at("state"), "stalled") << r.dump();
      EXPECT_EQ(r.at("node"), r.at("rank").get<int>() / kPerNode) << r.dump();
    }
    EXPECT_EQ(h["coordinator"]["alarm"], true) << h.dump(2);
    // The stall time is measured on each node's clock from its own reads:
    // at least the 6 s, however old the other node's news.
    std::smatch first;
    const std::string log = n.log();
    ASSERT_TRUE(std::regex_search(log, first,
                                  std::regex(R"(WARN\] stall: [^\n]*? completed for ([0-9.]+) s)")))
        << log;
    EXPECT_GE(std::stod(first[1].str()), 2 * kTimeoutS) << first[0];
    EXPECT_FALSE(n.child().wait_for(std::chrono::milliseconds(0)).has_value()) << log;
  }
}

// Node 1 starts 3 s after node 0 (its ranks, its document and its owner key
// all arrive late). GET /hang on either node must answer 200 with a document
// at every poll meanwhile: a node that has not heard of the other yet, or
// has heard of it only in part, is no reason for an error.
TEST_F(MultiNodeE2E, ANodeStartingLateNeverMakesGetHangFail) {
  const std::string sim_id = "mn-late-" + std::to_string(::getpid());
  const std::vector<std::string> trainer = {"--steps", "100000", "--step-ms", "20", "--bytes", "65536"};
  auto start = [&](int node) {
    nodes_.push_back(std::make_unique<SupervisedJob>(
        "mn-late-node" + std::to_string(node),
        std::vector<std::string>{"--coordinator", etcd_->url(), "--job-id", sim_id,
                                 "--hang-timeout", "3", "--metrics-linger", "0"},
        node_job(node, sim_id, trainer)));
    ASSERT_GT(nodes_.back()->port(), 0) << nodes_.back()->log();
  };
  int polls = 0;
  auto poll_all = [&] {
    for (auto& n : nodes_) {
      const auto reply = http_get(n->port(), "/hang");
      ASSERT_TRUE(reply.has_value()) << n->log();
      ASSERT_EQ(reply->status, 200) << reply->body << n->log();
      const auto j = nlohmann::json::parse(reply->body, nullptr, false);
      ASSERT_TRUE(j.is_object() && j.contains("ranks")) << reply->body;
      EXPECT_EQ(j["hung"], false) << reply->body;
      ++polls;
    }
  };
  start(0);
  const auto late = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (std::chrono::steady_clock::now() < late) {
    poll_all();
    if (HasFatalFailure()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  start(1);
  // Until both nodes see each other, and a few seconds beyond.
  bool joined = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto joined_at = deadline;
  while (std::chrono::steady_clock::now() < std::min(deadline, joined_at + std::chrono::seconds(5))) {
    poll_all();
    if (HasFatalFailure()) return;
    if (!joined) {
      joined = true;
      for (auto& n : nodes_) {
        const nlohmann::json h = n->get_json("/hang");
        joined = joined && h.is_object() && h["coordinator"].is_object() &&
                 h["coordinator"]["other_nodes"].size() == 1;
      }
      if (joined) joined_at = std::chrono::steady_clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(joined) << nodes_[0]->log() << nodes_[1]->log();
  EXPECT_GT(polls, 100);
}

// etcd dies while the job runs: the job goes on, each node says once that it
// decides alone, and no node calls the other node's ranks missing.
TEST_F(MultiNodeE2E, LosingTheStoreLeavesTheJobRunningAndEachNodeAlone) {
  start_nodes("mn-lost", {"--steps", "100000", "--step-ms", "20"});
  wait_connected();
  etcd_->stop();
  for (auto& n : nodes_) {
    nlohmann::json h;
    // Three failed rounds: time enough for a second warning, if any.
    ASSERT_TRUE(wait_until(
        [&] {
          h = n->get_json("/hang");
          return h.is_object() && h["coordinator"]["connected"] == false &&
                 h["coordinator"]["failed_rounds"].get<int>() >= 3;
        },
        std::chrono::seconds(60)))
        << h.dump(2);
    EXPECT_EQ(h["hung"], false);
    EXPECT_NE(h["coordinator"]["last_error"], nullptr);
    const std::string log = n->log();
    size_t warnings = 0;
    for (size_t at = log.find("deciding over this node's ranks alone"); at != std::string::npos;
         at = log.find("deciding over this node's ranks alone", at + 1)) {
      ++warnings;
    }
    EXPECT_EQ(warnings, 1u) << log;
    EXPECT_FALSE(n->child().wait_for(std::chrono::milliseconds(0)).has_value())
        << "the supervisor or its job ended: " << log;
  }
}

}  // namespace multinode_e2e
}  // namespace xpu_timer::testing
