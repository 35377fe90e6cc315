#pragma once
// The camera manager (docs/protocol.md, "Pulled cameras"): every enabled camera with a URL in the
// catalog is recorded by one of a few `vigil ingest` worker processes that vigild starts, watches
// and restarts. A camera with a substream_url has two pulls, each a session of its own with its
// own admission, backoff and gaps: its main stream, named by the camera's name, and its sub
// stream (role "sub"), named CAMERA/sub (Track::label()); both stop when the camera is disabled
// or removed, the sub one alone when its substream_url is cleared or changed. A worker records many cameras, one thread each, each pulling its camera through
// libavformat (RTSP over TCP by default), never decoding, and recording into this vigild over its
// wire port like any recording client, with its client-side buffer and acknowledgements. Workers
// isolate vigild from a camera or demuxer that misbehaves; a worker that dies takes only its
// share of cameras with it, and they are started again (on a new worker) with a gap saying so.
// Cameras are spread over --ingest-workers processes (the least loaded first); a worker serves at
// most cameras_per_worker, beyond that more workers start. vigild tells a worker "start NAME URL
// [GAP_REASON]" / "stop NAME" over a socket it inherits (URLs never on a command line), and the
// worker answers "ended NAME EXIT_CODE LAST_WORDS" (common/ingest_control.hpp).
// When a camera's session ends, the reason is derived from its exit code and last words (camera
// unreachable, admission refused, ...), logged, and handed to its next session as the gap reason,
// so the outage becomes a gap with that reason once it records again. Restarts back off
// exponentially (1 s … 30 s; reset after a minute of recording). Cameras added, changed or removed
// through the HTTP API are picked up at once (cameras_changed()); the catalog is polled every second
// besides, for changes made elsewhere. Removed cameras are stopped all at once.
// Nodes (docs/nodes.md): on a catalog shared by several vigild nodes, this manager pulls only the
// cameras its node owns. Every round (each heartbeat, 1 s) it renews the node's lease, sweeps the
// cameras of nodes whose lease expired (once connected for two leases), claims its share of the
// unowned cameras while its lease is trusted and it ranks first of the live nodes, and reads what
// it owns; a camera it pulls that is now another node's, or under another epoch, is stopped at
// once (fenced). A camera whose admission this node refuses is given up (when another node is
// live) and not claimed again here for backoff_max. Alone on its catalog a node claims every
// camera in its first round: one node records all of them at once, as before nodes existed.
// Thread: its own (blocking catalog queries, process management), plus one reader per worker's
// socket; never a network or IO thread. Errors: logged and retried; the constructor throws if the
// recorder binary is missing. Workers' logs are rotated by size (log_rotation). stop() is bounded during a database outage: a catalog query that
// hangs is cut after kStopGrace; a catalog round that has not answered within the lease is cut
// too, whatever holds it (docs/nodes.md, "A node cut off from PostgreSQL").
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <pqxx/connection>
#include <vector>

#include "common/child_process.hpp"
#include "common/ingest_control.hpp"
#include "common/log_rotation.hpp"
#include "server/recording/camera_status.hpp"
#include "server/recording/node_lease.hpp"

namespace vigil::server {

struct CameraManagerConfig {
  std::string conninfo;            // the catalog
  std::string wire;                // this vigild's wire address, HOST:PORT
  std::filesystem::path recorder;  // the `vigil` binary
  std::filesystem::path log_dir;   // one log per ingest worker (camera-tagged lines)
  std::string token;               // the workers' token (recorder role), in their environment
  // The account workers run as (vigild as root); none: vigild's own. A worker parses what cameras
  // send: it gets no privilege, no descriptor of vigild's but its log (opened here, as its stdout
  // and stderr) and its control socket (camera URLs come through it, never argv).
  std::optional<RunAs> run_as;
  int ingest_workers = 2;       // worker processes cameras are spread over
  int cameras_per_worker = 64;  // beyond this on every worker, another worker starts
  std::chrono::milliseconds poll{2000};
  std::chrono::milliseconds backoff_min{1000}, backoff_max{30'000};
  // Each worker's log is rotated at every poll once it is past max_bytes (common/log_rotation.hpp):
  // LOG.1 … LOG.keep, so a camera that logs without end costs at most (keep + 1) × max_bytes.
  LogRotationLimits log_rotation{};
  // Where the cameras' sessions are published after every round (/healthz, vigil_camera_up) and
  // restarts counted; null: nowhere. Must outlive the manager.
  CameraStatusBoard* status = nullptr;
  // This node (docs/nodes.md): its name, unique among the nodes sharing the catalog, and its
  // lease's timing (the heartbeat is also the catalog poll when shorter than poll).
  std::string node = "vigild";
  LeaseTimes lease{};
  // The node's admission headroom, bits per second, written with every heartbeat (placement
  // favours the node with the most); none: 0. Called on the manager thread.
  std::function<std::int64_t()> headroom_bps;
  // Where the node serves as the others reach it (vigild --advertise), written with every
  // heartbeat: its HTTP API ("http://HOST:PORT", the front door proxies media there) and its
  // wire address (the playback proxy's). Empty: not advertised.
  std::string advertise_http, advertise_wire;
};

class CameraManager {
 public:
  explicit CameraManager(CameraManagerConfig config);
  ~CameraManager();  // stop()
  CameraManager(const CameraManager&) = delete;
  CameraManager& operator=(const CameraManager&) = delete;

  // The catalog's cameras changed (the HTTP API): read them now instead of at the next poll.
  // Any thread; never blocks.
  void cameras_changed();

  // Stops every worker (SIGTERM: each camera sends what it read and ends its stream, all at once)
  // and the manager thread. Idempotent; blocks up to ~15 s.
  void stop();

  // Why a camera's session that ended with wait STATUS stopped, from its exit code and LAST_LINE.
  static std::string exit_reason(int status, const std::string& last_line);
  // Why every camera of a worker that exited with wait STATUS stopped.
  static std::string worker_death_reason(int status);

 private:
  struct Worker {
    int index = 0;
    int generation = 0;  // its process's: news of an earlier one is stale
    ChildProcess child;
    int control_fd = -1;            // vigild's end of the control socket; -1: not running
    std::set<std::string> cameras;  // started on it and not ended
    std::thread reader;             // reads its ended messages into events_
    bool rotation_failed = false;   // its log's last rotation failed (warned once)
  };
  struct Pull {
    std::string url;
    int worker = -1;        // the worker recording it; -1: none
    bool stopping = false;  // stop sent; its ended not yet received
    int failures = 0;
    std::chrono::steady_clock::time_point started{}, next_start{};
    std::string last_reason;  // why the previous session stopped: the next one's gap reason
    std::int64_t epoch = 0;   // the camera's ownership epoch this pull runs under
  };
  struct Event {
    int worker = 0, generation = 0;
    std::optional<ingest::Ended> ended;  // none: the worker's socket closed (it exited)
  };
  void run(std::stop_token stop);
  void reconcile();
  void start(const std::string& name, Pull& p);
  ingest::Start start_message(const std::string& name, const Pull& p) const;
  void ended(const std::string& name, Pull& p, const std::string& reason);
  void handle(const Event& e);
  Worker& worker_for_next_camera();
  void spawn(Worker& w);
  void worker_gone(Worker& w);
  bool send(Worker& w, const std::string& message);
  void read_worker(int index, int generation, int fd);  // a reader thread
  void stop_workers();
  void rotate_logs();  // the manager thread, at every poll
  std::filesystem::path log_path(int worker) const;
  // The manager thread: FD is the socket of the catalog query now running (-1: none).
  void querying(int fd);
  // Its own thread: cuts a catalog round that has run longer than the lease (a database that stopped
  // answering, a partition that holds the connection open), so the manager gets back to its
  // recorders and tries a new connection. A renewal that late is worth nothing to the lease anyway.
  void watch_rounds(std::stop_token stop);
  void publish_status();  // the manager thread: every wanted camera's session to config_.status
  // The manager thread, one round: renews the lease, sweeps, gives up refused cameras, claims, and
  // reads the cameras this node owns into wanted_/epochs_. Throws (pqxx) when the catalog fails.
  void catalog_round(pqxx::connection& conn);
  std::int64_t epoch_of(const std::string& pull) const;  // 0: not owned

  static constexpr std::chrono::milliseconds kStopGrace{1000};

  CameraManagerConfig config_;
  std::optional<std::map<std::string, std::string>> wanted_;  // URL by pull (track label), as last read
  std::map<std::string, std::int64_t> rates_;  // the manager thread's: cameras' declared_rate_bps, when set
  std::map<std::string, Pull> pulls_;          // the manager thread's, by track label
  // The manager thread's: the node's lease, its incarnation (empty until the first round), the
  // owned cameras' epochs by camera name, every enabled pulled camera whoever owns it, the
  // cameras to give up (refused here, with the epoch they ran under) and those not to claim again
  // before a time.
  NodeLease lease_;
  std::string incarnation_;
  std::map<std::string, std::int64_t> epochs_;
  std::set<std::string> pulled_anywhere_;
  std::map<std::string, std::int64_t> to_release_;
  std::map<std::string, std::chrono::steady_clock::time_point> not_before_;
  std::vector<std::unique_ptr<Worker>> workers_;  // the manager thread's
  std::mutex mu_;
  std::condition_variable_any cv_;
  int query_fd_ = -1;                                  // guarded by mu_: stop() shuts it down if the query hangs
  std::chrono::steady_clock::time_point query_since_;  // guarded by mu_: when query_fd_ was set
  bool query_cut_ = false;                             // guarded by mu_: query_fd_ was shut down
  bool changed_ = false;                               // guarded by mu_: cameras_changed() since the last catalog read
  std::deque<Event> events_;                           // guarded by mu_: from the reader threads
  std::jthread thread_;
  std::jthread round_watch_;  // watch_rounds()
};

// The `vigil` binary beside vigild (installed layout) or in the build tree.
std::filesystem::path default_recorder_path();

}  // namespace vigil::server
