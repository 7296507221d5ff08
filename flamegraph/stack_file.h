// One rank's stack file (`RRRRR-WWWWW.stacktrace`, format in notes/contract.md)
// decoded into what the merge needs: frame labels (`func@source`) in a table
// local to the file, and per thread and per view the label ids outermost first.
// Formatting labels while loading lets the loader threads do the string work in
// parallel; the merging thread then only maps a few hundred distinct labels per
// file to global ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xpu_timer::flamegraph {

// Where a frame comes from; decides its colour together with its text.
enum class FrameKind : uint8_t { kState, kNative, kPython };

// The three merged views the viewer writes.
enum class View : uint8_t { kCpp = 0, kPy = 1, kMixed = 2 };
constexpr int kViewCount = 3;
// "cpp", "py", "mixed": the prefix of the output files (`cpp_stack`, ...).
const char* view_name(View view);

struct FrameLabel {
  std::string text;  // func@source, without the rank sets
  FrameKind kind = FrameKind::kNative;
};

struct ThreadStack {
  int64_t tid = 0;
  std::string name;
  // Indexes into StackFile::labels, outermost frame first, per View.
  std::vector<uint32_t> frames[kViewCount];
};

struct StackFile {
  std::string path;
  uint32_t rank = 0;
  uint32_t world_size = 0;
  int64_t pid = 0;
  std::string host;
  std::string process_state;        // "S (sleeping)", "" when the file had none
  std::vector<std::string> errors;  // problems the collector reported (partial result)
  std::vector<FrameLabel> labels;
  std::vector<ThreadStack> threads;
};

}  // namespace xpu_timer::flamegraph
