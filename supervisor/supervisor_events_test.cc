// The supervisor's one way in: events posted from any thread are handled on
// the thread that runs the io_context, each once, in the order each thread
// posted them.
#include "supervisor/supervisor_events.h"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace xpu_timer::supervisor {
namespace {

TEST(EventInbox, EventsFromOtherThreadsAreHandledOnTheIoThreadInTheirOrder) {
  constexpr int kThreads = 3;
  constexpr int kEach = 2000;
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread::id io_thread;
  int off_thread = 0;
  std::map<int, std::vector<int>> seen;  // from_node -> sequence numbers in handling order
  int lingers = 0;
  EventInbox inbox(io, [&](SupervisorEvent e) {
    if (std::this_thread::get_id() != io_thread) ++off_thread;
    if (const auto* r = std::get_if<RemoteDumpRequest>(&e)) {
      seen[r->from_node].push_back(std::stoi(r->reason));
    } else if (std::holds_alternative<LingerOver>(e)) {
      ++lingers;
      work.reset();  // run() returns once nothing is left
    }
  });
  std::thread runner([&] {
    io_thread = std::this_thread::get_id();
    io.run();
  });
  std::vector<std::thread> posters;
  for (int t = 0; t < kThreads; ++t) {
    posters.emplace_back([&inbox, t] {
      for (int i = 0; i < kEach; ++i) inbox.post(RemoteDumpRequest{std::to_string(i), t});
    });
  }
  for (std::thread& p : posters) p.join();
  inbox.post(LingerOver{});  // after every other event: it is handled last
  runner.join();

  EXPECT_EQ(off_thread, 0);
  EXPECT_EQ(lingers, 1);
  ASSERT_EQ(seen.size(), static_cast<size_t>(kThreads));
  for (const auto& [node, order] : seen) {
    ASSERT_EQ(order.size(), static_cast<size_t>(kEach)) << "node " << node;
    for (int i = 0; i < kEach; ++i) ASSERT_EQ(order[i], i) << "node " << node;
  }
}

}  // namespace
}  // namespace xpu_timer::supervisor
