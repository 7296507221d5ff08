#include "supervisor/analysis/synthetic_hang.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "common/clock.h"
#include "common/op_names.h"
#include "supervisor/analysis/hang_detector.h"
#include "supervisor/analysis/hang_report_json.h"
#include "supervisor/analysis/ranks_json.h"
#include "supervisor/analysis/slow_report_json.h"
#include "supervisor/analysis/straggler.h"

namespace xpu_timer::supervisor {
namespace {

constexpr uint64_t kSec = 1'000'000'000ull;
constexpr uint64_t kComm = 0x06543c4e36ee6c61ull;
constexpr uint64_t kBeforeNs = 3600 * kSec;  // the first snapshot's CLOCK_MONOTONIC

RankSample sample(const SyntheticHangSpec& spec, int rank, uint64_t launched_ns) {
  RankSample s;
  s.rank = rank;
  s.registered = true;
  s.local_rank = rank % spec.ranks_per_node;
  s.node = rank / spec.ranks_per_node;
  s.pid = 10000 + rank;
  s.host = spec.host_prefix + std::to_string(s.node);
  s.alive = true;
  s.connected = true;
  s.page_ok = true;
  s.registered_ns = kSec;
  s.steps = spec.steps;
  s.step_source = static_cast<uint32_t>(proto::StepSource::kOptimizer);
  proto::CommSlot comm{};
  comm.comm_hash = kComm;
  comm.nranks = spec.world;
  comm.rank = rank;
  const size_t name_bytes = std::min(spec.comm_name.size(), proto::kCommNameBytes - 1);
  std::memcpy(comm.name, spec.comm_name.data(), name_bytes);
  proto::OpRef op{};
  op.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
  op.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
  op.dtype = static_cast<uint8_t>(proto::DType::kBF16);
  op.group_size = 1;
  op.comm_hash = kComm;
  op.bytes = 64 << 20;
  const bool missing = rank == spec.missing_rank;
  comm.completed_seq = spec.seq - 1;
  comm.issued_seq = missing ? spec.seq - 1 : spec.seq;
  s.comms.push_back(comm);
  s.completed_total = 5 * (spec.seq - 1);
  s.issued_total = s.completed_total + (missing ? 0 : 1);
  op.seq = spec.seq - 1;
  s.last_completed = op;
  if (!missing) {
    op.seq = spec.seq;
    op.launch_ns = launched_ns;
    op.started_ns = launched_ns + kSec / 1000;
    s.inflight_count = 1;
    s.oldest_inflight = op;
  }
  if (missing) s.where = spec.where;
  return s;
}

Snapshot snapshot_at(const SyntheticHangSpec& spec, uint64_t now_ns, double before_unix_s) {
  Snapshot snap;
  snap.now_ns = now_ns;
  snap.now_unix_s = before_unix_s + static_cast<double>(now_ns - kBeforeNs) / 1e9;
  // A healthy job's collectives were launched a moment ago; a hang's before
  // the first snapshot.
  const uint64_t launched_ns = spec.missing_rank >= 0 ? kBeforeNs - kSec : now_ns - kSec / 1000;
  for (int r = 0; r < spec.world; ++r) {
    RankSample s = sample(spec, r, launched_ns);
    s.heartbeat_ns = now_ns - kSec / 200;
    const bool crashed = std::count(spec.crashed_ranks.begin(), spec.crashed_ranks.end(), r) != 0;
    if (crashed && now_ns > kBeforeNs) s.alive = s.connected = false;
    snap.ranks.push_back(std::move(s));
  }
  return snap;
}

}  // namespace

SyntheticDocuments synthetic_hang(const SyntheticHangSpec& spec) {
  HangDetector detector(spec.timeout_s);
  const double before_unix_s = unix_now_s() - spec.timeout_s - 2;
  detector.update(snapshot_at(spec, kBeforeNs, before_unix_s));
  const uint64_t after_ns = kBeforeNs + static_cast<uint64_t>((spec.timeout_s + 2) * 1e9);
  const Snapshot now = snapshot_at(spec, after_ns, before_unix_s);
  detector.update(now);
  HangDocumentParts parts;
  if (!spec.stacks_dir.empty()) {
    parts.stacks = {{"dir", spec.stacks_dir}, {"in_progress", false}};
  }
  SyntheticDocuments docs;
  docs.hang = nlohmann::json::parse(hang_document_text(detector.report(), parts));
  std::map<int, nlohmann::json> crashes;
  for (int r : spec.crashed_ranks) {
    crashes[r] = {{"kind", "signal"},           {"rank", r},
                  {"pid", 10000 + r},           {"host", spec.host_prefix + "0"},
                  {"time", now.now_unix_s - 5}, {"summary", spec.crash_summary},
                  {"outcome", "crashed"}};
  }
  docs.ranks = ranks_json(now, detector.report(), &crashes);
  docs.slow = slow_report_json(SlowReport{});
  return docs;
}

SyntheticHangSpec synthetic_spec(int world, int missing_rank) {
  SyntheticHangSpec spec;
  spec.world = world;
  spec.missing_rank = missing_rank;
  return spec;
}

}  // namespace xpu_timer::supervisor
