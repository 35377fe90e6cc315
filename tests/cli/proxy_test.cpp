// `vigil proxy` end to end with real peers: ffmpeg encodes a clip, `vigil record` records it
// into a real vigild, and a real `vigil proxy` process stands between vigild and the viewers
// (threads with their own loopback connections). 50 viewers fetching the same HLS playlist,
// init segment, segments and MP4 export at once all get exactly the bytes vigild serves
// directly, while the proxy asked vigild once per distinct resource (its /metrics); a viewer
// that reads one byte and stops holds up nobody; vigild's refusals reach the viewer with their
// status and reason; no token is a 401 and an invalid token never gets cached media; ffprobe
// plays the HLS rendition through the proxy with the token in the URL. Without vigild the
// proxy answers 502, and 504 when the node does not answer in time; SIGTERM with viewers waiting
// on a fetch is a clean exit. Three ffmpeg players following a live recording through the proxy
// get runs of the source packets while each live segment is fetched from vigild about once.
#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <fstream>
#include <thread>

#include "common/child_process.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/prometheus_text.hpp"
#include "tests/support/proxy_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
namespace asio = boost::asio;

namespace {

// A `vigil proxy` in front of UPSTREAM (vigild's HTTP address), with EXTRA options.
struct ProxyProcess : test::ProxyProcess {
  ProxyProcess(const std::filesystem::path& dir, const std::string& upstream, std::vector<std::string> extra = {})
      : test::ProxyProcess(dir, [&] {
          std::vector<std::string> args{"--upstream", upstream};
          args.insert(args.end(), extra.begin(), extra.end());
          return args;
        }()) {}
};

using test::metric;
using test::playlist_uris;
test::HttpResult get_with(const std::string& host_port, const std::string& target, const std::string& token) {
  return test::get_as(host_port, target, token);
}

}  // namespace

TEST_CASE("vigil proxy: 50 viewers share one upstream fetch per resource, slow viewers, refusals, auth, ffprobe",
          "[proxy][cli][ffmpeg]") {
  test::TempDir dir;
  auto cam = test::recorded_camera(dir.path(), "gate", 8);  // 200 packets
  const auto& source = cam.source;
  auto& d = *cam.vigild;
  const std::string token = d.token();
  const std::string base = "/api/v1/cameras/gate/";

  // Absolute times: the resources are fixed, and so cacheable for as long as vigild says.
  const auto now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const auto probe = get_with(d.http(), base + "export.mp4?from=-1h&to=@" + std::to_string(now_s + 3600), token);
  REQUIRE(probe.status == 200);
  const auto range_us = probe.header("X-Vigil-Range-Us");
  const std::int64_t start_s = std::stoll(range_us.substr(0, range_us.find('-'))) / 1'000'000;
  const std::string range = "from=@" + std::to_string(start_s - 60) + "&to=@" + std::to_string(now_s + 3600);

  // What vigild serves directly: the reference bytes.
  const auto direct_pl = get_with(d.http(), base + "hls.m3u8?" + range, token);
  REQUIRE(direct_pl.status == 200);
  const auto uris = playlist_uris(direct_pl.body);
  // init + the 8 s cut on 4 s cells of wall-clock time: two segments, or three when the
  // recording does not start on a cell boundary.
  REQUIRE(uris.size() >= 3);
  REQUIRE(uris.size() <= 4);
  std::vector<std::string> targets{base + "hls.m3u8?" + range, base + "export.mp4?" + range};
  for (const auto& u : uris) targets.push_back(base + u);
  std::vector<std::string> direct;
  for (const auto& t : targets) {
    auto r = get_with(d.http(), t, token);
    INFO(t);
    REQUIRE(r.status == 200);
    direct.push_back(r.body);
  }

  ProxyProcess proxy(dir.path(), d.http(), {"--auth-ttl", "600", "--access-log"});
  const std::string p = proxy.address();
  CHECK(test::http_request_without_token(p, "GET", "/healthz").status == 200);

  {  // 50 viewers at once, and a few slow ones that read one byte of the export and stop
    std::vector<std::unique_ptr<asio::io_context>> slow_io;
    std::vector<std::unique_ptr<asio::ip::tcp::socket>> slow;
    for (int i = 0; i < 3; ++i) {
      slow_io.push_back(std::make_unique<asio::io_context>());
      auto s = std::make_unique<asio::ip::tcp::socket>(*slow_io.back());
      s->open(asio::ip::tcp::v4());
      s->set_option(asio::socket_base::receive_buffer_size(1024));
      const auto colon = p.rfind(':');
      s->connect(
          {asio::ip::make_address(p.substr(0, colon)), static_cast<unsigned short>(std::stoi(p.substr(colon + 1)))});
      const std::string req =
          "GET " + base + "export.mp4?" + range + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\n\r\n";
      asio::write(*s, asio::buffer(req));
      char one = 0;
      asio::read(*s, asio::buffer(&one, 1));
      slow.push_back(std::move(s));
    }
    constexpr int kViewers = 50;
    std::vector<std::vector<test::HttpResult>> got(kViewers);
    std::vector<std::thread> viewers;
    for (int v = 0; v < kViewers; ++v) {
      viewers.emplace_back([&, v] {
        for (std::size_t i = 0; i < targets.size(); ++i) {
          // Every other viewer walks the resources backwards: requests overlap in both orders.
          const auto& t = targets[v % 2 ? targets.size() - 1 - i : i];
          got[v].push_back(get_with(p, t, token));
        }
      });
    }
    for (auto& t : viewers) t.join();
    for (int v = 0; v < kViewers; ++v) {
      for (std::size_t i = 0; i < targets.size(); ++i) {
        const std::size_t k = v % 2 ? targets.size() - 1 - i : i;
        INFO("viewer " << v << " " << targets[k] << " -> " << got[v][i].status << " " << got[v][i].body.substr(0, 200));
        REQUIRE(got[v][i].status == 200);
        CHECK((got[v][i].body == direct[k]));
      }
    }
    CHECK(metric(p, "vigil_proxy_viewers_connected") >= 3);  // the slow viewers are still there
    // One upstream request per distinct media resource, whatever the number of viewers.
    CHECK(metric(p, "vigil_proxy_upstream_requests_total", {{"kind", "hls_segment"}}) == 2);
    CHECK(metric(p, "vigil_proxy_upstream_requests_total", {{"kind", "hls_init"}}) == 1);
    CHECK(metric(p, "vigil_proxy_upstream_requests_total", {{"kind", "export"}}) == 1);
    CHECK(metric(p, "vigil_proxy_upstream_requests_total", {{"kind", "auth"}}) == 1);  // one token, one verdict
    // The playlist is kept 2 s: once, or a few times if the viewers took that long.
    const double playlists = metric(p, "vigil_proxy_upstream_requests_total", {{"kind", "hls_playlist"}});
    CHECK(playlists >= 1);
    CHECK(playlists < kViewers);
    // Every viewer request was a hit or a miss (a miss that joined a running fetch: a coalesced wait).
    CHECK(metric(p, "vigil_proxy_cache_hits_total") + metric(p, "vigil_proxy_cache_misses_total") ==
          kViewers * targets.size() + 3);
    CHECK(metric(p, "vigil_proxy_coalesced_waits_total") <= metric(p, "vigil_proxy_cache_misses_total"));
    CHECK(metric(p, "vigil_proxy_bytes_served_total") >= kViewers * (direct[1].size() + direct[3].size()));
  }
  {  // a Range request is served from the cached export
    auto part = test::http_request_without_token(p, "GET", base + "export.mp4?" + range,
                                                 "Authorization: Bearer " + token + "\r\nRange: bytes=100-1099\r\n");
    REQUIRE(part.status == 206);
    CHECK((part.body == direct[1].substr(100, 1000)));
    CHECK(part.header("Content-Range") == "bytes 100-1099/" + std::to_string(direct[1].size()));
    CHECK(metric(p, "vigil_proxy_upstream_requests_total", {{"kind", "export"}}) == 1);
  }
  {  // vigild's refusals and errors: the same status and reason through the proxy
    for (const std::string& t :
         {std::string("/api/v1/cameras/nobody/export.mp4?") + range, base + "export.mp4?from=soon",
          base + "export.mp4?from=-1h&to=-2h", base + "hls/seg.m4s?t0=abc&t1=5&o=0",
          base + "export.mp4?from=-20h&to=-19h", std::string("/api/v1/nothing")}) {
      const auto want = get_with(d.http(), t, token), have = get_with(p, t, token);
      INFO(t << " -> " << want.status << " " << want.body << " / " << have.status << " " << have.body);
      CHECK(want.status >= 400);
      CHECK(have.status == want.status);
      CHECK(have.body == want.body);
      CHECK_THAT(have.body, ContainsSubstring("\"error\""));
    }
    // Everything else is passed through, header fields included (the web UI and its CSP).
    const auto ui = test::http_request_without_token(d.http(), "GET", "/ui/");
    const auto ui_proxied = test::http_request_without_token(p, "GET", "/ui/");
    CHECK(ui_proxied.status == ui.status);
    CHECK(ui_proxied.body == ui.body);
    CHECK(ui_proxied.header("Content-Security-Policy") == ui.header("Content-Security-Policy"));
    CHECK(ui_proxied.header("Content-Type") == ui.header("Content-Type"));
    // Other methods are passed through: vigild's own 405 and Allow.
    const auto post = test::http_request(p, "POST", base + "export.mp4?" + range, "Content-Length: 0\r\n");
    CHECK(post.status == 405);
    CHECK(post.header("Allow") == "GET, HEAD");
  }
  {  // auth: no token, a bad token (even for media the cache holds), a token in the URL
    const auto none = get_with(p, base + "export.mp4?" + range, "");
    CHECK(none.status == 401);
    CHECK_THAT(none.body, ContainsSubstring("token is required"));
    CHECK(none.header("WWW-Authenticate") != "");
    for (const auto& t : {targets[1], targets[2], targets[3]}) {
      const auto bad = get_with(p, t, "not-a-token");
      INFO(t);
      CHECK(bad.status == 401);
      CHECK_THAT(bad.body, ContainsSubstring("not valid"));
      CHECK(bad.body.find("ftyp") == std::string::npos);
      const auto bad_url = test::http_request_without_token(p, "GET", t + "&access_token=bogus");
      CHECK(bad_url.status == 401);
    }
    const auto good_url = test::http_request_without_token(p, "GET", targets[3] + "&access_token=" + token);
    CHECK(good_url.status == 200);
    CHECK((good_url.body == direct[3]));
    CHECK(metric(p, "vigil_proxy_auth_denied_total") >= 7);
  }
  {  // ffprobe plays the HLS rendition through the proxy, the token in the URL
    const double segments_before = metric(p, "vigil_proxy_upstream_requests_total", {{"kind", "hls_segment"}});
    const std::string url = "http://" + p + base + "hls.m3u8?" + range + "&access_token=" + token;
    const auto out = test::probe_packets(url, dir.path());
    REQUIRE(out.size() == source.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      INFO("packet " << i);
      CHECK(out[i].size == source[i].size);
      CHECK(out[i].key == source[i].key);
    }
    // No new upstream fetch of a segment: the token-less key shares what the others fetched.
    INFO(proxy.log());
    CHECK(metric(p, "vigil_proxy_upstream_requests_total", {{"kind", "hls_segment"}}) == segments_before);
  }
  {  // several upstreams: an unreachable node first, then vigild — viewers do not notice
    test::TempDir dir2;
    asio::io_context io;
    std::string closed;
    {
      asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
      closed = "127.0.0.1:" + std::to_string(a.local_endpoint().port());
    }
    ProxyProcess two(dir2.path(), closed + "," + d.http());
    for (int i = 0; i < 2; ++i) {
      const auto r = get_with(two.address(), targets[3], token);
      REQUIRE(r.status == 200);
      CHECK((r.body == direct[3]));
    }
    const auto head = test::http_request(two.address(), "HEAD", targets[1]);
    CHECK(head.status == 200);
    CHECK(head.header("Content-Length") == std::to_string(direct[1].size()));
    CHECK(head.body.empty());
    CHECK(metric(two.address(), "vigil_proxy_upstream_failures_total") >= 1);
  }
  const int status = proxy.stop();
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("vigil proxy: an unreachable vigild is a 502, a silent one a 504, both with a reason", "[proxy][cli]") {
  test::TempDir dir;
  // A port nobody listens on: bound, then closed.
  asio::io_context io;
  std::string closed_port;
  {
    asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
    closed_port = "127.0.0.1:" + std::to_string(a.local_endpoint().port());
  }
  {
    ProxyProcess proxy(dir.path(), closed_port);
    const auto r = get_with(proxy.address(), "/api/v1/cameras/gate/export.mp4?from=-1h", "t");
    INFO(r.body);
    CHECK(r.status == 502);
    CHECK_THAT(r.body, ContainsSubstring("unreachable"));
    CHECK(get_with(proxy.address(), "/api/v1/timeline", "t").status == 502);
    CHECK(test::http_request_without_token(proxy.address(), "GET", "/healthz").status == 200);
  }
  {  // a listener that never accepts: connections queue in its backlog and nothing answers
    asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});
    const std::string silent_addr = "127.0.0.1:" + std::to_string(silent.local_endpoint().port());
    ProxyProcess proxy(dir.path(), silent_addr, {"--upstream-timeout", "0.5"});
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = get_with(proxy.address(), "/api/v1/cameras/gate/hls.m3u8?from=-1h", "t");
    INFO(r.body);
    CHECK(r.status == 504);
    CHECK_THAT(r.body, ContainsSubstring("in time"));
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));  // no hang
  }
  {  // SIGTERM while a viewer waits on a fetch and another viewer waits on that one: a clean exit
    asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});
    const std::string silent_addr = "127.0.0.1:" + std::to_string(silent.local_endpoint().port());
    ProxyProcess proxy(dir.path(), silent_addr, {"--upstream-timeout", "120"});
    std::vector<std::thread> waiting;
    std::vector<int> statuses(2, -1);
    for (int i = 0; i < 2; ++i) {
      waiting.emplace_back([&, i] {
        try {
          statuses[i] = get_with(proxy.address(), "/api/v1/cameras/gate/hls.m3u8?from=-1h", "t").status;
        } catch (const std::exception&) {
          statuses[i] = 0;
        }
      });
    }
    double in = 0;
    for (int i = 0; i < 500 && in < 2; ++i) {
      in = metric(proxy.address(), "vigil_proxy_requests_total");
      if (in < 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(in == 2);
    const int status = proxy.stop();
    for (auto& t : waiting) t.join();
    CHECK(statuses == std::vector<int>{0, 0});  // the connections were closed, not answered
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  CHECK(test::run_to_exit(VIGIL_CLI_PATH, {"proxy", "--help"}, dir.path() / "help.log").status == 0);
  CHECK(test::run_to_exit(VIGIL_CLI_PATH, {"proxy"}, dir.path() / "usage.log").status == 2);
}

TEST_CASE("vigil proxy: three ffmpeg players follow a live recording through the proxy, sharing its segments",
          "[proxy][cli][ffmpeg][live]") {
  test::TempDir dir;
  const auto clip = test::make_h264_clip(dir.path(), 10);
  const auto source = test::probe_packets(clip, dir.path());
  REQUIRE(source.size() == 250);
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(dir.path() / "data", test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());
  ProxyProcess proxy(dir.path(), d.http());
  const std::string p = proxy.address();
  CHECK(get_with(p, "/api/v1/cameras/yard/live.m3u8", d.token()).status == 404);  // not recording: vigild's 404

  // Real time: the recording lasts the clip's 10 s.
  SpawnOptions rec;
  rec.argv = {VIGIL_CLI_PATH, "--server", d.wire(), "record", "--stream", "yard", clip.string()};
  rec.output_file = dir.path() / "rec.log";
  rec.new_session = false;
  auto recorder = ChildProcess::spawn(rec);
  test::HttpResult pl;
  for (int i = 0; i < 300 && pl.status != 200; ++i) {
    pl = get_with(p, "/api/v1/cameras/yard/live.m3u8", d.token());
    if (pl.status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  INFO(pl.body);
  REQUIRE(pl.status == 200);
  CHECK_THAT(pl.body, ContainsSubstring("live/seg.m4s?c="));

  // Three players at once, each until the playlist ends with the recording.
  std::vector<ChildProcess> players;
  for (int i = 0; i < 3; ++i) {
    SpawnOptions ff;
    ff.argv = {"/usr/bin/ffmpeg",
               "-loglevel",
               "error",
               "-y",
               "-i",
               "http://" + p + "/api/v1/cameras/yard/live.m3u8?access_token=" + d.token(),
               "-c",
               "copy",
               (dir.path() / ("live" + std::to_string(i) + ".mp4")).string()};
    ff.output_file = dir.path() / ("ffmpeg" + std::to_string(i) + ".log");
    ff.new_session = false;
    players.push_back(ChildProcess::spawn(ff));
  }
  for (auto& player : players) CHECK(player.wait() == 0);
  CHECK(recorder.wait() == 0);
  for (int i = 0; i < 3; ++i) {
    const auto got = test::probe_packets(dir.path() / ("live" + std::to_string(i) + ".mp4"), dir.path());
    INFO("player " << i);
    REQUIRE(got.size() >= 25);
    CHECK(got.front().key);
    std::size_t at = source.size();
    for (std::size_t k = 0; k < source.size(); ++k) {
      if (source[k].key && source[k].size == got.front().size) {
        at = k;
        break;
      }
    }
    REQUIRE(at + got.size() <= source.size());
    for (std::size_t k = 0; k < got.size(); ++k) CHECK(got[k].size == source[at + k].size);
  }
  // 10 s of ~2 s segments: each fetched from vigild once, not once per player.
  INFO(test::http_request_without_token(p, "GET", "/metrics").body);
  INFO("live segments fetched upstream: "
       << metric(p, "vigil_proxy_upstream_requests_total", {{"kind", "live_segment"}})
       << ", viewer requests: " << metric(p, "vigil_proxy_requests_total"));
  CHECK(metric(p, "vigil_proxy_upstream_requests_total", {{"kind", "live_segment"}}) <= 7);
  CHECK(metric(p, "vigil_proxy_cache_hits_total") + metric(p, "vigil_proxy_coalesced_waits_total") > 0);
}
