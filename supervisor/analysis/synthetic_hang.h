// Test support: the documents a supervisor would serve (GET /hang, /ranks,
// /slow) for a job of any size with one rank missing from a collective,
// made by the supervisor's own code (the hang detector over two snapshots
// `timeout_s` apart, the second one now, hang_document_text, ranks_json,
// slow_report_json), so
// that the operator page and GET /overview can be tested at 1,024 ranks
// without 1,024 processes. Test-only; any thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/code_frame.h"

namespace xpu_timer::supervisor {

struct SyntheticHangSpec {
  int world = 4;
  int ranks_per_node = 8;  // rank r runs on node r / ranks_per_node
  // Stopped in host code after collective seq - 1; the others wait in
  // AllReduce #seq for it. -1: nobody, a healthy job (no hang).
  int missing_rank = 2;
  uint64_t seq = 812;
  uint64_t steps = 40;
  std::string comm_name = "world";    // the communicator's name (NCCL commName), cut to 31 bytes
  std::string host_prefix = "node-";  // ranks of node n run on host_prefix + n
  // Where the missing rank is, once its stacks are in (as in the stack files
  // of flamegraph/bench/synthetic_dump.h).
  std::vector<CodeFrame> where = {CodeFrame{"stuck_in_host_code", "/job/sim_trainer.py", 88, true},
                                  CodeFrame{"train_step", "/job/train.py", 42, true}};
  double timeout_s = 300;
  std::string stacks_dir;  // the hang's stack dump (GET /hang's stacks.dir); "": none
  // Ranks whose crash record GET /ranks shows (`crash`), each with this summary.
  std::vector<int> crashed_ranks;
  std::string crash_summary = "died of SIGSEGV at address 0x0 in memmove";
};

struct SyntheticDocuments {
  nlohmann::json hang;   // GET /hang
  nlohmann::json ranks;  // GET /ranks
  nlohmann::json slow;   // GET /slow (no straggler)
};

SyntheticDocuments synthetic_hang(const SyntheticHangSpec& spec);
// The defaults with `world` ranks, `missing_rank` missing (-1: healthy).
SyntheticHangSpec synthetic_spec(int world, int missing_rank);

}  // namespace xpu_timer::supervisor
