// The coordination store's URL and arguments: what is accepted, and the one
// line each kind of mistake gets.
#include "supervisor/coordination/coordination_store.h"

#include <gtest/gtest.h>

#include "supervisor/coordination/etcd_store.h"

namespace xpu_timer::supervisor {
namespace {

StoreEndpoint parsed(const std::string& url) {
  StoreEndpoint e;
  std::string error;
  EXPECT_TRUE(parse_store_url(url, &e, &error)) << url << ": " << error;
  return e;
}

std::string url_error(const std::string& url) {
  StoreEndpoint e;
  std::string error;
  EXPECT_FALSE(parse_store_url(url, &e, &error)) << url;
  return error;
}

TEST(CoordinationStoreUrl, AcceptsNamesAndAddresses) {
  StoreEndpoint e = parsed("etcd://etcd-client.infra.svc:2379");
  EXPECT_EQ(e.host, "etcd-client.infra.svc");
  EXPECT_EQ(e.port, 2379);
  e = parsed("etcd://127.0.0.1:1");
  EXPECT_EQ(e.host, "127.0.0.1");
  EXPECT_EQ(e.port, 1);
  e = parsed("etcd://[::1]:65535");
  EXPECT_EQ(e.host, "::1");
  EXPECT_EQ(e.port, 65535);
  e = parsed("etcd://[fe80::1:2]:2379");
  EXPECT_EQ(e.host, "fe80::1:2");
  EXPECT_FALSE(e.tls);
}

TEST(CoordinationStoreUrl, HttpsAndEtcdsMeanTls) {
  for (const char* url : {"https://etcd.infra:2379", "etcds://etcd.infra:2379"}) {
    const StoreEndpoint e = parsed(url);
    EXPECT_EQ(e.host, "etcd.infra");
    EXPECT_EQ(e.port, 2379);
    EXPECT_TRUE(e.tls) << url;
  }
}

TEST(CoordinationStoreSecurity, RefusesWhatCannotWorkInOneLine) {
  StoreEndpoint plain = parsed("etcd://h:1");
  StoreEndpoint tls = parsed("https://h:1");
  std::string error;
  StoreSecurity s;
  s.ca_file = "/etc/hostname";
  EXPECT_FALSE(check_store_security(plain, s, &error));
  EXPECT_EQ(error,
            "etcd CA, certificate or key files are given but the coordinator URL is not TLS (write "
            "https://HOST:PORT)");
  EXPECT_TRUE(check_store_security(tls, s, &error)) << error;
  s.cert_file = "/etc/hostname";
  EXPECT_FALSE(check_store_security(tls, s, &error));
  EXPECT_EQ(error, "an etcd client certificate needs its key, and a key its certificate");
  s = StoreSecurity{};
  s.user = "xpu";
  EXPECT_FALSE(check_store_security(plain, s, &error));
  EXPECT_EQ(error, "the etcd user 'xpu' is given without a password (give a password file)");
  s.password_file = "/nonexistent/pw";
  EXPECT_FALSE(check_store_security(plain, s, &error));
  EXPECT_EQ(error, "cannot read /nonexistent/pw: No such file or directory");
  s.user.clear();
  s.password = "secret";
  s.password_file.clear();
  EXPECT_FALSE(check_store_security(plain, s, &error));
  EXPECT_EQ(error, "an etcd password is given without a user");
}

TEST(CoordinationStoreUrl, RefusesAnythingElseInOneLine) {
  const std::string p = "\" is not etcd://HOST:PORT: ";
  EXPECT_EQ(url_error(""), "coordination store \"" + p + "no scheme");
  EXPECT_EQ(url_error("10.0.0.5:2379"), "coordination store \"10.0.0.5:2379" + p + "no scheme");
  const std::string schemes = "\" is not supported (etcd, or https / etcds for TLS)";
  EXPECT_EQ(url_error("http://10.0.0.5:2379"),
            "coordination store \"http://10.0.0.5:2379" + p + "scheme \"http" + schemes);
  EXPECT_EQ(url_error("ETCD://h:1"), "coordination store \"ETCD://h:1" + p + "scheme \"ETCD" + schemes);
  EXPECT_EQ(url_error("etcd://h"), "coordination store \"etcd://h" + p + "no port");
  EXPECT_EQ(url_error("etcd://h:"), "coordination store \"etcd://h:" + p + "no port");
  EXPECT_EQ(url_error("etcd://:2379"), "coordination store \"etcd://:2379" + p + "no host");
  EXPECT_EQ(url_error("etcd://"), "coordination store \"etcd://" + p + "no port");
  EXPECT_EQ(url_error("etcd://h:0"),
            "coordination store \"etcd://h:0" + p + "port \"0\" is not a number from 1 to 65535");
  EXPECT_EQ(url_error("etcd://h:65536"), "coordination store \"etcd://h:65536" + p +
                                             "port \"65536\" is not a number from 1 to 65535");
  EXPECT_EQ(url_error("etcd://h:99999999999999999999"),
            "coordination store \"etcd://h:99999999999999999999" + p +
                "port \"99999999999999999999\" is not a number from 1 to 65535");
  EXPECT_EQ(url_error("etcd://h:-1"),
            "coordination store \"etcd://h:-1" + p + "port \"-1\" is not a number from 1 to 65535");
  EXPECT_EQ(url_error("etcd://h:2379/v3"),
            "coordination store \"etcd://h:2379/v3" + p + "a path is not allowed");
  EXPECT_EQ(url_error("etcd://a:1,b:2"),
            "coordination store \"etcd://a:1,b:2" + p + "give one endpoint only");
  EXPECT_EQ(url_error("etcd://u@h:1"),
            "coordination store \"etcd://u@h:1" + p + "no user in the URL (XPU_TIMER_ETCD_USER)");
  EXPECT_EQ(url_error("etcd://::1:2379"),
            "coordination store \"etcd://::1:2379" + p + "write an IPv6 host in brackets");
  EXPECT_EQ(url_error("etcd://[::1:2379"),
            "coordination store \"etcd://[::1:2379" + p + "unclosed '[' in the host");
  EXPECT_EQ(url_error("etcd://[zz]:1"),
            "coordination store \"etcd://[zz]:1" + p + "\"zz\" is not an IPv6 address");
  EXPECT_EQ(url_error("etcd://[::1]"), "coordination store \"etcd://[::1]" + p + "no port");
  EXPECT_EQ(url_error("etcd://h st:1"),
            "coordination store \"etcd://h st:1" + p + "bad character in the host \"h st\"");
}

TEST(CoordinationStoreOpen, GivesAnEtcdStoreOrOneLine) {
  std::string error;
  std::unique_ptr<CoordinationStore> s =
      open_coordination_store("etcd://127.0.0.1:2379", 10, &error);
  ASSERT_NE(s, nullptr) << error;
  EXPECT_NE(dynamic_cast<EtcdStore*>(s.get()), nullptr);
  EXPECT_EQ(s->error(), "");

  EXPECT_EQ(open_coordination_store("zk://h:1", 10, &error), nullptr);
  EXPECT_EQ(error,
            "coordination store \"zk://h:1\" is not etcd://HOST:PORT: scheme \"zk\" is not supported (etcd, or https / etcds for TLS)");
  EXPECT_EQ(open_coordination_store("etcd://h:1", 0, &error), nullptr);
  EXPECT_EQ(error, "coordination store lease TTL 0 s: must be at least 1 s");
  EXPECT_EQ(open_coordination_store("etcd://h:1", 5, &error, std::chrono::milliseconds(0)),
            nullptr);
  EXPECT_EQ(error, "coordination store call timeout 0 ms: must be at least 1 ms");
}

}  // namespace
}  // namespace xpu_timer::supervisor
