#include "bench/mediamtx_peer.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "bench/bench_http.hpp"
#include "bench/bench_vigild.hpp"
#include "bench/rtsp_farm.hpp"

namespace fs = std::filesystem;

namespace vigil::bench {

std::optional<fs::path> find_mediamtx(const std::string& path) {
  std::string p = path;
  if (p.empty()) {
    if (const char* env = std::getenv("VIGIL_MEDIAMTX")) p = env;
  }
  if (p.empty() || ::access(p.c_str(), X_OK) != 0) return std::nullopt;
  return fs::path(p);
}

MediamtxPeer::MediamtxPeer(const fs::path& binary, const fs::path& dir) : dir_(dir) {
  fs::create_directories(dir / "rec");
  const int api_port = free_port();
  {
    // Everything but the API and recording is off; keys not named keep MediaMTX's defaults
    // (fMP4 parts of 1 s). The default users allow the API from localhost.
    std::ofstream yml(dir / "mediamtx.yml");
    yml << "logLevel: info\n"
           "logDestinations: [stdout]\n"
           "api: yes\n"
           "apiAddress: 127.0.0.1:"
        << api_port
        << "\n"
           "rtsp: no\nrtmp: no\nhls: no\nwebrtc: no\nsrt: no\nmoq: no\nplayback: no\nmetrics: no\npprof: no\n"
           "pathDefaults:\n"
           "  record: yes\n"
           "  recordFormat: fmp4\n"
           "  recordPath: "
        << (dir / "rec").string()
        << "/%path/%Y-%m-%d_%H-%M-%S-%f\n"
           "  recordSegmentDuration: 1h\n"
           "  rtspTransport: tcp\n"
           "paths: {}\n";
  }
  pid_ = spawn_logged({binary.string(), (dir / "mediamtx.yml").string()}, dir / "mediamtx.log");
  const std::string api = "127.0.0.1:" + std::to_string(api_port);
  for (int i = 0; i < 300 && !api_; ++i) {
    try {
      auto client = std::make_unique<BenchHttp>(api);
      if (client->get("/v3/paths/list").status == 200) api_ = std::move(client);
    } catch (const std::exception&) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        throw std::runtime_error("MediaMTX exited at start (see " + (dir / "mediamtx.log").string() + ")");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  if (!api_) throw std::runtime_error("MediaMTX's API did not answer (see " + (dir / "mediamtx.log").string() + ")");
}

MediamtxPeer::~MediamtxPeer() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int st = 0;
  ::waitpid(pid_, &st, 0);
}

bool MediamtxPeer::add(const std::string& name, const std::string& url, std::string& error) {
  const auto r = api_->send("POST", "/v3/config/paths/add/" + name,
                            boost::json::serialize(boost::json::object{{"source", url}, {"record", true}}));
  if (r.status != 200) error = std::to_string(r.status) + " " + r.body;
  return r.status == 200;
}

bool MediamtxPeer::remove(const std::string& name) {
  return api_->send("DELETE", "/v3/config/paths/delete/" + name).status == 200;
}

std::vector<std::string> MediamtxPeer::ready_paths() {
  const auto r = api_->get("/v3/paths/list?itemsPerPage=10000");
  if (r.status != 200) throw std::runtime_error("MediaMTX's API: " + std::to_string(r.status) + " " + r.body);
  std::vector<std::string> ready;
  const auto doc = boost::json::parse(r.body);  // outlives the loop over its items
  for (const auto& item : doc.at("items").as_array()) {
    const auto& o = item.as_object();
    if (o.at("ready").as_bool()) ready.emplace_back(o.at("name").as_string());
  }
  return ready;
}

std::uintmax_t MediamtxPeer::recorded_bytes(const std::string& name) const {
  std::uintmax_t bytes = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "rec" / name, ec)) {
    if (e.is_regular_file(ec)) bytes += e.file_size(ec);
  }
  return bytes;
}

std::uintmax_t MediamtxPeer::recorded_bytes_total() const {
  std::uintmax_t bytes = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "rec", ec)) {
    if (e.is_regular_file(ec)) bytes += e.file_size(ec);
  }
  return bytes;
}

}  // namespace vigil::bench
