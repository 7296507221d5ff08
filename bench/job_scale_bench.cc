// What a job of many nodes costs each supervisor per publish round
// (supervisor/job_view.h): the size of one node's document, its encoding and
// decoding, and the job-wide verdict (merge every node's ranks, classify).
// Ranks are synthetic but shaped like a real job's: 8 per node, each in 4
// communicators (data, tensor, pipeline parallel and the world), one
// collective in flight. Run: build/bin/job_scale_bench; the store traffic
// follows from the document size (bench/results/).
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "supervisor/hang_detector.h"
#include "supervisor/node_progress.h"

namespace xpu_timer::supervisor {
namespace {

constexpr int kRanksPerNode = 8;
constexpr uint64_t kS = 1000000000ull;

NodeProgress make_node(int node, int nodes) {
  NodeProgress p;
  p.node = node;
  p.host = "gpu-node-" + std::to_string(node) + ".cluster.local";
  p.world_size = nodes * kRanksPerNode;
  p.snapshot.now_ns = 1000 * kS + static_cast<uint64_t>(node) * 7;
  p.snapshot.now_unix_s = 1.7e9;
  for (int l = 0; l < kRanksPerNode; ++l) {
    RankSample s;
    s.rank = node * kRanksPerNode + l;
    s.registered = s.alive = s.connected = s.page_ok = true;
    s.local_rank = l;
    s.node = node;
    s.pid = 100000 + s.rank;
    s.host = p.host;
    s.registered_ns = p.snapshot.now_ns - 3600 * kS;
    s.heartbeat_ns = p.snapshot.now_ns - kS / 200;
    s.issued_total = s.completed_total = 123456789;
    s.inflight_count = 1;
    for (int c = 0; c < 4; ++c) {
      proto::CommSlot slot{};
      slot.comm_hash = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(c + 1);
      slot.nranks = c == 3 ? p.world_size : 8;
      slot.rank = c == 3 ? s.rank : l;
      slot.issued_seq = 4000000 + static_cast<uint64_t>(c);
      slot.completed_seq = slot.issued_seq - 1;
      std::strncpy(slot.name,
                   c == 0   ? "dp"
                   : c == 1 ? "tp"
                   : c == 2 ? "pp"
                            : "world",
                   sizeof(slot.name) - 1);
      s.comms.push_back(slot);
    }
    proto::OpRef& o = s.oldest_inflight;
    o.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
    o.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
    o.group_size = 1;
    o.comm_hash = s.comms[0].comm_hash;
    o.seq = s.comms[0].issued_seq;
    o.launch_ns = p.snapshot.now_ns - kS / 1000;
    o.started_ns = o.launch_ns + 1000;
    o.bytes = 1 << 26;
    s.last_completed = o;
    p.snapshot.ranks.push_back(s);
  }
  return p;
}

void BM_NodeDocument(benchmark::State& state) {
  const NodeProgress p = make_node(0, 128);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = node_progress_text(p);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["doc_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_NodeDocument);

void BM_ParseNodeDocument(benchmark::State& state) {
  const std::string text = node_progress_text(make_node(0, 128));
  NodeProgress out;
  std::string error;
  for (auto _ : state) benchmark::DoNotOptimize(parse_node_progress(text, &out, &error));
}
BENCHMARK(BM_ParseNodeDocument);

// One round's verdict on node 0 of a job of `nodes` nodes: the other nodes'
// documents decoded, merged with node 0's ranks, and classified.
void BM_JobVerdict(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  std::vector<std::string> texts;
  for (int n = 1; n < nodes; ++n) texts.push_back(node_progress_text(make_node(n, nodes)));
  const NodeProgress local = make_node(0, nodes);
  std::vector<NodeProgress> others(texts.size());
  std::string error;
  for (auto _ : state) {
    for (size_t i = 0; i < texts.size(); ++i) parse_node_progress(texts[i], &others[i], &error);
    const Snapshot merged = merge_job_snapshot(local.snapshot, 0, others, local.world_size);
    benchmark::DoNotOptimize(classify_snapshot(merged, 300.0));
  }
  state.counters["ranks"] = nodes * kRanksPerNode;
}
BENCHMARK(BM_JobVerdict)->Arg(2)->Arg(16)->Arg(128)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace xpu_timer::supervisor

BENCHMARK_MAIN();
