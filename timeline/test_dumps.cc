#include "timeline/test_dumps.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace xpu_timer::timeline::testing {

using recorder::OpState;
using recorder::RecordData;

TempDir::TempDir() {
  char tmpl[] = "/tmp/timeline_test.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  const std::string cmd = "rm -rf '" + path_ + "'";
  if (std::system(cmd.c_str()) != 0) {
    // A folder left in /tmp: harmless, nothing to report from a destructor.
  }
}

std::string TempDir::write(const std::string& name, const std::string& bytes) const {
  const std::string p = path_ + "/" + name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

std::string TempDir::subdir(const std::string& name) const {
  const std::string p = path_ + "/" + name;
  ::mkdir(p.c_str(), 0755);
  return p;
}

std::string TempDir::read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

recorder::RingSnapshot rank_snapshot(const JobSpec& spec, int rank) {
  recorder::RingSnapshot s;
  s.pid = 1000 + rank;
  s.rank = rank;
  s.local_rank = rank;
  s.world_size = spec.world;
  s.created_mono_ns = spec.mono_base;
  s.created_realtime_ns = spec.realtime_base;
  const uint64_t base = spec.mono_base + static_cast<uint64_t>(rank) * kUs;
  auto push = [&](RecordData d) {
    d.op_id = s.records.size();
    // As the hooks publish it: a sampled-out GEMM without its device.
    d.device = d.state == static_cast<uint8_t>(OpState::kUntimed) ? -1 : rank;
    s.records.push_back(d);
  };
  for (uint64_t step = 1; step <= spec.hang_seq; ++step) {
    const uint64_t t = base + step * kMs;
    RecordData g;
    g.name = static_cast<uint16_t>(proto::OpName::kGemmEx);
    g.kind = static_cast<uint8_t>(proto::OpKind::kGemm);
    g.dtype = static_cast<uint8_t>(proto::DType::kBF16);
    g.stream = kComputeStream;
    g.m = 4096;
    g.n = 4096;
    g.k = 1024;
    g.batch = 1;
    g.flops = 2ull * 4096 * 4096 * 1024;
    g.state = static_cast<uint8_t>(OpState::kCompleted);
    g.flags = recorder::kRecTimed;
    g.launch_ns = t;
    g.ready_ns = t + 10 * kUs;
    g.gpu_start_ns = t + 10 * kUs;
    g.gpu_end_ns = t + 10 * kUs + spec.gemm_ns;
    push(g);
    RecordData u = g;  // sampled out: launched, never timed
    u.state = static_cast<uint8_t>(OpState::kUntimed);
    u.flags = 0;
    u.launch_ns = t + 5 * kUs;
    u.ready_ns = u.gpu_start_ns = u.gpu_end_ns = 0;
    push(u);
    const bool last = step == spec.hang_seq;
    if (last && (spec.missing_rank < 0 || rank == spec.missing_rank)) continue;
    RecordData a;
    a.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
    a.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
    a.dtype = static_cast<uint8_t>(proto::DType::kBF16);
    a.stream = kCommStream;
    a.comm_hash = kComm;
    a.seq = step;
    a.nranks = static_cast<uint32_t>(spec.world);
    a.bytes = spec.allreduce_bytes;
    a.count = spec.allreduce_bytes / 2;
    a.red_op = 1;
    a.flags = recorder::kRecTimed;
    a.launch_ns = t + 20 * kUs;
    a.ready_ns = t + 110 * kUs;
    if (last) {
      a.state = static_cast<uint8_t>(OpState::kRunning);
    } else {
      a.state = static_cast<uint8_t>(OpState::kCompleted);
      a.gpu_start_ns = t + 120 * kUs;
      a.gpu_end_ns = t + 120 * kUs + spec.allreduce_ns;
    }
    push(a);
  }
  return s;
}

std::string hang_json(const JobSpec& spec) {
  using nlohmann::json;
  char comm[17];
  std::snprintf(comm, sizeof(comm), "%016llx", static_cast<unsigned long long>(kComm));
  json ranks = json::array();
  for (int r = 0; r < spec.world; ++r) {
    json e = {{"rank", r}, {"registered", true}, {"pid", 1000 + r}, {"host", "node0"}};
    if (r == spec.missing_rank) {
      e["state"] = "missing";
      e["reason"] = "behind";
      e["issued_seq"] = spec.hang_seq - 1;
    } else {
      e["state"] = "stuck";
      e["operation"] = {{"kind", "nccl"},  {"name", "AllReduce"},
                        {"comm", comm},    {"seq", spec.hang_seq},
                        {"dtype", "bf16"}, {"bytes", spec.allreduce_bytes}};
      e["pending_s"] = 5.0;
      e["issued_seq"] = spec.hang_seq;
    }
    e["comm"] = comm;
    e["seq"] = spec.hang_seq;
    e["last_completed_seq"] = spec.hang_seq - 1;
    ranks.push_back(e);
  }
  const double detected = static_cast<double>(spec.realtime_base / kSec) + spec.detected_after_s;
  return json{{"hung", true},
              {"detected_at", detected},
              {"timeout_s", 5.0},
              {"summary", "ranks 0-1/3 stuck in AllReduce #6 on comm " + std::string(comm) +
                              " for 5.0 s; rank 2 missing (last completed #5 on that comm)"},
              {"ranks", ranks},
              {"groups", json::array()}}
      .dump(2);
}

void write_job(const std::string& dir, const JobSpec& spec, bool with_hang_json) {
  const int last = spec.last_rank < 0 ? spec.world - 1 : spec.last_rank;
  for (int r = spec.first_rank; r <= last; ++r) {
    std::string error;
    if (!recorder::write_ring_image(dir + "/" + recorder::dump_file_name(r, spec.world),
                                    rank_snapshot(spec, r), &error)) {
      throw std::runtime_error(error);
    }
  }
  if (with_hang_json) std::ofstream(dir + "/hang.json") << hang_json(spec);
}

std::string image_bytes(const JobSpec& spec, int rank) {
  TempDir tmp;
  std::string error;
  const std::string path = tmp.path() + "/x.timeline";
  if (!recorder::write_ring_image(path, rank_snapshot(spec, rank), &error)) {
    throw std::runtime_error(error);
  }
  return TempDir::read(path);
}

}  // namespace xpu_timer::timeline::testing
