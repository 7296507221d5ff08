// EtcdStore against a real etcd that asks who the client is, as real
// deployments do: user/password auth (a token, renewed when etcd no longer
// knows it: here after auth was turned off and on, which forgets every
// token as their expiry does), and TLS
// with client certificates (--client-cert-auth) made here with the openssl
// CLI. Skipped, with the reason, where etcd or openssl is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "supervisor/coordination/etcd_messages.h"
#include "supervisor/coordination/etcd_store.h"
#include "supervisor/coordination/http_client.h"
#include "tests/harness/etcd_server.h"

namespace xpu_timer::supervisor {
namespace {

using xpu_timer::testing::EtcdServer;

class EtcdSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (EtcdServer::binary().empty()) GTEST_SKIP() << EtcdServer::kEtcdMissing;
    char tmpl[] = "/tmp/xpu-etcdsec-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    etcd_ = std::make_unique<EtcdServer>(dir_);
  }
  void TearDown() override {
    etcd_.reset();
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  // One openssl command in dir_; false (with its output in the failure) on error.
  bool openssl(const std::string& args) {
    const std::string cmd = "cd " + dir_ + " && openssl " + args + " >>openssl.log 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_EQ(rc, 0) << cmd;
    return rc == 0;
  }
  // A CA named `ca`, and a certificate signed by it for 127.0.0.1 named `name`.
  bool make_ca(const std::string& ca) {
    return openssl("req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=" + ca + " -keyout " + ca +
                   ".key -out " + ca + ".crt");
  }
  bool make_cert(const std::string& ca, const std::string& name) {
    std::FILE* f = std::fopen((dir_ + "/" + name + ".ext").c_str(), "w");
    if (f == nullptr) return false;
    std::fputs(
        "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n"
        "keyUsage=digitalSignature,keyEncipherment\n",
        f);
    std::fclose(f);
    return openssl("req -newkey rsa:2048 -nodes -subj /CN=" + name + " -keyout " + name +
                   ".key -out " + name + ".csr") &&
           openssl("x509 -req -in " + name + ".csr -CA " + ca + ".crt -CAkey " + ca +
                   ".key -CAcreateserial -days 2 -extfile " + name + ".ext -out " + name + ".crt");
  }
  std::string path(const std::string& f) const { return dir_ + "/" + f; }
  std::unique_ptr<CoordinationStore> open(const StoreSecurity& s, std::string* error) {
    return open_coordination_store(etcd_->url(), 10, error, kDefaultStoreCallTimeout, s);
  }
  // POSTs to etcd's gateway (auth set-up), expecting 200; its body.
  std::string post(const std::string& api, const std::string& body,
                   const std::string& token = "") {
    HttpClient http("127.0.0.1", etcd_->client_port());
    HttpResponse r;
    std::string error;
    EXPECT_TRUE(http.post(api, body, std::chrono::steady_clock::now() + std::chrono::seconds(5),
                          &r, &error, token))
        << error;
    EXPECT_EQ(r.status, 200) << api << ": " << r.body;
    return r.body;
  }

  std::string dir_;
  std::unique_ptr<EtcdServer> etcd_;
};

TEST_F(EtcdSecurityTest, APasswordGivesATokenThatIsRenewedWhenEtcdForgetsIt) {
  ASSERT_TRUE(etcd_->start(path("data")));
  post("/v3/auth/role/add", R"({"name":"root"})");
  post("/v3/auth/user/add", R"({"name":"root","password":"s3cret"})");
  post("/v3/auth/user/grant", R"({"user":"root","role":"root"})");
  post("/v3/auth/enable", "{}");

  std::string error;
  auto anonymous = open({}, &error);
  ASSERT_NE(anonymous, nullptr) << error;
  EXPECT_FALSE(anonymous->put("/xpu_timer/job/k", "v"));
  EXPECT_NE(anonymous->error().find("user name is empty"), std::string::npos)
      << anonymous->error();

  StoreSecurity wrong;
  wrong.user = "root";
  wrong.password = "guess";
  auto guesser = open(wrong, &error);
  ASSERT_NE(guesser, nullptr) << error;
  EXPECT_FALSE(guesser->put("/xpu_timer/job/k", "v"));
  EXPECT_NE(guesser->error().find("/v3/auth/authenticate: as user 'root'"), std::string::npos)
      << guesser->error();

  // The password from a file (never the command line).
  {
    std::FILE* f = std::fopen(path("pw").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("s3cret\n", f);
    std::fclose(f);
  }
  StoreSecurity s;
  s.user = "root";
  s.password_file = path("pw");
  auto store = open(s, &error);
  ASSERT_NE(store, nullptr) << error;
  auto* etcd = dynamic_cast<EtcdStore*>(store.get());
  ASSERT_TRUE(store->put("/xpu_timer/job/k", "v")) << store->error();
  std::vector<KeyValue> kvs;
  ASSERT_TRUE(store->get_prefix("/xpu_timer/job/", &kvs, nullptr)) << store->error();
  ASSERT_EQ(kvs.size(), 1u);
  EXPECT_EQ(kvs[0].lease, store->lease());
  EXPECT_EQ(etcd->authentications(), 1);

  // Turning auth off and on again forgets every token, as an expiry does:
  // the next call is refused, authenticates again, once, and goes through.
  std::string token;
  ASSERT_EQ(etcd::read_authenticate(
                200, post("/v3/auth/authenticate", R"({"name":"root","password":"s3cret"})"),
                &token, &error),
            etcd::Outcome::kOk)
      << error;
  post("/v3/auth/disable", "{}", token);
  post("/v3/auth/enable", "{}");
  ASSERT_TRUE(store->get_prefix("/xpu_timer/job/", &kvs, nullptr)) << store->error();
  EXPECT_EQ(etcd->authentications(), 2);
  ASSERT_TRUE(store->keep_alive()) << store->error();
  EXPECT_EQ(etcd->authentications(), 2);
}

TEST_F(EtcdSecurityTest, TlsWithAClientCertificate) {
  if (std::system("openssl version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no openssl CLI";
  ASSERT_TRUE(make_ca("ca") && make_cert("ca", "server") && make_cert("ca", "client"));
  ASSERT_TRUE(make_ca("other"));
  etcd_->use_tls(path("ca.crt"), path("server.crt"), path("server.key"));
  ASSERT_TRUE(etcd_->start(path("data")));

  StoreSecurity s;
  s.ca_file = path("ca.crt");
  s.cert_file = path("client.crt");
  s.key_file = path("client.key");
  std::string error;
  auto store = open(s, &error);
  ASSERT_NE(store, nullptr) << error;
  ASSERT_TRUE(store->put("/xpu_timer/job/k", "v")) << store->error();
  bool created = true;
  ASSERT_TRUE(store->create("/xpu_timer/job/k", "w", &created)) << store->error();
  EXPECT_FALSE(created);  // one writer per key
  std::vector<KeyValue> kvs;
  ASSERT_TRUE(store->get_prefix("/xpu_timer/job/", &kvs, nullptr)) << store->error();
  ASSERT_EQ(kvs.size(), 1u);
  EXPECT_EQ(kvs[0].value, "v");

  // Without a client certificate etcd refuses the handshake.
  StoreSecurity no_cert;
  no_cert.ca_file = path("ca.crt");
  auto anonymous = open(no_cert, &error);
  ASSERT_NE(anonymous, nullptr) << error;
  EXPECT_FALSE(anonymous->put("/xpu_timer/job/k", "v"));
  EXPECT_NE(anonymous->error().find("TLS"), std::string::npos) << anonymous->error();

  // A server whose certificate another CA signed is not believed.
  StoreSecurity other = s;
  other.ca_file = path("other.crt");
  auto doubter = open(other, &error);
  ASSERT_NE(doubter, nullptr) << error;
  EXPECT_FALSE(doubter->put("/xpu_timer/job/k", "v"));
  EXPECT_NE(doubter->error().find("certificate"), std::string::npos) << doubter->error();

  // Files that cannot work are refused when the store is opened, in one line.
  StoreSecurity missing = s;
  missing.key_file = path("nonexistent.key");
  EXPECT_EQ(open(missing, &error), nullptr);
  EXPECT_EQ(error, "cannot read " + path("nonexistent.key") + ": No such file or directory");
}

}  // namespace
}  // namespace xpu_timer::supervisor
