// vigild's HTTP API over HTTPS (--http-tls-cert/--http-tls-key), with real clients: curl trusting
// the certificate gets /healthz and the API; curl trusting another certificate, plain HTTP to the
// HTTPS port and TLS 1.1 are refused, and vigild keeps serving; ffprobe verifying the certificate
// plays a recording's HLS playlist (token in the URL), every packet; `vigil token list` finds the
// HTTPS address in endpoints.json and checks the certificate against --tls-ca. Bad flags stop
// vigild with a clear error.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <fstream>

#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tls_fixture.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
namespace fs = std::filesystem;

using test::curl;
using test::make_certificate;
using test::read_file;

TEST_CASE("HTTPS: curl, ffprobe and the CLI against vigild's HTTP API with --http-tls-cert", "[http][tls][vigild]") {
  test::TempDir dir;
  make_certificate(dir.path(), "vigild");
  make_certificate(dir.path(), "other");
  const auto cert = dir.path() / "vigild.crt", key = dir.path() / "vigild.key";
  const auto other = dir.path() / "other.crt";
  const auto clip = test::make_h264_clip(dir.path(), 4);
  const auto source = test::probe_packets(clip, dir.path());
  REQUIRE(source.size() == 100);
  const auto profile = test::make_sim_profile(dir.path());
  auto args = test::sim_volume_args(dir.path(), profile);
  args.insert(args.end(), {"--http-tls-cert", cert.string(), "--http-tls-key", key.string()});
  test::VigildProcess d(dir.path() / "data", args);
  REQUIRE(d.wait_ready());
  INFO(d.output());
  CHECK_THAT(d.output(), ContainsSubstring("https://127.0.0.1:"));
  CHECK_THAT(read_file(dir.path() / "data" / "run" / "endpoints.json"), ContainsSubstring("\"http_tls\":true"));
  const std::string base = "https://" + d.http();

  // curl with the certificate as its CA: the health check, then the API with a token.
  auto health = curl(dir.path(), {"--cacert", cert.string()}, base + "/healthz");
  INFO(health.body);
  CHECK(health.status == 0);
  CHECK(health.code == "200");
  CHECK_THAT(health.body, ContainsSubstring("\"status\""));
  auto cams = curl(dir.path(), {"--cacert", cert.string(), "-H", "Authorization: Bearer " + d.token()},
                   base + "/api/v1/cameras");
  CHECK(cams.status == 0);
  CHECK(cams.code == "200");
  CHECK(curl(dir.path(), {"--cacert", cert.string()}, base + "/api/v1/cameras").code == "401");  // still a token
  // TLS 1.3 and 1.2 are both spoken.
  CHECK(curl(dir.path(), {"--cacert", cert.string(), "--tlsv1.2", "--tls-max", "1.2"}, base + "/healthz").code ==
        "200");
  CHECK(curl(dir.path(), {"--cacert", cert.string(), "--tlsv1.3"}, base + "/healthz").code == "200");

  // Refusals: a certificate the client does not trust (curl: 60), TLS 1.1 (35), plain HTTP to the
  // HTTPS port (no HTTP answer). vigild serves on.
  CHECK(curl(dir.path(), {"--cacert", other.string()}, base + "/healthz").status == 60);
  CHECK(curl(dir.path(), {"--cacert", cert.string(), "--tlsv1.1", "--tls-max", "1.1"}, base + "/healthz").status == 35);
  const auto plain = curl(dir.path(), {}, "http://" + d.http() + "/healthz");
  CHECK(plain.status != 0);
  CHECK(plain.code == "000");
  CHECK(curl(dir.path(), {"--cacert", cert.string()}, base + "/healthz").code == "200");

  // A recording, then its HLS playlist over HTTPS: ffprobe verifies the certificate (-tls_verify 1
  // -ca_file) and reads every packet through the playlist, its init and media segments.
  auto rec =
      test::run_to_exit(VIGIL_CLI_PATH, {"--server", d.wire(), "record", "--stream", "gate", clip.string(), "--fast"},
                        dir.path() / "rec.log");
  INFO(rec.output);
  REQUIRE(rec.status == 0);
  test::wait_for_closed_frames(dir.path() / "data", 100);
  const std::string range = "from=-1h&to=@" + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                                 std::chrono::system_clock::now().time_since_epoch())
                                                                 .count() +
                                                             600);
  const std::string playlist = base + "/api/v1/cameras/gate/hls.m3u8?" + range + "&access_token=" + d.token();
  const auto packets = dir.path() / "hls.packets";
  auto probe = [&](const fs::path& ca) {
    fs::remove(packets);
    return test::run_to_exit("/usr/bin/ffprobe",
                             {"-v", "error", "-tls_verify", "1", "-ca_file", ca.string(), "-select_streams", "v:0",
                              "-show_entries", "packet=size,flags", "-of", "csv=p=0", "-o", packets.string(), playlist},
                             dir.path() / "ffprobe-https.log");
  };
  auto probed = probe(cert);
  INFO(probed.output);
  REQUIRE(probed.status == 0);
  std::vector<std::string> lines;
  {
    std::ifstream in(packets);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) lines.push_back(line);
  }
  REQUIRE(lines.size() == source.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    INFO("packet " << i << ": " << lines[i]);
    CHECK(std::stoll(lines[i]) == source[i].size);
    CHECK((lines[i].find('K') != std::string::npos) == source[i].key);
  }
  auto refused = probe(other);
  CHECK(refused.status != 0);
  CHECK(read_file(packets).empty());  // nothing was read

  // The CLI: endpoints.json says HTTPS; the certificate is checked against --tls-ca.
  const auto data = (dir.path() / "data").string();
  auto list = test::run_to_exit(VIGIL_CLI_PATH, {"--tls-ca", cert.string(), "token", "list", "--data", data},
                                dir.path() / "token-list.log");
  INFO(list.output);
  CHECK(list.status == 0);
  CHECK_THAT(list.output, ContainsSubstring("admin"));
  auto listed =
      test::run_to_exit(VIGIL_CLI_PATH, {"--tls-ca", cert.string(), "token", "list", "--data", data, "--http", base},
                        dir.path() / "token-list2.log");
  CHECK(listed.status == 0);
  auto untrusted = test::run_to_exit(VIGIL_CLI_PATH, {"--tls-ca", other.string(), "token", "list", "--data", data},
                                     dir.path() / "token-untrusted.log");
  INFO(untrusted.output);
  CHECK(untrusted.status == 3);
  CHECK_THAT(untrusted.output, ContainsSubstring("TLS handshake"));
}

TEST_CASE("HTTPS: --http-tls-cert without its key, or unreadable files, stop vigild with a clear error",
          "[http][tls][vigild]") {
  test::TempDir dir;
  make_certificate(dir.path(), "vigild");
  make_certificate(dir.path(), "other");
  const auto cert = (dir.path() / "vigild.crt").string(), key = (dir.path() / "vigild.key").string();
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(),
                {"--data", (dir.path() / "data").string(), "--http-port", "0", "--listen", "127.0.0.1:0"});
    return test::run_to_exit(VIGILD_PATH, args, dir.path() / "vigild.log");
  };
  auto alone = run({"--http-tls-cert", cert});
  CHECK(alone.status == 2);
  CHECK_THAT(alone.output, ContainsSubstring("--http-tls-cert and --http-tls-key go together"));
  auto missing = run({"--http-tls-cert", (dir.path() / "nowhere.crt").string(), "--http-tls-key", key});
  CHECK(missing.status != 0);
  CHECK_THAT(missing.output, ContainsSubstring("--http-tls-cert"));
  CHECK_THAT(missing.output, ContainsSubstring("nowhere.crt"));
  auto mismatched = run({"--http-tls-cert", cert, "--http-tls-key", (dir.path() / "other.key").string()});
  CHECK(mismatched.status != 0);
  CHECK_THAT(mismatched.output, ContainsSubstring("--http-tls-key"));
  CHECK_THAT(mismatched.output, ContainsSubstring("mismatch"));
}
