// The whole converter on hostile dumps: records that parse (their seqlock
// versions intact) but whose every other field may be anything, headers with
// any clock pair, and a corrupted hang.json. Seeded and bounded; the libFuzzer
// of the ring reader itself is common/recorder_ring_test.cc's mutation test.
// Nothing may crash, and the trace must stay a valid document: every slice
// at ts >= 0 with dur >= 0, every flow paired.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "timeline/test_dumps.h"
#include "timeline/trace_builder.h"

namespace xpu_timer::timeline {
namespace {

using recorder::Record;
using recorder::RingHeader;
using testing::JobSpec;
using testing::TempDir;

std::string mutated_image(std::mt19937_64& rng, std::string img) {
  const uint64_t values[] = {0,
                             1,
                             2,
                             3,
                             5,
                             ~0ull,
                             1ull << 63,
                             (1ull << 63) - 1,
                             1000000,
                             1000 * testing::kSec,
                             1700000000 * testing::kSec};
  const int n = 1 + static_cast<int>(rng() % 12);
  for (int i = 0; i < n; ++i) {
    const uint64_t v = rng() % 3 == 0 ? rng() : values[rng() % (sizeof(values) / 8)];
    size_t off;
    if (rng() % 5 == 0) {  // the clock pair or identity of the header
      off = offsetof(RingHeader, pid) + 8 * (rng() % 3);
    } else {  // any field of any record but its version word
      off = sizeof(RingHeader) + (rng() % 18) * sizeof(Record) + 8 + 8 * (rng() % 16);
    }
    std::memcpy(&img[off], &v, rng() % 2 ? 8 : 4);
  }
  return img;
}

TEST(TraceMutation, HostileRecordsNeverBreakTheTrace) {
  std::mt19937_64 rng(11);
  const std::string hang = testing::hang_json(JobSpec{});
  std::vector<std::string> images;
  for (int rank = 0; rank < 4; ++rank) images.push_back(testing::image_bytes(JobSpec{}, rank));
  TempDir tmp;
  for (int iter = 0; iter < 200; ++iter) {
    const std::string a = tmp.subdir(std::to_string(iter) + "a");
    const std::string b = tmp.subdir(std::to_string(iter) + "b");
    for (int rank = 0; rank < 4; ++rank) {
      // Half the time the ranks come from two folders: wall-clock alignment.
      const std::string& dir = iter % 2 && rank >= 2 ? b : a;
      const std::string name = recorder::dump_file_name(rank, 4);
      std::FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
      ASSERT_NE(f, nullptr);
      const std::string img = mutated_image(rng, images[rank]);
      ASSERT_EQ(std::fwrite(img.data(), 1, img.size(), f), img.size());
      std::fclose(f);
    }
    std::string h = hang;
    for (int i = 0; i < 3; ++i) h[rng() % h.size()] = "{}[]\":,0123456789abcdef"[rng() % 23];
    std::FILE* hf = std::fopen((a + "/hang.json").c_str(), "wb");
    ASSERT_NE(hf, nullptr);
    std::fputs(h.c_str(), hf);
    std::fclose(hf);
    std::vector<DumpSource> sources{{a, -1}};
    if (iter % 2) sources.push_back({b, -1});
    LoadedDumps dumps;
    load_dumps(sources, &dumps);
    std::vector<std::string> warnings;
    const nlohmann::json trace = build_trace(dumps, TraceOptions{}, &warnings);
    std::map<uint64_t, int> flows;
    for (const nlohmann::json& e : trace["traceEvents"]) {
      if (e["ph"] == "s" || e["ph"] == "f") flows[e["id"].get<uint64_t>()] += 1;
      if (!e.contains("ts")) continue;
      const double ts = e["ts"];
      ASSERT_TRUE(std::isfinite(ts) && ts >= 0) << iter << " " << e.dump();
      if (e["ph"] == "X") {
        ASSERT_GE(e["dur"].get<double>(), 0) << iter << " " << e.dump();
      }
    }
    for (const auto& [id, n] : flows) ASSERT_EQ(n, 2) << iter;
  }
}

}  // namespace
}  // namespace xpu_timer::timeline
