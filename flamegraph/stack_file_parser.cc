#include "flamegraph/stack_file_parser.h"

#include <algorithm>
#include <climits>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>
#include <vector>

#include "flamegraph/frame_label.h"

namespace xpu_timer::flamegraph {

const char* view_name(View view) {
  switch (view) {
    case View::kCpp:
      return "cpp";
    case View::kPy:
      return "py";
    case View::kMixed:
      return "mixed";
  }
  return "?";
}

namespace {

using Json = nlohmann::json;

// A SAX handler rather than a parsed document: building nlohmann's DOM (a
// std::map per object) was 3x the cost of lexing, and a 1024-rank dump is
// hundreds of MB. The handler walks the fixed shape of the format with a small
// context stack, skips unknown keys whatever their nesting (by counting, no
// recursion), and stops at the first problem with a message naming the field.
class StackFileSax final : public nlohmann::json_sax<Json> {
 public:
  explicit StackFileSax(StackFile* out) : out_(out) {}
  const std::string& error() const { return error_; }

  bool null() override { return value(Type::kNull); }
  bool boolean(bool v) override {
    bool_ = v;
    return value(Type::kBool);
  }
  bool number_integer(number_integer_t v) override {
    int_ = v;
    return value(Type::kInt);
  }
  bool number_unsigned(number_unsigned_t v) override {
    // Every integer of the format is far below 2^63: larger ones are out of range.
    if (v > static_cast<number_unsigned_t>(LLONG_MAX)) {
      big_ = std::to_string(v);
      return value(Type::kBigInt);
    }
    int_ = static_cast<long long>(v);
    return value(Type::kInt);
  }
  bool number_float(number_float_t, const string_t&) override { return value(Type::kFloat); }
  bool string(string_t& v) override {
    str_ = &v;
    return value(Type::kString);
  }
  bool binary(binary_t&) override { return fail(where(), "unexpected binary value"); }
  bool start_object(std::size_t) override;
  bool end_object() override;
  bool start_array(std::size_t) override;
  bool end_array() override;
  bool key(string_t& k) override {
    if (skip_ == 0) {
      key_ = k;
      key_id_ = key_id(k);
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = std::string("not valid JSON: ") + e.what();
    return false;
  }

 private:
  // Keys of the format, recognised once per key instead of per comparison.
  enum class Key {
    kOther,
    kVersion,
    kWorldSize,
    kRank,
    kPid,
    kHost,
    kProcessState,
    kErrors,
    kThreads,
    kTid,
    kName,
    kNative,
    kPython,
    kMixed,
    kFunc,
    kModule,
    kFile,
    kOffset,
    kKind,
    kLine,
    kInlined
  };
  static Key key_id(const std::string& k) {
    // Called for every key of the file: a switch on the length keeps it to one
    // or two short compares (a hash map here cost 10% of the decoding).
    switch (k.size()) {
      case 3:
        if (k == "pid") return Key::kPid;
        if (k == "tid") return Key::kTid;
        break;
      case 4:
        if (k == "func") return Key::kFunc;
        if (k == "file") return Key::kFile;
        if (k == "line") return Key::kLine;
        if (k == "kind") return Key::kKind;
        if (k == "name") return Key::kName;
        if (k == "rank") return Key::kRank;
        if (k == "host") return Key::kHost;
        break;
      case 5:
        if (k == "mixed") return Key::kMixed;
        break;
      case 6:
        if (k == "module") return Key::kModule;
        if (k == "offset") return Key::kOffset;
        if (k == "native") return Key::kNative;
        if (k == "python") return Key::kPython;
        if (k == "errors") return Key::kErrors;
        break;
      case 7:
        if (k == "inlined") return Key::kInlined;
        if (k == "threads") return Key::kThreads;
        if (k == "version") return Key::kVersion;
        break;
      case 10:
        if (k == "world_size") return Key::kWorldSize;
        break;
      case 13:
        if (k == "process_state") return Key::kProcessState;
        break;
      default:
        break;
    }
    return Key::kOther;
  }
  enum class Type { kNull, kBool, kInt, kBigInt, kFloat, kString, kObject, kArray };
  // What the innermost open object or array is.
  enum class Ctx { kRoot, kErrors, kThreads, kThread, kFrames, kFrame };
  // Per frame, what the fields said (strings are copied: SAX strings are reused).
  struct FrameFields {
    bool has_func = false, inlined = false;
    std::string func, module, file, offset, kind;
    std::optional<long long> line;
    // Keeps the strings' capacity: no allocation per frame once warmed up.
    void reset() {
      has_func = inlined = false;
      func.clear();
      module.clear();
      file.clear();
      offset.clear();
      kind.clear();
      line.reset();
    }
  };

  static const char* type_name(Type t) {
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

  bool fail(const std::string& where, const std::string& what) {
    if (error_.empty()) error_ = where + ": " + what;
    return false;
  }
  // Path of the value being read, e.g. "threads[3].native[2].func".
  std::string where() const;
  std::string element_path() const;  // without the key: "threads[3].native[2]"

  bool value(Type t);
  bool root_field(Type t);
  bool thread_field(Type t);
  bool frame_field(Type t);
  bool expect_int(Type t, long long lo, long long hi, long long* out);
  bool expect_string(Type t, std::string* out, bool nullable);
  bool finish_frame();
  bool finish_root();
  uint32_t add_label(FrameKind kind);  // label_ into the table

  StackFile* out_;
  std::string error_;
  std::vector<Ctx> ctx_;
  int skip_ = 0;  // > 0 while inside a value of an unknown key
  std::string key_;
  Key key_id_ = Key::kOther;
  bool bool_ = false;
  long long int_ = 0;
  std::string big_;
  std::string* str_ = nullptr;

  std::optional<long long> version_, rank_, world_size_;
  bool has_threads_ = false;
  size_t error_index_ = 0;
  View view_ = View::kCpp;
  const char* view_key_ = "native";
  size_t frame_index_ = 0;
  FrameFields frame_;
  std::string label_;  // reused for every frame's label
  std::unordered_map<std::string, uint32_t> label_ids_;
};

std::string StackFileSax::element_path() const {
  std::string p;
  for (Ctx c : ctx_) {
    switch (c) {
      case Ctx::kErrors:
        p = "errors[" + std::to_string(error_index_) + "]";
        break;
      case Ctx::kThreads:
        p = "threads[" +
            std::to_string(out_->threads.size() - (ctx_.back() == Ctx::kThreads ? 0 : 1)) + "]";
        break;
      case Ctx::kFrames:
        p += std::string(".") + view_key_ + "[" + std::to_string(frame_index_) + "]";
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

bool StackFileSax::value(Type t) {
  if (skip_ > 0) {
    if (t == Type::kObject || t == Type::kArray) ++skip_;
    return true;
  }
  if (ctx_.empty()) {
    if (t != Type::kObject)
      return fail("document", std::string("expected a JSON object, got ") + type_name(t));
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
      out_->threads.emplace_back();
      ctx_.push_back(Ctx::kThread);
      return true;
    case Ctx::kFrames:
      if (t != Type::kObject)
        return fail(where(), std::string("expected an object, got ") + type_name(t));
      frame_.reset();
      ctx_.push_back(Ctx::kFrame);
      return true;
  }
  return true;
}

bool StackFileSax::root_field(Type t) {
  long long v = 0;
  switch (key_id_) {
    case Key::kVersion:
      if (!expect_int(t, 0, 1LL << 30, &v)) return false;
      version_ = v;
      return true;
    case Key::kWorldSize:
      if (!expect_int(t, 1, kMaxWorldSize, &v)) return false;
      world_size_ = v;
      return true;
    case Key::kRank:
      if (!expect_int(t, 0, kMaxWorldSize - 1, &v)) return false;
      rank_ = v;
      return true;
    case Key::kPid:
      if (t == Type::kNull) return true;
      if (!expect_int(t, 0, 1LL << 40, &v)) return false;
      out_->pid = v;
      return true;
    case Key::kHost:
      return expect_string(t, &out_->host, true);
    case Key::kProcessState:
      return expect_string(t, &out_->process_state, true);
    case Key::kErrors:
    case Key::kThreads:
      if (t == Type::kNull && key_id_ == Key::kErrors) return true;
      if (t != Type::kArray) {
        return fail(where(), std::string("expected an array, got ") + type_name(t));
      }
      has_threads_ |= key_id_ == Key::kThreads;
      ctx_.push_back(key_id_ == Key::kThreads ? Ctx::kThreads : Ctx::kErrors);
      return true;
    default:
      if (t == Type::kObject || t == Type::kArray) skip_ = 1;  // unknown key: skip its value
      return true;
  }
}

bool StackFileSax::thread_field(Type t) {
  ThreadStack& thread = out_->threads.back();
  long long v = 0;
  switch (key_id_) {
    case Key::kTid:
      if (t == Type::kNull) return true;
      if (!expect_int(t, 0, 1LL << 40, &v)) return false;
      thread.tid = v;
      return true;
    case Key::kName:
      return expect_string(t, &thread.name, true);
    case Key::kNative:
    case Key::kPython:
    case Key::kMixed:
      if (t == Type::kNull) return true;
      if (t != Type::kArray) {
        return fail(where(), std::string("expected an array, got ") + type_name(t));
      }
      view_ = key_id_ == Key::kNative   ? View::kCpp
              : key_id_ == Key::kPython ? View::kPy
                                        : View::kMixed;
      view_key_ = key_id_ == Key::kNative ? "native" : key_id_ == Key::kPython ? "python" : "mixed";
      frame_index_ = 0;
      ctx_.push_back(Ctx::kFrames);
      return true;
    default:
      if (t == Type::kObject || t == Type::kArray) skip_ = 1;
      return true;
  }
}

bool StackFileSax::frame_field(Type t) {
  switch (key_id_) {
    case Key::kFunc:
      frame_.has_func = true;
      return expect_string(t, &frame_.func, false);
    case Key::kModule:
      return expect_string(t, &frame_.module, true);
    case Key::kFile:
      return expect_string(t, &frame_.file, true);
    case Key::kOffset:
      return expect_string(t, &frame_.offset, true);
    case Key::kKind:
      return expect_string(t, &frame_.kind, false);
    case Key::kLine: {
      if (t == Type::kNull) return true;
      long long v = 0;
      if (!expect_int(t, 0, 1LL << 31, &v)) return false;
      frame_.line = v;
      return true;
    }
    case Key::kInlined:
      if (t == Type::kNull) return true;
      if (t != Type::kBool) {
        return fail(where(), std::string("expected true/false, got ") + type_name(t));
      }
      frame_.inlined = bool_;
      return true;
    default:
      if (t == Type::kObject || t == Type::kArray) skip_ = 1;
      return true;
  }
}

uint32_t StackFileSax::add_label(FrameKind kind) {
  auto it = label_ids_.find(label_);
  if (it != label_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(out_->labels.size());
  label_ids_.emplace(label_, id);
  out_->labels.push_back(FrameLabel{label_, kind});
  return id;
}

bool StackFileSax::finish_frame() {
  if (!frame_.has_func) return fail(element_path() + ".func", "missing");
  bool python = view_ == View::kPy;
  if (view_ == View::kMixed) {
    if (frame_.kind.empty()) return fail(element_path() + ".kind", "missing");
    if (frame_.kind != "python" && frame_.kind != "native") {
      return fail(element_path() + ".kind",
                  "expected \"native\" or \"python\", got \"" + frame_.kind + "\"");
    }
    python = frame_.kind == "python";
  }
  if (python) {
    format_python_frame_label(&label_, frame_.func, frame_.file, frame_.line);
  } else {
    format_native_frame_label(&label_, frame_.func, frame_.module, frame_.file, frame_.line,
                              frame_.offset, frame_.inlined);
  }
  const uint32_t id = add_label(python ? FrameKind::kPython : FrameKind::kNative);
  out_->threads.back().frames[static_cast<int>(view_)].push_back(id);
  ++frame_index_;
  return true;
}

bool StackFileSax::finish_root() {
  if (!version_) return fail("version", "missing");
  if (*version_ != kStackFileVersion) {
    return fail("version", "unsupported version " + std::to_string(*version_) +
                               " (this viewer reads " + std::to_string(kStackFileVersion) + ")");
  }
  if (!world_size_) return fail("world_size", "missing");
  if (!rank_) return fail("rank", "missing");
  if (*rank_ >= *world_size_) return fail("rank", "out of range: " + std::to_string(*rank_));
  if (!has_threads_) return fail("threads", "missing");
  out_->rank = static_cast<uint32_t>(*rank_);
  out_->world_size = static_cast<uint32_t>(*world_size_);
  return true;
}

bool StackFileSax::start_object(std::size_t) { return value(Type::kObject); }
bool StackFileSax::start_array(std::size_t) { return value(Type::kArray); }

bool StackFileSax::end_object() {
  if (skip_ > 0) {
    --skip_;
    return true;
  }
  const Ctx c = ctx_.back();
  ctx_.pop_back();
  if (c == Ctx::kFrame) return finish_frame();
  if (c == Ctx::kThread) {
    // Files list frames innermost first; the merge wants the root first.
    for (auto& frames : out_->threads.back().frames) std::reverse(frames.begin(), frames.end());
    return true;
  }
  if (c == Ctx::kRoot) return finish_root();
  return true;
}

bool StackFileSax::end_array() {
  if (skip_ > 0) {
    --skip_;
    return true;
  }
  ctx_.pop_back();
  return true;
}

}  // namespace

bool parse_stack_file(std::string_view text, StackFile* out, std::string* error) {
  StackFile parsed;
  StackFileSax sax(&parsed);
  // nlohmann reports syntax errors through the handler; only allocation
  // failure (a hostile size) or a library bug can still throw.
  try {
    if (!Json::sax_parse(text.begin(), text.end(), &sax)) {
      *error = sax.error().empty() ? "not valid JSON" : sax.error();
      return false;
    }
  } catch (const std::exception& e) {
    *error = std::string("cannot decode: ") + e.what();
    return false;
  }
  parsed.path = std::move(out->path);
  *out = std::move(parsed);
  return true;
}

}  // namespace xpu_timer::flamegraph
