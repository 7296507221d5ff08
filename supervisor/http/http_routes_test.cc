#include "supervisor/http/http_routes.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "supervisor/http/operator_page.h"

namespace xpu_timer::supervisor {
namespace {

HttpHandlers handlers() {
  return HttpHandlers{[] { return std::string("{\"hung\":false}"); },
                      [] { return std::string("[]"); },
                      []() -> std::string { throw std::runtime_error("page vanished"); }};
}

TEST(HttpRoutes, KnownPaths) {
  const HttpHandlers h = handlers();
  HttpAnswer a = route_request(h, "GET", "/healthz");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "ok\n");
  a = route_request(h, "GET", "/hang?pretty=1");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.content_type, "application/json");
  EXPECT_EQ(a.body, "{\"hung\":false}\n");
  EXPECT_EQ(route_request(h, "GET", "/ranks").body, "[]\n");
}

TEST(HttpRoutes, SlowIsServedWhenItsHandlerIsSet) {
  HttpHandlers h = handlers();
  EXPECT_EQ(route_request(h, "GET", "/slow").status, 404);
  h.slow_json = [] { return std::string("{\"stragglers\":[]}"); };
  const HttpAnswer a = route_request(h, "GET", "/slow");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.content_type, "application/json");
  EXPECT_EQ(a.body, "{\"stragglers\":[]}\n");
  EXPECT_EQ(route_request(h, "POST", "/slow").status, 405);
}

TEST(HttpRoutes, RootIsTheOperatorPageAndOverviewIsServedWhenSet) {
  HttpHandlers h = handlers();
  for (const char* method : {"GET", "HEAD"}) {
    const HttpAnswer page = route_request(h, method, "/?refresh=1");
    EXPECT_EQ(page.status, 200);
    EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
    EXPECT_EQ(page.body.rfind("<!DOCTYPE html>", 0), 0u);
    EXPECT_NE(page.body.find("fetch(path"), std::string::npos);
    EXPECT_EQ(page.body.find("</html>\n"), page.body.size() - 8);  // all of it, embedded
  }
  EXPECT_EQ(route_request(h, "POST", "/").status, 405);
  EXPECT_EQ(route_request(h, "GET", "/overview").status, 404);
  h.overview_json = [] { return std::string("{\"verdict\":\"healthy\"}"); };
  const HttpAnswer a = route_request(h, "GET", "/overview");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.content_type, "application/json");
  EXPECT_EQ(a.body, "{\"verdict\":\"healthy\"}\n");
  EXPECT_EQ(route_request(h, "PUT", "/overview").status, 405);
}

// Nothing the page loads comes from another host: no URL with a scheme or a
// protocol-relative one, only this supervisor's own paths.
TEST(HttpRoutes, OperatorPageFetchesNothingFromElsewhere) {
  const std::string page(operator_page_html());
  for (const char* outside : {"http:", "https:", "src=\"//", "href=\"//", "url(", "@import"}) {
    EXPECT_EQ(page.find(outside), std::string::npos) << outside;
  }
  // Data goes into the page as text only.
  EXPECT_EQ(page.find("innerHTML"), std::string::npos);
  EXPECT_EQ(page.find("insertAdjacentHTML"), std::string::npos);
  EXPECT_EQ(page.find("document.write"), std::string::npos);
}

TEST(HttpRoutes, HandlerExceptionIsA500WithOneLine) {
  const HttpAnswer a = route_request(handlers(), "GET", "/metrics");
  EXPECT_EQ(a.status, 500);
  EXPECT_EQ(a.body, "internal error: page vanished\n");
}

TEST(HttpRoutes, ErrorsForUnknownPathsAndMethods) {
  const HttpHandlers h = handlers();
  HttpAnswer a = route_request(h, "GET", "/nope\n\x01");
  EXPECT_EQ(a.status, 404);
  EXPECT_EQ(a.body, "not found: /nope?? (try /metrics, /hang, /slow, /ranks, /healthz)\n");
  EXPECT_EQ(route_request(h, "POST", "/metrics").status, 405);
  EXPECT_EQ(route_request(h, "POST", "/dump/stacks").status, 501);
  EXPECT_EQ(route_request(h, "GET", std::string(5000, '/')).status, 404);
}

}  // namespace
}  // namespace xpu_timer::supervisor
