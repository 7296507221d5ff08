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

// A fresh empty folder under the test temp dir, removed by nobody (CTest runs in the build tree).
std::string make_temp_dir(const std::string& name);

}  // namespace xpu_timer::testing
