// What a job of many nodes costs each supervisor per publish round
// (supervisor/coordination/job_view.h): the size of one node's document and stamp, their
// encoding and decoding, the job-wide verdict (merge every node's ranks,
// classify), and the store traffic of a steady alarm, measured on N real
// JobViews sharing an etcd kept in memory that counts the bytes its JSON
// gateway would carry. Ranks are synthetic but shaped like a real job's: 8
// per node, each in 4 communicators (data, tensor, pipeline parallel and the
// world), one collective in flight. Run: build/bin/job_scale_bench
// (bench/results/).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "supervisor/analysis/hang_detector.h"
#include "supervisor/analysis/slow_summary.h"
#include "supervisor/coordination/base64.h"
#include "supervisor/coordination/coordination_store.h"
#include "supervisor/coordination/etcd_messages.h"
#include "supervisor/coordination/job_view.h"
#include "supervisor/coordination/node_progress.h"
#include "supervisor/coordination/prefetched_ranges.h"
#include "supervisor/ranks/rank_sampler.h"

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

void BM_NodeStamp(benchmark::State& state) {
  const NodeProgress p = make_node(0, 128);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = node_stamp_text(p);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["stamp_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_NodeStamp);

// A round of a steady alarm on node 0: the documents were read once; each
// round decodes the other nodes' stamps, applies them to copies, merges and
// classifies with `timeout_s`.
class StampRounds {
 public:
  explicit StampRounds(int nodes) : local_(make_node(0, nodes)) {
    std::string error;
    for (int n = 1; n < nodes; ++n) {
      const NodeProgress p = make_node(n, nodes);
      docs_.emplace_back();
      parse_node_progress(node_progress_text(p), &docs_.back(), &error);
      stamps_.push_back(node_stamp_text(p));
    }
  }
  HangReport round(double timeout_s) {
    std::string error;
    others_.clear();
    for (size_t i = 0; i < stamps_.size(); ++i) {
      NodeStamp st;
      parse_node_stamp(stamps_[i], &st, &error);
      others_.push_back(docs_[i]);
      apply_node_stamp(st, &others_.back());
    }
    const Snapshot merged = merge_job_snapshot(local_.snapshot, 0, others_, local_.world_size);
    return classify_snapshot(merged, timeout_s);
  }

 private:
  NodeProgress local_;
  std::vector<NodeProgress> docs_, others_;
  std::vector<std::string> stamps_;
};

void BM_JobVerdictFromStamps(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  StampRounds rounds(nodes);
  for (auto _ : state) benchmark::DoNotOptimize(rounds.round(300.0));
  state.counters["ranks"] = nodes * kRanksPerNode;
}
BENCHMARK(BM_JobVerdictFromStamps)->Arg(2)->Arg(16)->Arg(128)->Unit(benchmark::kMillisecond);

// The same round in a standing hang: every rank has waited past the timeout
// in its collective, so the verdict builds the wait graph, its roots and
// its sentence over every rank (what each poll of a supervisor in a hang's
// alarm pays).
void BM_JobHangVerdictFromStamps(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  StampRounds rounds(nodes);
  bool hung = false;
  for (auto _ : state) {
    const HangReport r = rounds.round(0.0001);  // launched 1 ms ago: all stuck
    hung = r.hung;
    benchmark::DoNotOptimize(r);
  }
  if (!hung) state.SkipWithError("no hang: the synthetic ranks were not stuck");
  state.counters["ranks"] = nodes * kRanksPerNode;
}
BENCHMARK(BM_JobHangVerdictFromStamps)->Arg(16)->Arg(128)->Unit(benchmark::kMillisecond);

// etcd v3 kept in memory, as the supervisors of one job see it through its
// JSON gateway: keys with their revisions and leases, a read from a
// revision, and the bytes each request and answer would carry (HTTP heads
// included: ours as HttpClient writes them, etcd 3.4's as it sent them),
// per kind of key (alarms, nodes, stamps, dumps; lease for keep-alives).
// The answers are built as etcd builds them and decoded by the client's own
// decoder (etcd_messages.h).
class MemoryEtcd {
 public:
  struct Traffic {
    uint64_t to_etcd = 0;
    uint64_t from_etcd = 0;
    uint64_t requests = 0;
  };

  void put(const std::string& key, const std::string& value, int64_t lease) {
    std::lock_guard<std::mutex> lock(mu_);
    put_locked(key, value, lease);
    count(lease, key, "/v3/kv/put", etcd::put_request(key, value, lease), header().dump());
  }
  // A transaction that puts `key` only if it does not exist.
  bool create(const std::string& key, const std::string& value, int64_t lease) {
    std::lock_guard<std::mutex> lock(mu_);
    const bool created = kvs_.count(key) == 0;
    if (created) put_locked(key, value, lease);
    nlohmann::json answer = {{"header", header()}, {"responses", {{{"response_put", {}}}}}};
    if (created) answer["succeeded"] = true;
    count(lease, key, "/v3/kv/txn", etcd::create_request(key, value, lease), answer.dump());
    return created;
  }
  void put_locked(const std::string& key, const std::string& value, int64_t lease) {
    Entry& e = kvs_[key];
    if (e.version == 0) e.create_revision = revision_ + 1;
    e.value = value;
    e.mod_revision = ++revision_;
    ++e.version;
    e.lease = lease;
  }
  void remove(int64_t client, const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    const bool had = kvs_.erase(key) > 0;
    if (had) ++revision_;
    nlohmann::json answer = {{"header", header()}};
    if (had) answer["deleted"] = "1";
    count(client, key, "/v3/kv/deleterange", etcd::delete_request(key), answer.dump());
  }
  void keep_alive(int64_t lease) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string answer =
        nlohmann::json{
            {"result", {{"header", header()}, {"ID", std::to_string(lease)}, {"TTL", "10"}}}}
            .dump();
    // Chunked: its size line and the last chunk.
    count(lease, "lease", "/v3/lease/keepalive", etcd::lease_keepalive_request(lease),
          answer + "xxx\r\n\r\n0\r\n\r\n");
  }
  bool range(int64_t client, const std::string& prefix, int64_t min_mod_revision,
             std::vector<KeyValue>* out, int64_t* revision, int64_t* in_range) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string answer = range_answer(prefix, min_mod_revision);
    count(client, prefix, "/v3/kv/range", etcd::range_prefix_request(prefix, min_mod_revision),
          answer);
    std::string error;
    return etcd::read_range(200, answer, out, revision, &error, in_range) == etcd::Outcome::kOk;
  }
  // A transaction of ranges (CoordinationStore::prefetch): one request.
  bool ranges(int64_t client, const std::vector<PrefixQuery>& queries,
              std::vector<PrefixAnswer>* out) {
    std::lock_guard<std::mutex> lock(mu_);
    nlohmann::json responses = nlohmann::json::array();
    for (const PrefixQuery& q : queries) {
      responses.push_back(
          {{"response_range", nlohmann::json::parse(range_answer(q.prefix, q.min_mod_revision))}});
    }
    const std::string answer =
        nlohmann::json{{"header", header()}, {"succeeded", true}, {"responses", responses}}.dump();
    count(client, "prefetch", "/v3/kv/txn", etcd::ranges_request(queries), answer);
    std::string error;
    return etcd::read_ranges(200, answer, queries.size(), out, &error) == etcd::Outcome::kOk;
  }
  std::map<std::string, Traffic> traffic() {
    std::lock_guard<std::mutex> lock(mu_);
    return traffic_;
  }
  // By client (its lease).
  std::map<int64_t, Traffic> clients() {
    std::lock_guard<std::mutex> lock(mu_);
    return clients_;
  }

  static size_t request_bytes(const std::string& path, const std::string& body) {
    return ("POST " + path + " HTTP/1.1\r\nHost: etcd-0.cluster.local:2379" +
            "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
            "\r\nConnection: close\r\n\r\n")
               .size() +
           body.size();
  }
  static size_t answer_bytes(const std::string& body) {
    return kAnswerHead.size() + std::to_string(body.size()).size() + 4 + body.size();
  }

 private:
  struct Entry {
    std::string value;
    int64_t create_revision = 0;
    int64_t mod_revision = 0;
    int64_t version = 0;
    int64_t lease = 0;
  };
  // What etcd 3.4.23 sent before the Content-Length value.
  static inline const std::string kAnswerHead =
      "HTTP/1.1 200 OK\r\nAccess-Control-Allow-Headers: accept, content-type, authorization\r\n"
      "Access-Control-Allow-Methods: POST, GET, OPTIONS, PUT, DELETE\r\n"
      "Access-Control-Allow-Origin: *\r\nContent-Type: application/json\r\n"
      "Grpc-Metadata-Content-Type: application/grpc\r\n"
      "Date: Tue, 24 Nov 2026 02:56:35 GMT\r\nContent-Length: ";

  nlohmann::json header() const {
    return {{"cluster_id", "15118495548433857066"},
            {"member_id", "13668033151171901709"},
            {"revision", std::to_string(revision_)},
            {"raft_term", "2"}};
  }
  std::string range_answer(const std::string& prefix, int64_t min_mod_revision) const {
    nlohmann::json kvs = nlohmann::json::array();
    size_t in_range = 0;
    for (auto it = kvs_.lower_bound(prefix); it != kvs_.end() && it->first.rfind(prefix, 0) == 0;
         ++it) {
      ++in_range;  // etcd's count is of the whole range
      const Entry& e = it->second;
      if (e.mod_revision < min_mod_revision) continue;
      kvs.push_back({{"key", base64_encode(it->first)},
                     {"create_revision", std::to_string(e.create_revision)},
                     {"mod_revision", std::to_string(e.mod_revision)},
                     {"version", std::to_string(e.version)},
                     {"value", base64_encode(e.value)},
                     {"lease", std::to_string(e.lease)}});
    }
    nlohmann::json answer = {{"header", header()}};
    if (!kvs.empty()) answer["kvs"] = std::move(kvs);
    if (in_range > 0) answer["count"] = std::to_string(in_range);
    return answer.dump();
  }
  // Under mu_: the bytes of one call of `client`, under the kind of `key`.
  void count(int64_t client, const std::string& key, const std::string& path,
             const std::string& request, const std::string& answer) {
    std::string kind = key;
    for (const char* k :
         {"alarms", "nodes", "stamps", "dumps", "owners", "leader", "slow", "fingerprints"}) {
      if (key.find(std::string("/") + k + "/") != std::string::npos) kind = k;
    }
    for (Traffic* t : {&traffic_[kind], &clients_[client]}) {
      t->to_etcd += request_bytes(path, request);
      t->from_etcd += answer_bytes(answer);
      ++t->requests;
    }
  }

  std::mutex mu_;
  int64_t revision_ = 1;
  std::map<std::string, Entry> kvs_;
  std::map<std::string, Traffic> traffic_;
  std::map<int64_t, Traffic> clients_;
};

class MemoryStore final : public CoordinationStore {
 public:
  MemoryStore(MemoryEtcd* etcd, int64_t lease) : etcd_(etcd), lease_(lease) {}
  bool put(const std::string& key, const std::string& value) override {
    prefetched_.written(key);
    etcd_->put(key, value, lease_);
    return true;
  }
  bool get_prefix(const std::string& prefix, std::vector<KeyValue>* out, int64_t* revision,
                  int64_t min_mod_revision, int64_t* count) override {
    if (prefetched_.take(prefix, min_mod_revision, monotonic_ns(), out, revision, count)) {
      return true;
    }
    return etcd_->range(lease_, prefix, min_mod_revision, out, revision, count);
  }
  // As EtcdStore does it: one transaction, its answers kept for the reads.
  bool prefetch(const std::vector<PrefixQuery>& queries) override {
    prefetched_.clear();
    std::vector<PrefixAnswer> answers;
    if (queries.empty() || !etcd_->ranges(lease_, queries, &answers)) return true;
    prefetched_.keep(queries, std::move(answers), monotonic_ns());
    return true;
  }
  bool create(const std::string& key, const std::string& value, bool* created) override {
    prefetched_.written(key);
    *created = etcd_->create(key, value, lease_);
    return true;
  }
  int64_t lease() const override { return lease_; }
  bool remove(const std::string& key) override {
    prefetched_.written(key);
    etcd_->remove(lease_, key);
    return true;
  }
  bool keep_alive() override {
    etcd_->keep_alive(lease_);
    return true;
  }
  int lease_ttl_s() const override { return 10; }  // the supervisor's (supervisor.cc)
  const std::string& error() const override { return error_; }

 private:
  MemoryEtcd* etcd_;
  int64_t lease_;
  std::string error_;
  PrefetchedRanges prefetched_;
};

// Node `node`'s slow-rank summary as a real one looks: its 8 ranks' median
// time in each of the 4 communicators, and node 3's rank 27 a straggler of
// the data-parallel one.
std::string slow_summary_of(int node, int nodes) {
  const NodeProgress p = make_node(node, nodes);
  NodeSlowSummary s;
  s.node = node;
  s.unix_s = unix_now_s();
  for (const RankSample& r : p.snapshot.ranks) {
    for (const proto::CommSlot& c : r.comms) {
      s.time_in_collective[c.comm_hash][r.rank] = {1200,
                                                   r.rank == 27 ? 0.002 : 0.011 + 1e-5 * r.rank};
    }
  }
  if (node == 3) {
    Straggler x;
    x.rank = 27;
    x.node = 3;
    x.cause = SlowCause::kLink;
    x.comm = p.snapshot.ranks[0].comms[0].comm_hash;
    x.comm_name = "dp";
    x.op = static_cast<uint16_t>(proto::OpName::kAllReduce);
    x.collectives = 1200;
    x.summary = "rank 27 on node 3 is slow: its link";
    s.stragglers.push_back(x);
  }
  return slow_summary_text(s);
}

// The store traffic of a job of `nodes` nodes (8 ranks each, 4
// communicators) at the supervisor's publish period of 1 s, every node
// offering its slow-rank summary every 5 s, once every node knows every
// other: scenario 0 a quiet job, 1 a steady alarm raised by node 0 alone, 2
// a steady alarm raised by every node (a hang every node's ranks wait in).
// Every node's ranks stand still but for their heartbeats. Bytes and
// requests per second over kWindowS, HTTP heads included: per node (the
// mean, the leader, the most any other node receives) and etcd's totals.
void BM_JobTraffic(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int scenario = static_cast<int>(state.range(1));
  constexpr int kPublishMs = 1000;
  constexpr double kWindowS = 10;  // two slow-rank periods
  for (auto _ : state) {
    MemoryEtcd etcd;
    std::vector<NodeProgress> steady;
    std::vector<std::unique_ptr<JobView>> views;
    for (int n = 0; n < nodes; ++n) {
      steady.push_back(make_node(n, nodes));
      views.push_back(std::make_unique<JobView>(
          std::make_unique<MemoryStore>(&etcd, 7587835224829165000 + n), "etcd://memory", "job",
          kPublishMs, [](const std::string&, int) {}));
    }
    const auto offer_all = [&] {
      for (int n = 0; n < nodes; ++n) {
        Snapshot s = steady[n].snapshot;
        s.now_ns = monotonic_ns();
        s.now_unix_s = unix_now_s();
        for (RankSample& r : s.ranks) r.heartbeat_ns = s.now_ns - kS / 200;
        const bool alarm = scenario == 2 || (scenario == 1 && n == 0);
        views[n]->offer(s, n, steady[n].world_size, steady[n].host, alarm, kRanksPerNode);
        views[n]->offer_slow_summary(slow_summary_of(n, nodes));
      }
    };
    const auto wait_for = [&](const std::function<bool()>& done) {
      for (;;) {
        offer_all();
        if (done()) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    };
    // Every node knows every other, and (an alarm) has merged them fresh.
    wait_for([&] {
      for (const auto& v : views) {
        const JobViewStatus st = v->status();
        if (st.alarm != (scenario != 0) || st.nodes.size() != static_cast<size_t>(nodes - 1)) {
          return false;
        }
      }
      return true;
    });
    // One slow-rank period for the leader's first digest.
    const auto settle = std::chrono::steady_clock::now() + std::chrono::seconds(6);
    wait_for([&] { return std::chrono::steady_clock::now() >= settle; });
    std::map<std::string, MemoryEtcd::Traffic> t0 = etcd.traffic();
    std::map<int64_t, MemoryEtcd::Traffic> c0 = etcd.clients();
    uint64_t rounds0 = 0, stamp_reads0 = 0;
    for (const auto& v : views) {
      rounds0 += v->status().rounds;
      stamp_reads0 += v->status().stamp_reads;
    }
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::duration<double>(kWindowS);
    wait_for([&] { return std::chrono::steady_clock::now() >= end; });
    const std::map<std::string, MemoryEtcd::Traffic> t1 = etcd.traffic();
    std::map<int64_t, MemoryEtcd::Traffic> c1 = etcd.clients();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    int leader = -1;
    uint64_t rounds = 0, stamp_reads = 0;
    for (int n = 0; n < nodes; ++n) {
      const JobViewStatus st = views[n]->status();
      if (st.leading) leader = n;
      rounds += st.rounds;
      stamp_reads += st.stamp_reads;
    }
    // A round a second each, unless the machine cannot keep up (then every
    // rate is lower by as much: a node reads what it reads per round).
    state.counters["rounds_per_node_s"] = static_cast<double>(rounds - rounds0) / nodes / seconds;
    // Reads of every stamp per second, the leader's included (1 when the
    // others all take its digest).
    state.counters["stamp_reads_s"] = static_cast<double>(stamp_reads - stamp_reads0) / seconds;
    views.clear();  // no more rounds
    double to_etcd = 0, from_etcd = 0, requests = 0;
    for (const auto& [kind, t] : t1) {
      const double from = static_cast<double>(t.from_etcd - t0[kind].from_etcd) / seconds;
      to_etcd += static_cast<double>(t.to_etcd - t0[kind].to_etcd) / seconds;
      from_etcd += from;
      requests += static_cast<double>(t.requests - t0[kind].requests) / seconds;
      state.counters["per_node_" + kind + "_B"] = from / nodes;
    }
    std::vector<double> from_by_node;
    double leader_from = 0;
    for (int n = 0; n < nodes; ++n) {
      const int64_t lease = 7587835224829165000 + n;
      const double from = static_cast<double>(c1[lease].from_etcd - c0[lease].from_etcd) / seconds;
      if (n == leader) {
        leader_from = from;
      } else {
        from_by_node.push_back(from);
      }
    }
    std::sort(from_by_node.begin(), from_by_node.end());
    state.counters["node_mean_from_etcd_B"] = from_etcd / nodes;
    state.counters["node_mean_to_etcd_B"] = to_etcd / nodes;
    state.counters["leader_from_etcd_B"] = leader_from;
    state.counters["other_max_from_etcd_B"] = from_by_node.empty() ? 0 : from_by_node.back();
    state.counters["etcd_sent_B"] = from_etcd;
    state.counters["etcd_received_B"] = to_etcd;
    state.counters["etcd_requests"] = requests;
  }
  state.counters["nodes"] = nodes;
  state.counters["scenario"] = scenario;
}
BENCHMARK(BM_JobTraffic)
    ->ArgsProduct({{2, 16, 64, 128}, {0, 1, 2}})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace xpu_timer::supervisor

BENCHMARK_MAIN();
