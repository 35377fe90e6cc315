#include "client/cli/ingest_worker.hpp"

#include <poll.h>
#include <unistd.h>

extern "C" {
#include <libavutil/log.h>
}

#include <cerrno>
#include <cstdarg>
#include <ostream>
#include <thread>

#include "client/cli/av_log_line.hpp"
#include "client/cli/line_buf.hpp"
#include "client/cli/record_command.hpp"
#include "common/exit_codes.hpp"
#include "common/ingest_control.hpp"
#include "common/track.hpp"
#include "common/redact.hpp"

namespace vigil::client {
namespace {

// The camera a thread records, for FFmpeg's messages (its log callback is the process's).
thread_local const std::string* t_camera = nullptr;

// Writes "camera=NAME LINE\n" to stderr in one write (lines of cameras do not interleave), with
// URL passwords masked. Nothing buffered between lines; the last line is kept as the session's
// last words.
void write_tagged(const std::string& name, std::string_view line) {
  const auto text = "camera=" + name + " " + redact_credentials(line) + "\n";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, text.data(), text.size());
}

void tagging_av_log(void* avcl, int level, const char* fmt, va_list args) {
  if (const auto text = av_log_line(avcl, level, fmt, args))
    write_tagged(t_camera ? *t_camera : std::string("-"), *text);
}

// One camera's log: an ostream whose lines are tagged with its name.
class CameraLogBuf : public LineBuf {
 public:
  explicit CameraLogBuf(std::string name) : name_(std::move(name)) {}
  const std::string& last_line() const { return last_; }

 protected:
  void on_line(std::string& line) override {
    write_tagged(name_, line);
    last_ = redact_credentials(line).substr(0, 300);
  }

 private:
  std::string name_, last_;
};

}  // namespace

struct IngestWorker::Camera {
  explicit Camera(const std::string& n) : name(n), buf(n), log(&buf) {}
  std::string name;
  std::atomic<bool> stop{false}, done{false};
  CameraLogBuf buf;
  std::ostream log;
  std::thread thread;
};

IngestWorker::IngestWorker(std::string server, std::string token, int control_fd)
    : server_(std::move(server)), token_(std::move(token)), control_fd_(control_fd) {
  av_log_set_callback(tagging_av_log);
}

IngestWorker::~IngestWorker() {
  for (auto& [name, c] : cameras_) c->stop.store(true);
  reap(true);
}

void IngestWorker::send(const std::string& message) {
  std::lock_guard lock(send_mu_);
  std::string_view rest = message;
  while (!rest.empty()) {
    const ssize_t n = ::write(control_fd_, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // vigild is gone: nobody to tell
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

void IngestWorker::start(const ingest::Start& m) {
  const auto& name = m.name;
  if (cameras_.contains(name)) {
    // The manager never starts a camera twice; if it did, the running session goes on.
    send(ingest::format(ingest::Ended{name, exit_code::kUsage, "already recording in this worker"}));
    return;
  }
  // NAME is a track label: the camera's name, or NAME/sub for its sub stream.
  const auto track = parse_track_label(name);
  if (!track || track->media_kind != MediaKind::video) {
    send(ingest::format(ingest::Ended{name, exit_code::kUsage, "not a camera's video track: " + name}));
    return;
  }
  auto cam = std::make_unique<Camera>(name);
  auto* c = cam.get();
  PullArgs pull{.server = server_,
                .token = token_,
                .name = track->camera,
                .input = m.url,
                .gap_reason = m.gap_reason,
                .role = std::string(role_name(track->role)),
                .rate_bps = static_cast<double>(m.rate_bps)};
  c->thread = std::thread([this, c, pull = std::move(pull)] {
    t_camera = &c->name;
    int rc = exit_code::kFailed;
    try {
      rc = record_pull(pull, c->stop, c->log);
    } catch (const std::exception& e) {
      c->log << "vigil ingest: " << e.what() << "\n";
    }
    c->log.flush();
    send(ingest::format(ingest::Ended{c->name, rc, c->buf.last_line()}));
    c->done.store(true);
  });
  cameras_.emplace(name, std::move(cam));
}

void IngestWorker::handle(std::string_view line) {
  const auto cmd = ingest::parse_command(line);
  if (!cmd) {
    write_tagged("-", "vigil ingest: not a control message: " + std::string(line.substr(0, 100)));
    return;
  }
  if (cmd->start) start(*cmd->start);
  if (cmd->stop) {
    if (auto it = cameras_.find(cmd->stop->name); it != cameras_.end()) {
      it->second->stop.store(true);
      stopping_.emplace(it->first, std::move(it->second));
      cameras_.erase(it);
    } else {
      send(ingest::format(ingest::Ended{cmd->stop->name, exit_code::kOk, "was not recording in this worker"}));
    }
  }
}

// Joins the threads of cameras that ended (ALL: of every camera, waiting for them).
void IngestWorker::reap(bool all) {
  if (all) {
    for (auto& [name, c] : cameras_) stopping_.emplace(name, std::move(c));
    cameras_.clear();
  }
  for (auto it = stopping_.begin(); it != stopping_.end();) {
    if (all || it->second->done.load()) {
      it->second->thread.join();
      it = stopping_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = cameras_.begin(); it != cameras_.end();) {
    if (it->second->done.load()) {
      it->second->thread.join();
      it = cameras_.erase(it);
    } else {
      ++it;
    }
  }
}

int IngestWorker::run(const std::atomic<bool>& stop) {
  std::string buffer;
  bool open = true;
  while (open && !stop.load()) {
    pollfd p{control_fd_, POLLIN, 0};
    const int n = ::poll(&p, 1, 200);
    reap(false);
    if (n <= 0) continue;  // timeout or a signal: look at STOP again
    char chunk[4096];
    const ssize_t got = ::read(control_fd_, chunk, sizeof chunk);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) {
      open = false;  // vigild closed it (or died): nothing more will come
      break;
    }
    buffer.append(chunk, static_cast<std::size_t>(got));
    ingest::for_each_line(buffer, [&](std::string_view line) { handle(line); });
  }
  // Stop every camera at once, then wait for each: all of them end in about one session's time.
  for (auto& [name, c] : cameras_) c->stop.store(true);
  reap(true);
  return exit_code::kOk;
}

}  // namespace vigil::client
