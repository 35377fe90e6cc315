// `vigil camera discover` against the ONVIF simulator (tests/support/onvif_simulator): --json
// prints the device with its main and substream URLs and never the password; a wrong password is
// a clear error and exit 1; --add makes it a pulled camera of a real vigild with url and
// substream_url (the catalog holds the credentials, the API and the output never show them), and
// a second --add leaves it as it is. vigild's GET /api/v1/discovery answers the same JSON, for
// admins only.
#include <boost/json.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <pqxx/pqxx>

#include "tests/support/http_client.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/onvif_simulator.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;

TEST_CASE("vigil camera discover lists an ONVIF camera and --add makes it a pulled camera", "[camera][cli][onvif]") {
  test::TempDir dir;
  test::OnvifSimulatorOptions so;
  so.name = "Front Door";
  so.user = "admin";
  so.password = "s3cret";
  so.rtsp_port = 18554;
  test::OnvifSimulator sim(so);
  auto cli = [&](std::vector<std::string> args, const std::string& log) {
    return test::run_to_exit(VIGIL_CLI_PATH, std::move(args), dir.path() / log);
  };
  const std::vector<std::string> probe{"camera", "discover", "--probe", sim.probe_address(), "--timeout", "1"};

  auto with = [&](std::vector<std::string> more) {
    auto args = probe;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const auto listed = cli(with({"--user", "admin", "--password", "s3cret", "--json"}), "json.log");
  INFO(listed.output);
  REQUIRE(listed.status == 0);
  CHECK_THAT(listed.output, !ContainsSubstring("s3cret"));
  const auto json_line = listed.output.substr(listed.output.find('{'));
  const auto doc = boost::json::parse(json_line.substr(0, json_line.find('\n')));
  const auto& devices = doc.at("devices").as_array();
  REQUIRE(devices.size() == 1);
  CHECK(devices[0].at("name").as_string() == "Front Door");
  CHECK(devices[0].at("main_url").as_string() == "rtsp://127.0.0.1:18554/main");
  CHECK(devices[0].at("substream_url").as_string() == "rtsp://127.0.0.1:18554/sub");
  CHECK(devices[0].at("profiles").as_array().size() == 2);

  const auto table = cli(with({"--user", "admin", "--password", "s3cret"}), "table.log");
  CHECK(table.status == 0);
  CHECK_THAT(table.output, ContainsSubstring("1920x1080"));
  CHECK_THAT(table.output, ContainsSubstring("rtsp://127.0.0.1:18554/sub"));

  const auto refused = cli(with({"--user", "admin", "--password", "wrong"}), "wrong.log");
  CHECK(refused.status == 1);
  CHECK_THAT(refused.output, ContainsSubstring("wrong user or password"));
  CHECK_THAT(refused.output, !ContainsSubstring("wrong@"));
  CHECK(cli(with({"--password", "x"}), "usage.log").status == 2);

  const auto data = dir.path() / "data";
  const auto profile = test::make_sim_profile(dir.path());
  test::VigildProcess d(data, test::sim_volume_args(dir.path(), profile));
  REQUIRE(d.wait_ready());
  const auto added =
      cli(with({"--user", "admin", "--password", "s3cret", "--add", "--data", data.string()}), "add.log");
  INFO(added.output);
  REQUIRE(added.status == 0);
  CHECK_THAT(added.output, ContainsSubstring("camera Front-Door added"));
  CHECK_THAT(added.output, !ContainsSubstring("s3cret"));
  const test::HttpApi api{d.http()};
  const auto camera = api.get("/api/v1/cameras/Front-Door");
  REQUIRE(camera.status == 200);
  const auto c = camera.json().as_object();
  CHECK(c.at("url").as_string() == "rtsp://127.0.0.1:18554/main");
  CHECK(c.at("substream_url").as_string() == "rtsp://127.0.0.1:18554/sub");
  // What vigild will pull with: the credentials given to discover, kept in the catalog only.
  pqxx::connection db("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
  pqxx::nontransaction q(db);
  const auto row = q.exec1("SELECT url, substream_url FROM cameras WHERE name = 'Front-Door'");
  CHECK(row[0].as<std::string>() == "rtsp://admin:s3cret@127.0.0.1:18554/main");
  CHECK(row[1].as<std::string>() == "rtsp://admin:s3cret@127.0.0.1:18554/sub");

  // The admin route answers the same JSON (no credentials: this camera wants them, so it is
  // listed with its error); a viewer's token is refused.
  const auto route = api.get("/api/v1/discovery?timeout=1&probe=" + sim.probe_address());
  INFO(route.body);
  REQUIRE(route.status == 200);
  const auto route_json = route.json();
  const auto& found = route_json.at("devices").as_array();
  REQUIRE(found.size() == 1);
  CHECK(found[0].at("name").as_string() == "Front Door");
  CHECK_THAT(std::string(found[0].at("error").as_string()), ContainsSubstring("wrong user or password"));
  test::OnvifSimulator open_sim;  // one without users
  const auto open_route = api.get("/api/v1/discovery?timeout=1&probe=" + open_sim.probe_address());
  REQUIRE(open_route.status == 200);
  CHECK(open_route.json().at("devices").at(0).at("main_url").as_string() == "rtsp://127.0.0.1:8554/main");
  CHECK(api.get("/api/v1/discovery?timeout=0").status == 400);
  CHECK(api.get("/api/v1/discovery?timeout=11").status == 400);
  const auto viewer = cli({"token", "create", "--role", "viewer", "--data", data.string()}, "viewer.log");
  REQUIRE(viewer.status == 0);
  const auto vgl = viewer.output.find("vgl_");
  REQUIRE(vgl != std::string::npos);
  const auto viewer_token = viewer.output.substr(vgl, viewer.output.find_first_of("\r\n", vgl) - vgl);
  CHECK(test::http_request(d.http(), "GET", "/api/v1/discovery?timeout=1",
                           "Authorization: Bearer " + viewer_token + "\r\n")
            .status == 403);

  const auto again =
      cli(with({"--user", "admin", "--password", "s3cret", "--add", "--data", data.string()}), "again.log");
  CHECK(again.status == 0);
  CHECK_THAT(again.output, ContainsSubstring("exists: left as it is"));
}
