#include "supervisor/incidents/incident_dumps.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace xpu_timer::supervisor {
namespace {

namespace fs = std::filesystem;

// A supervisor killed mid-dump leaves an empty stacks-*/timeline-* folder; the
// next one removes those, and nothing else.
TEST(IncidentDumps, EmptyDumpFoldersOfAnInterruptedRunAreRemovedAtStart) {
  char tmpl[] = "/tmp/xpu_incident_dumps_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  for (const char* name : {"stacks-20261124-101010", "timeline-20261124-101010-hang",
                           "stacks-20261124-111111", "other-empty"}) {
    ASSERT_EQ(::mkdir((dir + "/" + name).c_str(), 0755), 0) << name;
  }
  std::ofstream(dir + "/stacks-20261124-111111/00000-00001.stacktrace") << "{}";
  {
    IncidentDumps dumps(dir, [] { return std::vector<RankRecord>{}; });
    EXPECT_TRUE(dumps.enabled());
  }
  EXPECT_FALSE(fs::exists(dir + "/stacks-20261124-101010"));
  EXPECT_FALSE(fs::exists(dir + "/timeline-20261124-101010-hang"));
  EXPECT_TRUE(fs::exists(dir + "/stacks-20261124-111111/00000-00001.stacktrace"));
  EXPECT_TRUE(fs::exists(dir + "/other-empty"));
  fs::remove_all(dir);
}

// Without a usable dump folder every dump is refused with one line.
TEST(IncidentDumps, WithoutADumpFolderEveryDumpIsRefused) {
  IncidentDumps dumps("", [] { return std::vector<RankRecord>{}; });
  EXPECT_FALSE(dumps.enabled());
  EXPECT_EQ(dumps.timelines("request", "").errors,
            std::vector<std::string>{"no usable dump directory"});
  std::string body;
  EXPECT_EQ(dumps.stacks_request([](std::shared_ptr<const StackDumpReport>) {}, &body), 503);
  EXPECT_NE(body.find("no usable dump directory"), std::string::npos) << body;
  EXPECT_EQ(dumps.timeline_request("", &body), 503);
}

}  // namespace
}  // namespace xpu_timer::supervisor
