// What the end-to-end tests add to the child-process harness
// (tests/harness/child_process.h): the folders baked in at build time, fresh
// temporary folders; the raw HTTP client is tests/harness/http_probe.h.
// Used by the test's main thread only.
#pragma once

#include <optional>
#include <string>

#include "tests/harness/child_process.h"
#include "tests/harness/http_probe.h"

namespace xpu_timer::testing {

// Folders baked in at build time.
std::string build_dir();
std::string source_dir();

// A fresh empty folder under <build>/test-tmp. Removed when the test that made
// it passed (its processes are gone by then: fixtures stop them in TearDown);
// a failed test's folders stay for the post-mortem, and every folder stays
// when XPU_TIMER_KEEP_TEST_DIRS is set. Kept, a full run left about 1 GB.
std::string make_temp_dir(const std::string& name);

}  // namespace xpu_timer::testing
