#pragma once
// What /healthz and vigil_camera_up say of the pulled cameras (docs/metrics.md, "Health"). The camera
// manager publishes its cameras' sessions here after each of its rounds (a copy under a small
// mutex); whether a camera records is read from its recording streams (Metrics::recording_streams,
// the count its recording sessions keep). Readers never wait on the manager thread, the catalog
// or a worker: a health check answers at once whatever the cameras do.
// Thread: any. Errors: none.
#include <chrono>
#include <cstddef>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace vigil::server {

class Metrics;

// One enabled camera with a URL, as the camera manager sees it.
struct PulledCamera {
  std::string name;
  bool session = false;     // its recorder runs on a worker now
  std::string last_reason;  // why its previous session ended; empty: none has ended yet
};

// starting: its first session runs and has no recording stream yet; recording: a recording stream
// is open; reconnecting: a session ended (camera unreachable, refused, worker died) and it has not
// recorded since — waiting for its next start or trying again. Reconnecting cameras are "down".
enum class CameraState { starting, recording, reconnecting };

struct CamerasHealth {
  bool pulling = false;  // the camera manager runs and has read the catalog's cameras
  int enabled = 0, recording = 0, starting = 0, down = 0;
  struct Down {
    std::string name, reason;
  };
  std::vector<Down> down_cameras;  // by name, at most the bound given to health()
};

class CameraStatusBoard {
 public:
  // METRICS (optional) gets vigil_camera_up and vigil_camera_restarts_total; its collect hook
  // reads this board, which must outlive its renders.
  explicit CameraStatusBoard(Metrics* metrics = nullptr);
  CameraStatusBoard(const CameraStatusBoard&) = delete;
  CameraStatusBoard& operator=(const CameraStatusBoard&) = delete;

  // The camera manager's thread: every enabled pulled camera now; a camera's recorder started
  // again after its session ended.
  void publish(std::vector<PulledCamera> cameras);
  void restarted(const std::string& name);

  // Any thread: the counts, and the down cameras' names (the first MAX_LISTED by name).
  CamerasHealth health(std::size_t max_listed = 20) const;

 private:
  CameraState state_of(const PulledCamera& c) const;
  void publish_up();  // the collect hook: vigil_camera_up per pulled camera

  Metrics* metrics_;
  mutable std::mutex mu_;
  bool published_ = false;             // guarded by mu_
  std::vector<PulledCamera> cameras_;  // guarded by mu_, by name
  std::set<std::string> up_series_;    // guarded by mu_: cameras with a vigil_camera_up series
};

}  // namespace vigil::server
