// The timeline converter as a library call: dumps (loaded from folders by
// dump_loader.h, or held in memory) to the Chrome Trace Event file that
// Perfetto UI, chrome://tracing and speedscope load. xpu_timer_gen_trace_timeline
// and the supervisor's timeline dumps (supervisor/incidents/timeline_dump.h)
// both go through here, so a dump converted in the supervisor and the same
// folder converted by the tool give the same file. Any one thread per call.
#pragma once

#include <string>
#include <vector>

#include "common/recorder_ring.h"
#include "timeline/dump_loader.h"
#include "timeline/trace_builder.h"

namespace xpu_timer::timeline {

// Writes `text` to `path` through a temporary name renamed when complete, so
// that a viewer never opens half a file. False with a one-line *error.
bool write_file_whole(const std::string& path, const std::string& text, std::string* error);

// Writes the trace of `dumps` to `path` the same way. Problems that do not
// stop the trace go to *warnings; false with a one-line *error when the file
// could not be written.
bool write_trace_file(const LoadedDumps& dumps, const TraceOptions& options,
                      const std::string& path, TraceSummary* summary,
                      std::vector<std::string>* warnings, std::string* error);

// One rank's ring image as a dump file of `dir` would hold it.
struct RankImage {
  int rank = 0;
  int world_size = 1;
  recorder::RingImage image;
};

// One dump folder held in memory, as load_dumps would load it from `dir`:
// the images (named RRRRR-WWWWW.timeline in warnings) and the hang document
// written beside them ("" for none). Problems are in the result's warnings.
// `comms_json`: comms.json's text ("" for none).
LoadedDumps dumps_from_images(const std::string& dir, const std::vector<RankImage>& ranks,
                              const std::string& hang_json, const std::string& comms_json = "");

}  // namespace xpu_timer::timeline
