// libFuzzer entry for the dump routes' path resolver (dump_path.h): the input
// is the part of a request path after "/dumps", as anyone who reaches the
// port may send it. Every outcome is a refusal or a file of the dump folder:
// a parsed path is at most two plain names, and what open_dump_file() opens
// is one of the regular files written inside the folder at start-up, never
// the secret next to it that links inside point at, never a FIFO (opening
// one must not block: the fuzzer's timeout would report it); never a
// sanitizer report (ASan/UBSan in this build).
// Seeds: supervisor/http/fuzz/corpus/dump_path_fuzz/.
// Run: dump_path_fuzz -max_total_time=60 [corpus dir]
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "supervisor/http/dump_path.h"

namespace sup = xpu_timer::supervisor;

namespace {

std::string g_dump_dir;
std::set<std::pair<dev_t, ino_t>> g_inside;  // the regular files of the dump folder

void make_file(const std::string& path, bool inside) {
  std::ofstream(path) << path << "\n";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) __builtin_trap();
  if (inside) g_inside.emplace(st.st_dev, st.st_ino);
}

// The tree made below, removed at exit.
void remove_tree() {
  const std::string root = g_dump_dir.substr(0, g_dump_dir.rfind('/'));
  for (const char* f : {"/dump/stacks-1/a.svg", "/dump/stacks-1/up", "/dump/hang.json",
                        "/dump/link", "/dump/linkdir", "/dump/fifo", "/secret"}) {
    ::unlink((root + f).c_str());
  }
  for (const char* d : {"/dump/stacks-1", "/dump", ""}) ::rmdir((root + d).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/xpu_dump_path_fuzz_XXXXXX";
  const std::string root = ::mkdtemp(tmpl);
  g_dump_dir = root + "/dump";
  if (::mkdir(g_dump_dir.c_str(), 0700) != 0) __builtin_trap();
  if (::mkdir((g_dump_dir + "/stacks-1").c_str(), 0700) != 0) __builtin_trap();
  make_file(root + "/secret", false);
  make_file(g_dump_dir + "/hang.json", true);
  make_file(g_dump_dir + "/stacks-1/a.svg", true);
  if (::symlink("../secret", (g_dump_dir + "/link").c_str()) != 0 ||
      ::symlink("..", (g_dump_dir + "/linkdir").c_str()) != 0 ||
      ::symlink("../../secret", (g_dump_dir + "/stacks-1/up").c_str()) != 0 ||
      ::mkfifo((g_dump_dir + "/fifo").c_str(), 0600) != 0) {
    __builtin_trap();
  }
  std::atexit(remove_tree);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string rest(reinterpret_cast<const char*>(data), size);
  sup::DumpPath path;
  std::string why;
  bool too_deep = false;
  if (!sup::parse_dump_path(rest, &path, &why, &too_deep)) {
    if (why.empty() || why.find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  if (path.file.empty()) {
    if (!path.folder.empty()) __builtin_trap();
    return 0;  // the listing
  }
  for (const std::string* name : {&path.folder, &path.file}) {
    if (name->empty()) continue;
    if (!sup::is_plain_name(*name) || name->find('/') != std::string::npos) __builtin_trap();
  }
  const sup::OpenedDumpFile opened = sup::open_dump_file(g_dump_dir, path);
  if (opened.status != 200) {
    if (opened.fd.valid() || opened.why.empty()) __builtin_trap();
    return 0;
  }
  struct stat st {};
  if (::fstat(opened.fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) __builtin_trap();
  if (g_inside.count({st.st_dev, st.st_ino}) == 0) __builtin_trap();  // out of the folder
  return 0;
}
