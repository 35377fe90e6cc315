// A pulled camera's recorder (its ingest worker) gets nothing it does not need, and its password
// goes nowhere: the worker holds descriptors 0-2, its control socket and its own connections only
// (none of vigild's listeners, clients or files), its command line has no password (the URL comes
// through the control socket), it runs as an unprivileged account when vigild is root, and neither
// vigild's log nor the workers' logs
// shows the password of a camera that fails. A real vigild and a real RTSP camera (GStreamer).
#include <signal.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <chrono>
#include <fstream>
#include <pqxx/pqxx>
#include <regex>
#include <set>

#include "common/child_process.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/media_fixture.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/rtsp_camera_process.hpp"
#include "tests/support/vigild_process.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace vigil;
using namespace std::chrono_literals;
using test::eventually;

namespace {

constexpr std::string_view kSecret = "s3cr3t-Pa55";

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What each open descriptor of PID (from 3 up: 0-2 are stdin, the log and the log) refers to:
// "socket:[inode]", "pipe:[inode]", a path.
std::map<int, std::string> descriptors_of(pid_t pid, int from = 0) {
  std::map<int, std::string> out;
  const std::filesystem::path dir = "/proc/" + std::to_string(pid) + "/fd";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const int fd = std::stoi(e.path().filename().string());
    if (fd < from) continue;
    out[fd] = std::filesystem::read_symlink(e.path(), ec).string();
  }
  return out;
}

// The pid of camera NAME's newest recorder, from vigild's "camera recorder started" lines.
std::optional<pid_t> recorder_pid(const std::string& vigild_log, const std::string& name) {
  static const std::regex started(R"(msg="camera recorder started" camera=(\S+) pid=(\d+))");
  std::optional<pid_t> pid;
  for (std::sregex_iterator it(vigild_log.begin(), vigild_log.end(), started), end; it != end; ++it) {
    if ((*it)[1] == name) pid = std::stoi((*it)[2]);
  }
  return pid;
}

std::string proc_text(pid_t pid, const std::string& what) {
  auto text = slurp("/proc/" + std::to_string(pid) + "/" + what);
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

uid_t uid_of(pid_t pid) {
  std::istringstream in(proc_text(pid, "status"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Uid:", 0) == 0) return static_cast<uid_t>(std::stoul(line.substr(4)));
  }
  return static_cast<uid_t>(-1);
}

}  // namespace

TEST_CASE("a pulled camera's recorder: own descriptors only, no password on argv or in any log, unprivileged",
          "[camera][cli][rtsp][privilege]") {
  test::TempDir dir;
  const auto data = dir.path() / "data";
  const auto profile = test::make_sim_profile(dir.path());
  [[maybe_unused]] auto [camera, port, camera_log] = test::start_rtsp_camera(dir.path());
  auto args = test::sim_volume_args(dir.path(), profile, 256, /*pull_cameras=*/true);
  args.insert(args.end(), {"--recorder", VIGIL_CLI_PATH});
  test::VigildProcess d(data, args);
  REQUIRE(d.wait_ready());
  auto cli = [&](std::vector<std::string> a, const std::string& log) {
    return test::run_to_exit(VIGIL_CLI_PATH, std::move(a), dir.path() / log);
  };
  // GStreamer's server asks for no credentials: a URL with them records all the same.
  const std::string good = "rtsp://viewer:" + std::string(kSecret) + "@127.0.0.1:" + std::to_string(port) + "/cam1";
  // Port 1 on loopback refuses: this camera's recorder fails, and says so, again and again.
  const std::string bad = "rtsp://viewer:" + std::string(kSecret) + "@127.0.0.1:1/cam1";
  REQUIRE(cli({"camera", "add", "porch", good, "--data", data.string()}, "add.log").status == 0);
  REQUIRE(cli({"camera", "add", "broken", bad, "--data", data.string()}, "add2.log").status == 0);

  pqxx::connection db("host=" + (data / "pg" / "run").string() + " port=5432 user=vigil dbname=vigil");
  auto scalar = [&](const std::string& sql) {
    pqxx::nontransaction q(db);
    auto r = q.exec(sql);
    return r.empty() || r[0][0].is_null() ? std::string() : r[0][0].as<std::string>();
  };
  INFO(d.output());
  REQUIRE(eventually([&] {
    return scalar(
               "SELECT s.state FROM streams s JOIN cameras c ON c.id = s.camera_id WHERE c.name = 'porch' "
               "ORDER BY s.id DESC LIMIT 1") == "recording";
  }));
  const auto pid = recorder_pid(d.output(), "porch");
  REQUIRE(pid);

  // Descriptors: 0-2, then only what the recorder opened itself (its connections to the camera and
  // to vigild): nothing it shares with vigild — no listener, no client's connection, no file.
  const auto child_fds = descriptors_of(*pid, 3);
  std::set<std::string> vigild_objects;
  for (const auto& [fd, what] : descriptors_of(d.pid())) vigild_objects.insert(what);
  for (const auto& [fd, what] : child_fds) {
    INFO("recorder fd " << fd << " -> " << what);
    // "anon_inode:[eventfd]" names a kind, not an object: only sockets, pipes and files compare.
    if (what.starts_with("anon_inode:")) continue;
    CHECK_FALSE(vigild_objects.contains(what));
    CHECK_FALSE(what.find("pipe:") == 0);  // the URL's pipe was read and closed
  }
  CHECK(child_fds.size() <= 9);  // its own: the control socket, two connections per camera, what libraries keep

  // The command line names the camera, not its URL; the password is nowhere in it.
  const auto cmdline = proc_text(*pid, "cmdline");
  CHECK_THAT(cmdline, ContainsSubstring("ingest"));
  CHECK_THAT(cmdline, ContainsSubstring("--control-fd"));
  CHECK_THAT(cmdline, !ContainsSubstring(std::string(kSecret)));

  // vigild runs as root here (the test does): the recorder does not.
  if (::geteuid() == 0) {
    CHECK(uid_of(*pid) != 0);
    const auto account = lookup_user("vigil-recorder");
    REQUIRE(account);
    CHECK(uid_of(*pid) == account->uid);
  }

  // The failing camera: vigild logs why, masked; so does its session, in its ingest worker's log.
  auto worker_logs = [&] {
    return slurp(data / "log" / "ingest-worker-0.log") + slurp(data / "log" / "ingest-worker-1.log");
  };
  REQUIRE(eventually(
      [&] {
        return d.output().find("camera recorder stopped; retrying\" camera=broken") != std::string::npos &&
               worker_logs().find("camera=broken vigil record: cannot open") != std::string::npos;
      },
      60s));
  CHECK_THAT(d.output(), ContainsSubstring("viewer:***@127.0.0.1:1"));
  CHECK_THAT(worker_logs(), ContainsSubstring("viewer:***@127.0.0.1:1"));
  for (const auto& log : {data / "log" / "ingest-worker-0.log", data / "log" / "ingest-worker-1.log"}) {
    INFO(log);
    CHECK_THAT(slurp(log), !ContainsSubstring(std::string(kSecret)));
  }
  CHECK_THAT(d.output(), !ContainsSubstring(std::string(kSecret)));
  // Nor in the gaps the catalog keeps (a restarted recorder's --gap-reason quotes the last one's words).
  CHECK_THAT(scalar("SELECT string_agg(detail, ' ') FROM gaps"), !ContainsSubstring(std::string(kSecret)));

  camera.terminate(SIGTERM, 5s);
  REQUIRE(d.stop(SIGTERM) == 0);
}
