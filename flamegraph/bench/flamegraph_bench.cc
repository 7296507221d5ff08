// flamegraph_bench [--ranks 1024] [--threads 100] [--workers 2] [--keep]
// Writes a synthetic dump (bench/synthetic_dump.h) into a temporary folder and
// times the viewer's work on it: load + merge (JSON decoding included), then
// folded text + SVG rendering of the three views. Not a test: a figure to
// record (requirement: 1024 ranks x 100 threads under 10 s on 2 cores).
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "flamegraph/bench/synthetic_dump.h"
#include "flamegraph/dump_merger.h"
#include "flamegraph/flamegraph_files.h"

namespace {

// CPU seconds of the whole process (all threads): on a shared machine the wall
// time says more about the neighbours than about us.
double cpu_seconds() {
  struct rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

unsigned long long folder_bytes(const std::string& dir) {
  unsigned long long total = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      struct stat st;
      if (::stat((dir + "/" + e->d_name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        total += static_cast<unsigned long long>(st.st_size);
      }
    }
    ::closedir(d);
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xpu_timer::flamegraph;
  SyntheticDumpSpec spec;
  spec.world_size = 1024;
  spec.threads_per_rank = 100;
  unsigned workers = 2;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ranks" && i + 1 < argc) {
      spec.world_size = std::atoi(argv[++i]);
    } else if (a == "--threads" && i + 1 < argc) {
      spec.threads_per_rank = std::atoi(argv[++i]);
    } else if (a == "--workers" && i + 1 < argc) {
      workers = static_cast<unsigned>(std::atoi(argv[++i]));
    } else if (a == "--keep") {
      keep = true;
    } else {
      std::fprintf(stderr, "usage: %s [--ranks N] [--threads N] [--workers N] [--keep]\n", argv[0]);
      return 2;
    }
  }
  spec.leak_rank = spec.world_size / 2;
  spec.no_file_ranks = {spec.world_size - 1};

  char tmpl[] = "/tmp/flamegraph_bench.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = tmpl;
  std::string error;
  auto t0 = std::chrono::steady_clock::now();
  if (!write_synthetic_dump(dir, spec, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  std::printf("generated %d ranks x %d threads (%.1f MB) in %.2f s into %s\n", spec.world_size,
              spec.threads_per_rank, folder_bytes(dir) / 1e6, seconds_since(t0), dir.c_str());

  t0 = std::chrono::steady_clock::now();
  const double cpu0 = cpu_seconds();
  MergeOptions options;
  options.threads = workers;
  DumpMerge dump;
  if (!merge_dump(dir, options, &dump, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  const double merge_s = seconds_since(t0);
  const double merge_cpu = cpu_seconds() - cpu0;
  t0 = std::chrono::steady_clock::now();
  const std::string out = dir + "/out";
  ::mkdir(out.c_str(), 0755);
  std::vector<std::string> written;
  if (!write_flamegraphs(dump.merged, out, &written, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  const double render_s = seconds_since(t0);
  size_t nodes = 0;
  for (const auto& v : dump.merged.views) nodes += v.nodes.size();
  std::printf(
      "load+merge %.2f s wall, %.2f s CPU (%zu files, %u workers); render %.2f s (%zu "
      "frames, %.1f MB out); total %.2f s wall\n",
      merge_s, merge_cpu, dump.files_merged, workers, render_s, nodes, folder_bytes(out) / 1e6,
      merge_s + render_s);
  if (!keep) {
    std::string cmd = "rm -rf '" + dir + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir.c_str());
  }
  return 0;
}
