#include "timeline/trace_builder.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "timeline/op_describe.h"
#include "timeline/trace_slices.h"

namespace xpu_timer::timeline {
namespace {

using nlohmann::json;
using recorder::OpState;
using recorder::RecordData;

// Host-side tracks (records of kind kRange), keyed beside the GPU streams'
// (device, stream) with devices no GPU has, so that they sort first.
constexpr int32_t kStepTrack = -6;        // (kStepTrack, 0): "training steps"
constexpr int32_t kNvtxAsyncTrack = -5;   // (kNvtxAsyncTrack, 0): start/end ranges
constexpr int32_t kNvtxThreadTrack = -4;  // (kNvtxThreadTrack, tid): push/pop ranges
constexpr int32_t kPythonTrack = -3;      // (kPythonTrack, tid): traced calls, GC, DataLoader waits
constexpr int32_t kMemoryTrack = -2;      // (kMemoryTrack, tid): cudaMalloc, cudaFree

bool is_range(const RecordData& r) { return r.kind == static_cast<uint8_t>(proto::OpKind::kRange); }
bool is_named(const RecordData& r, proto::OpName name) {
  return r.name == static_cast<uint16_t>(name);
}
// A sample of the kernels launched over an interval: a counter, not a slice.
bool is_launch_sample(const RecordData& r) {
  return is_range(r) && is_named(r, proto::OpName::kKernelLaunches);
}

std::pair<int32_t, uint64_t> track_key(const RecordData& r) {
  if (!is_range(r)) return {r.device, r.stream};
  switch (static_cast<proto::OpName>(r.name)) {
    case proto::OpName::kStep:
      return {kStepTrack, 0};
    case proto::OpName::kGcPause:
    case proto::OpName::kLoaderWait:
    case proto::OpName::kPythonCall:
      return {kPythonTrack, r.stream};
    case proto::OpName::kDeviceMalloc:
    case proto::OpName::kDeviceFree:
      return {kMemoryTrack, r.stream};
    default:
      break;
  }
  if (r.peer < 0) return {kNvtxAsyncTrack, 0};
  return {kNvtxThreadTrack, r.stream};
}

// A range's or traced function's name from its dump's names region
// ("range #<id>" if absent); the other host events by what they are.
std::string range_label(const TraceContext& ctx, size_t ri, const RecordData& r) {
  switch (static_cast<proto::OpName>(r.name)) {
    case proto::OpName::kStep:
      return "step";
    case proto::OpName::kGcPause:
      return "GC gen " + std::to_string(r.peer);
    case proto::OpName::kLoaderWait:
      return "DataLoader wait";
    case proto::OpName::kDeviceMalloc:
      return "cudaMalloc " + size_label(r.bytes);
    case proto::OpName::kDeviceFree:
      return r.bytes != 0 ? "cudaFree " + size_label(r.bytes) : "cudaFree";
    default:
      break;
  }
  const std::vector<std::string>& names = ctx.dumps.ranks[ri].ring.names;
  if (r.seq < names.size() && !names[r.seq].empty()) return names[r.seq];
  return "range #" + std::to_string(r.seq);
}

// Where and when one record is drawn; false when it has no usable time.
bool place(const TraceContext& ctx, size_t ri, const RecordData& r, Slice* s) {
  const TraceClock& c = ctx.clock;
  s->rank_index = ri;
  s->record = &r;
  if (is_range(r)) {  // host start and end, on its own track
    const auto rs = c.at(ri, r.gpu_start_ns), re = c.at(ri, r.gpu_end_ns);
    if (!rs || !re || *rs > *re) return false;
    *s = Slice{ri, ctx.tracks[ri].at(track_key(r)), Place::kRange, *rs, *re, &r};
    return true;
  }
  const auto launch = c.at(ri, r.launch_ns), ready = c.at(ri, r.ready_ns);
  const auto gs = c.at(ri, r.gpu_start_ns), ge = c.at(ri, r.gpu_end_ns);
  const auto could_start = ready ? ready : launch;
  const int stream_tid = ctx.tracks[ri].at(track_key(r));
  if (is_pending(r)) {
    if (!could_start) return false;
    *s = Slice{ri, stream_tid, Place::kPending, *could_start, *could_start, &r};
    return true;
  }
  const bool completed = r.state == static_cast<uint8_t>(OpState::kCompleted);
  if (completed && (r.flags & recorder::kRecTimed) != 0 && gs && ge && *gs <= *ge) {
    *s = Slice{ri, stream_tid, Place::kGpu, *gs, *ge, &r};
    return true;
  }
  if (completed && (r.flags & recorder::kRecEndOnly) != 0 && ge) {
    // From its arrival (the start marker's GPU time) where the ring has it,
    // else from when the Poller saw that it could start.
    const auto from = gs ? gs : could_start;
    const int64_t start = from && *from <= *ge ? *from : *ge;
    *s = Slice{ri, stream_tid, Place::kEndOnly, start, *ge, &r};
    return true;
  }
  const auto at = launch ? launch : (ge ? ge : gs);
  if (!at) return false;
  *s = Slice{ri, kHostTid, Place::kHost, *at, *at, &r};
  return true;
}

std::string slice_name(const TraceContext& ctx, const Slice& s, bool stuck_word) {
  const RecordData& r = *s.record;
  if (s.place == Place::kRange) return range_label(ctx, s.rank_index, r);
  if (s.place == Place::kPending) return (stuck_word ? "STUCK " : "PENDING ") + op_label(r);
  if (r.state == static_cast<uint8_t>(OpState::kFailed)) return "FAILED " + op_label(r);
  return op_label(r);
}

const char* category(const RecordData& r) {
  const char* kind = proto::op_kind_str(r.kind);
  return std::strcmp(kind, "none") == 0 ? "other" : kind;
}

json slice_args(const TraceContext& ctx, const Slice& s) {
  const RecordData& r = *s.record;
  json a;
  if (s.place == Place::kRange) {
    a["range"] = range_label(ctx, s.rank_index, r);
    a["thread"] = r.stream;
    if (is_named(r, proto::OpName::kNvtxRange)) {
      a["nvtx"] = r.peer < 0 ? "start/end" : "push/pop";
      if (r.peer >= 0) a["depth"] = r.peer;
    } else if (is_named(r, proto::OpName::kPythonCall)) {
      a["python"] = "traced function";
      a["depth"] = r.peer;
    } else if (is_named(r, proto::OpName::kGcPause)) {
      a["generation"] = r.peer;
      a["collected"] = r.bytes;
    } else if (is_named(r, proto::OpName::kDeviceMalloc) ||
               is_named(r, proto::OpName::kDeviceFree)) {
      a["bytes"] = r.bytes;
    }
    a["duration_ms"] = static_cast<double>(s.span()) / 1e6;
    if ((r.flags & recorder::kRecMeasured) != 0 && s.span() > 0 && r.bytes <= s.span()) {
      // GPU idle within the step (inject/step_bubbles.h): an upper bound.
      a["gpu_busy_ms"] = static_cast<double>(r.bytes) / 1e6;
      a["gpu_idle_ratio"] = 1.0 - static_cast<double>(r.bytes) / static_cast<double>(s.span());
      a["untimed_ops"] = r.count;
    }
    a["op_id"] = r.op_id;
    return a;
  }
  a["op"] = op_name(r);
  a["state"] = recorder::op_state_str(r.state);
  a["dtype"] = dtype_name(r);
  if (is_nccl(r)) {
    a["comm"] = comm_hex(r.comm_hash);
    a["seq"] = r.seq;
    a["nranks"] = r.nranks;
    a["bytes"] = r.bytes;
    a["count"] = r.count;
    const auto name = static_cast<proto::OpName>(r.name);
    if (r.peer >= 0) {
      const bool p2p = name == proto::OpName::kSend || name == proto::OpName::kRecv;
      a[p2p ? "peer" : "root"] = r.peer;
    }
    if (r.red_op != 0) a["red_op"] = red_op_name(r.red_op);
    if (r.group_size > 1) a["group_size"] = r.group_size;
  } else if (is_gemm(r)) {
    a["m"] = r.m;
    a["n"] = r.n;
    a["k"] = r.k;
    a["batch"] = r.batch;
    a["flops"] = r.flops;
  } else {
    a["bytes"] = r.bytes;
  }
  a["device"] = r.device;
  a["stream"] = stream_hex(r.stream);
  a["op_id"] = r.op_id;
  if (const auto launch = ctx.clock.at(s.rank_index, r.launch_ns)) a["launch_us"] = ctx.us(*launch);
  const double dur_ns = static_cast<double>(s.span());
  if (s.place == Place::kGpu && dur_ns > 0) {
    if (is_gemm(r) && r.flops > 0) a["tflops"] = static_cast<double>(r.flops) / dur_ns / 1e3;
    if (is_nccl(r) && r.bytes > 0) {
      const double algbw = static_cast<double>(r.bytes) / dur_ns;  // bytes/ns = GB/s
      a["algbw_GBps"] = algbw;
      a["busbw_GBps"] = algbw * bus_factor(r);
    }
  } else if (s.place == Place::kEndOnly) {
    a["timing"] = r.gpu_start_ns != 0 ? "not timed: drawn from its arrival (start marker) to its end"
                                      : "not timed: drawn from when it could start to its end";
  } else if (s.place == Place::kPending) {
    a["timing"] = "not completed at dump time: drawn to the end of the trace";
    const int rank = ctx.dumps.ranks[s.rank_index].rank;
    if (ctx.marks.stuck.count({rank, r.comm_hash, r.seq}) != 0) a["hang_verdict"] = "stuck";
  } else if (r.state == static_cast<uint8_t>(OpState::kUntimed)) {
    a["timing"] = "sampled out: launch only";
  }
  return a;
}

// GPU work of one stream runs in order, so slices of one track nest or
// follow each other; a small overlap (clock mapping jitter, a hostile file)
// would make viewers drop or misdraw slices. Such a slice starts where the
// one it overlaps ends instead.
void untangle(std::vector<Slice*>& track) {
  std::sort(track.begin(), track.end(), [](const Slice* a, const Slice* b) {
    if (a->start != b->start) return a->start < b->start;
    return a->span() > b->span();  // the enclosing one first
  });
  std::vector<int64_t> open_ends;
  for (Slice* s : track) {
    while (!open_ends.empty() && open_ends.back() <= s->start) open_ends.pop_back();
    while (!open_ends.empty() && s->end > open_ends.back()) {
      s->start = open_ends.back();
      open_ends.pop_back();
    }
    open_ends.push_back(s->end);
  }
  std::stable_sort(track.begin(), track.end(), [](const Slice* a, const Slice* b) {
    if (a->start != b->start) return a->start < b->start;
    return a->span() > b->span();
  });
}

json meta(const char* name, int pid, int tid, json args) {
  json e = {{"name", name}, {"ph", "M"}, {"pid", pid}, {"args", std::move(args)}};
  if (tid != 0) e["tid"] = tid;
  return e;
}

std::string track_name(int32_t device, uint64_t stream) {
  if (device == kStepTrack) return "training steps";
  if (device == kPythonTrack) return "Python thread " + std::to_string(stream);
  if (device == kMemoryTrack) return "cudaMalloc/cudaFree thread " + std::to_string(stream);
  if (device == kNvtxAsyncTrack) return "NVTX start/end ranges";
  if (device == kNvtxThreadTrack) return "NVTX thread " + std::to_string(stream);
  return (device >= 0 ? "GPU" + std::to_string(device) : std::string("GPU?")) + " stream " +
         stream_hex(stream);
}

// Kernels launched over an interval (the rank's samples, inject/poller.h).
struct LaunchSample {
  int64_t start, end;
  uint64_t launches;
};

// A counter track per rank: kernel launches per millisecond over each
// sample's interval, 0 between samples that do not touch (none launched).
void append_launch_counter(const TraceContext& ctx, size_t ri, std::vector<LaunchSample>* samples,
                           TraceSink* sink) {
  std::sort(samples->begin(), samples->end(),
            [](const LaunchSample& a, const LaunchSample& b) { return a.start < b.start; });
  auto add = [&](int64_t t, double per_ms) {
    sink->add(json{{"name", "kernel launches per ms"},
                   {"ph", "C"},
                   {"pid", ctx.pid(ri)},
                   {"ts", ctx.us(t)},
                   {"args", {{"launches", per_ms}}}});
  };
  for (size_t i = 0; i < samples->size(); ++i) {
    const LaunchSample& s = (*samples)[i];
    add(s.start,
        static_cast<double>(s.launches) * 1e6 /
            static_cast<double>(static_cast<uint64_t>(s.end) - static_cast<uint64_t>(s.start)));
    if (i + 1 == samples->size() || (*samples)[i + 1].start > s.end) add(s.end, 0);
  }
}

// Process labels from --groups, or none when the layout does not fit the job.
std::vector<std::string> group_labels(const LoadedDumps& d, const TraceOptions& o,
                                      std::vector<std::string>* warnings) {
  if (!o.layout || d.ranks.empty()) return {};
  long long world = 0;
  for (const RankTimeline& t : d.ranks) {
    world = std::max({world, static_cast<long long>(t.world_size), t.rank + 1ll});
  }
  if (o.layout->world_size() != world) {
    warnings->push_back("--groups describes " + std::to_string(o.layout->world_size()) +
                        " ranks but the job has " + std::to_string(world) + "; ignored");
    return {};
  }
  std::vector<std::string> out;
  for (const RankTimeline& t : d.ranks) out.push_back(o.layout->label(t.rank));
  return out;
}

void append_process(int rank, const std::string& label, const std::vector<std::string>& tags,
                    TraceSink* sink) {
  const int pid = trace_pid(rank);
  sink->add(
      meta("process_name", pid, 0,
           {{"name", "rank " + std::to_string(rank) + (label.empty() ? "" : " (" + label + ")")}}));
  sink->add(meta("process_sort_index", pid, 0, {{"sort_index", rank}}));
  std::string labels = label;
  for (const std::string& t : tags) labels += (labels.empty() ? "" : ", ") + t;
  if (!labels.empty()) sink->add(meta("process_labels", pid, 0, {{"labels", labels}}));
  sink->add(meta("thread_name", pid, kHostTid, {{"name", "host (launches)"}}));
  sink->add(meta("thread_sort_index", pid, kHostTid, {{"sort_index", kHostTid}}));
}

}  // namespace

TraceSummary write_trace(const LoadedDumps& dumps, const TraceOptions& options, TraceSink* sink,
                         std::vector<std::string>* warnings) {
  const TraceClock clock(dumps, warnings);
  const HangMarks marks = find_hang_marks(dumps);
  TraceContext ctx{dumps, clock, marks, {}, {}, 0, 0};

  // Tracks: every (device, stream) a rank's records name.
  ctx.tracks.resize(dumps.ranks.size());
  for (size_t ri = 0; ri < dumps.ranks.size(); ++ri) {
    for (const RecordData& r : dumps.ranks[ri].ring.records) {
      if (!is_launch_sample(r)) ctx.tracks[ri][track_key(r)];
    }
    int tid = kHostTid + 1;
    for (auto& [key, t] : ctx.tracks[ri]) t = tid++;
  }

  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  std::vector<std::vector<LaunchSample>> launches(dumps.ranks.size());
  for (size_t ri = 0; ri < dumps.ranks.size(); ++ri) {
    size_t unplaced = 0;
    for (const RecordData& r : dumps.ranks[ri].ring.records) {
      if (is_launch_sample(r)) {
        const auto rs = clock.at(ri, r.gpu_start_ns), re = clock.at(ri, r.gpu_end_ns);
        if (!rs || !re || *rs >= *re) {
          ++unplaced;
          continue;
        }
        launches[ri].push_back(LaunchSample{*rs, *re, r.count});
        first = std::min(first, *rs);
        last = std::max(last, *re);
        continue;
      }
      Slice s;
      if (!place(ctx, ri, r, &s)) {
        ++unplaced;
        continue;
      }
      // The trace starts at the earliest record time, launches included, so
      // that no launch_us is negative.
      for (const uint64_t ns : {r.launch_ns, r.ready_ns}) {
        if (const auto t = clock.at(ri, ns)) first = std::min(first, *t);
      }
      first = std::min(first, s.start);
      last = std::max(last, s.end);
      ctx.slices.push_back(s);
    }
    if (unplaced > 0) {
      warnings->push_back("rank " + std::to_string(dumps.ranks[ri].rank) + ": " +
                          std::to_string(unplaced) + " record(s) without a usable time, not drawn");
    }
  }
  for (size_t f = 0; f < dumps.folders.size(); ++f) {
    const auto& v = dumps.folders[f].verdict;
    if (!v || !v->hung || !v->detected_at_unix_s) continue;
    if (const auto t = clock.from_unix_s(f, *v->detected_at_unix_s)) {
      first = std::min(first, *t);
      last = std::max(last, *t);
    }
  }
  if (first > last) first = last = 0;  // nothing has a time
  ctx.t0 = first;
  ctx.end = std::max(first, last);
  for (Slice& s : ctx.slices) {
    if (s.place == Place::kPending) s.end = ctx.end;
  }

  std::map<std::pair<size_t, int>, std::vector<Slice*>> by_track;
  for (Slice& s : ctx.slices) by_track[{s.rank_index, s.tid}].push_back(&s);
  for (auto& [key, track] : by_track) untangle(track);

  const std::vector<std::string> labels = group_labels(dumps, options, warnings);
  std::set<int> missing_ranks, stuck_ranks;
  for (const MissingMark& m : marks.missing) missing_ranks.insert(m.rank);
  for (const Slice& s : ctx.slices) {
    if (s.place == Place::kPending) stuck_ranks.insert(dumps.ranks[s.rank_index].rank);
  }
  // A hang.json saying "no hang" makes pending work merely in flight.
  bool no_hang_said = false;
  for (const DumpFolder& f : dumps.folders) no_hang_said |= f.verdict && !f.verdict->hung;
  sink->begin();
  for (size_t ri = 0; ri < dumps.ranks.size(); ++ri) {
    const int rank = dumps.ranks[ri].rank;
    std::vector<std::string> tags;
    if (missing_ranks.count(rank) != 0) tags.push_back("MISSING");
    if (stuck_ranks.count(rank) != 0) tags.push_back(no_hang_said ? "in flight at dump" : "STUCK");
    append_process(rank, labels.empty() ? "" : labels[ri], tags, sink);
    for (const auto& [key, tid] : ctx.tracks[ri]) {
      sink->add(
          meta("thread_name", ctx.pid(ri), tid, {{"name", track_name(key.first, key.second)}}));
      sink->add(meta("thread_sort_index", ctx.pid(ri), tid, {{"sort_index", tid}}));
    }
  }
  for (const auto& [key, track] : by_track) {
    for (const Slice* s : track) {
      json e = {{"name", slice_name(ctx, *s, !no_hang_said)},
                {"cat", category(*s->record)},
                {"ph", "X"},
                {"pid", ctx.pid(s->rank_index)},
                {"tid", s->tid},
                {"ts", ctx.us(s->start)},
                {"dur", static_cast<double>(s->span()) / 1000.0},
                {"args", slice_args(ctx, *s)}};
      if (s->place == Place::kPending) e["cname"] = no_hang_said ? "bad" : "terrible";
      if (s->record->state == static_cast<uint8_t>(OpState::kFailed)) e["cname"] = "bad";
      if (e["args"].contains("gpu_idle_ratio")) {
        // A counter track per rank: the step's GPU idle percentage.
        sink->add(json{{"name", "GPU idle % per step"},
                       {"ph", "C"},
                       {"pid", ctx.pid(s->rank_index)},
                       {"ts", ctx.us(s->start)},
                       {"args", {{"idle", 100.0 * e["args"]["gpu_idle_ratio"].get<double>()}}}});
      }
      sink->add(e);
    }
  }
  for (size_t ri = 0; ri < launches.size(); ++ri)
    append_launch_counter(ctx, ri, &launches[ri], sink);
  const size_t flows = append_flows(ctx, sink);
  std::vector<int> extra_ranks;
  append_hang_overlays(ctx, sink, &extra_ranks);
  for (int rank : extra_ranks) append_process(rank, "", {"MISSING", "no dump"}, sink);

  json other = {{"generator", "xpu_timer_gen_trace_timeline"},
                {"clock", clock.wall_clock() ? "wall clock (ranks from several dump folders)"
                                             : "CLOCK_MONOTONIC of one host"},
                {"ranks", dumps.ranks.size()},
                {"collective_flows", flows}};
  if (const auto unix_ns = clock.to_unix_ns(ctx.t0)) other["t0_unix_ns"] = *unix_ns;
  json folders = json::array();
  for (const DumpFolder& f : dumps.folders) folders.push_back(f.dir);
  other["folders"] = std::move(folders);
  sink->end(other);
  return TraceSummary{sink->events(), flows};
}

json build_trace(const LoadedDumps& dumps, const TraceOptions& options,
                 std::vector<std::string>* warnings) {
  TraceSink sink;
  write_trace(dumps, options, &sink, warnings);
  return json::parse(sink.text());
}

}  // namespace xpu_timer::timeline
