// What the multi-node end-to-end tests share: a real etcd on free loopback
// ports with its data in a folder of the test's, and the supervisors of the
// job's nodes. Skipped, with the reason, where etcd is not installed.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/harness/etcd_server.h"
#include "tests/integration/supervisor_fixture.h"

namespace xpu_timer::testing {

// argv of node `node`'s part of a simulated job of `nodes` nodes of
// `per_node` ranks: its launcher, then the trainer with `trainer_args`.
inline std::vector<std::string> node_job(int per_node, int nodes, int node,
                                         const std::string& sim_job_id,
                                         const std::vector<std::string>& trainer_args) {
  std::vector<std::string> argv = {sim_launch_bin(),
                                   "--nproc",
                                   std::to_string(per_node),
                                   "--nnodes",
                                   std::to_string(nodes),
                                   "--node-rank",
                                   std::to_string(node),
                                   "--job-id",
                                   sim_job_id,
                                   "--",
                                   sim_trainer_bin()};
  argv.insert(argv.end(), trainer_args.begin(), trainer_args.end());
  return argv;
}

class MultiNodeFixture : public ::testing::Test {
 protected:
  // `name`: the start of the test folder's name.
  explicit MultiNodeFixture(std::string name) : name_(std::move(name)) {}

  void SetUp() override {
    if (EtcdServer::binary().empty()) GTEST_SKIP() << EtcdServer::kEtcdMissing;
    dir_ = make_temp_dir(name_);
    etcd_ = std::make_unique<EtcdServer>(dir_);
    ASSERT_TRUE(etcd_->start(dir_ + "/data"));
  }

  std::string dir_;
  std::unique_ptr<EtcdServer> etcd_;
  std::vector<std::unique_ptr<SupervisedJob>> nodes_;

 private:
  std::string name_;
};

}  // namespace xpu_timer::testing
