#include "server/app/daemon.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <thread>

#include "catalog/batcher.hpp"
#include "catalog/migrator.hpp"
#include "catalog/recording_rows.hpp"
#include "common/log.hpp"
#include "proto/frame_codec.hpp"
#include "server/api/http_metrics.hpp"
#include "server/api/http_routes.hpp"
#include "server/api/web_assets.hpp"
#include "server/app/admin_token.hpp"
#include "server/app/embedded_postgres.hpp"
#include "server/app/startup.hpp"
#include "server/core/auth.hpp"
#include "server/core/catalog_health.hpp"
#include "server/core/catalog_pool.hpp"
#include "server/core/live_feed.hpp"
#include "server/core/vigild_metrics.hpp"
#include "server/app/archive_startup.hpp"
#include "server/disks/disk_startup.hpp"
#include "server/disks/retention_service.hpp"
#include "server/disks/scrub_service.hpp"
#include "storage/faulty_device.hpp"
#include "storage/memory_lock.hpp"
#include "server/media/clip_reader.hpp"
#include "server/media/export_cache.hpp"
#include "server/media/hls_live.hpp"
#include "server/media/media_pool.hpp"
#include "server/net/http_server.hpp"
#include "server/net/network_threads.hpp"
#include "server/playback/playback_service.hpp"
#include "server/recording/camera_manager.hpp"
#include "server/recording/camera_status.hpp"
#include "server/disks/disk_health.hpp"
#include "server/recording/recording_service.hpp"
#include "server/wire/wire_server.hpp"

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace vigil::server {
namespace {

// HOST:PORT of a listener as the other nodes reach it (docs/nodes.md, "One front door"):
// --advertise's host, else the address it listens on, else (a wildcard) the host name.
std::string advertised(const std::string& configured, const asio::ip::tcp::endpoint& bound) {
  std::string host = configured;
  if (host.empty() && !bound.address().is_unspecified()) host = bound.address().to_string();
  if (host.empty()) {
    char name[256] = "localhost";
    ::gethostname(name, sizeof name - 1);
    host = name;
  }
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";  // IPv6
  return host + ":" + std::to_string(bound.port());
}

// How long a PostgreSQL that the health probe finds unresponsive gets to stop before it is killed.
constexpr std::chrono::milliseconds kHungPostgresStopGrace{2000};

// vigild from start to stop. The members are declared in start-up order, so C++ destroys them —
// stops them — in the reverse order, which is the shutdown order: pulled cameras end their streams
// first (through the still-running network threads), then the listeners, the session threads,
// retention, the services, the catalog pool, the disks' IO threads (after their current cycle),
// the DiskSet, the batcher (what the IO threads and the ended recordings queued for the catalog is
// committed while the embedded PostgreSQL still runs — otherwise the next start would take those
// streams for crashed ones), the volumes, and last PostgreSQL and the data directory's lock.
class Daemon {
 public:
  explicit Daemon(const ServerConfig& cfg);
  // Serves until SIGINT/SIGTERM, then ends every session; the rest stops in ~Daemon.
  int run();

 private:
  void start_catalog();
  void start_services();
  void start_listeners();
  void start_cameras();
  void on_stop_signal(int sig);
  ConnectionLimits connection_limits() const {
    return {.max_connections = cfg_.max_connections, .max_per_address = cfg_.max_connections_per_address};
  }

  const ServerConfig& cfg_;
  DataDirLock lock_;
  asio::io_context io_;
  // Installed before anything slow, so a stop signal during start-up is queued rather than
  // killing vigild mid-initdb.
  asio::signal_set signals_{io_, SIGINT, SIGTERM};
  std::optional<EmbeddedPostgres> embedded_;
  std::string conninfo_;
  std::string mode_;                             // "embedded" or "external"
  std::optional<CatalogHealth> catalog_health_;  // what /healthz says of the catalog
  Metrics metrics_;                              // outlives everything that publishes to it
  // The pulled cameras for /healthz and vigil_camera_up; its collect hook reads it (renders end
  // with the HTTP server, destroyed first).
  CameraStatusBoard camera_status_{&metrics_};
  std::vector<OpenVolume> volumes_;
  std::vector<UnavailableVolume> unavailable_volumes_;  // shown by /healthz
  std::optional<catalog::Batcher> batcher_;
  std::optional<DiskSet> disk_set_;  // the IO threads' callbacks use its disks: it outlives them
  std::vector<std::unique_ptr<DiskIoThread>> io_threads_;
  std::optional<CatalogPool> catalog_;
  std::optional<Authenticator> auth_;
  LiveFeeds live_feeds_;
  std::optional<RecordingService> recording_;
  std::optional<PlaybackService> playback_;
  std::unique_ptr<RetentionService> retention_;  // hands reclaim work to the IO threads
  std::unique_ptr<ScrubService> scrub_;          // reads through the IO threads' brokers
  std::unique_ptr<ArchiveService> archive_;      // reads through the IO threads' brokers
  std::unique_ptr<ArchiveReads> archive_reads_;  // archived segments' readers; outlives the sessions
  std::optional<NetworkThreads> network_;        // sessions run here; the main io_context only accepts
  std::optional<ExportCache> exports_;
  std::optional<MediaPool> media_;  // joined at shutdown after the network threads, before their sessions go
  std::optional<HlsLive> live_hls_;
  std::optional<WebAssets> web_;
  std::shared_ptr<asio::ssl::context> http_tls_;  // null: plain HTTP
  std::optional<HttpServer> http_;
  std::shared_ptr<asio::ssl::context> tls_;
  std::optional<WireServer> wire_;
  EndpointsFile endpoints_{cfg_.data_dir};
  std::unique_ptr<CameraManager> cameras_;  // recorders connect to the wire port
  // Set once cameras_ exists (the HTTP routes run before it does): then the routes' camera
  // changes wake it.
  std::atomic<bool> cameras_ready_{false};
  void poke_cameras() {
    if (cameras_ready_.load(std::memory_order_acquire)) cameras_->cameras_changed();
  }
  std::jthread stopper_;
};

// The soft limit on open descriptors raised to the hard one: the connection limits
// (--max-connections), not EMFILE in accept, decide which clients are served.
void raise_open_file_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  const auto was = lim.rlim_cur;
  lim.rlim_cur = lim.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &lim) == 0) {
    log::info("open file limit raised",
              {{"from", static_cast<std::uint64_t>(was)}, {"to", static_cast<std::uint64_t>(lim.rlim_max)}});
  }
}

// The account pulled cameras' recorders run as: none unless vigild runs as root. A recorder
// parses whatever a camera sends; it must not be able to touch vigild's data, volumes or
// PostgreSQL's files (hence not --pg-user's account either).
std::optional<RunAs> recorder_account(const ServerConfig& cfg) {
  if (::geteuid() != 0) return std::nullopt;
  if (!cfg.recorder_user) return ensure_system_user("vigil-recorder", "Vigil camera recorders");
  auto user = lookup_user(*cfg.recorder_user);
  if (!user) throw std::runtime_error("--recorder-user: there is no account named '" + *cfg.recorder_user + "'");
  if (user->uid == 0) throw std::runtime_error("--recorder-user: recorders must not run as root");
  return user;
}

// DIR, created if missing (the lock file lives in it).
const fs::path& made(const fs::path& dir) {
  fs::create_directories(dir);
  return dir;
}

Daemon::Daemon(const ServerConfig& cfg) : cfg_(cfg), lock_(made(cfg.data_dir)) {
  raise_open_file_limit();
  // A certificate or key that cannot be used stops the start before anything slow is done.
  if (cfg_.http_tls_cert) http_tls_ = make_tls_context(*cfg_.http_tls_cert, *cfg_.http_tls_key, "--http-tls");
  start_catalog();
  // The batcher comes first: rows a stop during a database outage left in its spool are committed
  // before the volumes are recovered, so recovery sees the catalog as the last run left it (its
  // streams ended, their segments closed) rather than taking them for crashed ones.
  batcher_.emplace(conninfo_, catalog::BatcherOptions{.spool_path = fs::absolute(cfg_.data_dir) / "catalog.spool",
                                                      .reachable = [this] { return catalog_health_->status().ok; },
                                                      .fenced =
                                                          [this](std::int64_t stream_id) {
                                                            // The catalog refused a stale epoch's row
                                                            // (docs/nodes.md): the camera manager reads
                                                            // what this node owns now and stops the rest.
                                                            log::warn(
                                                                "catalog refused a segment row: its camera is "
                                                                "owned by another node or epoch now (fenced); the "
                                                                "row is kept marked and the camera stopped here",
                                                                {{"stream", stream_id}});
                                                            poke_cameras();
                                                          }});
  if (batcher_->waiting() > 0) batcher_->flush();
  // Volumes are recovered before anything is served: what the catalog says must match them.
  std::vector<VolumeConfig> volume_configs;
  for (const auto& path : cfg_.volumes) {
    volume_configs.push_back({.path = fs::absolute(path),
                              .create_bytes = cfg_.volume_create_bytes,
                              .extent_bytes = cfg_.extent_bytes,
                              .fail_after = cfg_.volume_fail_after,
                              .fault_plan = std::nullopt});
  }
  for (const auto& [index, plan] : cfg_.fault_plans)
    volume_configs.at(index).fault_plan = *storage::parse_fault_plan(plan);
  auto up = bring_up_volumes(volume_configs, conninfo_, cfg_.node);
  volumes_ = std::move(up.open);
  unavailable_volumes_ = std::move(up.unavailable);
  for (const auto& v : unavailable_volumes_) metrics_.volume_unavailable(v.path.string());
  // From here on each volume's device belongs to its disk's IO thread; they hand closed segments
  // to the batcher until they stop.
  std::optional<admission::DiskProfile> given;
  if (cfg_.profile) given = load_profile_file(*cfg_.profile);
  // Real-time IO threads get their buffers locked in memory too (storage/memory_lock.hpp).
  const auto io_priority = cfg_.io_priority == "normal" ? IoPriority::normal : IoPriority::realtime;
  storage::memory_lock::enable(io_priority == IoPriority::realtime);
  auto disks = start_disks(volumes_, conninfo_, *batcher_,
                           DiskIoConfig{.cycle = std::chrono::milliseconds(cfg_.cycle_ms),
                                        .chunk_bytes = cfg_.chunk_bytes,
                                        .depth = cfg_.io_depth,
                                        .policy = *admission::policy_from_name(cfg_.admission_policy),
                                        .model_check_cycles = cfg_.model_check_cycles,
                                        .overbooking = cfg_.overbooking,
                                        .playback_share = cfg_.playback_share,
                                        .io_priority = io_priority,
                                        .latency_map = {.mode = *latency_map_mode(cfg_.latency_map),
                                                        .save_every = std::chrono::seconds(cfg_.latency_map_save_s)}},
                           given, metrics_);
  io_threads_ = std::move(disks.io_threads);
  end_streams_left_open(disks.slots, conninfo_);
  disk_set_.emplace(std::move(disks.slots), *batcher_);
  // Tokens: the admin token file for whoever started vigild (and the CLI beside it).
  if (cfg_.auth) ensure_admin_token(conninfo_, cfg_.data_dir);
  else log::warn("--no-auth: every HTTP and wire request is allowed without a token");
  start_services();
  start_listeners();
  start_cameras();
}

void Daemon::start_catalog() {
  if (cfg_.db_url) {
    conninfo_ = *cfg_.db_url;
    mode_ = "external";
  } else {
    EmbeddedPostgresOptions opts;
    opts.data_dir = cfg_.data_dir;
    opts.run_as_user = cfg_.pg_user;
    embedded_.emplace(opts);
    embedded_->start();
    embedded_->supervise();  // a postmaster that dies is started again
    conninfo_ = embedded_->conninfo();
    mode_ = "embedded";
  }
  pqxx::connection conn(conninfo_);
  auto report = catalog::migrate(conn);
  catalog_health_.emplace(conninfo_);
  log::info("catalog ready",
            {{"mode", mode_}, {"schema_version", report.to_version}, {"migrations_applied", report.applied.size()}});
}

void Daemon::start_services() {
  catalog_.emplace(conninfo_, cfg_.catalog_threads);
  auth_.emplace(*catalog_, cfg_.auth, cfg_.metrics_auth, std::chrono::seconds(cfg_.max_backdate_s));
  catalog_->set_metrics(metrics_.catalog_wait(), metrics_.catalog_job(true), metrics_.catalog_job(false));
  // Catalog work fails at once rather than hang while the health probe finds the catalog down.
  catalog_->set_reachable([this] { return catalog_health_->status().ok; });
  // At every scrape: the catalog probe's answer, the batcher's queue and each disk's state
  // (atomics, flags and short locks only, as /healthz reads them).
  metrics_.on_collect([this] {
    metrics_.catalog_up(catalog_health_->status().ok);
    metrics_.catalog_rows(batcher_->waiting(), batcher_->spooled());  // a short lock, never the database
    const auto now = std::chrono::steady_clock::now();
    for (const auto& d : disk_set_->disks()) {
      if (!d->io || !d->io->metrics()) continue;
      const auto h = disk_health(*d, now);
      d->io->metrics()->state(h.state, h.last_cycle_age_s);
    }
  });
  recording_.emplace(*disk_set_, live_feeds_, *catalog_, *batcher_, &metrics_, std::chrono::seconds(cfg_.segment_max_s),
                     cfg_.node);
  {
    // Stream ids for recordings that open while the catalog cannot be asked.
    pqxx::connection conn(conninfo_);
    pqxx::work tx(conn);
    recording_->add_spare_stream_ids(catalog::reserve_stream_ids(tx, RecordingService::kSpareStreamIds));
    tx.commit();
  }
  playback_.emplace(*disk_set_, live_feeds_, *catalog_,
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::duration<double>(cfg_.playback_pause_release_s)));
  if (cfg_.retention_interval_s > 0) {
    retention_ = std::make_unique<RetentionService>(
        conninfo_, disk_set_->disks(),
        RetentionOptions{.interval =
                             std::chrono::milliseconds(static_cast<std::int64_t>(cfg_.retention_interval_s * 1000)),
                         .reserve_seconds = cfg_.retention_reserve_s,
                         .day_us = cfg_.retention_day_ms > 0 ? cfg_.retention_day_ms * 1000 : 86'400'000'000LL,
                         .batcher = &*batcher_,
                         .reachable = [this] { return catalog_health_->status().ok; }});
  } else {
    log::warn("--retention-interval 0: retention is off; a full volume stalls recording");
  }
  if (cfg_.scrub_days > 0 || cfg_.scrub_epoch_ms > 0) {
    const auto epoch = cfg_.scrub_epoch_ms > 0
                           ? std::chrono::milliseconds(cfg_.scrub_epoch_ms)
                           : std::chrono::milliseconds(static_cast<std::int64_t>(cfg_.scrub_days * 86'400'000.0));
    // Repair from the archive needs this vigild to read archived segments (start_archive_reads).
    scrub_ = std::make_unique<ScrubService>(conninfo_, disk_set_->disks(),
                                            ScrubOptions{.epoch = epoch,
                                                         .repair_from_archive = cfg_.archive_endpoint.has_value()});
  } else {
    log::warn("--scrub-days 0: the integrity scrubber is off; damaged recordings are found only when read");
  }
  archive_ = start_archive(cfg_, conninfo_, disk_set_->disks());
  archive_reads_ = start_archive_reads(cfg_);
  disk_set_->set_archive_reads(archive_reads_.get(), cfg_.node);
}

void Daemon::start_listeners() {
  network_.emplace(NetworkThreads::default_count());
  exports_.emplace(256u << 20);
  media_.emplace(cfg_.media_threads, cfg_.thumbnail_builds);
  live_hls_.emplace(live_feeds_);
  // The web UI: read once now, served from memory (a missing directory is a warning, not a failure).
  web_.emplace(WebAssets::load(cfg_.web_root ? *cfg_.web_root : default_web_root()));
  if (web_->empty()) log::warn("web UI not served (/ui/ answers 404)", {{"reason", web_->problem()}});
  else log::info("web UI loaded", {{"root", fs::absolute(web_->root()).string()}, {"files", web_->size()}});
  const bool have_disks = !volumes_.empty();
  http_.emplace(io_, resolve_numeric(cfg_.http_address, cfg_.http_port, "http-address"),
                with_request_metrics(make_http_routes(RouteContext{.catalog = *catalog_,
                                                                   .database_mode = mode_,
                                                                   .unavailable_volumes = &unavailable_volumes_,
                                                                   .health = &*catalog_health_,
                                                                   .disks = have_disks ? &*disk_set_ : nullptr,
                                                                   .cameras = &camera_status_,
                                                                   .exports = &*exports_,
                                                                   .media = &*media_,
                                                                   .export_memory_bytes = cfg_.export_memory_bytes,
                                                                   .auth = &*auth_,
                                                                   .metrics = &metrics_,
                                                                   .live = have_disks ? &*live_hls_ : nullptr,
                                                                   .web = &*web_,
                                                                   .cameras_changed = [this] { poke_cameras(); },
                                                                   .node = cfg_.node}),
                                     metrics_),
                HttpLimits{.read_timeout = std::chrono::seconds(cfg_.http_timeout_s),
                           .connections = connection_limits()},
                &*network_, http_tls_);
  if (cfg_.tls_cert) {
    tls_ = make_tls_context(*cfg_.tls_cert, *cfg_.tls_key);
    // Pulled cameras' recorders connect to this server over TLS and trust its certificate.
    if (!std::getenv("VIGIL_TLS_CA")) ::setenv("VIGIL_TLS_CA", fs::absolute(*cfg_.tls_cert).c_str(), 1);
  }
  wire_.emplace(io_, resolve_numeric(cfg_.listen.host, cfg_.listen.port, "listen"),
                WireOptions{.max_payload_bytes = cfg_.max_frame_bytes,
                            .hello_timeout = std::chrono::seconds(cfg_.hello_timeout_s),
                            .idle_timeout = std::chrono::seconds(cfg_.idle_timeout_s),
                            .stall_timeout =
                                std::chrono::milliseconds(static_cast<std::int64_t>(cfg_.stall_timeout_s * 1000)),
                            .recording = have_disks ? &*recording_ : nullptr,
                            .playback = have_disks ? &*playback_ : nullptr,
                            .catalog = &*catalog_,
                            .disks = have_disks ? &*disk_set_ : nullptr,
                            .tls = tls_,
                            .sessions = &*network_,
                            .auth = &*auth_,
                            .connections = connection_limits()});
  network_->start();
  http_->start();
  wire_->start();
  endpoints_.write(wire_->local_endpoint(), http_->local_endpoint(), http_->tls());
  const auto w = wire_->local_endpoint();
  const auto h = http_->local_endpoint();
  log::info("vigild listening",
            {{"wire", std::string(tls_ ? "tls://" : "") + w.address().to_string() + ":" + std::to_string(w.port())},
             {"http", std::string(http_->tls() ? "https://" : "http://") + h.address().to_string() + ":" +
                          std::to_string(h.port())},
             {"data", fs::absolute(cfg_.data_dir).string()},
             {"node", cfg_.node},
             {"version", VIGIL_VERSION}});
}

void Daemon::start_cameras() {
  if (!cfg_.pull_cameras || volumes_.empty()) return;
  const auto ep = wire_->local_endpoint();
  cameras_ = std::make_unique<CameraManager>(CameraManagerConfig{
      .conninfo = conninfo_,
      .wire = std::string(tls_ ? "tls://" : "") + ep.address().to_string() + ":" + std::to_string(ep.port()),
      .recorder = cfg_.recorder ? *cfg_.recorder : default_recorder_path(),
      .log_dir = fs::absolute(cfg_.data_dir) / "log",
      .token = cfg_.auth ? make_recorder_token(conninfo_, cfg_.node) : std::string(),
      .run_as = recorder_account(cfg_),
      .ingest_workers = cfg_.ingest_workers,
      .status = &camera_status_,
      .node = cfg_.node,
      .headroom_bps = [this] { return disk_set_->headroom_bps(); },
      .advertise_http =
          std::string(http_->tls() ? "https://" : "http://") + advertised(cfg_.advertise, http_->local_endpoint()),
      .advertise_wire = std::string(tls_ ? "tls://" : "") + advertised(cfg_.advertise, wire_->local_endpoint())});
  cameras_ready_.store(true, std::memory_order_release);
  if (::geteuid() == 0)
    log::info("pulled cameras' recorders run unprivileged", {{"user", cfg_.recorder_user.value_or("vigil-recorder")}});
}

void Daemon::on_stop_signal(int sig) {
  log::info("stopping", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
  // Off the io_context: stopping the cameras waits for their recorders, whose sessions need the
  // network threads running.
  stopper_ = std::jthread([this] {
    if (cameras_) cameras_->stop();
    asio::post(io_, [this] {
      http_->stop();
      wire_->stop();
      io_.stop();
    });
  });
}

int Daemon::run() {
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (!ec) on_stop_signal(sig);
  });
  io_.run();
  // The listeners' accepts, aborted by stop(), complete here: each holds a socket of a session
  // io_context, which must still exist when the handler runs (or is destroyed).
  io_.restart();
  io_.poll();
  // Open sessions end here, before the services they use; interactive reads still in flight
  // complete first (their completions are posted to the sessions' io_contexts).
  network_->shutdown([this] {
    ClipReader::wait_for_requests();
    // Media work in flight finishes while the coroutines that wait for it still exist.
    if (media_) media_->join();
  });
  stopper_ = {};  // joins
  // The batcher outlives the camera manager and may still report a fenced row: nobody to tell now.
  cameras_ready_.store(false, std::memory_order_release);
  if (embedded_ && !catalog_health_->status().ok) {
    // The embedded PostgreSQL does not answer: a fast shutdown would not be either. What the
    // batcher cannot commit goes to its spool; PostgreSQL recovers from a kill at the next start.
    log::warn("embedded PostgreSQL does not answer: it gets a short grace to stop",
              {{"grace_ms", kHungPostgresStopGrace.count()}});
    embedded_->set_stop_grace(kHungPostgresStopGrace);
  }
  return 0;
}

}  // namespace

int run_daemon(const ServerConfig& cfg) {
  log::set_level(log::parse_level(cfg.log_level));
  log::debug("configuration", {{"data", cfg.data_dir.string()},
                               {"db", cfg.db_url ? "external" : "embedded"},
                               {"listen", cfg.listen.to_string()},
                               {"http", cfg.http_address + ":" + std::to_string(cfg.http_port)},
                               {"pg_user", cfg.pg_user},
                               {"max_frame_bytes", cfg.max_frame_bytes},
                               {"catalog_threads", cfg.catalog_threads}});
  // libpq waits forever on an unreachable host unless told otherwise.
  ::setenv("PGCONNECT_TIMEOUT", "5", 0);
  std::signal(SIGPIPE, SIG_IGN);
  proto::route_protobuf_logs_to_debug();
  int code = 0;
  {
    Daemon daemon(cfg);
    code = daemon.run();
  }
  log::info("vigild stopped");
  return code;
}

}  // namespace vigil::server
