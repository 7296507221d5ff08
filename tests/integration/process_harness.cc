#include "tests/integration/process_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

extern char** environ;

namespace xpu_timer::testing {

std::string build_dir() { return XPU_TIMER_TEST_BUILD_DIR; }
std::string source_dir() { return XPU_TIMER_TEST_SOURCE_DIR; }
std::string python3() { return XPU_TIMER_TEST_PYTHON3; }

std::string describe(const ExitStatus& s) {
  if (s.exited) return "exit code " + std::to_string(s.code);
  if (s.signaled) return std::string("signal ") + strsignal(s.signal);
  return "unknown";
}

namespace {
ExitStatus from_wait_status(int st) {
  ExitStatus s;
  if (WIFEXITED(st)) {
    s.exited = true;
    s.code = WEXITSTATUS(st);
  } else if (WIFSIGNALED(st)) {
    s.signaled = true;
    s.signal = WTERMSIG(st);
  }
  return s;
}
}  // namespace

Child::Child(std::vector<std::string> argv, std::vector<std::string> env,
             const std::string& log_path) {
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) envs.emplace_back(*e);
  for (const auto& kv : env) {
    const std::string name = kv.substr(0, kv.find('='));
    for (auto it = envs.begin(); it != envs.end();) {
      it = (it->compare(0, name.size() + 1, name + "=") == 0) ? envs.erase(it) : it + 1;
    }
    if (kv.size() > name.size() + 1) envs.push_back(kv);
  }
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : envs) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    ADD_FAILURE() << "open " << log_path << ": " << std::strerror(errno);
    return;
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    std::fprintf(stderr, "exec %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(fd);
  if (pid_ < 0) ADD_FAILURE() << "fork: " << std::strerror(errno);
  if (pid_ > 0) ::setpgid(pid_, pid_);  // also from the parent: no race with signals
}

Child::~Child() {
  if (pid_ > 0 && !status_) kill_group();
}

std::optional<ExitStatus> Child::wait_for(std::chrono::milliseconds timeout) {
  if (status_ || pid_ <= 0) return status_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int st = 0;
    const pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = from_wait_status(st);
      return status_;
    }
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Child::signal(int sig) {
  if (pid_ > 0 && !status_) ::kill(pid_, sig);
}

void Child::kill_group() {
  if (pid_ <= 0 || status_) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  wait_for(std::chrono::seconds(10));
}

ExitStatus run_to_end(std::vector<std::string> argv, std::vector<std::string> env,
                      const std::string& log_path, std::chrono::milliseconds timeout) {
  Child c(std::move(argv), std::move(env), log_path);
  auto s = c.wait_for(timeout);
  if (!s) {
    ADD_FAILURE() << "process did not end within " << timeout.count() << " ms; log "
                  << log_path << ":\n"
                  << read_file(log_path);
    c.kill_group();
    return {};
  }
  return *s;
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string make_temp_dir(const std::string& name) {
  std::string tmpl = build_dir() + "/test-tmp";
  ::mkdir(tmpl.c_str(), 0755);
  tmpl += "/" + name + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp: " << std::strerror(errno);
  return tmpl;
}

std::optional<HttpReply> http_get(int port, const std::string& path) {
  return http_request(port, "GET", path);
}

std::optional<HttpReply> http_post(int port, const std::string& path) {
  return http_request(port, "POST", path);
}

std::optional<HttpReply> http_request(int port, const std::string& method,
                                      const std::string& path) {
  // Plain HTTP/1.0: the test must not depend on the HTTP library under test.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  const std::string req =
      method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n";
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return std::nullopt;
  }
  std::string raw;
  char buf[65536];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  const auto head_end = raw.find("\r\n\r\n");
  if (raw.compare(0, 5, "HTTP/") != 0 || head_end == std::string::npos) return std::nullopt;
  HttpReply reply;
  reply.status = std::atoi(raw.c_str() + raw.find(' ') + 1);
  reply.body = raw.substr(head_end + 4);
  return reply;
}

bool process_alive(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  const auto rp = line.rfind(')');
  return rp != std::string::npos && rp + 2 < line.size() && line[rp + 2] != 'Z';
}

}  // namespace xpu_timer::testing
