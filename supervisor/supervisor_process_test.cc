// Runs the real xpu_timer_supervisor binary on real child processes. The
// job writes to fd 3 (the readiness pipe of tests/harness/child_process.h,
// inherited through the supervisor) when it is ready; this test acts
// as the ranks' injected library (status pages + socket registration) to
// drive hang detection and the HTTP endpoints end to end.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/op_names.h"
#include "common/rank_messages.h"
#include "common/status_page_layout.h"
#include "tests/harness/child_process.h"

namespace {

using namespace std::chrono_literals;
namespace proto = xpu_timer::proto;
using xpu_timer::monotonic_ns;
using xpu_timer::testing::Child;
using xpu_timer::testing::ChildOptions;
using xpu_timer::testing::ExitStatus;
using xpu_timer::testing::read_file;
using xpu_timer::testing::wait_until;
constexpr uint64_t kComm = 0x1a2b3c4d5e6f7a8bull;

struct HttpReply {
  int status = 0;
  std::string headers;
  std::string body;
};

HttpReply http_get(int port, const std::string& path) {
  HttpReply reply;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return reply;
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: x\r\n\r\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return reply;
  }
  std::string all;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    all.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const size_t split = all.find("\r\n\r\n");
  if (all.rfind("HTTP/1.", 0) != 0 || split == std::string::npos) return reply;
  reply.status = std::atoi(all.c_str() + 9);
  reply.headers = all.substr(0, split);
  reply.body = all.substr(split + 4);
  return reply;
}

class SupervisorProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/xpu_sup_test.XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
    fake_lib_ = dir_ + "/libfake_inject.so";
    std::ofstream(fake_lib_).put('\n');
  }
  void TearDown() override {
    supervisor_.reset();  // killed (its process group) and reaped
    for (int fd : rank_fds_) close(fd);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    EXPECT_FALSE(ec) << "remove " << dir_ << ": " << ec.message();
  }

  // Starts the supervisor; fd 3 of the job is the readiness pipe.
  void start(const std::vector<std::string>& args, bool watched) {
    std::vector<std::string> argv = {XPU_TIMER_SUPERVISOR_BIN, "--port", "0", "--dump-dir",
                                     dir_ + "/dump"};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildOptions options;
    options.ready_fd = 3;
    supervisor_ = Child::start(
        argv,
        {std::string("XPU_TIMER_INJECT_LIB=") + (watched ? fake_lib_ : "/nonexistent/lib.so"),
         "XPU_TIMER_HANG_TIMEOUT=", "XPU_TIMER_HANG_KILL=", "XPU_TIMER_BASEPORT="},
        options);
  }

  // A line the job wrote to fd 3 ("" on timeout or EOF).
  std::string read_ready_line() { return supervisor_->wait_ready_line(10s); }

  // How the supervisor ended; neither exited nor signaled while it still runs.
  ExitStatus wait_exit(std::chrono::milliseconds timeout) {
    return supervisor_->wait_for(timeout).value_or(ExitStatus{});
  }

  // The port the supervisor wrote once it listens; -1 if it did not within 10 s.
  int http_port() {
    const std::string path = dir_ + "/dump/supervisor.port";
    std::string text;
    if (!wait_until([&] { return !(text = read_file(path)).empty(); }, 10s)) return -1;
    return std::atoi(text.c_str());
  }

  // ---- the fake injected library ----
  proto::StatusPage* create_page(const std::string& run_dir, int rank, int world) {
    const std::string path =
        run_dir + "/rank-" + std::to_string(rank) + "-" + std::to_string(getpid()) + ".page";
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, sizeof(proto::StatusPage)), 0);
    void* addr =
        mmap(nullptr, sizeof(proto::StatusPage), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    auto* page = static_cast<proto::StatusPage*>(addr);
    page->magic = proto::kStatusPageMagic;
    page->version = proto::kStatusPageVersion;
    page->page_bytes = sizeof(proto::StatusPage);
    page->pid = getpid();
    page->rank = rank;
    page->local_rank = rank;
    page->world_size = world;
    page->local_world_size = world;
    page->heartbeat_ns.store(monotonic_ns());
    page->ncomms = 1;
    page->comms[0] = proto::CommSlot{kComm, world, rank, 5, 5, 0, 0, {}};
    page->issued_total = page->completed_total = 5;
    pages_[rank] = page;
    paths_[rank] = path;
    return page;
  }

  void register_rank(const std::string& socket_path, int rank, int world) {
    proto::RegisterInfo info;
    info.pid = getpid();
    info.identity.rank = rank;
    info.identity.local_rank = rank;
    info.identity.world_size = world;
    info.identity.local_world_size = world;
    info.hostname = "fakehost";
    info.status_path = paths_[rank].c_str();
    proto::RegisterMsg m;
    ASSERT_TRUE(proto::encode_register(info, &m));
    send_packet(socket_path, &m, sizeof(m));
  }

  void send_packet(const std::string& socket_path, const void* data, size_t len) {
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_path.c_str());
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(send(fd, data, len, 0), static_cast<ssize_t>(len));
    rank_fds_.push_back(fd);
  }

  template <typename F>
  void update(int rank, F&& edit) {
    proto::StatusPage* p = pages_[rank];
    p->seq.fetch_add(1);
    edit(p);
    p->seq.fetch_add(1);
  }

  void beat_all() {
    for (auto& [rank, page] : pages_) page->heartbeat_ns.store(monotonic_ns());
  }

  // Polls GET /hang until its `key` ("hung", "stalled") equals `want`
  // (heartbeats kept fresh).
  nlohmann::json wait_hung(int port, bool want, const char* key = "hung") {
    for (int i = 0; i < 500; ++i) {
      beat_all();
      const HttpReply r = http_get(port, "/hang");
      if (r.status == 200) {
        auto j = nlohmann::json::parse(r.body, nullptr, false);
        if (!j.is_discarded() && j[key] == want) return j;
      }
      std::this_thread::sleep_for(20ms);
    }
    return nullptr;
  }

  void start_stuck(int rank, uint64_t seq) {
    update(rank, [&](proto::StatusPage* p) {
      p->issued_total += 1;
      p->inflight_count = 1;
      p->oldest_inflight = proto::OpRef{};
      p->oldest_inflight.name = static_cast<uint16_t>(proto::OpName::kAllReduce);
      p->oldest_inflight.kind = static_cast<uint8_t>(proto::OpKind::kNccl);
      p->oldest_inflight.dtype = static_cast<uint8_t>(proto::DType::kBF16);
      p->oldest_inflight.group_size = 1;
      p->oldest_inflight.comm_hash = kComm;
      p->oldest_inflight.seq = seq;
      p->oldest_inflight.launch_ns = monotonic_ns() - 3'000'000'000ull;
      p->oldest_inflight.started_ns = p->oldest_inflight.launch_ns;  // running on the GPU
      p->oldest_inflight.bytes = 1 << 20;
      p->comms[0].issued_seq = seq;
    });
  }

  std::string dir_;
  std::string fake_lib_;
  std::unique_ptr<Child> supervisor_;
  std::vector<int> rank_fds_;
  std::map<int, proto::StatusPage*> pages_;
  std::map<int, std::string> paths_;
};

TEST_F(SupervisorProcessTest, ExitCodeOfTheJobIsOurs) {
  start({"--", "sh", "-c", "exit 3"}, false);
  const ExitStatus status = wait_exit(20s);
  ASSERT_TRUE(status.exited) << describe(status);
  EXPECT_EQ(status.code, 3);
}

TEST_F(SupervisorProcessTest, DeathBySignalIsReproduced) {
  start({"--", "sh", "-c", "kill -TERM $$"}, false);
  const ExitStatus status = wait_exit(20s);
  ASSERT_TRUE(status.signaled) << describe(status);
  EXPECT_EQ(status.signal, SIGTERM);
}

TEST_F(SupervisorProcessTest, CommandNotFoundIs127AndBadOptionIs2) {
  start({"--", "/nonexistent/command"}, false);
  ExitStatus status = wait_exit(20s);
  ASSERT_TRUE(status.exited) << describe(status);
  EXPECT_EQ(status.code, 127);
  start({"--on-hang", "sometimes", "--", "true"}, false);
  status = wait_exit(20s);
  ASSERT_TRUE(status.exited) << describe(status);
  EXPECT_EQ(status.code, 2);
}

TEST_F(SupervisorProcessTest, SigtermEndsTheJobAndAStubbornGrandchildWithNoOrphan) {
  // The grandchild ignores SIGTERM (the disposition survives exec) and says
  // its pid on fd 3; its parent shell waits and dies of the forwarded SIGTERM.
  start({"--kill-grace", "1", "--", "sh", "-c",
         "sh -c 'trap \"\" TERM; echo $$ >&3; exec sleep 1000' & wait"},
        false);
  const std::string line = read_ready_line();
  ASSERT_FALSE(line.empty()) << "the job never said it was ready";
  const pid_t grandchild = std::atoi(line.c_str());
  ASSERT_GT(grandchild, 0);
  ASSERT_EQ(kill(grandchild, 0), 0);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(supervisor_->signal(SIGTERM));
  const ExitStatus status = wait_exit(15s);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(status.signaled) << describe(status);
  EXPECT_EQ(status.signal, SIGTERM);
  EXPECT_LT(took, 6s);
  EXPECT_GE(took, 900ms);  // the grandchild got its grace
  EXPECT_EQ(kill(grandchild, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  if (kill(grandchild, 0) == 0) kill(grandchild, SIGKILL);
}

TEST_F(SupervisorProcessTest, FakeRanksHangIsReportedAndClears) {
  start({"--hang-timeout", "1", "--poll-ms", "50", "--", "sh", "-c",
         "echo \"$XPU_TIMER_SOCKET $XPU_TIMER_RUN_DIR\" >&3; exec sleep 1000"},
        true);
  const std::string line = read_ready_line();
  const size_t space = line.find(' ');
  ASSERT_NE(space, std::string::npos) << "job said '" << line << "'";
  const std::string socket_path = line.substr(0, space);
  const std::string run_dir = line.substr(space + 1);
  ASSERT_FALSE(socket_path.empty());
  const int port = http_port();
  ASSERT_GT(port, 0);

  // A malformed packet costs its connection only.
  const char garbage[10] = "garbage!!";
  send_packet(socket_path, garbage, sizeof(garbage));

  for (int r = 0; r < 4; ++r) {
    create_page(run_dir, r, 4);
    register_rank(socket_path, r, 4);
  }
  for (int r : {0, 1, 3}) start_stuck(r, 6);

  nlohmann::json hang = wait_hung(port, true);
  ASSERT_TRUE(hang.is_object()) << "no hang reported";
  const std::string summary = hang["summary"];
  EXPECT_EQ(summary.rfind("ranks 0,1,3 stuck in AllReduce #6 on comm 1a2b3c4d5e6f7a8b for ", 0), 0u)
      << summary;
  EXPECT_NE(summary.find("; rank 2 missing (last completed #5 on that comm)"), std::string::npos)
      << summary;
  ASSERT_EQ(hang["ranks"].size(), 4u);
  EXPECT_EQ(hang["ranks"][2]["state"], "missing");
  EXPECT_EQ(hang["ranks"][0]["state"], "stuck");
  EXPECT_EQ(hang["ranks"][0]["operation"]["comm"], "1a2b3c4d5e6f7a8b");

  // hang.json is written after GET /hang has the verdict (same poll, later).
  nlohmann::json file;
  ASSERT_TRUE(wait_until(
      [&] {
        file = nlohmann::json::parse(read_file(dir_ + "/dump/hang.json"), nullptr, false);
        return file.is_object() && file.value("hung", false);
      },
      10s))
      << "hang.json never said hung";
  EXPECT_EQ(file["hung"], true);

  const HttpReply metrics = http_get(port, "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.headers.find("text/plain; version=0.0.4"), std::string::npos);
  // job_name: the supervised command's file name (no XPU_TIMER_JOB_NAME here).
  auto has_series = [&](const std::string& prefix, const std::string& rest) {
    const size_t at = metrics.body.find(prefix);
    return at != std::string::npos && metrics.body.find(rest, at) == metrics.body.find('}', at);
  };
  EXPECT_TRUE(has_series("xpu_timer_hang{rank=\"0\",local_rank=\"0\",host=\"fakehost\",job_name=",
                         "} 1\n"))
      << metrics.body;
  EXPECT_TRUE(has_series("xpu_timer_hang{rank=\"2\",local_rank=\"2\",host=\"fakehost\",job_name=",
                         "} 0\n"));
  EXPECT_TRUE(has_series("xpu_timer_job_hung{job_name=", "} 1\n"));

  const HttpReply ranks = http_get(port, "/ranks");
  EXPECT_EQ(ranks.status, 200);
  const auto rj = nlohmann::json::parse(ranks.body, nullptr, false);
  ASSERT_TRUE(rj.is_array());
  EXPECT_EQ(rj.size(), 4u);

  EXPECT_EQ(http_get(port, "/nope").status, 404);
  EXPECT_EQ(http_get(port, "/healthz").body, "ok\n");

  // Everyone completes #6: the hang clears.
  for (int r = 0; r < 4; ++r) {
    update(r, [](proto::StatusPage* p) {
      p->inflight_count = 0;
      p->issued_total = p->completed_total = 6;
      p->comms[0].issued_seq = p->comms[0].completed_seq = 6;
    });
  }
  EXPECT_TRUE(wait_hung(port, false).is_object());

  ASSERT_TRUE(supervisor_->signal(SIGTERM));
  const ExitStatus status = wait_exit(15s);
  ASSERT_TRUE(status.signaled) << describe(status);
  EXPECT_EQ(status.signal, SIGTERM);
  const std::string log = read_file(dir_ + "/dump/supervisor.log");
  EXPECT_NE(log.find("hang: ranks 0,1,3 stuck in AllReduce #6"), std::string::npos) << log;
  EXPECT_NE(log.find("hang cleared"), std::string::npos) << log;
  EXPECT_NE(log.find("rank link 1: dropped: message of 10 bytes is too short"), std::string::npos)
      << log;
}

TEST_F(SupervisorProcessTest, OnHangKillEndsTheJob) {
  start({"--hang-timeout", "1", "--poll-ms", "50", "--on-hang", "kill", "--kill-grace", "2", "--",
         "sh", "-c", "echo \"$XPU_TIMER_SOCKET $XPU_TIMER_RUN_DIR\" >&3; exec sleep 1000"},
        true);
  const std::string line = read_ready_line();
  const size_t space = line.find(' ');
  ASSERT_NE(space, std::string::npos) << "job said '" << line << "'";
  create_page(line.substr(space + 1), 0, 1);
  register_rank(line.substr(0, space), 0, 1);
  start_stuck(0, 6);
  beat_all();
  const ExitStatus status = wait_exit(15s);
  ASSERT_TRUE(status.signaled) << "the job was not killed: " << describe(status);
  EXPECT_EQ(status.signal, SIGTERM);  // the job's death, passed on
  const auto file = nlohmann::json::parse(read_file(dir_ + "/dump/hang.json"), nullptr, false);
  ASSERT_FALSE(file.is_discarded());
  EXPECT_EQ(file["summary"].get<std::string>().rfind("rank 0 stuck in AllReduce #6", 0), 0u);
}

// Two idle fake ranks, nothing issued or completed for 2 x 1 s: stalled on
// GET /hang, /metrics, hang.json and the log, dumped, never killed under
// --on-hang kill, and cleared by one completion.
TEST_F(SupervisorProcessTest, FakeRanksStallIsReportedNeverKilledAndClears) {
  start({"--hang-timeout", "1", "--stall-factor", "2", "--poll-ms", "50", "--on-hang", "kill",
         "--kill-grace", "2", "--", "sh", "-c",
         "echo \"$XPU_TIMER_SOCKET $XPU_TIMER_RUN_DIR\" >&3; exec sleep 1000"},
        true);
  const std::string line = read_ready_line();
  const size_t space = line.find(' ');
  ASSERT_NE(space, std::string::npos) << "job said '" << line << "'";
  const int port = http_port();
  ASSERT_GT(port, 0);
  for (int r = 0; r < 2; ++r) {
    create_page(line.substr(space + 1), r, 2);
    register_rank(line.substr(0, space), r, 2);
  }
  const nlohmann::json stall = wait_hung(port, true, "stalled");
  ASSERT_TRUE(stall.is_object()) << "no stall reported";
  EXPECT_EQ(stall["hung"], false);
  EXPECT_TRUE(stall["stalled_since"].is_number());
  EXPECT_EQ(stall["summary"].get<std::string>().rfind(
                "ranks 0-1 stalled: nothing in flight and nothing issued or completed for ", 0),
            0u)
      << stall["summary"];
  ASSERT_EQ(stall["ranks"].size(), 2u);
  EXPECT_EQ(stall["ranks"][0]["state"], "stalled");
  EXPECT_EQ(stall["ranks"][1]["state"], "stalled");

  const HttpReply metrics = http_get(port, "/metrics");
  EXPECT_TRUE(std::regex_search(metrics.body,
                                std::regex(R"(\nxpu_timer_job_stalled\{job_name="[^"]*"\} 1\n)")))
      << metrics.body;
  EXPECT_TRUE(std::regex_search(metrics.body,
                                std::regex(R"(\nxpu_timer_job_hung\{job_name="[^"]*"\} 0\n)")));
  EXPECT_TRUE(std::regex_search(
      metrics.body, std::regex(R"(xpu_timer_rank_state\{rank="1",[^}]*state="stalled"\} 1\n)")))
      << metrics.body;

  // hang.json says it once its stack dump ended, and the job still runs.
  nlohmann::json file;
  ASSERT_TRUE(wait_until(
      [&] {
        beat_all();
        file = nlohmann::json::parse(read_file(dir_ + "/dump/hang.json"), nullptr, false);
        return file.is_object() && file.value("stalled", false) && file["stacks"].is_object() &&
               !file["stacks"].value("in_progress", true);
      },
      30s))
      << file.dump(2);
  EXPECT_EQ(file["stacks"]["reason"], "stall");
  EXPECT_TRUE(wait_hung(port, true, "stalled").is_object());  // polled on after the dump
  EXPECT_FALSE(supervisor_->wait_for(0ms).has_value()) << "the job was ended for a stall";

  // One completion clears it.
  update(1, [](proto::StatusPage* p) { p->issued_total = p->completed_total = 6; });
  EXPECT_TRUE(wait_hung(port, false, "stalled").is_object());

  ASSERT_TRUE(supervisor_->signal(SIGTERM));
  const ExitStatus status = wait_exit(15s);
  ASSERT_TRUE(status.signaled) << describe(status);
  const std::string log = read_file(dir_ + "/dump/supervisor.log");
  EXPECT_NE(log.find("stall: ranks 0-1 stalled: nothing in flight"), std::string::npos) << log;
  EXPECT_NE(log.find("stall cleared"), std::string::npos) << log;
  EXPECT_EQ(log.find("--on-hang kill"), std::string::npos) << log;
}

}  // namespace
