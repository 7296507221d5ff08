#include "timeline/trace_sink.h"

#include <cerrno>

namespace xpu_timer::timeline {

constexpr size_t kFlushBytes = 1u << 20;

TraceSink::TraceSink(std::FILE* file) : file_(file) {}

void TraceSink::begin() { text_ += "{\"traceEvents\":[\n"; }

void TraceSink::add(const nlohmann::json& event) {
  if (events_ > 0) text_ += ",\n";
  // Paths and hang.json strings may hold invalid UTF-8: replaced, never thrown.
  text_ += event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  ++events_;
  flush_if(kFlushBytes);
}

void TraceSink::end(const nlohmann::json& other_data) {
  text_ += "\n],\n\"otherData\":";
  text_ += other_data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text_ += "}\n";
  flush_if(0);
  if (file_ != nullptr && write_errno_ == 0 && std::fflush(file_) != 0) write_errno_ = errno;
}

void TraceSink::flush_if(size_t threshold) {
  if (file_ == nullptr || text_.size() < threshold || text_.empty()) return;
  if (write_errno_ == 0 && std::fwrite(text_.data(), 1, text_.size(), file_) != text_.size()) {
    write_errno_ = errno != 0 ? errno : EIO;
  }
  text_.clear();
}

}  // namespace xpu_timer::timeline
