// Loads flight-recorder dump folders: every RRRRR-WWWWW.timeline file (a
// frozen ring image, common/recorder_ring.h) and the folder's hang.json.
// Dump files are untrusted input (a disk may be full, a file cut short or
// replaced): each is parsed by RingReader::read_image, which validates
// everything, and a file that does not parse is skipped with one warning
// naming it. Loading never fails as a whole; the caller decides what to do
// when nothing usable was found.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/recorder_ring.h"
#include "timeline/hang_verdict.h"

namespace xpu_timer::timeline {

// A dump folder, or one rank of it ("DIR:RANK" on the command line).
struct DumpSource {
  std::string dir;
  int rank = -1;  // >= 0: only this rank's file
};
// "DIR" or "DIR:RANK" (a DIR that itself holds a colon is taken whole when it
// exists). False with a one-line reason.
bool parse_dump_source(const std::string& arg, DumpSource* out, std::string* error);

// One rank's dump.
struct RankTimeline {
  int rank = 0;
  int world_size = 0;
  size_t folder = 0;  // index into LoadedDumps::folders
  std::string path;
  recorder::RingSnapshot ring;  // records oldest first
};

struct DumpFolder {
  std::string dir;
  std::optional<HangVerdict> verdict;  // hang.json, when present and readable
  // comms.json, when present: communicator hash -> the program's name for it
  // ("tp", "default_pg"), as the ranks' status pages gave it at the dump.
  std::map<uint64_t, std::string> comm_names;
};

struct LoadedDumps {
  std::vector<DumpFolder> folders;    // one per source, in order
  std::vector<RankTimeline> ranks;    // sorted by rank, each rank once
  std::vector<std::string> warnings;  // one line per skipped file or problem
  size_t files_found = 0;             // *.timeline files seen
};

void load_dumps(const std::vector<DumpSource>& sources, LoadedDumps* out);

// The pieces load_dumps is made of, for dumps already in memory (the
// supervisor converts the rings it just copied without reading them back):
// one ring image (as a RRRRR-WWWWW.timeline file holds it) into *rt, named
// `path` in warnings and checked against its file `name`; false with the
// one warning line (a warning may come with true too).
bool load_ring_image(const std::string& path, const std::string& name, const void* bytes,
                     size_t size, RankTimeline* rt, std::string* warning);
// A hang document's text (hang.json) as `folder`'s verdict; problems are
// warnings naming `source`.
void load_hang_text(const std::string& source, const std::string& text, DumpFolder* folder,
                    std::vector<std::string>* warnings);
// comms.json's text ({"comms": [{"comm": "<16 hex digits>", "name": "tp"}]})
// as `folder`'s communicator names; an entry that is not one is skipped, a
// text that is no such document is one warning naming `source`.
void load_comm_names_text(const std::string& source, const std::string& text, DumpFolder* folder,
                          std::vector<std::string>* warnings);
// The same document for `names` (what the supervisor writes beside the rings).
std::string comm_names_text(const std::map<uint64_t, std::string>& names);

// Dump files larger than a ring of kMaxCapacity records are not ring images.
size_t max_dump_file_bytes();

}  // namespace xpu_timer::timeline
