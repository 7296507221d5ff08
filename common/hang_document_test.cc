#include "common/hang_document.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace xpu_timer::hang_document {
namespace {

using nlohmann::json;

// A hang as the supervisor describes one: rank 0 stuck, rank 1 behind on the
// communicator, rank 2 never registered, with the supervisor's parts.
Document example() {
  Document d;
  d.hung = true;
  d.detected_at = 1700000000.5;
  d.timeout_s = 2;
  d.summary = "rank 0 stuck in AllGather #4 on comm 0000000000000abc (tp) for 2.5 s";
  Rank r0;
  r0.rank = 0;
  r0.state = "stuck";
  r0.registered = true;
  r0.node = 3;
  r0.pid = 100;
  r0.local_rank = 0;
  r0.host = "h";
  r0.heartbeat_age_s = 0.25;
  Operation op;
  op.kind = "nccl";
  op.name = "AllGather";
  op.comm = 0xabc;
  op.seq = 4;
  op.dtype = "fp32";
  op.bytes = 4096;
  r0.operation = op;
  r0.pending_s = 3;
  r0.running_s = 2.5;
  r0.issued_at = {CodeFrame{"sync", "/w/train.py", 19, true}};
  Rank r1;
  r1.rank = 1;
  r1.state = "missing";
  r1.registered = true;
  r1.pid = 101;
  r1.local_rank = 1;
  r1.host = "h";
  r1.reason = "behind";
  r1.comm = 0xabc;
  r1.comm_name = "tp";
  r1.seq = 4;
  r1.issued_seq = 3;
  r1.last_completed_seq = 3;
  r1.where = {CodeFrame{"stuck_in_host_code", "/w/sim_trainer.py", 184, true},
              CodeFrame{"main", "/w/app", 0, false}};
  Rank r2;
  r2.rank = 2;
  r2.state = "missing";
  r2.reason = "never_registered";
  d.ranks = {r0, r1, r2};
  Group g;
  g.operation = "AllGather";
  g.kind = "nccl";
  g.comm = 0xabc;
  g.comm_name = "tp";
  g.seq = 4;
  g.ranks = {0, 2, 3, 4};
  g.missing = {1};
  g.pending_s = 3;
  g.waiting_s = 2.5;
  d.groups = {g};
  d.ranks[0].waits_for = {Rank::WaitFor{1, 0xabc, "tp", 4}};
  d.roots = {Root{"rank", {1}, {{0, 3, 4}}}};
  d.mismatches = json::array({{{"comm", "0000000000000abc"}, {"seq", 9}}});
  d.mismatch_total = 1;
  d.collectives_checked = 77;
  d.coordinator = {{"url", "http://etcd:2379"}, {"connected", true}};
  d.stacks = {{"dir", "/d/stacks-1"}, {"in_progress", false}};
  d.timeline = {{"dir", "/d/timeline-1-hang"}};
  return d;
}

Document parsed(const std::string& text, std::vector<std::string>* warnings = nullptr) {
  Document d;
  std::string error;
  std::vector<std::string> w;
  EXPECT_TRUE(parse(text, &d, &error, &w)) << error;
  if (warnings != nullptr) *warnings = w;
  return d;
}

TEST(HangDocument, WriterWritesTheDocumentedKeys) {
  const json j = json::parse(to_text(example()));
  EXPECT_EQ(j["version"], kVersion);
  EXPECT_EQ(j["hung"], true);
  EXPECT_EQ(j["detected_at"], 1700000000.5);
  const json& r0 = j["ranks"][0];
  EXPECT_EQ(r0, json::parse(R"({"rank":0,"state":"stuck","registered":true,"node":3,"pid":100,
      "local_rank":0,"host":"h","heartbeat_age_s":0.25,"operation":{"kind":"nccl",
      "name":"AllGather","comm":"0000000000000abc","seq":4,"dtype":"fp32","bytes":4096,
      "flops":0,"group_size":1},"pending_s":3.0,"running_s":2.5,"not_started":false,
      "where":[],"issued_at":[{"function":"sync","file":"/w/train.py","line":19,"kind":"python"}],
      "waits_for":[{"rank":1,"comm":"0000000000000abc","comm_name":"tp","seq":4}]})"));
  EXPECT_EQ(j["ranks"][1]["comm"], "0000000000000abc");
  EXPECT_EQ(j["ranks"][1]["comm_name"], "tp");
  EXPECT_EQ(j["ranks"][1]["reason"], "behind");
  EXPECT_EQ(j["ranks"][1]["where"], json::parse(R"([
      {"function":"stuck_in_host_code","file":"/w/sim_trainer.py","line":184,"kind":"python"},
      {"function":"main","file":"/w/app","line":null,"kind":"native"}])"));
  // Every missing rank has the communicator keys, null when it is in none.
  EXPECT_EQ(j["ranks"][2], json::parse(R"({"rank":2,"state":"missing","registered":false,
      "node":null,"reason":"never_registered","comm":null,"comm_name":null,"seq":null,
      "issued_seq":null,"last_completed_seq":null,"where":[],"issued_at":[],"waits_for":[]})"));
  EXPECT_EQ(j["roots"], json::parse(R"([{"kind":"rank","ranks":[1],"ranks_folded":"1",
      "waiters":[[0,3,4]]}])"));
  EXPECT_EQ(j["groups"][0]["ranks_folded"], "0/2-4");
  EXPECT_EQ(j["groups"][0]["comm"], "0000000000000abc");
  EXPECT_EQ(j["mismatch_total"], 1);
  EXPECT_EQ(j["collectives_checked"], 77);
  EXPECT_EQ(j["stacks"]["dir"], "/d/stacks-1");
  EXPECT_EQ(j["timeline"]["dir"], "/d/timeline-1-hang");
  EXPECT_EQ(j["coordinator"]["connected"], true);
  EXPECT_EQ(to_text(example()).back(), '\n');

  // No hang and no supervisor parts: the same keys, empty or null.
  const json none = json::parse(to_text(Document{}));
  for (const char* key :
       {"version", "hung", "detected_at", "frozen_since", "timeout_s", "stalled", "stalled_since",
        "summary", "ranks", "groups", "roots", "mismatches", "mismatch_total",
        "collectives_checked", "coordinator", "stacks", "timeline"}) {
    EXPECT_TRUE(none.contains(key)) << key;
  }
  EXPECT_EQ(none.size(), 17u);
  EXPECT_EQ(none["stalled"], false);
  EXPECT_TRUE(none["stalled_since"].is_null());
  EXPECT_TRUE(none["detected_at"].is_null());
  EXPECT_TRUE(none["frozen_since"].is_null());
  EXPECT_TRUE(none["coordinator"].is_null());
  EXPECT_EQ(none["mismatches"], json::array());
}

TEST(HangDocument, ReadsBackWhatTheWriterWrote) {
  const Document in = example();
  std::vector<std::string> warnings;
  const Document out = parsed(to_text(in), &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings[0];
  EXPECT_EQ(out.version, kVersion);
  EXPECT_EQ(out.hung, true);
  EXPECT_EQ(out.detected_at, 1700000000.5);
  EXPECT_EQ(out.timeout_s, 2);
  EXPECT_EQ(out.summary, in.summary);
  ASSERT_EQ(out.ranks.size(), 3u);
  const Rank& r0 = out.ranks[0];
  EXPECT_EQ(r0.state, "stuck");
  EXPECT_EQ(r0.node, 3);
  EXPECT_EQ(r0.pid, 100);
  EXPECT_EQ(r0.host, "h");
  ASSERT_TRUE(r0.operation);
  EXPECT_EQ(r0.operation->name, "AllGather");
  EXPECT_EQ(r0.operation->comm, 0xabcu);
  EXPECT_EQ(r0.operation->seq, 4u);
  EXPECT_EQ(r0.operation->bytes, 4096u);
  EXPECT_EQ(r0.pending_s, 3);
  EXPECT_EQ(r0.running_s, 2.5);
  EXPECT_FALSE(r0.comm);
  ASSERT_EQ(r0.waits_for.size(), 1u);
  EXPECT_EQ(r0.waits_for[0].rank, 1);
  EXPECT_EQ(r0.waits_for[0].comm, 0xabcu);
  EXPECT_EQ(r0.waits_for[0].comm_name, "tp");
  EXPECT_EQ(r0.waits_for[0].seq, 4u);
  ASSERT_EQ(out.roots.size(), 1u);
  EXPECT_EQ(out.roots[0].kind, "rank");
  EXPECT_EQ(out.roots[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(out.roots[0].waiters, (std::vector<std::vector<int>>{{0, 3, 4}}));
  const Rank& r1 = *out.find(1);
  EXPECT_EQ(r1.reason, "behind");
  EXPECT_EQ(r1.comm, 0xabcu);
  EXPECT_EQ(r1.comm_name, "tp");
  EXPECT_EQ(r1.seq, 4u);
  EXPECT_EQ(r1.issued_seq, 3u);
  EXPECT_EQ(r1.last_completed_seq, 3u);
  EXPECT_FALSE(r1.operation);
  EXPECT_EQ(r1.where, in.ranks[1].where);
  EXPECT_EQ(out.find(0)->issued_at, in.ranks[0].issued_at);
  EXPECT_TRUE(r1.issued_at.empty());
  const Rank& r2 = *out.find(2);
  EXPECT_EQ(r2.reason, "never_registered");
  EXPECT_FALSE(r2.registered);
  EXPECT_FALSE(r2.comm);
  EXPECT_FALSE(r2.last_completed_seq);
  EXPECT_EQ(out.find(7), nullptr);
  ASSERT_EQ(out.groups.size(), 1u);
  EXPECT_EQ(out.groups[0].ranks, (std::vector<int>{0, 2, 3, 4}));
  EXPECT_EQ(out.groups[0].missing, (std::vector<int>{1}));
  EXPECT_EQ(out.groups[0].comm_name, "tp");
  EXPECT_EQ(out.groups[0].waiting_s, 2.5);
  EXPECT_EQ(out.mismatches, in.mismatches);
  EXPECT_EQ(out.mismatch_total, 1u);
  EXPECT_EQ(out.collectives_checked, 77u);
  EXPECT_EQ(out.coordinator, in.coordinator);
  EXPECT_EQ(out.stacks_dir(), "/d/stacks-1");
  EXPECT_EQ(out.timeline, in.timeline);
  EXPECT_EQ(to_text(out), to_text(in));
}

TEST(HangDocument, AStallIsWrittenAndReadBack) {
  Document d = example();  // its ranks and the supervisor's parts, as a stall's
  d.hung = false;
  d.detected_at.reset();
  d.groups.clear();
  d.stalled = true;
  d.stalled_since = 1700000000.5;
  d.summary = "ranks 0-2 stalled: nothing in flight and nothing issued or completed for 2.0 s";
  d.ranks[0].state = "stalled";
  d.ranks[0].operation.reset();
  const json j = json::parse(to_text(d));
  EXPECT_EQ(j["stalled"], true);
  EXPECT_EQ(j["stalled_since"], 1700000000.5);
  EXPECT_EQ(j["hung"], false);
  EXPECT_EQ(j["ranks"][0]["state"], "stalled");
  std::vector<std::string> warnings;
  const Document out = parsed(to_text(d), &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_TRUE(out.stalled);
  EXPECT_EQ(out.stalled_since, 1700000000.5);
  EXPECT_EQ(to_text(out), to_text(d));
  // Written before the keys existed: no stall.
  const Document old = parsed(R"({"version":1,"hung":false,"ranks":[]})");
  EXPECT_FALSE(old.stalled);
  EXPECT_FALSE(old.stalled_since);
}

TEST(HangDocument, ASilentRankCarriesHowLongItsNodeWasNotHeardFrom) {
  Document d = example();
  d.ranks[2].state = "silent";
  d.ranks[2].registered = true;
  d.ranks[2].node = 1;
  d.ranks[2].silent_s = 40.5;
  d.ranks[2].reason.clear();
  const json j = json::parse(to_text(d));
  EXPECT_EQ(j["ranks"][2]["state"], "silent");
  EXPECT_EQ(j["ranks"][2]["silent_s"], 40.5);
  EXPECT_FALSE(j["ranks"][0].contains("silent_s"));  // only a silent rank has it
  std::vector<std::string> warnings;
  const Document out = parsed(to_text(d), &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(out.ranks[2].silent_s, 40.5);
  EXPECT_EQ(to_text(out), to_text(d));
}

TEST(HangDocument, APlaceOfAnotherShapeIsDroppedAloneAndWhatIsKeptIsBounded) {
  std::vector<std::string> warnings;
  const Document d = parsed(R"({"ranks":[{"rank":1,"where":[
      {"function":"f","file":"a.py","line":3,"kind":"python"}, 7, {"function":1,"kind":"native"},
      {"function":"g","file":null,"line":"x","kind":"native"},
      {"function":"h\nh","kind":"native"}, {"function":"extra","kind":"native"}]},
      {"rank":2,"where":{"function":"f"}}]})",
                            &warnings);
  ASSERT_EQ(d.ranks.size(), 2u);
  EXPECT_EQ(d.ranks[0].where, (std::vector<CodeFrame>{CodeFrame{"f", "a.py", 3, true},
                                                      CodeFrame{"h?h", "", 0, false}}));
  EXPECT_TRUE(d.ranks[1].where.empty());
  ASSERT_EQ(warnings.size(), 4u);
  EXPECT_EQ(warnings[0], "ranks[0].where: not an array of frames (an entry); ignored");
  EXPECT_EQ(warnings[3], "ranks[1].where: not an array; ignored");
}

TEST(HangDocument, AnotherVersionIsRefusedInOneLine) {
  Document d;
  std::string error;
  std::vector<std::string> warnings;
  EXPECT_FALSE(parse(R"({"version":2,"hung":true,"ranks":[]})", &d, &error, &warnings));
  EXPECT_EQ(error, "hang document version 2; this build reads version 1");
  EXPECT_FALSE(parse(R"({"version":"1","ranks":[]})", &d, &error, &warnings));
  EXPECT_EQ(error, "hang document version \"1\"; this build reads version 1");
  EXPECT_FALSE(parse(R"({"version":-1,"ranks":[]})", &d, &error, &warnings));
  EXPECT_EQ(error, "hang document version -1; this build reads version 1");
}

TEST(HangDocument, ADocumentWithoutVersionIsReadAsTheUnversionedShape) {
  // What GET /hang answered before the key existed.
  const Document d = parsed(R"({"hung":true,"detected_at":1.5,"timeout_s":300,
      "summary":"rank 0 stuck","ranks":[{"rank":0,"state":"stuck","operation":{"name":"AllReduce",
      "comm":"00000000000000ff","seq":6}}],"groups":[],"stacks":null})");
  EXPECT_EQ(d.version, kUnversioned);
  EXPECT_TRUE(d.hung);
  EXPECT_EQ(d.timeout_s, 300);
  EXPECT_EQ(d.ranks[0].operation->comm, 0xffu);
  EXPECT_TRUE(d.stacks.is_null());
  EXPECT_EQ(d.mismatches, json::array());
}

TEST(HangDocument, UnknownKeysAreIgnoredAndAWrongTypeDropsThatKeyWithOneLine) {
  std::vector<std::string> warnings;
  const Document d = parsed(R"({"hung":"yes","future_key":{"a":[1]},"summary":"s",
      "ranks":[{"rank":1,"state":"missing","pid":"x","comm":5,"seq":null,"last_completed_seq":4,
                "node":-2,"new":1},
               {"rank":"x"}, 7, {"rank":-1}, {"rank":3,"operation":[1]}],
      "groups":[{"ranks":[0,"a",2],"seq":-1}, 3],
      "stacks":"here","mismatch_total":-5})",
                            &warnings);
  EXPECT_FALSE(d.hung);
  EXPECT_EQ(d.summary, "s");
  ASSERT_EQ(d.ranks.size(), 2u);
  EXPECT_EQ(d.ranks[0].rank, 1);
  EXPECT_EQ(d.ranks[0].pid, 0);
  EXPECT_FALSE(d.ranks[0].comm);
  EXPECT_FALSE(d.ranks[0].seq);
  EXPECT_EQ(d.ranks[0].last_completed_seq, 4u);
  EXPECT_EQ(d.ranks[0].node, -2);
  EXPECT_EQ(d.ranks[1].rank, 3);
  EXPECT_FALSE(d.ranks[1].operation);
  ASSERT_EQ(d.groups.size(), 1u);
  EXPECT_EQ(d.groups[0].ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(d.groups[0].seq, 0u);
  EXPECT_TRUE(d.stacks.is_null());
  EXPECT_EQ(d.mismatch_total, 0u);
  EXPECT_EQ(warnings, (std::vector<std::string>{
                          "hung: not a boolean; ignored",
                          "ranks[0].pid: not a 32-bit integer; ignored",
                          "ranks[0].comm: not a communicator (16 hex digits); ignored",
                          "ranks[1]: not a rank entry with a valid \"rank\"; ignored",
                          "ranks[2]: not a rank entry with a valid \"rank\"; ignored",
                          "ranks[3]: not a rank entry with a valid \"rank\"; ignored",
                          "ranks[4].operation: not an object; ignored",
                          "groups[0].seq: not an unsigned integer; ignored",
                          "and 4 more key(s) ignored",
                      }));
}

TEST(HangDocument, WhatIsNoHangDocumentIsRefusedInOneLine) {
  Document d;
  std::string error;
  std::vector<std::string> warnings;
  EXPECT_FALSE(parse("{\"hung\": tru", &d, &error, &warnings));
  EXPECT_EQ(error, "not valid JSON");
  EXPECT_FALSE(parse("[1,2]", &d, &error, &warnings));
  EXPECT_EQ(error, "not a JSON object");
  EXPECT_FALSE(parse(R"({"hung":true})", &d, &error, &warnings));
  EXPECT_EQ(error, "no \"ranks\" array: not a hang report");
  EXPECT_FALSE(parse(R"({"ranks":7})", &d, &error, &warnings));
  EXPECT_EQ(error, "no \"ranks\" array: not a hang report");
  const std::string deep =
      R"({"ranks":[],"stacks":)" + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_FALSE(parse(deep, &d, &error, &warnings));
  EXPECT_EQ(error, "nested deeper than 64 levels: not a hang document");
}

TEST(HangDocument, BytesThatAreNotUtf8AreWrittenAsReplacementCharacters) {
  Document d;
  Rank r;
  r.rank = 0;
  r.registered = true;
  r.host = std::string("bad\xff");
  d.ranks = {r};
  const Document back = parsed(to_text(d));
  EXPECT_EQ(back.ranks[0].host, "bad\xEF\xBF\xBD");
}

}  // namespace
}  // namespace xpu_timer::hang_document

namespace xpu_timer::hang_document {
namespace {

// Roots and waits of another shape are dropped with a line, never misread.
TEST(HangDocument, MalformedRootsAndWaitsAreDropped) {
  Document d;
  std::string error;
  std::vector<std::string> warnings;
  ASSERT_TRUE(parse(R"({"ranks":[{"rank":0,"state":"stuck","waits_for":[{"rank":-1},
      {"rank":2,"comm":"xyz","seq":"a"},7]}],
      "roots":[{"kind":"rank","ranks":[1]},{"kind":"cycle","ranks":[0,"x"]},
      {"kind":"rank","ranks":[3],"waiters":[[0],[-5]]},"no"]})",
                    &d, &error, &warnings))
      << error;
  ASSERT_EQ(d.ranks.size(), 1u);
  ASSERT_EQ(d.ranks[0].waits_for.size(), 1u);  // rank 2 kept, its bad comm and seq not
  EXPECT_EQ(d.ranks[0].waits_for[0].rank, 2);
  EXPECT_FALSE(d.ranks[0].waits_for[0].comm);
  EXPECT_EQ(d.ranks[0].waits_for[0].seq, 0u);
  ASSERT_EQ(d.roots.size(), 1u);
  EXPECT_EQ(d.roots[0].ranks, (std::vector<int>{1}));
  EXPECT_FALSE(warnings.empty());
}

}  // namespace
}  // namespace xpu_timer::hang_document
