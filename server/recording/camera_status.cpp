#include "server/recording/camera_status.hpp"

#include <algorithm>

#include "server/core/vigild_metrics.hpp"

namespace vigil::server {

CameraStatusBoard::CameraStatusBoard(Metrics* metrics) : metrics_(metrics) {
  if (metrics_) metrics_->on_collect([this] { publish_up(); });
}

void CameraStatusBoard::publish(std::vector<PulledCamera> cameras) {
  std::sort(cameras.begin(), cameras.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::lock_guard lock(mu_);
  cameras_ = std::move(cameras);
  published_ = true;
}

void CameraStatusBoard::restarted(const std::string& name) {
  if (metrics_) metrics_->camera_restarted(name);
}

CameraState CameraStatusBoard::state_of(const PulledCamera& c) const {
  if (metrics_ && metrics_->main_video_streams(c.name) > 0) return CameraState::recording;
  return c.last_reason.empty() ? CameraState::starting : CameraState::reconnecting;
}

CamerasHealth CameraStatusBoard::health(std::size_t max_listed) const {
  CamerasHealth h;
  std::vector<PulledCamera> cameras;
  {
    std::lock_guard lock(mu_);
    h.pulling = published_;
    cameras = cameras_;  // a copy: the recording counts are read without holding mu_
  }
  h.enabled = static_cast<int>(cameras.size());
  for (const auto& c : cameras) {
    switch (state_of(c)) {
      case CameraState::recording: ++h.recording; break;
      case CameraState::starting: ++h.starting; break;
      case CameraState::reconnecting:
        ++h.down;
        if (h.down_cameras.size() < max_listed) h.down_cameras.push_back({c.name, c.last_reason});
        break;
    }
  }
  return h;
}

void CameraStatusBoard::publish_up() {
  std::vector<PulledCamera> cameras;
  std::set<std::string> had;
  {
    std::lock_guard lock(mu_);
    cameras = cameras_;
    had = up_series_;
  }
  std::set<std::string> now;
  for (const auto& c : cameras) {
    metrics_->camera_up(c.name, state_of(c) == CameraState::recording);
    now.insert(c.name);
  }
  // Removed or disabled cameras: their series go (a removed camera is not a camera that is down).
  for (const auto& name : had) {
    if (!now.contains(name)) metrics_->camera_gone(name);
  }
  std::lock_guard lock(mu_);
  up_series_ = std::move(now);
}

}  // namespace vigil::server
