#include "common/parse_number.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace xpu_timer {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(ParseInt, TakesOneWholeDecimalNumber) {
  EXPECT_EQ(parse_int("0"), 0);
  EXPECT_EQ(parse_int("18888"), 18888);
  EXPECT_EQ(parse_int("-17"), -17);
  EXPECT_EQ(parse_int("007"), 7);
}

TEST(ParseInt, RefusesEmptyTextAndLoneSign) {
  EXPECT_EQ(parse_int(""), std::nullopt);
  EXPECT_EQ(parse_int("-"), std::nullopt);
}

TEST(ParseInt, RefusesAnythingBesideTheDigits) {
  for (const char* bad : {"12ab", "12 ", " 12", "+12", "1.5", "0x10", "1e3", "--1", "12\n"}) {
    EXPECT_EQ(parse_int(bad), std::nullopt) << bad;
  }
}

TEST(ParseInt, RefusesOverflowAtBothEnds) {
  EXPECT_EQ(parse_int("9223372036854775807"), kMax);
  EXPECT_EQ(parse_int("-9223372036854775808"), kMin);
  EXPECT_EQ(parse_int("9223372036854775808"), std::nullopt);
  EXPECT_EQ(parse_int("-9223372036854775809"), std::nullopt);
  EXPECT_EQ(parse_int("99999999999999999999999"), std::nullopt);
}

TEST(ParseInt, KeepsToTheRangeInclusive) {
  EXPECT_EQ(parse_int("0", 0, 65535), 0);
  EXPECT_EQ(parse_int("65535", 0, 65535), 65535);
  EXPECT_EQ(parse_int("65536", 0, 65535), std::nullopt);
  EXPECT_EQ(parse_int("-1", 0, 65535), std::nullopt);
}

TEST(ParseReal, TakesOneWholeFiniteDecimalNumber) {
  EXPECT_EQ(parse_real("10"), 10.0);
  EXPECT_EQ(parse_real("2.5"), 2.5);
  EXPECT_EQ(parse_real("-0.05"), -0.05);
  EXPECT_EQ(parse_real("1e3"), 1000.0);
  EXPECT_EQ(parse_real(".5"), 0.5);
}

TEST(ParseReal, RefusesJunkSignsSpacesHexAndTheNonFinite) {
  for (const char* bad : {"", "-", ".", "1.5x", " 1", "1 ", "+1", "0x10", "inf", "-inf", "nan",
                          "1e999", "1,5", "1e"}) {
    EXPECT_EQ(parse_real(bad), std::nullopt) << bad;
  }
}

TEST(ParseReal, KeepsToTheRangeInclusive) {
  EXPECT_EQ(parse_real("0.05", 0.05, 1000), 0.05);
  EXPECT_EQ(parse_real("1000", 0.05, 1000), 1000.0);
  EXPECT_EQ(parse_real("0.04", 0.05, 1000), std::nullopt);
  EXPECT_EQ(parse_real("1000.5", 0.05, 1000), std::nullopt);
  EXPECT_EQ(parse_real("-1", 0, 1), std::nullopt);
}

TEST(ParseUint, TakesDecimalAndHexUpToUint64Max) {
  EXPECT_EQ(parse_uint("18446744073709551615"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(parse_uint("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parse_uint("ffffffffffffffff", 16), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(parse_uint("6c0a1b2c3d4e5f60", 16), 0x6c0a1b2c3d4e5f60u);
  EXPECT_EQ(parse_uint("10000000000000000", 16), std::nullopt);
}

TEST(ParseUint, RefusesSignsPrefixesAndJunk) {
  for (const char* bad : {"", "-1", "+1", "0x1f", "1f ", "g"}) {
    EXPECT_EQ(parse_uint(bad, 16), std::nullopt) << bad;
  }
  EXPECT_EQ(parse_uint("1f"), std::nullopt);  // hex digits in base 10
}

TEST(TakeInt, ParsesTheLeadingNumberAndAdvancesPastIt) {
  std::string_view text = "8(x2),7";
  EXPECT_EQ(take_int(&text), 8);
  EXPECT_EQ(text, "(x2),7");
  text = "-20 0 1";
  EXPECT_EQ(take_int(&text), -20);
  EXPECT_EQ(text, " 0 1");
}

TEST(TakeInt, LeavesTextAloneWithoutADigitOrOnOverflow) {
  std::string_view text = " 5";
  EXPECT_EQ(take_int(&text), std::nullopt);
  EXPECT_EQ(text, " 5");
  text = "99999999999999999999x";
  EXPECT_EQ(take_int(&text), std::nullopt);
  EXPECT_EQ(text, "99999999999999999999x");
  text = "";
  EXPECT_EQ(take_int(&text), std::nullopt);
}

TEST(TakeUint, RefusesASign) {
  std::string_view text = "-3 4";
  EXPECT_EQ(take_uint(&text), std::nullopt);
  text = "12345678901234567890 rest";
  EXPECT_EQ(take_uint(&text), 12345678901234567890u);
  EXPECT_EQ(text, " rest");
}

}  // namespace
}  // namespace xpu_timer
