#include "bench/rtsp_farm.hpp"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "bench/bench_vigild.hpp"

namespace fs = std::filesystem;

namespace vigil::bench {
namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The build directory: `vigil` lives in BUILD/cli/.
fs::path build_dir() { return fs::read_symlink("/proc/self/exe").parent_path().parent_path(); }

}  // namespace

fs::path cached_clip(const ClipSpec& s) {
  const fs::path cache = build_dir() / "bench-cache";
  fs::create_directories(cache);
  char name[160];
  std::snprintf(name, sizeof name, "rtsp-%dx%d-%dfps-gop%d-%.2fmbps-%.0fs.h264", s.width, s.height, s.fps, s.gop,
                s.rate_mbps, s.seconds);
  const fs::path clip = cache / name;
  if (fs::exists(clip) && fs::file_size(clip) > 0) return clip;
  const fs::path partial = cache / (std::string(name) + ".part");
  const fs::path log = cache / (std::string(name) + ".log");
  const std::string rate = std::to_string(static_cast<long>(s.rate_mbps * 1e6));
  // A test pattern with moving noise, so that the encoder needs the bits it is given (a clean
  // pattern compresses to a fraction of the target). Main profile, no B-frames and a keyframe
  // every GOP exactly, as IP cameras send; an access unit delimiter per frame lets the farm
  // split the clip into frames without parsing slices.
  const std::string source = "testsrc2=s=" + std::to_string(s.width) + "x" + std::to_string(s.height) +
                             ":r=" + std::to_string(s.fps) + ",noise=alls=10:allf=t";
  const int pid = spawn_logged({"ffmpeg",
                                "-hide_banner",
                                "-loglevel",
                                "error",
                                "-y",
                                "-f",
                                "lavfi",
                                "-i",
                                source,
                                "-t",
                                std::to_string(s.seconds),
                                "-c:v",
                                "libx264",
                                "-preset",
                                "veryfast",
                                "-profile:v",
                                "main",
                                "-bf",
                                "0",
                                "-g",
                                std::to_string(s.gop),
                                "-keyint_min",
                                std::to_string(s.gop),
                                "-sc_threshold",
                                "0",
                                "-b:v",
                                rate,
                                "-maxrate",
                                rate,
                                "-bufsize",
                                rate,
                                "-x264-params",
                                "aud=1",
                                "-threads",
                                "2",
                                "-f",
                                "h264",
                                partial.string()},
                               log);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !fs::exists(partial)) {
    throw std::runtime_error("ffmpeg could not encode the cameras' clip: " + slurp(log));
  }
  fs::rename(partial, clip);
  return clip;
}

double clip_rate_bps(const fs::path& clip, const ClipSpec& spec) {
  return static_cast<double>(fs::file_size(clip)) * 8 / spec.seconds;
}

CameraFarm::CameraFarm(const fs::path& clip, int fps, int cameras, const fs::path& log, double advertised_bps) {
  pid_ = spawn_logged({"/usr/bin/python3", VIGIL_BENCH_FARM_SCRIPT, clip.string(), std::to_string(fps),
                       std::to_string(cameras), "0", std::to_string(static_cast<long>(advertised_bps))},
                      log);
  for (int i = 0; i < 300 && port_ == 0; ++i) {
    const auto text = slurp(log);
    if (const auto at = text.find("ready "); at != std::string::npos) {
      port_ = std::stoi(text.substr(at + 6));
      break;
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = 0;
      throw std::runtime_error("the camera farm exited at start: " + text);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (port_ == 0) throw std::runtime_error("the camera farm did not start (see " + log.string() + ")");
}

CameraFarm::~CameraFarm() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int st = 0;
  ::waitpid(pid_, &st, 0);
}

std::string CameraFarm::url(int camera) const {
  return "rtsp://127.0.0.1:" + std::to_string(port_) + "/cam" + std::to_string(camera);
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free port");
  }
  const int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

}  // namespace vigil::bench
