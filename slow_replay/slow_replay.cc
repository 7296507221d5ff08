#include "slow_replay/slow_replay.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>
#include <tuple>

#include "common/op_names.h"
#include "supervisor/analysis/link_transfer.h"
#include "supervisor/analysis/straggler_feed.h"

namespace xpu_timer::slow_replay {
namespace {

// When the live ring feed could have handed this record over: once it
// completed (its end), or for a host range once it ended.
uint64_t final_time(const recorder::RecordData& d) {
  if (const uint64_t end = recorder::span_end_ns(d)) return end;
  return std::max(d.launch_ns, d.ready_ns);
}

}  // namespace

FinalRecords records_in_final_order(const std::vector<timeline::LoadedDumps>& dumps) {
  FinalRecords out;
  // A record seen in two dumps (overlapping rings) is one operation: the
  // same rank, ring position and launch.
  std::set<std::tuple<int, uint64_t, uint64_t>> seen;
  for (const timeline::LoadedDumps& folder : dumps) {
    for (const std::string& w : folder.warnings) out.warnings.push_back(w);
    for (const timeline::RankTimeline& rt : folder.ranks) {
      if (out.mono_to_unix_ns == 0 && rt.ring.created_realtime_ns != 0) {
        out.mono_to_unix_ns = static_cast<int64_t>(rt.ring.created_realtime_ns) -
                              static_cast<int64_t>(rt.ring.created_mono_ns);
      }
      for (const recorder::RecordData& d : rt.ring.records) {
        if (!seen.insert({rt.rank, d.op_id, d.launch_ns}).second) continue;
        const uint64_t t = final_time(d);
        if (t != 0) out.records.push_back(FinalRecord{t, rt.rank, &d});
      }
    }
  }
  std::stable_sort(
      out.records.begin(), out.records.end(),
      [](const FinalRecord& a, const FinalRecord& b) { return a.final_ns < b.final_ns; });
  return out;
}

ReplayResult replay(const std::vector<timeline::LoadedDumps>& dumps,
                    const supervisor::StragglerOptions& options, uint64_t period_ns) {
  ReplayResult out;
  supervisor::StragglerAnalyzer analyzer(options);
  FinalRecords in = records_in_final_order(dumps);
  out.warnings = std::move(in.warnings);
  for (const FinalRecord& r : in.records) {
    if (r.d->kind == static_cast<uint8_t>(proto::OpKind::kNccl) && r.d->comm_hash != 0) {
      analyzer.note_member(r.d->comm_hash, r.rank, -1);
    }
  }
  const std::vector<FinalRecord>& items = in.records;
  out.records = items.size();
  if (items.empty()) return out;
  auto verdict = [&](uint64_t at) {
    ReplayVerdict v;
    v.at_ns = at;
    v.at_unix_s = static_cast<double>(static_cast<int64_t>(at) + in.mono_to_unix_ns) / 1e9;
    v.report = analyzer.analyze(at);
    out.verdicts.push_back(std::move(v));
  };
  uint64_t next = items.front().final_ns + period_ns;
  for (const FinalRecord& it : items) {
    if (it.final_ns >= next) {
      verdict(next);
      next += period_ns;
      // A stretch no dump covers (between two dumps): skipped, not judged.
      if (it.final_ns >= next) next = it.final_ns + period_ns;
    }
    supervisor::feed_straggler_record(&analyzer, it.rank, *it.d, it.final_ns);
  }
  // Once after the last record, past the settling time, so that every
  // collective the dumps hold complete is judged.
  verdict(items.back().final_ns + options.settle_ns);
  return out;
}

bool replay_reads(const recorder::RecordData& d) {
  // Every collective: replay() names a communicator's members from them all,
  // and the transfer meter reads those the straggler feed does not.
  return d.kind == static_cast<uint8_t>(proto::OpKind::kNccl) ||
         supervisor::straggler_feed_reads(d);
}

bool write_slim_dumps(const timeline::LoadedDumps& dumps, const std::string& out_dir,
                      std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    *error = out_dir + ": " + ec.message();
    return false;
  }
  for (const timeline::RankTimeline& rt : dumps.ranks) {
    recorder::RingSnapshot slim = rt.ring;
    slim.records.clear();
    for (const recorder::RecordData& d : rt.ring.records) {
      if (replay_reads(d)) slim.records.push_back(d);
    }
    const std::string path =
        (std::filesystem::path(out_dir) / recorder::dump_file_name(rt.rank, rt.world_size))
            .string();
    if (!recorder::write_ring_image(path, slim, error)) return false;
  }
  // The program's names of the communicators (no ring holds them), as they were.
  for (const timeline::DumpFolder& f : dumps.folders) {
    const std::filesystem::path names = std::filesystem::path(f.dir) / "comms.json";
    if (!std::filesystem::exists(names, ec)) continue;
    std::filesystem::copy_file(names, std::filesystem::path(out_dir) / "comms.json",
                               std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) {
      *error = names.string() + ": " + ec.message();
      return false;
    }
    break;
  }
  return true;
}

supervisor::TransferReport replay_transfers(const std::vector<timeline::LoadedDumps>& dumps) {
  supervisor::LinkTransferMeter meter(UINT64_MAX);  // one window over everything
  const FinalRecords in = records_in_final_order(dumps);
  for (const FinalRecord& r : in.records) {
    supervisor::feed_transfer_record(&meter, r.rank, *r.d, r.final_ns);
  }
  const uint64_t last = in.records.empty() ? 0 : in.records.back().final_ns;
  return meter.report(last + supervisor::LinkTransferMeter::kSettleNs);
}

}  // namespace xpu_timer::slow_replay
