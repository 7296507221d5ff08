#include "supervisor/analysis/link_transfer.h"

#include <algorithm>
#include <iterator>
#include <tuple>

#include "common/op_names.h"
#include "common/status_page_layout.h"

namespace xpu_timer::supervisor {
namespace {

constexpr uint64_t kSecondNs = 1'000'000'000;

}  // namespace

void LinkTransferMeter::add_to_bins(std::deque<Bin>* bins, uint64_t end_ns, uint64_t bytes,
                                    uint64_t transfer_ns) {
  // Records come in the order each rank's ring completed them, so a
  // collective's second is the last bin's or a recent one.
  const uint64_t second = end_ns / kSecondNs;
  auto it = bins->end();
  while (it != bins->begin() && std::prev(it)->second > second) --it;
  if (it == bins->begin() || std::prev(it)->second != second)
    it = bins->insert(it, Bin{second});
  else
    --it;
  it->bytes += bytes;
  it->transfer_ns += transfer_ns;
}

bool TransferKey::operator<(const TransferKey& o) const {
  return std::tie(rank, op, dtype, size_bucket, nranks) <
         std::tie(o.rank, o.op, o.dtype, o.size_bucket, o.nranks);
}

bool LinkTransferMeter::measures(uint16_t name) {
  switch (static_cast<proto::OpName>(name)) {
    case proto::OpName::kAllReduce:
    case proto::OpName::kAllGather:
    case proto::OpName::kReduceScatter:
      return true;
    default:
      return false;
  }
}

void LinkTransferMeter::note_comm_name(uint64_t comm, const std::string& name) {
  if (!name.empty()) comm_names_[comm] = name;
}

void LinkTransferMeter::add(const TransferPart& p, uint64_t now_ns) {
  if (p.comm == 0 || p.nranks < 2 || !measures(p.name)) return;
  // The communicators a job has are few; records naming thousands are not
  // a job's (a corrupt ring): they are not remembered, and their
  // collectives, never complete, are counted missing.
  if (reporters_.size() < kMaxComms || reporters_.count(p.comm) != 0) {
    reporters_[p.comm].insert(p.rank);
  }
  const auto key = std::make_pair(p.comm, p.seq);
  Pending& pending = pending_[key];
  if (pending.parts.empty()) pending.first_ns = now_ns;
  for (const TransferPart& q : pending.parts) {
    if (q.rank == p.rank) return;  // a second report of one rank: not a member twice
  }
  pending.parts.push_back(p);
  if (pending.parts.size() < pending.parts.front().nranks) return;
  const std::vector<TransferPart> parts = std::move(pending.parts);
  pending_.erase(key);
  judge(parts, now_ns);
}

void LinkTransferMeter::judge(const std::vector<TransferPart>& parts, uint64_t now_ns) {
  uint64_t transfer_ns = UINT64_MAX;
  for (const TransferPart& q : parts) {
    if (!q.timed || q.end_ns <= q.start_ns) {
      ++counts_.sampled_out;
      return;
    }
    transfer_ns = std::min(transfer_ns, q.end_ns - q.start_ns);
  }
  ++counts_.measured;
  for (const TransferPart& q : parts) {
    const TransferKey key{q.rank, q.name, q.dtype, proto::log2_bucket(q.bytes), q.nranks};
    Totals& t = series_[key];
    ++t.collectives;
    // Binned when it ended, or when it was read if its end lies ahead (a
    // rank's GPU clock mapped too late): no bin outlives the window.
    add_to_bins(&t.bins, std::min(q.end_ns, now_ns), q.bytes, transfer_ns);
    RankCommTime& time = times_[{q.rank, q.comm}];
    ++time.collectives;
    time.transfer_ns += transfer_ns;
    time.wait_ns += q.end_ns - q.start_ns - transfer_ns;
  }
}

TransferReport LinkTransferMeter::report(uint64_t now_ns) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (now_ns - std::min(now_ns, it->second.first_ns) < kSettleNs) {
      ++it;
      continue;
    }
    // Not every member reported it: some never report this communicator
    // here (they run on another node), or one's record was lost.
    const auto& parts = it->second.parts;
    const uint64_t comm = it->first.first;
    const auto reporters = reporters_.find(comm);
    if (reporters != reporters_.end() && reporters->second.size() < parts.front().nranks) {
      ++counts_.remote;
    } else {
      ++counts_.missing;
    }
    it = pending_.erase(it);
  }
  TransferReport out;
  out.counts = counts_;
  const uint64_t from_second = now_ns > window_ns_ ? (now_ns - window_ns_) / kSecondNs : 0;
  for (auto& [key, t] : series_) {
    while (!t.bins.empty() && t.bins.front().second < from_second) t.bins.pop_front();
    TransferSeries s;
    s.key = key;
    s.collectives = t.collectives;
    uint64_t bytes = 0, ns = 0;
    for (const Bin& b : t.bins) {
      bytes += b.bytes;
      ns += b.transfer_ns;
    }
    if (ns > 0) {
      s.bus_bandwidth = static_cast<double>(bytes) / (static_cast<double>(ns) / kSecondNs) *
                        proto::nccl_bus_factor(static_cast<proto::OpName>(key.op), key.nranks);
    }
    out.series.push_back(s);
  }
  for (const auto& [rank_comm, time] : times_) {
    RankCommTime t = time;
    t.rank = rank_comm.first;
    t.comm = rank_comm.second;
    const auto name = comm_names_.find(t.comm);
    if (name != comm_names_.end()) t.comm_name = name->second;
    out.times.push_back(std::move(t));
  }
  return out;
}

void feed_transfer_record(LinkTransferMeter* meter, int rank, const recorder::RecordData& d,
                          uint64_t now_ns) {
  if (d.kind != static_cast<uint8_t>(proto::OpKind::kNccl) ||
      d.state != static_cast<uint8_t>(recorder::OpState::kCompleted) ||
      (d.flags & recorder::kRecGroup) != 0 || !LinkTransferMeter::measures(d.name)) {
    return;
  }
  TransferPart p;
  p.rank = rank;
  p.comm = d.comm_hash;
  p.seq = d.seq;
  p.name = d.name;
  p.dtype = d.dtype;
  p.nranks = d.nranks;
  p.bytes = d.bytes;
  p.start_ns = d.gpu_start_ns;
  p.end_ns = d.gpu_end_ns;
  p.timed = recorder::has_timed_gpu_span(d);
  meter->add(p, now_ns);
}

}  // namespace xpu_timer::supervisor
