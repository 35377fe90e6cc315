#include "server/recording/camera_manager.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include <pqxx/pqxx>

#include "common/log.hpp"
#include "common/redact.hpp"
#include "common/track.hpp"
#include "catalog/camera_rows.hpp"
#include "catalog/conninfo.hpp"
#include "catalog/drain_rows.hpp"
#include "catalog/node_rows.hpp"

namespace fs = std::filesystem;

namespace vigil::server {
namespace {

// vigil record's exit codes (client/cli/record_command.cpp).
constexpr int kRecordFailed = 1, kRecordUnreachable = 3, kRecordRefused = 4;
constexpr auto kHealthyRun = std::chrono::seconds(60);  // a run this long resets the backoff

// The descriptor number a worker reads its commands from (vigil ingest --control-fd).
constexpr int kControlFd = 3;

// Whether pull NAME (a track label) is a camera's main stream, not its sub stream.
bool is_main_pull(const std::string& name) { return name.find('/') == std::string::npos; }

std::string one_line_reason(std::string text) {
  for (auto& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return redact_credentials(text).substr(0, 300);  // masked before it is cut: a cut could hide the @
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

std::string CameraManager::worker_death_reason(int status) {
  if (WIFSIGNALED(status)) return "ingest worker died (signal " + std::to_string(WTERMSIG(status)) + ")";
  return "ingest worker died (" + describe_wait_status(status) + ")";
}

CameraManager::CameraManager(CameraManagerConfig config) : config_(std::move(config)), lease_(config_.lease) {
  if (!fs::exists(config_.recorder)) {
    throw std::runtime_error("camera manager: the recorder " + config_.recorder.string() +
                             " does not exist (set --recorder to the `vigil` binary)");
  }
  fs::create_directories(config_.log_dir);
  for (int i = 0; i < std::max(config_.ingest_workers, 1); ++i) {
    workers_.push_back(std::make_unique<Worker>());
    workers_.back()->index = i;
  }
  thread_ = std::jthread([this](std::stop_token st) { run(st); });
  round_watch_ = std::jthread([this](std::stop_token st) { watch_rounds(st); });
}

CameraManager::~CameraManager() { stop(); }

void CameraManager::cameras_changed() {
  {
    std::lock_guard lock(mu_);
    changed_ = true;
  }
  cv_.notify_all();
}

void CameraManager::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  cv_.notify_all();
  {
    // A catalog query a hung database never answers would hold the stop for ever: after a grace,
    // its socket is shut down, the query fails, and the thread goes on to stop the workers.
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, kStopGrace, [&] { return query_fd_ < 0; })) {
      log::warn("camera manager: catalog query unanswered at stop; its connection is cut");
      ::shutdown(query_fd_, SHUT_RDWR);
    }
  }
  thread_.join();
  round_watch_.request_stop();
  cv_.notify_all();
  round_watch_.join();
}

void CameraManager::watch_rounds(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    cv_.wait_for(lock, stop, std::chrono::milliseconds(250), [] { return false; });
    if (query_fd_ < 0 || query_cut_ || std::chrono::steady_clock::now() - query_since_ < config_.lease.lease) continue;
    log::warn("camera manager: catalog round unanswered for a lease; its connection is cut, recorders go on");
    ::shutdown(query_fd_, SHUT_RDWR);
    query_cut_ = true;
  }
}

// The worker with the fewest cameras, of the first --ingest-workers; when each of those has its
// cap, the first one with room beyond them, or a new one.
CameraManager::Worker& CameraManager::worker_for_next_camera() {
  Worker* best = nullptr;
  for (auto& w : workers_) {
    if (w->cameras.size() >= static_cast<std::size_t>(config_.cameras_per_worker)) continue;
    if (w->index < config_.ingest_workers) {
      if (!best || w->cameras.size() < best->cameras.size()) best = w.get();
    } else if (!best) {
      best = w.get();
    }
  }
  if (!best) {
    workers_.push_back(std::make_unique<Worker>());
    workers_.back()->index = static_cast<int>(workers_.size()) - 1;
    best = workers_.back().get();
  }
  if (best->control_fd < 0) spawn(*best);
  return *best;
}

void CameraManager::spawn(Worker& w) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::system_error(errno, std::generic_category(), "socketpair for an ingest worker");
  }
  const auto log = log_path(w.index);
  try {
    // Its own session: a terminal's Ctrl-C reaches vigild, which stops workers in order.
    SpawnOptions opts;
    opts.argv = {config_.recorder.string(), "--server", config_.wire, "ingest", "--control-fd",
                 std::to_string(kControlFd)};
    opts.output_file = log;
    opts.run_as = config_.run_as;
    opts.chown_output = false;  // written through the descriptor vigild opened: the worker needs no file access
    if (!config_.token.empty()) opts.env.push_back("VIGIL_TOKEN=" + config_.token);
    opts.pass_fds = {{fds[1], kControlFd}};
    w.child = ChildProcess::spawn(opts);
  } catch (...) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw;
  }
  ::close(fds[1]);
  w.control_fd = fds[0];
  ++w.generation;
  w.reader = std::thread([this, index = w.index, gen = w.generation, fd = fds[0]] { read_worker(index, gen, fd); });
  log::info("ingest worker started", {{"worker", w.index}, {"pid", w.child.pid()}, {"log", log.string()}});
}

// A reader thread: the worker's ended messages, then its end (the socket closes when it exits).
void CameraManager::read_worker(int index, int generation, int fd) {
  std::string buffer;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<std::size_t>(n));
    std::vector<Event> got;
    ingest::for_each_line(buffer, [&](std::string_view line) {
      if (auto e = ingest::parse_ended(line)) {
        got.push_back(Event{index, generation, std::move(*e)});
      } else {
        log::warn("ingest worker sent something that is not a message", {{"worker", index}});
      }
    });
    if (!got.empty()) {
      {
        std::lock_guard lock(mu_);
        for (auto& e : got) events_.push_back(std::move(e));
      }
      cv_.notify_all();
    }
  }
  {
    std::lock_guard lock(mu_);
    events_.push_back(Event{index, generation, std::nullopt});
  }
  cv_.notify_all();
}

bool CameraManager::send(Worker& w, const std::string& message) {
  std::string_view rest = message;
  while (!rest.empty()) {
    const ssize_t n = ::send(w.control_fd, rest.data(), rest.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // the worker is gone: its reader reports it
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// The start message of pull NAME: its URL, the operator's declared rate when set (the camera's,
// for its main stream only: the recorder declares it as given, client/cli/rate_policy.hpp; a sub
// stream declares what it advertises), and why its last recording ended.
ingest::Start CameraManager::start_message(const std::string& name, const Pull& p) const {
  const auto rate = rates_.find(name);  // keyed by camera name: a sub stream's label is not one
  return ingest::Start{name, p.url, p.last_reason, rate == rates_.end() ? 0 : rate->second};
}

void CameraManager::start(const std::string& name, Pull& p) {
  try {
    auto* w = &worker_for_next_camera();
    if (!send(*w, ingest::format(start_message(name, p)))) {
      // It died before its reader said so: reaped now (its cameras start again), and once more
      // on a fresh worker.
      worker_gone(*w);
      w = &worker_for_next_camera();
      if (!send(*w, ingest::format(start_message(name, p)))) {
        throw std::runtime_error("ingest worker " + std::to_string(w->index) + " does not take commands");
      }
    }
    w->cameras.insert(name);
    // Started again after a session ended (not a first start, nor one after a URL change); the
    // camera's restarts count its main stream's.
    if (!p.last_reason.empty() && config_.status && is_main_pull(name)) config_.status->restarted(name);
    p.worker = w->index;
    p.started = std::chrono::steady_clock::now();
    log::info("camera recorder started", {{"camera", name}, {"pid", w->child.pid()}, {"worker", w->index}});
  } catch (const std::exception& e) {
    p.last_reason = std::string("recorder could not start: ") + e.what();
    p.next_start = std::chrono::steady_clock::now() + config_.backoff_max;
    log::error("camera recorder could not start", {{"camera", name}, {"error", e.what()}});
  }
}

// Camera NAME's session ended for REASON: when to start it again.
void CameraManager::ended(const std::string& name, Pull& p, const std::string& reason) {
  p.worker = -1;
  const auto now = std::chrono::steady_clock::now();
  p.last_reason = reason;
  p.failures = now - p.started >= kHealthyRun ? 1 : p.failures + 1;
  auto delay = config_.backoff_min * (1 << std::min(p.failures - 1, 10));
  delay = std::min(delay, config_.backoff_max);
  p.next_start = now + delay;
  // Refused by this node's admission: another node may have room (it is given up at the next
  // round, if another node is live, and not claimed again here before backoff_max).
  if (reason.starts_with("admission refused") && is_main_pull(name) && p.epoch != 0) to_release_[name] = p.epoch;
  log::warn("camera recorder stopped; retrying",
            {{"camera", name}, {"reason", p.last_reason}, {"retry_in_ms", delay.count()}, {"failures", p.failures}});
}

void CameraManager::handle(const Event& e) {
  auto& w = *workers_[static_cast<std::size_t>(e.worker)];
  if (e.generation != w.generation) return;  // an earlier process of this worker, already reaped
  if (!e.ended) {
    worker_gone(w);
    return;
  }
  w.cameras.erase(e.ended->name);
  auto it = pulls_.find(e.ended->name);
  if (it == pulls_.end() || it->second.worker != e.worker) return;
  if (it->second.stopping) {
    log::info("camera recorder stopped",
              {{"camera", it->first}, {"exit_code", e.ended->exit_code}, {"last", one_line_reason(e.ended->reason)}});
    pulls_.erase(it);  // removed, disabled or moved: reconcile() starts it afresh if still wanted
    return;
  }
  ended(it->first, it->second, exit_reason(W_EXITCODE(e.ended->exit_code, 0), one_line_reason(e.ended->reason)));
}

// A worker's socket closed: it exited (or was killed). Its cameras start again elsewhere, with a
// gap reason that names what happened.
void CameraManager::worker_gone(Worker& w) {
  if (w.control_fd < 0) return;
  const int status = w.child.terminate(SIGKILL, std::chrono::seconds(5));
  if (w.reader.joinable()) w.reader.join();
  ::close(w.control_fd);
  w.control_fd = -1;
  const auto why = worker_death_reason(status);
  log::error("ingest worker died; its cameras start again",
             {{"worker", w.index}, {"reason", why}, {"cameras", static_cast<std::int64_t>(w.cameras.size())}});
  for (auto& [name, p] : pulls_) {
    if (p.worker != w.index) continue;
    if (p.stopping) {
      p.worker = -1;
      continue;
    }
    ended(name, p, why);
  }
  std::erase_if(pulls_, [](const auto& kv) { return kv.second.stopping && kv.second.worker < 0; });
  w.cameras.clear();
}

void CameraManager::reconcile() {
  const auto now = std::chrono::steady_clock::now();
  const auto& wanted = *wanted_;
  for (auto it = pulls_.begin(); it != pulls_.end();) {
    auto w = wanted.find(it->first);
    auto& p = it->second;
    const bool fenced = w != wanted.end() && p.worker >= 0 && p.epoch != epoch_of(it->first);
    if (!p.stopping && (w == wanted.end() || w->second != p.url || fenced)) {
      // Removed, disabled, moved to another URL or to another node (or epoch): stopped cleanly; a
      // new URL (or epoch) starts once it ended.
      if (p.worker >= 0) {
        const auto camera = it->first.substr(0, it->first.find('/'));
        log::info("camera recorder stopping",
                  {{"camera", it->first},
                   {"why", fenced              ? "fenced: the camera is under a new ownership epoch"
                           : w != wanted.end() ? "URL changed"
                           : pulled_anywhere_.contains(camera) && !epochs_.contains(camera)
                               ? "fenced: the camera is owned by another node now"
                           : !is_main_pull(it->first) && wanted.contains(camera) ? "substream_url cleared"
                                                                                 : "removed or disabled"}});
        p.stopping = true;
        if (send(*workers_[static_cast<std::size_t>(p.worker)], ingest::format(ingest::Stop{it->first}))) {
          ++it;
          continue;
        }
        // The worker is gone: nothing to stop.
      }
      it = pulls_.erase(it);
      continue;
    }
    ++it;
  }
  for (const auto& [name, url] : wanted) {
    auto& p = pulls_[name];
    if (p.url.empty()) p.url = url;
    if (p.worker < 0 && !p.stopping && now >= p.next_start) {
      p.epoch = epoch_of(name);
      start(name, p);
    }
  }
}

void CameraManager::querying(int fd) {
  {
    std::lock_guard lock(mu_);
    query_fd_ = fd;
    query_since_ = std::chrono::steady_clock::now();
    query_cut_ = false;
  }
  cv_.notify_all();
}

void CameraManager::run(std::stop_token stop) {
  std::unique_ptr<pqxx::connection> conn;
  bool warned = false;
  auto next_poll = std::chrono::steady_clock::now();
  while (!stop.stop_requested()) {
    bool read_now = std::chrono::steady_clock::now() >= next_poll;
    std::deque<Event> events;
    {
      std::lock_guard lock(mu_);
      read_now = read_now || changed_;
      changed_ = false;
      events.swap(events_);
    }
    if (read_now) {
      next_poll = std::chrono::steady_clock::now() + std::min(config_.poll, config_.lease.heartbeat);
      rotate_logs();
      try {
        if (!conn || !conn->is_open())
          conn = std::make_unique<pqxx::connection>(catalog::with_session_limits(config_.conninfo, 2));
        querying(conn->sock());
        catalog_round(*conn);
        querying(-1);
        warned = false;
      } catch (const std::exception& e) {
        querying(-1);
        conn.reset();
        lease_.failed();
        if (!warned)
          log::warn("camera manager cannot read the catalog; keeps recorders as they are", {{"error", e.what()}});
        warned = true;
      }
    }
    try {
      for (const auto& e : events) handle(e);
      if (wanted_) reconcile();
      publish_status();
    } catch (const std::exception& e) {
      // Never let the manager thread die: cameras would silently stop being recorded.
      log::error("camera manager: unexpected error; retrying at the next poll", {{"error", e.what()}});
    }
    // Sleep to the next poll, the next restart due, a change through the API or a worker's news.
    auto wake = next_poll;
    for (const auto& [name, p] : pulls_) {
      if (p.worker < 0 && !p.stopping && wanted_ && wanted_->contains(name)) wake = std::min(wake, p.next_start);
    }
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, stop, wake, [&] { return changed_ || !events_.empty(); });
  }
  stop_workers();
}

std::int64_t CameraManager::epoch_of(const std::string& pull) const {
  const auto it = epochs_.find(pull.substr(0, pull.find('/')));  // a sub stream runs under its camera's
  return it == epochs_.end() ? 0 : it->second;
}

void CameraManager::catalog_round(pqxx::connection& conn) {
  const auto& node = config_.node;
  // The heartbeat commits on its own, first: nothing after it may delay or undo the renewal.
  const auto headroom = config_.headroom_bps ? config_.headroom_bps() : 0;
  const auto sent = std::chrono::steady_clock::now();
  {
    pqxx::work tx(conn);
    const bool first = incarnation_.empty();
    if (first) incarnation_ = catalog::new_incarnation(tx);
    const auto before =
        catalog::renew_lease(tx, node, incarnation_, config_.lease.lease.count(), headroom,
                             catalog::NodeAddresses{.http = config_.advertise_http, .wire = config_.advertise_wire});
    tx.commit();
    // After its own first renewal the row is this run's: another incarnation in it is another
    // vigild with the same --node, and the two would pull the same cameras.
    if (!first && before != incarnation_) {
      log::error("another vigild renews this node's lease: give each node its own --node",
                 {{"node", node}, {"other_incarnation", before}});
    }
  }
  const auto now = std::chrono::steady_clock::now();
  lease_.renewed(sent, now);

  pqxx::work tx(conn);
  if (lease_.may_sweep(now)) {
    for (const auto& c : catalog::sweep_expired_owners(tx)) {
      log::warn("camera released: its node's lease expired", {{"camera", c.name}, {"node", c.from_node}});
    }
  }
  for (const auto& [name, epoch] : to_release_) {
    if (catalog::release_camera(tx, name, node, epoch)) {
      log::info("camera given up: admission refused it here, another node may take it", {{"camera", name}});
      not_before_[name] = now + config_.backoff_max;
    }
  }
  to_release_.clear();
  std::erase_if(not_before_, [&](const auto& kv) { return kv.second <= now; });
  // Claims only on a lease it can trust: a node whose renewal came back late claims nothing.
  if (lease_.trusted(now)) {
    std::set<std::string> excluded;
    for (const auto& [name, until] : not_before_) excluded.insert(name);
    for (const auto& c : catalog::claim_cameras(tx, node, catalog::claim_quota(tx, node), excluded)) {
      log::info("camera claimed", {{"camera", c.name}, {"node", node}, {"epoch", c.epoch}});
    }
    // A drain (docs/nodes.md): this node records its share of a draining node's cameras beside it.
    for (const auto& c : catalog::claim_handovers(tx, node, catalog::handover_quota(tx, node), excluded)) {
      log::info("camera handover taken: recording it beside its draining node",
                {{"camera", c.name}, {"epoch", c.epoch}});
    }
    // Make before break: a handover whose first frames here are in the catalog becomes this node's.
    for (const auto& c : catalog::complete_handovers(tx, node)) {
      log::info("camera handed over: this node owns it now",
                {{"camera", c.name}, {"from", c.from_node}, {"epoch", c.epoch}});
    }
  }
  auto owned = catalog::owned_cameras(tx, node);
  std::map<std::string, std::string> wanted;
  std::map<std::string, std::int64_t> rates;
  std::set<std::string> anywhere;
  for (const auto& c : catalog::list_cameras(tx)) {
    if (!c.enabled || !c.url) continue;
    anywhere.insert(c.name);
    if (!owned.contains(c.name)) continue;
    wanted[c.name] = *c.url;
    if (c.declared_rate_bps) rates[c.name] = *c.declared_rate_bps;
    // Its sub stream: a pull of its own (own worker slot, admission, reconnects and gaps).
    if (c.substream_url) wanted[Track{.camera = c.name, .role = TrackRole::sub}.label()] = *c.substream_url;
  }
  tx.commit();
  wanted_ = std::move(wanted);
  rates_ = std::move(rates);
  epochs_ = std::move(owned);
  pulled_anywhere_ = std::move(anywhere);
}

fs::path CameraManager::log_path(int worker) const {
  return config_.log_dir / ("ingest-worker-" + std::to_string(worker) + ".log");
}

// A worker's log past its bound is rotated while the worker writes on (its descriptor is O_APPEND).
// A failure is logged once per worker; the camera goes on recording either way.
void CameraManager::rotate_logs() {
  for (const auto& w : workers_) {
    const auto path = log_path(w->index);
    const auto r = rotate_log_if_large(path, config_.log_rotation);
    switch (r.outcome) {
      case LogRotated::no: break;
      case LogRotated::lossless:
      case LogRotated::truncated:
        w->rotation_failed = false;
        log::info("ingest worker log rotated", {{"log", path.string()},
                                                {"moved_bytes", r.moved_bytes},
                                                {"lossless", r.outcome == LogRotated::lossless}});
        break;
      case LogRotated::failed:
        if (!w->rotation_failed)
          log::warn("ingest worker log not rotated", {{"log", path.string()}, {"error", r.error}});
        w->rotation_failed = true;
        break;
    }
  }
}

void CameraManager::publish_status() {
  if (!config_.status || !wanted_) return;
  std::vector<PulledCamera> cameras;
  cameras.reserve(wanted_->size());
  for (const auto& [name, url] : *wanted_) {
    if (!is_main_pull(name)) continue;  // a camera's state is its main stream's
    const auto it = pulls_.find(name);
    if (it == pulls_.end()) {
      cameras.push_back({name, false, {}});
      continue;
    }
    const auto& p = it->second;
    cameras.push_back({name, p.worker >= 0 && !p.stopping, p.last_reason});
  }
  config_.status->publish(std::move(cameras));
}

// Every worker is told to stop (SIGTERM: each stops all its cameras at once; each camera sends
// what it read and ends its stream), all at once, then waited for.
void CameraManager::stop_workers() {
  for (auto& w : workers_) {
    if (w->control_fd >= 0 && w->child.running()) ::kill(w->child.pid(), SIGTERM);
  }
  for (auto& w : workers_) {
    if (w->control_fd < 0) continue;
    w->child.terminate(SIGTERM, std::chrono::seconds(15));
    if (w->reader.joinable()) w->reader.join();
    ::close(w->control_fd);
    w->control_fd = -1;
  }
  pulls_.clear();
}

}  // namespace vigil::server
