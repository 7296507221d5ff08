// The one reader of the stack file (format and version rule: stack_file.h).
#include <climits>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/parse_number.h"
#include "stack/stack_file.h"
#include "stack/stack_file_keys.h"
#include "stack/stack_file_reuse.h"

namespace xpu_timer::stack {
namespace {

using Json = nlohmann::json;
using file_reuse::next;
using file_reuse::reset;

// Every integer of the format is far below these; larger ones are corrupt.
constexpr long long kMaxId = INT_MAX;  // pid, tid (pid_t) and line numbers (int)

enum class Type { kNull, kBool, kInt, kBigInt, kFloat, kString, kObject, kArray };

const char* type_name(Type t) {
  switch (t) {
    case Type::kNull:
      return "null";
    case Type::kBool:
      return "boolean";
    case Type::kInt:
    case Type::kBigInt:
    case Type::kFloat:
      return "number";
    case Type::kString:
      return "string";
    case Type::kObject:
      return "object";
    case Type::kArray:
      return "array";
  }
  return "?";
}

// "0x7f00123": at most 16 hex digits after an optional 0x.
bool parse_hex(const std::string& text, uint64_t* out) {
  const size_t i = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X') ? 2 : 0;
  if (text.size() - i > 16) return false;
  const std::optional<uint64_t> v = parse_uint(std::string_view(text).substr(i), 16);
  if (!v) return false;
  *out = *v;
  return true;
}

// A SAX handler rather than a parsed document: building nlohmann's DOM (a
// std::map per object) was 3x the cost of lexing, and a 1024-rank dump is
// hundreds of MB. The handler walks the fixed shape of the format with a small
// context stack, fills the ProcessStack as it goes, skips unknown keys whatever
// their nesting (by counting, no recursion), and keeps the first problem as a
// message naming the field.
class StackFileSax final : public nlohmann::json_sax<Json> {
 public:
  explicit StackFileSax(ProcessStack* out) : out_(out) {}

  // The error, if any, once sax_parse has returned.
  std::string error() const;

  bool null() override { return step(Type::kNull); }
  bool boolean(bool v) override {
    bool_ = v;
    return step(Type::kBool);
  }
  bool number_integer(number_integer_t v) override {
    if (at_root_version_) root_version_ = v;
    int_ = v;
    return step(Type::kInt);
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (v > static_cast<number_unsigned_t>(LLONG_MAX)) {
      big_ = std::to_string(v);
      return step(Type::kBigInt);
    }
    if (at_root_version_) root_version_ = static_cast<long long>(v);
    int_ = static_cast<long long>(v);
    return step(Type::kInt);
  }
  bool number_float(number_float_t v, const string_t&) override {
    float_ = v;
    return step(Type::kFloat);
  }
  bool string(string_t& v) override {
    str_ = &v;
    return step(Type::kString);
  }
  bool binary(binary_t&) override { return fail(where(), "unexpected binary value"); }
  bool start_object(std::size_t) override {
    ++depth_;
    return step(Type::kObject);
  }
  bool end_object() override {
    --depth_;
    return error_.empty() ? end_object_ok() || go_on() : go_on();
  }
  bool start_array(std::size_t) override {
    ++depth_;
    return step(Type::kArray);
  }
  bool end_array() override {
    --depth_;
    return error_.empty() ? end_array_ok() || go_on() : go_on();
  }
  bool key(string_t& k) override {
    at_root_version_ = depth_ == 1 && k == "version";
    if (skip_ == 0) {
      key_ = k;
      key_id_ = stack_file_key(k);
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (error_.empty()) error_ = std::string("not valid JSON: ") + e.what();
    return false;
  }

 private:
  // What the innermost open object or array is.
  enum class Ctx { kRoot, kErrors, kThreads, kThread, kFrames, kFrame };
  // Which frame list of a thread is open.
  enum class List { kNative, kPython, kMixed };

  bool fail(const std::string& where, const std::string& what) {
    if (error_.empty()) error_ = where + ": " + what;
    return false;
  }
  // Path of the value being read, e.g. "threads[3].native[2].func".
  std::string where() const;
  std::string element_path() const;  // without the key: "threads[3].native[2]"

  // After the first problem the handler reads on only until it has seen the
  // root's "version" (keys come in any order, and "version" sorts late), so
  // that a file of another version is refused as such and not for the first
  // field whose layout changed.
  bool go_on() const { return !root_version_; }
  bool step(Type t) {
    at_root_version_ = false;
    return error_.empty() ? value(t) || go_on() : go_on();
  }
  bool value(Type t);
  bool end_object_ok();
  bool end_array_ok();
  bool root_field(Type t);
  bool thread_field(Type t);
  bool frame_field(Type t);
  bool shared_frame_field(Type t, std::string* func, std::string* module, std::string* file,
                          int* line);
  bool expect_int(Type t, long long lo, long long hi, long long* out);
  bool expect_string(Type t, std::string* out, bool nullable);
  bool expect_number(Type t, double* out);
  bool expect_hex(Type t, uint64_t* out);
  bool expect_line(Type t, int* out);
  bool start_frame(Type t);
  bool finish_frame();
  bool finish_root();
  ThreadStack& thread() { return *thread_; }
  // Unknown key: skips its value, however deeply nested.
  bool skip(Type t) {
    if (t == Type::kObject || t == Type::kArray) skip_ = 1;
    return true;
  }

  ProcessStack* out_;
  std::string error_;
  std::vector<Ctx> ctx_;
  int skip_ = 0;  // > 0 while inside a value of an unknown key
  std::string key_;
  FileKey key_id_ = FileKey::kOther;
  bool bool_ = false;
  long long int_ = 0;
  double float_ = 0;
  std::string big_;
  std::string* str_ = nullptr;
  std::string scratch_;  // a string value needed only while it is checked

  int depth_ = 0;  // of objects and arrays, the root object being 1
  bool at_root_version_ = false;
  std::optional<long long> root_version_, rank_, world_size_;
  bool has_threads_ = false;
  size_t error_index_ = 0;
  List list_ = List::kNative;
  size_t frame_index_ = 0;
  // Elements of out_ taken so far (see next()), and the ones being read.
  size_t threads_used_ = 0;
  size_t frames_used_[3] = {0, 0, 0};  // per List, in thread_
  ThreadStack* thread_ = nullptr;
  NativeFrame* native_ = nullptr;
  PythonFrame* python_ = nullptr;
  MixedFrame* mixed_ = nullptr;
  bool has_func_ = false, has_kind_ = false;
};

std::string StackFileSax::error() const {
  if (root_version_ && *root_version_ != kStackFileVersion) {
    return "version: unsupported version " + std::to_string(*root_version_) +
           " (this reader reads " + std::to_string(kStackFileVersion) + ")";
  }
  return error_;
}

std::string StackFileSax::element_path() const {
  std::string p;
  for (Ctx c : ctx_) {
    switch (c) {
      case Ctx::kErrors:
        p = "errors[" + std::to_string(error_index_) + "]";
        break;
      case Ctx::kThreads:
        p = "threads[" + std::to_string(threads_used_ - (ctx_.back() == Ctx::kThreads ? 0 : 1)) +
            "]";
        break;
      case Ctx::kFrames:
        p += list_ == List::kNative ? ".native[" : list_ == List::kPython ? ".python[" : ".mixed[";
        p += std::to_string(frame_index_) + "]";
        break;
      default:
        break;
    }
  }
  return p;
}

std::string StackFileSax::where() const {
  if (ctx_.empty()) return "document";
  const Ctx top = ctx_.back();
  if (top == Ctx::kErrors || top == Ctx::kThreads || top == Ctx::kFrames) return element_path();
  const std::string base = element_path();
  return base.empty() ? key_ : base + "." + key_;
}

bool StackFileSax::expect_int(Type t, long long lo, long long hi, long long* out) {
  if (t == Type::kBigInt) return fail(where(), "out of range: " + big_);
  if (t != Type::kInt)
    return fail(where(), std::string("expected an integer, got ") + type_name(t));
  if (int_ < lo || int_ > hi) return fail(where(), "out of range: " + std::to_string(int_));
  *out = int_;
  return true;
}

bool StackFileSax::expect_string(Type t, std::string* out, bool nullable) {
  if (t == Type::kNull && nullable) {
    out->clear();
    return true;
  }
  if (t != Type::kString)
    return fail(where(), std::string("expected a string, got ") + type_name(t));
  *out = *str_;
  return true;
}

bool StackFileSax::expect_number(Type t, double* out) {
  if (t == Type::kNull) return true;
  if (t == Type::kInt) {
    *out = static_cast<double>(int_);
  } else if (t == Type::kFloat) {
    *out = float_;
  } else {
    return fail(where(), std::string("expected a number, got ") + type_name(t));
  }
  return true;
}

bool StackFileSax::expect_hex(Type t, uint64_t* out) {
  if (t == Type::kNull) return true;
  if (t != Type::kString)
    return fail(where(), std::string("expected a hex string, got ") + type_name(t));
  if (!parse_hex(*str_, out)) return fail(where(), "expected a hex string such as \"0x1f\"");
  return true;
}

bool StackFileSax::expect_line(Type t, int* out) {
  if (t == Type::kNull) return true;
  long long v = 0;
  if (!expect_int(t, 0, kMaxId, &v)) return false;
  *out = static_cast<int>(v);
  return true;
}

bool StackFileSax::value(Type t) {
  if (skip_ > 0) {
    if (t == Type::kObject || t == Type::kArray) ++skip_;
    return true;
  }
  if (ctx_.empty()) {
    if (t != Type::kObject)
      return fail("document", std::string("expected a JSON object, got ") + type_name(t));
    reset(out_);
    ctx_.push_back(Ctx::kRoot);
    return true;
  }
  switch (ctx_.back()) {
    case Ctx::kRoot:
      return root_field(t);
    case Ctx::kThread:
      return thread_field(t);
    case Ctx::kFrame:
      return frame_field(t);
    case Ctx::kErrors:
      if (t != Type::kString) return fail(where(), "expected a string");
      out_->errors.push_back(*str_);
      ++error_index_;
      return true;
    case Ctx::kThreads:
      if (t != Type::kObject)
        return fail(where(), std::string("expected an object, got ") + type_name(t));
      thread_ = next(&out_->threads, &threads_used_);
      frames_used_[0] = frames_used_[1] = frames_used_[2] = 0;
      ctx_.push_back(Ctx::kThread);
      return true;
    case Ctx::kFrames:
      return start_frame(t);
  }
  return true;
}

bool StackFileSax::root_field(Type t) {
  long long v = 0;
  switch (key_id_) {
    case FileKey::kVersion:  // its value is kept by number_integer()
      return expect_int(t, 0, INT_MAX, &v);
    case FileKey::kWorldSize:
      if (!expect_int(t, 1, kMaxWorldSize, &v)) return false;
      world_size_ = v;
      return true;
    case FileKey::kRank:
      if (!expect_int(t, 0, kMaxWorldSize - 1, &v)) return false;
      rank_ = v;
      return true;
    case FileKey::kPid:
      if (t == Type::kNull) return true;
      if (!expect_int(t, 0, kMaxId, &v)) return false;
      out_->pid = static_cast<pid_t>(v);
      return true;
    case FileKey::kHost:
      return expect_string(t, &out_->host, true);
    case FileKey::kProcessState:
      return expect_string(t, &out_->process_state, true);
    case FileKey::kCollectedAt:
      return expect_number(t, &out_->collected_at);
    case FileKey::kStoppedMs:
      return expect_number(t, &out_->stopped_ms);
    case FileKey::kPythonVersion:
      if (t == Type::kNull) {
        out_->python_version.reset();
        return true;
      }
      return expect_string(t, &out_->python_version.emplace(), false);
    case FileKey::kErrors:
    case FileKey::kThreads:
      if (t == Type::kNull && key_id_ == FileKey::kErrors) return true;
      if (t != Type::kArray) {
        return fail(where(), std::string("expected an array, got ") + type_name(t));
      }
      has_threads_ |= key_id_ == FileKey::kThreads;
      ctx_.push_back(key_id_ == FileKey::kThreads ? Ctx::kThreads : Ctx::kErrors);
      return true;
    default:
      return skip(t);
  }
}

bool StackFileSax::thread_field(Type t) {
  long long v = 0;
  switch (key_id_) {
    case FileKey::kTid:
      if (t == Type::kNull) return true;
      if (!expect_int(t, 0, kMaxId, &v)) return false;
      thread().tid = static_cast<pid_t>(v);
      return true;
    case FileKey::kName:
      return expect_string(t, &thread().name, true);
    case FileKey::kState: {
      if (!expect_string(t, &scratch_, true)) return false;
      thread().state = scratch_.empty() ? '?' : scratch_[0];
      return true;
    }
    case FileKey::kHoldsGil:
      if (t == Type::kNull) {
        thread().holds_gil.reset();
        return true;
      }
      if (t != Type::kBool) {
        return fail(where(), std::string("expected true/false, got ") + type_name(t));
      }
      thread().holds_gil = bool_;
      return true;
    case FileKey::kNative:
    case FileKey::kPython:
    case FileKey::kMixed:
      if (t == Type::kNull) return true;
      if (t != Type::kArray) {
        return fail(where(), std::string("expected an array, got ") + type_name(t));
      }
      list_ = key_id_ == FileKey::kNative   ? List::kNative
              : key_id_ == FileKey::kPython ? List::kPython
                                            : List::kMixed;
      frame_index_ = frames_used_[static_cast<int>(list_)];
      ctx_.push_back(Ctx::kFrames);
      return true;
    default:
      return skip(t);
  }
}

bool StackFileSax::start_frame(Type t) {
  if (t != Type::kObject)
    return fail(where(), std::string("expected an object, got ") + type_name(t));
  size_t* used = &frames_used_[static_cast<int>(list_)];
  switch (list_) {
    case List::kNative:
      native_ = next(&thread().native, used);
      break;
    case List::kPython:
      python_ = next(&thread().python, used);
      break;
    case List::kMixed:
      mixed_ = next(&thread().mixed, used);
      break;
  }
  has_func_ = has_kind_ = false;
  ctx_.push_back(Ctx::kFrame);
  return true;
}

// The keys every kind of frame has: func, file, line, and module where
// `module` is not null; any other key is skipped.
bool StackFileSax::shared_frame_field(Type t, std::string* func, std::string* module,
                                      std::string* file, int* line) {
  switch (key_id_) {
    case FileKey::kFunc:
      has_func_ = true;
      return expect_string(t, func, false);
    case FileKey::kModule:
      return module == nullptr ? skip(t) : expect_string(t, module, true);
    case FileKey::kFile:
      return expect_string(t, file, true);
    case FileKey::kLine:
      return expect_line(t, line);
    default:
      return skip(t);
  }
}

bool StackFileSax::frame_field(Type t) {
  switch (list_) {
    case List::kNative: {
      NativeFrame& f = *native_;
      switch (key_id_) {
        case FileKey::kPc:
          return expect_hex(t, &f.pc);
        case FileKey::kOffset:
          return expect_hex(t, &f.offset);
        case FileKey::kInlined:
          if (t == Type::kNull) return true;
          if (t != Type::kBool) {
            return fail(where(), std::string("expected true/false, got ") + type_name(t));
          }
          f.inlined = bool_;
          return true;
        default:
          return shared_frame_field(t, &f.func, &f.module, &f.file, &f.line);
      }
    }
    case List::kPython:
      return shared_frame_field(t, &python_->func, nullptr, &python_->file, &python_->line);
    case List::kMixed: {
      MixedFrame& f = *mixed_;
      if (key_id_ != FileKey::kKind) {
        return shared_frame_field(t, &f.func, &f.module, &f.file, &f.line);
      }
      has_kind_ = true;
      if (!expect_string(t, &scratch_, false)) return false;
      if (scratch_ != "python" && scratch_ != "native") {
        return fail(where(),
                    "expected \"native\" or \"python\", got \"" + scratch_.substr(0, 64) + "\"");
      }
      f.python = scratch_ == "python";
      return true;
    }
  }
  return skip(t);
}

bool StackFileSax::finish_frame() {
  if (!has_func_) return fail(element_path() + ".func", "missing");
  if (list_ == List::kMixed && !has_kind_) return fail(element_path() + ".kind", "missing");
  ++frame_index_;
  return true;
}

bool StackFileSax::finish_root() {
  if (!root_version_) return fail("version", "missing");
  if (!world_size_) return fail("world_size", "missing");
  if (!rank_) return fail("rank", "missing");
  if (*rank_ >= *world_size_) return fail("rank", "out of range: " + std::to_string(*rank_));
  if (!has_threads_) return fail("threads", "missing");
  out_->threads.resize(threads_used_);
  out_->version = kStackFileVersion;
  out_->rank = static_cast<int>(*rank_);
  out_->world_size = static_cast<int>(*world_size_);
  return true;
}

bool StackFileSax::end_object_ok() {
  if (skip_ > 0) {
    --skip_;
    return true;
  }
  const Ctx c = ctx_.back();
  ctx_.pop_back();
  if (c == Ctx::kFrame) return finish_frame();
  if (c == Ctx::kThread) {
    thread().native.resize(frames_used_[static_cast<int>(List::kNative)]);
    thread().python.resize(frames_used_[static_cast<int>(List::kPython)]);
    thread().mixed.resize(frames_used_[static_cast<int>(List::kMixed)]);
    return true;
  }
  if (c == Ctx::kRoot) return finish_root();
  return true;
}

bool StackFileSax::end_array_ok() {
  if (skip_ > 0) {
    --skip_;
    return true;
  }
  ctx_.pop_back();
  return true;
}

}  // namespace

bool parse_stack_file(std::string_view text, ProcessStack* out, std::string* error) {
  StackFileSax sax(out);
  // nlohmann reports syntax errors through the handler; only allocation
  // failure (a hostile size) or a library bug can still throw.
  try {
    const bool parsed_all = Json::sax_parse(text.begin(), text.end(), &sax);
    if (parsed_all && sax.error().empty()) return true;
    *error = sax.error().empty() ? "not valid JSON" : sax.error();
  } catch (const std::exception& e) {
    *error = std::string("cannot decode: ") + e.what();
  }
  return false;
}

std::optional<ProcessStack> parse_stack_file(std::string_view text, std::string* error) {
  ProcessStack stack;
  if (!parse_stack_file(text, &stack, error)) return std::nullopt;
  return stack;
}

}  // namespace xpu_timer::stack
