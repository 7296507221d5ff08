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

// The device of each stream a rank's records name one for. A sampled-out
// GEMM is published without its device (asking would cost a CUDA call on the
// training thread, inject/timed_call.cc), and on a (-1, stream) track of its
// own it would sit apart from the GPU work of the very stream it ran on. A
// stream handle is unique in a process, so the stream tells the device;
// only the default streams (0, per-thread) are one per device, and for those
// a rank that used a single device is unambiguous too. Otherwise it stays -1.
class StreamDevices {
 public:
  explicit StreamDevices(const std::vector<RecordData>& records) {
    for (const RecordData& r : records) {
      if (is_range(r) || r.device < 0) continue;
      by_stream_[r.stream].insert(r.device);
      devices_.insert(r.device);
    }
  }
  int32_t device_of(const RecordData& r) const {
    if (r.device >= 0) return r.device;
    const auto it = by_stream_.find(r.stream);
    if (it != by_stream_.end() && it->second.size() == 1) return *it->second.begin();
    if (it == by_stream_.end() && devices_.size() == 1) return *devices_.begin();
    return -1;
  }

 private:
  std::map<uint64_t, std::set<int32_t>> by_stream_;
  std::set<int32_t> devices_;
};

std::pair<int32_t, uint64_t> track_key(const RecordData& r, const StreamDevices& devices) {
  if (!is_range(r)) return {devices.device_of(r), r.stream};
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

// Where and when one record is drawn on its track `tid`; false when it has
// no usable time.
bool place(const TraceContext& ctx, size_t ri, const RecordData& r, int tid, Slice* s) {
  const TraceClock& c = ctx.clock;
  s->rank_index = ri;
  s->record = &r;
  if (is_range(r)) {  // host start and end, on its own track
    const auto rs = c.at(ri, r.host_start_ns), re = c.at(ri, r.host_end_ns);
    if (!rs || !re || *rs > *re) return false;
    *s = Slice{ri, tid, Place::kRange, *rs, *re, &r};
    return true;
  }
  const auto launch = c.at(ri, r.launch_ns), ready = c.at(ri, r.ready_ns);
  const auto gs = c.at(ri, r.gpu_start_ns), ge = c.at(ri, r.gpu_end_ns);
  const auto could_start = ready ? ready : launch;
  const int stream_tid = tid;
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
  // No GPU time: at its launch, on the track of the stream it was launched on.
  const auto at = launch ? launch : (ge ? ge : gs);
  if (!at) return false;
  *s = Slice{ri, stream_tid, Place::kHost, *at, *at, &r};
  return true;
}

bool is_sampled_out(const RecordData& r) {
  return r.state == static_cast<uint8_t>(OpState::kUntimed);
}

// Named by what the operation is, never by its instance (trace_builder.h);
// what was not a GPU execution says so first.
std::string slice_name(const TraceContext& ctx, const Slice& s) {
  const RecordData& r = *s.record;
  if (s.place == Place::kRange) return range_label(ctx, s.rank_index, r);
  if (s.place == Place::kPending)
    return (ctx.no_hang_said ? "PENDING " : "STUCK ") + slice_label(r);
  if (r.state == static_cast<uint8_t>(OpState::kFailed)) return "FAILED " + slice_label(r);
  if (s.place == Place::kHost) {
    return (is_sampled_out(r) ? "sampled out: " : "no GPU time: ") + slice_label(r);
  }
  return slice_label(r);
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
    const auto& names = ctx.dumps.folders[ctx.dumps.ranks[s.rank_index].folder].comm_names;
    if (auto it = names.find(r.comm_hash); it != names.end()) a["comm_name"] = it->second;
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
    // The Python line that issued it (inject/call_sites.h).
    if (const CodeFrame* site = recorder::call_site(ctx.dumps.ranks[s.rank_index].ring, r)) {
      a["issued_at"] = where_phrase({*site});
      a["issued_at_file"] = site->file;
    }
  } else if (is_gemm(r)) {
    a["m"] = r.m;
    a["n"] = r.n;
    a["k"] = r.k;
    a["batch"] = r.batch;
    a["flops"] = r.flops;
  } else {
    a["bytes"] = r.bytes;
    a["size"] = size_label(r.bytes);
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
    a["timing"] = r.gpu_start_ns != 0
                      ? "not timed: drawn from its arrival (start marker) to its end"
                      : "not timed: drawn from when it could start to its end";
  } else if (s.place == Place::kPending) {
    a["timing"] = "not completed at dump time: drawn to the end of the trace";
    const int rank = ctx.dumps.ranks[s.rank_index].rank;
    if (ctx.marks.stuck.count({rank, r.comm_hash, r.seq}) != 0) a["hang_verdict"] = "stuck";
  } else if (s.place == Place::kHost) {
    a["timing"] = is_sampled_out(r) ? "sampled out: drawn at its host launch, no GPU time"
                                    : "no GPU time: drawn at its host launch";
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

std::string track_name(int32_t device, uint64_t stream) {
  if (device == kStepTrack) return "training steps";
  if (device == kPythonTrack) return "Python thread " + std::to_string(stream);
  if (device == kMemoryTrack) return "cudaMalloc/cudaFree thread " + std::to_string(stream);
  if (device == kNvtxAsyncTrack) return "NVTX start/end ranges";
  if (device == kNvtxThreadTrack) return "NVTX thread " + std::to_string(stream);
  if (device < 0) return "stream " + stream_hex(stream) + " (device unknown)";
  return "GPU" + std::to_string(device) + " stream " + stream_hex(stream);
}

// Kernels launched over an interval (the rank's samples, inject/poller.h),
// and the time its host blocked on its GPU then (-1: not measured).
struct LaunchSample {
  int64_t start, end;
  uint64_t launches;
  int64_t blocked_ns;
};

// Counter tracks per rank: kernel launches per millisecond over each
// sample's interval, and where measured the share of it its host waited for
// its GPU (inject/host_blocked.h); 0 between samples that do not touch.
void append_launch_counter(const TraceContext& ctx, size_t ri, std::vector<LaunchSample>* samples,
                           TraceSink* sink) {
  std::sort(samples->begin(), samples->end(),
            [](const LaunchSample& a, const LaunchSample& b) { return a.start < b.start; });
  auto add = [&](const char* name, const char* arg, int64_t t, double value) {
    sink->add(json{{"name", name},
                   {"ph", "C"},
                   {"pid", ctx.pid(ri)},
                   {"ts", ctx.us(t)},
                   {"args", {{arg, value}}}});
  };
  constexpr const char* kLaunches = "kernel launches per ms";
  constexpr const char* kBlocked = "host waiting for its GPU (%)";
  for (size_t i = 0; i < samples->size(); ++i) {
    const LaunchSample& s = (*samples)[i];
    const auto span =
        static_cast<double>(static_cast<uint64_t>(s.end) - static_cast<uint64_t>(s.start));
    add(kLaunches, "launches", s.start, static_cast<double>(s.launches) * 1e6 / span);
    if (s.blocked_ns >= 0) {
      add(kBlocked, "percent", s.start,
          std::min(100.0, 100.0 * static_cast<double>(s.blocked_ns) / span));
    }
    if (i + 1 == samples->size() || (*samples)[i + 1].start > s.end) {
      add(kLaunches, "launches", s.end, 0);
      if (s.blocked_ns >= 0) add(kBlocked, "percent", s.end, 0);
    }
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

// Per stream, the launches of its sampled-out operations as one counter
// instead of a zero-length slice each (thousands of slivers that hide the
// timed work and that a viewer's statistics count as calls of no time): the
// number launched so far, stepping up at each launch, so the rise over any
// interval (Perfetto shows it for a selection) is how many were launched in
// it. A counter belongs to a process in the JSON format, so it is named after
// its stream's track; Perfetto calls it "<name> <arg>", here
// "GPU0 stream 0x7f00a0001000 launches (sampled out)".
void append_sampled_out_counter(const TraceContext& ctx, size_t ri, const std::string& track,
                                std::vector<int64_t>* launches, TraceSink* sink) {
  std::sort(launches->begin(), launches->end());
  for (size_t i = 0; i < launches->size(); ++i) {
    if (i + 1 < launches->size() && (*launches)[i + 1] == (*launches)[i]) continue;
    sink->add(json{{"name", track},
                   {"ph", "C"},
                   {"pid", ctx.pid(ri)},
                   {"ts", ctx.us((*launches)[i])},
                   {"args", {{"launches (sampled out)", i + 1}}}});
  }
}

}  // namespace

TraceSummary write_trace(const LoadedDumps& dumps, const TraceOptions& options, TraceSink* sink,
                         std::vector<std::string>* warnings) {
  const TraceClock clock(dumps, warnings);
  const HangMarks marks = find_hang_marks(dumps);
  TraceContext ctx{dumps, clock, marks, {}, {}, 0, 0, false};
  // A hang.json saying "no hang" makes pending work merely in flight.
  for (const DumpFolder& f : dumps.folders) ctx.no_hang_said |= f.verdict && !f.verdict->hung;

  // Tracks: every (device, stream) a rank's records name.
  ctx.tracks.resize(dumps.ranks.size());
  std::vector<StreamDevices> devices;
  for (size_t ri = 0; ri < dumps.ranks.size(); ++ri) {
    devices.emplace_back(dumps.ranks[ri].ring.records);
    for (const RecordData& r : dumps.ranks[ri].ring.records) {
      if (!is_launch_sample(r)) ctx.tracks[ri][track_key(r, devices[ri])];
    }
    int tid = kHostTid + 1;
    for (auto& [key, t] : ctx.tracks[ri]) t = tid++;
  }

  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  std::vector<std::vector<LaunchSample>> launches(dumps.ranks.size());
  std::map<std::pair<size_t, int>, std::vector<int64_t>> sampled_out;  // (rank index, tid)
  for (size_t ri = 0; ri < dumps.ranks.size(); ++ri) {
    size_t unplaced = 0;
    for (const RecordData& r : dumps.ranks[ri].ring.records) {
      if (is_launch_sample(r)) {
        const auto rs = clock.at(ri, r.host_start_ns), re = clock.at(ri, r.host_end_ns);
        if (!rs || !re || *rs >= *re) {
          ++unplaced;
          continue;
        }
        const bool measured = (r.flags & recorder::kRecMeasured) != 0;
        launches[ri].push_back(LaunchSample{
            *rs, *re, r.count,
            measured ? static_cast<int64_t>(std::min<uint64_t>(
                           r.bytes, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())))
                     : -1});
        first = std::min(first, *rs);
        last = std::max(last, *re);
        continue;
      }
      Slice s;
      if (!place(ctx, ri, r, ctx.tracks[ri].at(track_key(r, devices[ri])), &s)) {
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
      if (s.place == Place::kHost && is_sampled_out(r) && !options.sampled_out_slices) {
        sampled_out[{ri, s.tid}].push_back(s.start);
      } else {
        ctx.slices.push_back(s);
      }
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

  sink->begin();
  append_processes(ctx, group_labels(dumps, options, warnings), sink);
  for (size_t ri = 0; ri < dumps.ranks.size(); ++ri) {
    for (const auto& [key, tid] : ctx.tracks[ri]) {
      const std::string name = track_name(key.first, key.second);
      const auto counted = sampled_out.find({ri, tid});
      if (counted != sampled_out.end()) {
        append_sampled_out_counter(ctx, ri, name, &counted->second, sink);
      }
      // Only tracks with slices are named: a named empty thread is an empty
      // track in the viewer.
      if (by_track.count({ri, tid}) == 0) continue;
      sink->add(metadata_event("thread_name", ctx.pid(ri), tid, {{"name", name}}));
      sink->add(metadata_event("thread_sort_index", ctx.pid(ri), tid, {{"sort_index", tid}}));
    }
  }
  for (const auto& [key, track] : by_track) {
    for (const Slice* s : track) {
      json e = {{"name", slice_name(ctx, *s)},
                {"cat", category(*s->record)},
                {"ph", "X"},
                {"pid", ctx.pid(s->rank_index)},
                {"tid", s->tid},
                {"ts", ctx.us(s->start)},
                {"dur", static_cast<double>(s->span()) / 1000.0},
                {"args", slice_args(ctx, *s)}};
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
  append_hang_overlays(ctx, sink);

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
