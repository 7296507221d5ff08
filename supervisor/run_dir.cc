#include "supervisor/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>
#include <vector>

namespace xpu_timer::supervisor {

RunDir RunDir::create(std::string* error) {
  std::string last_error;
  for (const char* base : {"/dev/shm", "/tmp"}) {
    std::string templ = std::string(base) + "/xpu_timer.XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) return RunDir(std::string(buf.data()));
    last_error = templ + ": " + strerror(errno);
  }
  if (error != nullptr) *error = "cannot create a run directory: " + last_error;
  return RunDir();
}

RunDir::~RunDir() { remove(); }

RunDir::RunDir(RunDir&& other) noexcept : path_(std::exchange(other.path_, std::string())) {}

RunDir& RunDir::operator=(RunDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, std::string());
  }
  return *this;
}

void RunDir::remove() {
  if (path_.empty()) return;
  // Only one level: the socket and the page files; nothing else lives here.
  if (DIR* dir = ::opendir(path_.c_str())) {
    std::vector<std::string> names;
    while (const dirent* ent = ::readdir(dir)) {
      const std::string name = ent->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(dir);
    for (const std::string& n : names) ::unlink((path_ + "/" + n).c_str());
  }
  ::rmdir(path_.c_str());
  path_.clear();
}

}  // namespace xpu_timer::supervisor
