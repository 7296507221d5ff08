// What reaches the supervisor from its components, as data: the one way in
// (docs/architecture.md "The supervisor"). A component that finishes work on
// a thread of its own (a stack dump, the job view's store calls) or notices
// something the supervisor must act on (the job ended, the plugins are done)
// hands an event to the EventInbox; the asio thread takes the events one at a
// time, in the order they were posted, and Supervisor::handle() says what each
// leads to. No component calls a method of the Supervisor.
//
// Threads: post() from any thread; the handler runs on the asio thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>

#include "supervisor/analysis/collective_check.h"
#include "supervisor/incidents/mismatch_incident.h"
#include "supervisor/job/exit_status.h"

namespace xpu_timer::supervisor {

struct StackDumpReport;

// A stack dump ended: a hang's, or one asked for over HTTP.
struct StacksDone {
  std::shared_ptr<const StackDumpReport> report;
};
// The stack dump a collective mismatch asked for ended.
struct MismatchStacksDone {
  MismatchStacks stacks;
};
// Another node asked every node for its dumps (coordination/dump_requests.h).
struct RemoteDumpRequest {
  std::string reason;
  int from_node = -1;
};
// A collective mismatch another node published for the whole job.
struct JobMismatch {
  Mismatch mismatch;
  int from_node = -1;
};
// The job's main process has exited and its leftovers are gone.
struct JobEnded {
  JobExit exit;
};
// At the job's end: the crash plugins are done, or /metrics lingered long enough.
struct PluginsIdle {};
struct LingerOver {};

using SupervisorEvent = std::variant<StacksDone, MismatchStacksDone, RemoteDumpRequest, JobMismatch,
                                     JobEnded, PluginsIdle, LingerOver>;

class EventInbox {
 public:
  using Handler = std::function<void(SupervisorEvent)>;

  // `io` must outlive this; `handler` runs on the thread that runs `io`.
  EventInbox(boost::asio::io_context& io, Handler handler)
      : io_(io), handler_(std::move(handler)) {}

  // Any thread: `event` is handled after every event posted before it (asio
  // runs posted handlers in order on its one thread).
  void post(SupervisorEvent event) {
    boost::asio::post(io_, [this, e = std::move(event)]() mutable { handler_(std::move(e)); });
  }

 private:
  boost::asio::io_context& io_;
  const Handler handler_;
};

}  // namespace xpu_timer::supervisor
