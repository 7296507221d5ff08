// Base64 as etcd's gateway writes it: RFC 4648's vectors, every byte value,
// and the malformed inputs a broken or hostile answer may hold.
#include "supervisor/coordination/base64.h"

#include <gtest/gtest.h>

#include <string>

namespace xpu_timer::supervisor {
namespace {

std::string decoded(const std::string& text) {
  std::string out;
  std::string error;
  EXPECT_TRUE(base64_decode(text, &out, &error)) << text << ": " << error;
  return out;
}

std::string decode_error(const std::string& text) {
  std::string out;
  std::string error;
  EXPECT_FALSE(base64_decode(text, &out, &error)) << text;
  return error;
}

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(plain), encoded);
    EXPECT_EQ(decoded(encoded), plain);
  }
}

TEST(Base64, EveryByteValueAndLengthRoundTrips) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  EXPECT_EQ(base64_encode(all.substr(0, 3)), "AAEC");
  EXPECT_EQ(base64_encode("\xff\xfe"), "//4=");
  EXPECT_EQ(base64_encode("\xfb\xff"), "+/8=");
  for (size_t n = 0; n <= all.size(); ++n) {
    const std::string part = all.substr(all.size() - n);
    const std::string text = base64_encode(part);
    EXPECT_EQ(text.size(), (n + 2) / 3 * 4);
    EXPECT_EQ(decoded(text), part) << n;
  }
}

TEST(Base64, MalformedInputIsRefusedWithThePosition) {
  EXPECT_EQ(decode_error("Zg="), "base64 of 3 characters (not a multiple of 4)");
  EXPECT_EQ(decode_error("Zm9v!A=="), "not base64: character 4 is outside the alphabet");
  EXPECT_EQ(decode_error("Zm 9"), "not base64: character 2 is outside the alphabet");
  EXPECT_EQ(decode_error("Zg==Zm8="), "not base64: character 2 is '=' before the end");
  EXPECT_EQ(decode_error("Z==="), "not base64: character 1 is '=' before the end");
  EXPECT_EQ(decode_error("===="), "not base64: character 0 is '=' before the end");
  EXPECT_EQ(decode_error("Zm=v"), "not base64: character 2 is '=' before the end");
  EXPECT_EQ(decode_error("Zm9v-_=="), "not base64: character 4 is outside the alphabet");
  EXPECT_EQ(decode_error(std::string("Zm\0v", 4)),
            "not base64: character 2 is outside the alphabet");
}

}  // namespace
}  // namespace xpu_timer::supervisor
