#include "server/recording/camera_manager.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include <pqxx/pqxx>

#include "common/log.hpp"
#include "common/redact.hpp"
#include "catalog/camera_rows.hpp"
#include "catalog/conninfo.hpp"

namespace fs = std::filesystem;

namespace vigil::server {
namespace {

// vigil record's exit codes (client/cli/record_command.cpp).
constexpr int kRecordFailed = 1, kRecordUnreachable = 3, kRecordRefused = 4;
constexpr auto kHealthyRun = std::chrono::seconds(60);  // a run this long resets the backoff

std::string last_line(const fs::path& log) {
  auto text = tail_of_file(log, 1);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (auto nl = text.rfind('\n'); nl != std::string::npos) text = text.substr(nl + 1);
  return redact_credentials(text).substr(0, 300);  // masked before it is cut: a cut could hide the @
}

// The descriptor number a recorder reads its camera URL from (vigil record --url-fd).
constexpr int kUrlFd = 3;

// A pipe holding URL, written and closed: its read end (close-on-exec here) is what a recorder
// gets as --url-fd. The URL never appears on a command line (/proc/PID/cmdline is world-readable).
int url_pipe(const std::string& url) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  const ssize_t n = ::write(fds[1], url.data(), url.size());
  const int e = errno;
  ::close(fds[1]);
  if (n != static_cast<ssize_t>(url.size())) {
    ::close(fds[0]);
    throw std::system_error(n < 0 ? e : EMSGSIZE, std::generic_category(), "writing the camera URL to its pipe");
  }
  // The recorder's reads block as usual (O_NONBLOCK is the open file's: clear it).
  ::fcntl(fds[0], F_SETFL, 0);
  return fds[0];
}

}  // namespace

fs::path default_recorder_path() {
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const auto& candidate :
         {self.parent_path() / "vigil", self.parent_path().parent_path() / "client" / "vigil"}) {
      if (fs::exists(candidate, ec)) return candidate;
    }
  }
  return VIGIL_CLI_BUILD_PATH;
}

std::string CameraManager::exit_reason(int status, const std::string& last) {
  const std::string why = last.empty() ? std::string() : ": " + last;
  if (WIFSIGNALED(status)) return "recorder killed by signal " + std::to_string(WTERMSIG(status)) + why;
  switch (WEXITSTATUS(status)) {
    case 0: return "camera stream ended" + why;
    case kRecordFailed: return "camera unreachable or stream lost" + why;
    case kRecordUnreachable: return "vigild's wire port unreachable" + why;
    case kRecordRefused: return "admission refused" + why;
    default: return "recorder failed (" + describe_wait_status(status) + ")" + why;
  }
}

CameraManager::CameraManager(CameraManagerConfig config) : config_(std::move(config)) {
  if (!fs::exists(config_.recorder)) {
    throw std::runtime_error("camera manager: the recorder " + config_.recorder.string() +
                             " does not exist (set --recorder to the `vigil` binary)");
  }
  fs::create_directories(config_.log_dir);
  thread_ = std::jthread([this](std::stop_token st) { run(st); });
}

CameraManager::~CameraManager() { stop(); }

void CameraManager::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  cv_.notify_all();
  {
    // A catalog query a hung database never answers would hold the stop for ever: after a grace,
    // its socket is shut down, the query fails, and the thread goes on to stop the recorders.
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, kStopGrace, [&] { return query_fd_ < 0; })) {
      log::warn("camera manager: catalog query unanswered at stop; its connection is cut");
      ::shutdown(query_fd_, SHUT_RDWR);
    }
  }
  thread_.join();
}

void CameraManager::start(const std::string& name, Pull& p) {
  std::vector<std::string> argv{
      config_.recorder.string(), "--server", config_.wire, "record", "--stream", name, "--url-fd",
      std::to_string(kUrlFd)};
  if (const auto rate = rates_.find(name); rate != rates_.end()) {
    // The operator's rate, declared as given (client/cli/rate_policy.hpp), in the recorder's Mbit/s.
    argv.push_back("--rate");
    argv.push_back(std::to_string(static_cast<double>(rate->second) / 1e6));
  }
  if (!p.last_reason.empty()) {
    argv.push_back("--gap-reason");
    argv.push_back(p.last_reason);
  }
  const auto log = config_.log_dir / ("camera-" + name + ".log");
  int url_fd = -1;
  try {
    // Its own session: a terminal's Ctrl-C reaches vigild, which stops recorders in order.
    SpawnOptions opts;
    opts.argv = argv;
    opts.output_file = log;
    opts.run_as = config_.run_as;
    opts.chown_output = false;  // written through the descriptor vigild opened: the recorder needs no file access
    if (!config_.token.empty()) opts.env.push_back("VIGIL_TOKEN=" + config_.token);
    url_fd = url_pipe(p.url);
    opts.pass_fds = {{url_fd, kUrlFd}};
    p.child = ChildProcess::spawn(opts);
    ::close(url_fd);
    url_fd = -1;
    p.running = true;
    p.started = std::chrono::steady_clock::now();
    log::info("camera recorder started", {{"camera", name}, {"pid", p.child.pid()}, {"log", log.string()}});
  } catch (const std::exception& e) {
    if (url_fd >= 0) ::close(url_fd);
    p.last_reason = std::string("recorder could not start: ") + e.what();
    p.next_start = std::chrono::steady_clock::now() + config_.backoff_max;
    log::error("camera recorder could not start", {{"camera", name}, {"error", e.what()}});
  }
}

void CameraManager::reap(const std::string& name, Pull& p) {
  if (!p.running || p.child.running()) return;
  p.running = false;
  const int status = p.child.wait_status().value_or(0);
  const auto now = std::chrono::steady_clock::now();
  p.last_reason = exit_reason(status, last_line(config_.log_dir / ("camera-" + name + ".log")));
  p.failures = now - p.started >= kHealthyRun ? 1 : p.failures + 1;
  auto delay = config_.backoff_min * (1 << std::min(p.failures - 1, 10));
  delay = std::min(delay, config_.backoff_max);
  p.next_start = now + delay;
  log::warn("camera recorder stopped; retrying",
            {{"camera", name}, {"reason", p.last_reason}, {"retry_in_ms", delay.count()}, {"failures", p.failures}});
}

void CameraManager::reconcile(const std::map<std::string, std::string>& wanted) {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = pulls_.begin(); it != pulls_.end();) {
    auto w = wanted.find(it->first);
    if (w == wanted.end() || w->second != it->second.url) {
      // Removed, disabled or moved to another URL: stop it cleanly (a new URL starts afresh below).
      if (it->second.running) {
        log::info("camera recorder stopping",
                  {{"camera", it->first}, {"why", w == wanted.end() ? "removed or disabled" : "URL changed"}});
        it->second.child.terminate(SIGTERM, std::chrono::seconds(15));
      }
      it = pulls_.erase(it);
      continue;
    }
    ++it;
  }
  for (const auto& [name, url] : wanted) {
    auto& p = pulls_[name];
    if (p.url.empty()) p.url = url;
    reap(name, p);
    if (!p.running && now >= p.next_start) start(name, p);
  }
}

void CameraManager::querying(int fd) {
  {
    std::lock_guard lock(mu_);
    query_fd_ = fd;
  }
  cv_.notify_all();
}

void CameraManager::run(std::stop_token stop) {
  std::unique_ptr<pqxx::connection> conn;
  bool warned = false;
  while (!stop.stop_requested()) {
    std::map<std::string, std::string> wanted;
    bool have = false;
    try {
      if (!conn || !conn->is_open())
        conn = std::make_unique<pqxx::connection>(catalog::with_connect_timeout(config_.conninfo, 2));
      querying(conn->sock());
      pqxx::work tx(*conn);
      rates_.clear();
      for (const auto& c : catalog::list_cameras(tx)) {
        if (c.enabled && c.url) wanted[c.name] = *c.url;
        if (c.enabled && c.url && c.declared_rate_bps) rates_[c.name] = *c.declared_rate_bps;
      }
      tx.commit();
      querying(-1);
      have = true;
      warned = false;
    } catch (const std::exception& e) {
      querying(-1);
      conn.reset();
      if (!warned)
        log::warn("camera manager cannot read the catalog; keeps recorders as they are", {{"error", e.what()}});
      warned = true;
    }
    try {
      if (have) {
        reconcile(wanted);
      } else {
        for (auto& [name, p] : pulls_) reap(name, p);
      }
    } catch (const std::exception& e) {
      // Never let the manager thread die: cameras would silently stop being recorded.
      log::error("camera manager: unexpected error; retrying at the next poll", {{"error", e.what()}});
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, stop, config_.poll, [] { return false; });
  }
  // Stop every recorder: each sends what it has read and ends its stream (all at once, then
  // wait for each).
  for (auto& [name, p] : pulls_) {
    if (p.running && p.child.running()) ::kill(p.child.pid(), SIGTERM);
  }
  for (auto& [name, p] : pulls_) {
    if (p.running) p.child.terminate(SIGTERM, std::chrono::seconds(15));
  }
  pulls_.clear();
}

}  // namespace vigil::server
