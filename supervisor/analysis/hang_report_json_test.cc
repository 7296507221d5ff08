#include "supervisor/analysis/hang_report_json.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "supervisor/analysis/op_json.h"
#include "supervisor/analysis/ranks_json.h"

namespace xpu_timer::supervisor {
namespace {

constexpr uint64_t kSec = 1000000000ull;
constexpr uint64_t kNow = 500 * kSec;

Snapshot hung_snapshot() {
  Snapshot snap;
  snap.now_ns = kNow;
  snap.now_unix_s = 1700000000.5;
  for (int r = 0; r < 3; ++r) {
    RankSample s;
    s.rank = r;
    s.registered = r != 2;
    if (!s.registered) {
      snap.ranks.push_back(s);
      continue;
    }
    s.local_rank = r;
    s.pid = 100 + r;
    s.host = "h";
    s.alive = true;
    s.connected = true;
    s.page_ok = true;
    s.heartbeat_ns = kNow;
    if (r == 0) {
      s.inflight_count = 1;
      s.oldest_inflight.name = static_cast<uint16_t>(proto::OpName::kAllGather);
      s.oldest_inflight.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
      s.oldest_inflight.dtype = static_cast<uint8_t>(proto::DType::kF32);
      s.oldest_inflight.comm_hash = 0xabc;
      s.oldest_inflight.seq = 4;
      s.oldest_inflight.bytes = 4096;
      s.oldest_inflight.group_size = 1;
      s.oldest_inflight.launch_ns = kNow - 3 * kSec;
      s.oldest_inflight.started_ns = kNow - 2 * kSec - kSec / 2;  // queued 0.5 s
      s.comms.push_back(proto::CommSlot{0xabc, 2, 0, 4, 3, 0, 0, {}});
    } else {
      s.comms.push_back(proto::CommSlot{0xabc, 2, 1, 3, 3, 0, 0, {}});
    }
    snap.ranks.push_back(s);
  }
  return snap;
}

// The document as GET /hang serves it, with no supervisor parts.
nlohmann::json document(const HangReport& report) {
  return nlohmann::json::parse(hang_document_text(report, HangDocumentParts{}));
}

TEST(HangReportJson, Shape) {
  HangDetector d(2.0);
  ASSERT_EQ(d.update(hung_snapshot()), HangEvent::kDetected);
  const nlohmann::json j = document(d.report());
  EXPECT_EQ(j["version"], hang_document::kVersion);
  EXPECT_EQ(j["hung"], true);
  EXPECT_DOUBLE_EQ(j["detected_at"].get<double>(), 1700000000.5);
  EXPECT_DOUBLE_EQ(j["timeout_s"].get<double>(), 2.0);
  EXPECT_EQ(j["summary"],
            "rank 0 stuck in AllGather #4 on comm 0000000000000abc for 2.5 s; rank 1 missing "
            "(last completed #3 on that comm); rank 2 missing (never registered)");
  ASSERT_EQ(j["ranks"].size(), 3u);
  const auto& r0 = j["ranks"][0];
  EXPECT_EQ(r0["state"], "stuck");
  EXPECT_EQ(r0["pid"], 100);
  EXPECT_EQ(r0["host"], "h");
  EXPECT_EQ(r0["operation"]["kind"], "nccl");
  EXPECT_EQ(r0["operation"]["name"], "AllGather");
  EXPECT_EQ(r0["operation"]["comm"], "0000000000000abc");
  EXPECT_EQ(r0["operation"]["seq"], 4);
  EXPECT_EQ(r0["operation"]["dtype"], "fp32");
  EXPECT_EQ(r0["operation"]["bytes"], 4096);
  EXPECT_DOUBLE_EQ(r0["pending_s"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(r0["running_s"].get<double>(), 2.5);
  EXPECT_EQ(r0["not_started"], false);
  const auto& r1 = j["ranks"][1];
  EXPECT_EQ(r1["state"], "missing");
  EXPECT_EQ(r1["reason"], "behind");
  EXPECT_EQ(r1["last_completed_seq"], 3);
  EXPECT_EQ(r1["seq"], 4);
  EXPECT_EQ(r1["comm"], "0000000000000abc");
  const auto& r2 = j["ranks"][2];
  EXPECT_EQ(r2["state"], "missing");
  EXPECT_EQ(r2["reason"], "never_registered");
  EXPECT_EQ(r2["registered"], false);
  EXPECT_FALSE(r2.contains("pid"));
  EXPECT_TRUE(r2["last_completed_seq"].is_null());
  ASSERT_EQ(j["groups"].size(), 1u);
  EXPECT_EQ(j["groups"][0]["ranks"], nlohmann::json::array({0}));
  EXPECT_EQ(j["groups"][0]["missing"], nlohmann::json::array({1}));
  EXPECT_EQ(j["groups"][0]["ranks_folded"], "0");
  EXPECT_DOUBLE_EQ(j["groups"][0]["pending_s"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(j["groups"][0]["waiting_s"].get<double>(), 2.5);
  EXPECT_EQ(j["groups"][0]["not_started"], false);
  // No page named the communicator: the keys are there, null.
  EXPECT_TRUE(j["groups"][0]["comm_name"].is_null());
  EXPECT_TRUE(r1["comm_name"].is_null());
  EXPECT_TRUE(r2["comm_name"].is_null());
}

void name_comms(Snapshot* snap, const char* name) {
  for (RankSample& s : snap->ranks) {
    for (proto::CommSlot& c : s.comms) std::snprintf(c.name, sizeof(c.name), "%s", name);
  }
}

TEST(HangReportJson, NamedCommunicatorInSentenceGroupsAndMissingRanks) {
  Snapshot snap = hung_snapshot();
  // Only rank 1's page names it: the stuck group takes the name from any member.
  std::snprintf(snap.ranks[1].comms[0].name, sizeof(proto::CommSlot::name), "tp_group");
  HangDetector d(2.0);
  ASSERT_EQ(d.update(snap), HangEvent::kDetected);
  const nlohmann::json j = document(d.report());
  EXPECT_EQ(j["summary"],
            "rank 0 stuck in AllGather #4 on comm 0000000000000abc (tp_group) for 2.5 s; rank 1 "
            "missing (last completed #3 on that comm); rank 2 missing (never registered)");
  EXPECT_EQ(j["groups"][0]["comm_name"], "tp_group");
  EXPECT_EQ(j["ranks"][1]["comm_name"], "tp_group");
  EXPECT_TRUE(j["ranks"][2]["comm_name"].is_null());  // in no stuck communicator
  EXPECT_FALSE(j["ranks"][0].contains("comm_name"));  // stuck: its comm is in "operation"
}

TEST(HangReportJson, NameOfAHashLocalToOneRankIsNotUsed) {
  Snapshot snap = hung_snapshot();
  name_comms(&snap, "local");
  for (RankSample& s : snap.ranks) {
    for (proto::CommSlot& c : s.comms) c.flags = proto::kCommFlagUnknownIdentity;
  }
  const HangReport r = classify_snapshot(snap, 2.0);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].comm_name, "");
  EXPECT_EQ(r.summary.find("local"), std::string::npos) << r.summary;
}

TEST(HangReportJson, NoHang) {
  HangReport r;
  r.timeout_s = 300;
  const nlohmann::json j = document(r);
  EXPECT_EQ(j["hung"], false);
  EXPECT_TRUE(j["detected_at"].is_null());
  EXPECT_EQ(j["summary"], "no hang");
  EXPECT_TRUE(j["ranks"].is_array());
  EXPECT_DOUBLE_EQ(j["timeout_s"].get<double>(), 300);
}

// The timeout comes with the detector's report, before its first poll too
// (GET /hang answered while the job starts).
TEST(HangReportJson, TheTimeoutBeforeTheFirstPoll) {
  const HangDetector d(7.5);
  EXPECT_DOUBLE_EQ(document(d.report())["timeout_s"].get<double>(), 7.5);
}

TEST(HangReportJson, AStall) {
  HangDetector d(1.0, 2.0);
  Snapshot snap = hung_snapshot();
  for (RankSample& s : snap.ranks) {
    s.registered = s.alive = s.page_ok = true;
    s.inflight_count = 0;
    if (s.pid == 0) s.pid = 4000 + s.rank;
  }
  d.update(snap);
  snap.now_ns += 3000000000ull;
  snap.now_unix_s += 3;
  for (RankSample& s : snap.ranks) s.heartbeat_ns = snap.now_ns;
  ASSERT_EQ(d.update(snap), HangEvent::kDetected);
  const nlohmann::json j = document(d.report());
  EXPECT_EQ(j["hung"], false);
  EXPECT_EQ(j["stalled"], true);
  EXPECT_DOUBLE_EQ(j["stalled_since"].get<double>(), snap.now_unix_s - 3);
  EXPECT_EQ(j["summary"],
            "ranks 0-2 stalled: nothing in flight and nothing issued or completed for 3.0 s");
  for (const auto& r : j["ranks"]) EXPECT_EQ(r["state"], "stalled") << r.dump();
}

TEST(HangReportJson, TheSupervisorsPartsAndOneShapeForGetHangAndHangJson) {
  HangDetector d(2.0);
  ASSERT_EQ(d.update(hung_snapshot()), HangEvent::kDetected);
  HangDocumentParts live;  // GET /hang: no coordinator, no dumps yet
  live.mismatches = nlohmann::json::array({{{"kind", "dtype"}}});
  live.mismatch_total = 3;
  live.collectives_checked = 12;
  HangDocumentParts file = live;  // hang.json: the hang's own dumps
  file.coordinator = {{"url", "http://etcd:2379"}, {"connected", true}};
  file.stacks = {{"dir", "/d/stacks-1"}};
  file.timeline = {{"dir", "/d/timeline-1-hang"}};
  const nlohmann::json a = nlohmann::json::parse(hang_document_text(d.report(), live));
  const nlohmann::json b = nlohmann::json::parse(hang_document_text(d.report(), file));
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [key, value] : a.items()) EXPECT_TRUE(b.contains(key)) << key;
  EXPECT_EQ(a["mismatches"], live.mismatches);
  EXPECT_EQ(a["mismatch_total"], 3);
  EXPECT_EQ(a["collectives_checked"], 12);
  EXPECT_TRUE(a["coordinator"].is_null());
  EXPECT_TRUE(a["stacks"].is_null());
  EXPECT_TRUE(a["timeline"].is_null());
  EXPECT_EQ(b["coordinator"], file.coordinator);
  EXPECT_EQ(b["stacks"]["dir"], "/d/stacks-1");
  EXPECT_EQ(b["timeline"]["dir"], "/d/timeline-1-hang");

  // The one reader reads what the supervisor writes, without a warning.
  hang_document::Document back;
  std::string error;
  std::vector<std::string> warnings;
  ASSERT_TRUE(hang_document::parse(hang_document_text(d.report(), file), &back, &error,
                                   &warnings))
      << error;
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(back.ranks.size(), 3u);
  EXPECT_EQ(back.stacks_dir(), "/d/stacks-1");
  EXPECT_EQ(hang_document::to_text(back), hang_document_text(d.report(), file));
}

TEST(RanksJson, Shape) {
  Snapshot snap = hung_snapshot();
  HangDetector d(2.0);
  d.update(snap);
  const nlohmann::json j = ranks_json(snap, d.report());
  ASSERT_EQ(j.size(), 2u);  // the never-registered rank is only in /hang
  const auto& r0 = j[0];
  for (const char* key :
       {"rank", "local_rank", "pid", "host", "state", "connected", "issued_total",
        "completed_total", "inflight_count", "oldest_inflight", "heartbeat_age_s", "comms",
        "dropped_queue_full", "skipped_capture", "hook_errors", "queue_depth"}) {
    EXPECT_TRUE(r0.contains(key)) << key;
  }
  EXPECT_EQ(r0["state"], "stuck");
  EXPECT_EQ(r0["oldest_inflight"]["name"], "AllGather");
  EXPECT_DOUBLE_EQ(r0["oldest_inflight"]["pending_s"].get<double>(), 3.0);
  EXPECT_EQ(r0["comms"][0], nlohmann::json({{"comm", "0000000000000abc"},
                                            {"nranks", 2},
                                            {"rank", 0},
                                            {"issued_seq", 4},
                                            {"completed_seq", 3},
                                            {"unknown_identity", false},
                                            {"name", nullptr}}));
  EXPECT_TRUE(j[1]["oldest_inflight"].is_null());
  name_comms(&snap, "dp_group");
  EXPECT_EQ(ranks_json(snap, d.report())[1]["comms"][0]["name"], "dp_group");
}

TEST(JsonText, InvalidUtf8NeverThrows) {
  nlohmann::json j = {{"host", std::string("bad\xff\xfe")}};
  EXPECT_NO_THROW(json_text(j));
  EXPECT_NE(json_text(j).find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD
}

}  // namespace
}  // namespace xpu_timer::supervisor
