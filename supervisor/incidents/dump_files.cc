#include "supervisor/incidents/dump_files.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/unique_fd.h"
#include "supervisor/log_tee.h"

namespace xpu_timer::supervisor {

std::string open_dump_dir(const std::string& dir, std::string* error) {
  if (!make_directories(dir, error)) {
    *error = "--dump-dir " + dir + " is unusable: " + *error;
    return "";
  }
  // The log copy is the first file written there: creating it proves that
  // the folder takes files (a read-only mount, a folder of another user).
  if (!open_log_copy(dir + "/supervisor.log")) {
    *error = "--dump-dir " + dir + " is unusable: cannot write " + dir +
             "/supervisor.log: " + strerror(errno);
    return "";
  }
  ::unlink((dir + "/hang.json").c_str());  // they describe an earlier run
  ::unlink((dir + "/supervisor.port").c_str());
  return dir;
}

bool make_directories(const std::string& path, std::string* error) {
  if (path.empty()) {
    *error = "empty directory name";
    return false;
  }
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    const std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = "cannot create " + prefix + ": " + strerror(errno);
      return false;
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = path + " is not a directory";
    return false;
  }
  return true;
}

bool write_file_atomically(const std::string& path, const std::string& content,
                           std::string* error) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    *error = "cannot create " + tmp + ": " + strerror(errno);
    return false;
  }
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = "cannot write " + tmp + ": " + strerror(errno);
      ::unlink(tmp.c_str());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot rename " + tmp + " to " + path + ": " + strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

void write_file_or_warn(const std::string& path, const std::string& content) {
  std::string error;
  if (!write_file_atomically(path, content, &error)) SUP_LOG_WARN("%s", error.c_str());
}

}  // namespace xpu_timer::supervisor
