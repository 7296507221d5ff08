#include "timeline/hang_markers.h"

#include <map>

#include "timeline/op_describe.h"

namespace xpu_timer::timeline {
namespace {

using recorder::OpState;
using recorder::RecordData;

bool is_completed(const RecordData& r) {
  return r.state == static_cast<uint8_t>(OpState::kCompleted);
}

// The last completed record of `comm` (highest seq), or with `seq` exactly
// when given; without a comm, the last completed record of any kind.
const RecordData* last_completed(const RankTimeline& t, std::optional<uint64_t> comm,
                                 std::optional<uint64_t> seq) {
  const RecordData* best = nullptr;
  for (const RecordData& r : t.ring.records) {
    // Host-side ranges are not operations a rank completes on its GPU.
    if (!is_completed(r) || r.kind == static_cast<uint8_t>(proto::OpKind::kRange)) continue;
    if (comm) {
      if (r.comm_hash != *comm || !is_nccl(r)) continue;
      if (seq && r.seq == *seq) return &r;
      if (!seq && (best == nullptr || r.seq > best->seq)) best = &r;
    } else {
      best = &r;  // records are oldest first
    }
  }
  return best;
}

std::string mark_name(int rank, const RecordData* last, const RankTimeline* t,
                      const std::string& reason) {
  std::string s = "rank " + std::to_string(rank) + " missing: ";
  if (t == nullptr)
    return s + "no flight-recorder dump" + (reason.empty() ? "" : " (" + reason + ")");
  if (last == nullptr) return s + "no completed operation in its flight recorder";
  return s + "last completed " + op_label(*last);
}

const RankTimeline* find_rank(const LoadedDumps& d, int rank) {
  for (const RankTimeline& t : d.ranks) {
    if (t.rank == rank) return &t;
  }
  return nullptr;
}

void from_verdicts(const LoadedDumps& dumps, HangMarks* out) {
  std::map<int, MissingMark> missing;
  for (const DumpFolder& f : dumps.folders) {
    if (f.verdict) out->from_verdict = true;
    if (!f.verdict) continue;
    for (const VerdictRank& v : f.verdict->ranks) {
      if (v.state == "crashed") out->crashed.emplace(v.rank, v.reason);
    }
    if (!f.verdict->hung) continue;
    for (const VerdictRank& v : f.verdict->ranks) {
      if (v.state == "stuck" && v.comm && v.seq) out->stuck.emplace(v.rank, *v.comm, *v.seq);
      if (v.state != "missing" || missing.count(v.rank) != 0) continue;
      MissingMark m;
      m.rank = v.rank;
      m.reason = v.reason;
      m.comm = v.comm;
      m.seq = v.seq;
      m.timeline = find_rank(dumps, v.rank);
      if (m.timeline != nullptr) {
        m.last_completed = last_completed(*m.timeline, v.comm, v.last_completed_seq);
        // That sequence number may have left the ring window, or hang.json
        // may name none: the communicator's last completed, else the rank's.
        if (m.last_completed == nullptr && v.comm) {
          m.last_completed = last_completed(*m.timeline, v.comm, std::nullopt);
        }
        if (m.last_completed == nullptr) {
          m.last_completed = last_completed(*m.timeline, std::nullopt, std::nullopt);
        }
      }
      m.name = mark_name(v.rank, m.last_completed, m.timeline, v.reason);
      missing.emplace(v.rank, std::move(m));
    }
  }
  for (auto& [rank, m] : missing) out->missing.push_back(std::move(m));
}

void inferred(const LoadedDumps& dumps, HangMarks* out) {
  // The lowest pending sequence number of each communicator, and the op.
  std::map<uint64_t, const RecordData*> waited;
  for (const RankTimeline& t : dumps.ranks) {
    for (const RecordData& r : t.ring.records) {
      if (!is_pending(r) || !is_nccl(r) || r.comm_hash == 0 || r.seq == 0) continue;
      auto [it, inserted] = waited.emplace(r.comm_hash, &r);
      if (!inserted && r.seq < it->second->seq) it->second = &r;
    }
  }
  for (const RankTimeline& t : dumps.ranks) {
    for (const auto& [comm, pending] : waited) {
      bool member = false, reached = false;
      for (const RecordData& r : t.ring.records) {
        if (r.comm_hash != comm || !is_nccl(r)) continue;
        member = true;
        if (r.seq >= pending->seq) reached = true;
      }
      if (!member || reached) continue;
      MissingMark m;
      m.rank = t.rank;
      m.timeline = &t;
      m.comm = comm;
      m.seq = pending->seq;
      m.reason = "never issued " + op_label(*pending) + " on comm " + comm_hex(comm) +
                 " (inferred from the dumps)";
      m.last_completed = last_completed(t, comm, std::nullopt);
      m.name = mark_name(t.rank, m.last_completed, &t, m.reason);
      out->missing.push_back(std::move(m));
      break;  // one mark per rank
    }
  }
}

}  // namespace

bool is_pending(const RecordData& r) {
  return r.state == static_cast<uint8_t>(OpState::kIssued) ||
         r.state == static_cast<uint8_t>(OpState::kRunning);
}

HangMarks find_hang_marks(const LoadedDumps& dumps) {
  HangMarks out;
  from_verdicts(dumps, &out);
  if (!out.from_verdict) inferred(dumps, &out);
  return out;
}

}  // namespace xpu_timer::timeline
