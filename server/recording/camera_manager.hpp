#pragma once
// The camera manager (docs/protocol.md, "Pulled cameras"): every enabled camera with a URL in the
// catalog is recorded by a `vigil record` process that vigild starts, watches and restarts — the
// recorder pulls the camera through libavformat (RTSP over TCP by default), never decodes, and
// records into this vigild over its own wire port like any recording client, with its client-
// side buffer and acknowledgements. One process per camera isolates vigild from a camera or
// demuxer that misbehaves.
// When a recorder exits, the reason is derived from its exit code and last words (camera
// unreachable, admission refused, ...), logged, and handed to the next recorder of that camera
// with --gap-reason, so the outage becomes a gap with that reason once it records again.
// Restarts back off exponentially (1 s … 30 s; reset after a minute of recording). Cameras
// added, removed or disabled are picked up within one poll of the catalog (2 s).
// Thread: its own (blocking catalog queries, process management); never a network or IO thread.
// Errors: logged and retried; the constructor throws if the recorder binary is missing.
// stop() is bounded during a database outage: a catalog query that hangs is cut after kStopGrace.
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/child_process.hpp"

namespace vigil::server {

struct CameraManagerConfig {
  std::string conninfo;            // the catalog
  std::string wire;                // this vigild's wire address, HOST:PORT
  std::filesystem::path recorder;  // the `vigil` binary
  std::filesystem::path log_dir;   // one log per camera's recorder
  std::string token;               // the recorders' token (recorder role), in their environment
  // The account recorders run as (vigild as root); none: vigild's own. A recorder parses what a
  // camera sends: it gets no privilege, no descriptor of vigild's but its log (opened here, as
  // its stdout and stderr) and the pipe its camera URL comes through (--url-fd), never argv.
  std::optional<RunAs> run_as;
  std::chrono::milliseconds poll{2000};
  std::chrono::milliseconds backoff_min{1000}, backoff_max{30'000};
};

class CameraManager {
 public:
  explicit CameraManager(CameraManagerConfig config);
  ~CameraManager();  // stop()
  CameraManager(const CameraManager&) = delete;
  CameraManager& operator=(const CameraManager&) = delete;

  // Stops every recorder (SIGTERM: it sends what it read and ends its stream cleanly) and the
  // manager thread. Idempotent; blocks up to ~15 s.
  void stop();

  // Why a recorder that exited with wait STATUS stopped, from its exit code and LAST_LINE.
  static std::string exit_reason(int status, const std::string& last_line);

 private:
  struct Pull {
    std::string url;
    ChildProcess child;
    bool running = false;
    int failures = 0;
    std::chrono::steady_clock::time_point started{}, next_start{};
    std::string last_reason;  // why the previous recorder stopped: the next one's --gap-reason
  };
  void run(std::stop_token stop);
  void reconcile(const std::map<std::string, std::string>& wanted);
  void start(const std::string& name, Pull& p);
  void reap(const std::string& name, Pull& p);
  // The manager thread: FD is the socket of the catalog query now running (-1: none).
  void querying(int fd);

  static constexpr std::chrono::milliseconds kStopGrace{1000};

  CameraManagerConfig config_;
  std::map<std::string, Pull> pulls_;          // the manager thread's
  std::map<std::string, std::int64_t> rates_;  // the manager thread's: cameras' declared_rate_bps, when set
  std::mutex mu_;
  std::condition_variable_any cv_;
  int query_fd_ = -1;  // guarded by mu_: stop() shuts it down if the query hangs
  std::jthread thread_;
};

// The `vigil` binary beside vigild (installed layout) or in the build tree.
std::filesystem::path default_recorder_path();

}  // namespace vigil::server
