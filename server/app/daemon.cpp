#include "server/app/daemon.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/json.hpp>
#include <csignal>
#include <fstream>
#include <optional>
#include <pqxx/pqxx>
#include <sstream>
#include <thread>

#include "common/log.hpp"
#include "catalog/migrator.hpp"
#include "server/core/catalog_pool.hpp"
#include "server/app/admin_token.hpp"
#include "server/core/auth.hpp"
#include "server/media/clip_reader.hpp"
#include "server/app/embedded_postgres.hpp"
#include "server/media/export_cache.hpp"
#include "server/media/hls_live.hpp"
#include "server/api/http_metrics.hpp"
#include "server/api/http_routes.hpp"
#include "server/net/http_server.hpp"
#include "server/net/network_threads.hpp"
#include "catalog/profiles.hpp"
#include "catalog/batcher.hpp"
#include "catalog/recording_rows.hpp"
#include "server/disks/disk_io.hpp"
#include "server/recording/camera_manager.hpp"
#include "server/playback/playback_service.hpp"
#include "server/recording/recording_service.hpp"
#include "server/disks/retention_service.hpp"
#include "server/core/vigild_metrics.hpp"
#include "server/disks/volume_startup.hpp"
#include "server/api/web_assets.hpp"
#include "server/wire/wire_server.hpp"
#include "proto/frame_codec.hpp"

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace vigil::server {
namespace {

// An exclusive lock on DIR/vigild.lock held for the process lifetime: two vigild on one data
// directory would mean two postmasters and two writers on the same volumes.
class DataDirLock {
 public:
  explicit DataDirLock(const fs::path& dir) : path_(dir / "vigild.lock") {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "opening " + path_.string());
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      std::string other;
      std::ifstream(path_) >> other;
      ::close(fd_);
      throw std::runtime_error("another vigild (pid " + (other.empty() ? "?" : other) + ") is using " + dir.string());
    }
    std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
      log::warn("cannot write pid to lock file", {{"file", path_.string()}});
    }
  }
  ~DataDirLock() {
    ::close(fd_);
  }
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  fs::path path_;
  int fd_ = -1;
};

// DIR/run/endpoints.json tells tools and tests where this vigild listens (ports may be 0 = any).
void write_endpoints(const fs::path& dir, const asio::ip::tcp::endpoint& wire, const asio::ip::tcp::endpoint& http) {
  auto run = dir / "run";
  fs::create_directories(run);
  auto ep = [](const asio::ip::tcp::endpoint& e) {
    auto a = e.address();
    return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(e.port());
  };
  boost::json::object o{{"wire", ep(wire)}, {"http", ep(http)}, {"pid", ::getpid()}, {"version", VIGIL_VERSION}};
  auto tmp = run / "endpoints.json.tmp";
  std::ofstream(tmp) << boost::json::serialize(o) << "\n";
  fs::rename(tmp, run / "endpoints.json");
}

asio::ip::tcp::endpoint resolve_numeric(const std::string& host, std::uint16_t port, const char* flag) {
  boost::system::error_code ec;
  std::string h = host == "localhost" ? "127.0.0.1" : host;
  auto addr = asio::ip::make_address(h, ec);
  if (ec) throw ConfigError(std::string("--") + flag + ": '" + host + "' is not an IP address");
  return {addr, port};
}

// A profile JSON given with --profile; a bad one stops the start with a one-line reason.
admission::DiskProfile load_profile_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("--profile: cannot read " + file.string());
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return admission::profile_from_json(boost::json::parse(ss.str()));
  } catch (const std::exception& e) {
    throw std::runtime_error("--profile " + file.string() + ": " + e.what());
  }
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

  fs::create_directories(cfg.data_dir);
  DataDirLock lock(cfg.data_dir);
  asio::io_context io;
  // Installed first, so a stop signal during start-up is queued rather than killing us mid-initdb.
  asio::signal_set signals(io, SIGINT, SIGTERM);

  std::optional<EmbeddedPostgres> embedded;
  std::string conninfo;
  std::string mode;
  if (cfg.db_url) {
    conninfo = *cfg.db_url;
    mode = "external";
  } else {
    EmbeddedPostgresOptions opts;
    opts.data_dir = cfg.data_dir;
    opts.run_as_user = cfg.pg_user;
    embedded.emplace(opts);
    embedded->start();
    conninfo = embedded->conninfo();
    mode = "embedded";
  }
  {
    pqxx::connection conn(conninfo);
    auto report = catalog::migrate(conn);
    log::info("catalog ready", {{"mode", mode},
                                {"schema_version", report.to_version},
                                {"migrations_applied", report.applied.size()}});
  }

  // Volumes are recovered before anything is served: what the catalog says must match them.
  std::vector<VolumeConfig> volume_configs;
  for (const auto& path : cfg.volumes) {
    volume_configs.push_back({fs::absolute(path), cfg.volume_create_bytes, cfg.extent_bytes});
  }
  auto volumes = bring_up_volumes(volume_configs, conninfo);
  // GET /metrics: outlives everything that publishes to it (IO threads, sessions, the pool).
  Metrics metrics;
  // From here on each volume's device belongs to its disk's IO thread, which schedules with
  // the disk's profile: the newest in the catalog, else --profile (then stored for next time).
  // Declared before the disks: their IO threads hand closed segments to it until they stop.
  catalog::Batcher batcher(conninfo);
  std::vector<std::unique_ptr<DiskIoThread>> disks;
  std::vector<std::unique_ptr<Disk>> disk_slots;
  {
    std::optional<admission::DiskProfile> given;
    if (cfg.profile) given = load_profile_file(*cfg.profile);
    pqxx::connection conn(conninfo);
    for (auto& v : volumes) {
      std::optional<admission::DiskProfile> profile;
      {
        pqxx::work tx(conn);
        const auto disk = catalog::disk_of_volume(tx, v.volume_id);
        profile = catalog::latest_profile(tx, disk);
        if (!profile && given) {
          catalog::store_profile_for_disk(tx, *given, disk);
          profile = given;
        }
        tx.commit();
      }
      std::uint64_t next_segment = 1;
      std::int64_t disk_id = 0;
      {
        pqxx::work tx(conn);
        next_segment = catalog::next_segment_id(tx, *v.volume);
        disk_id = catalog::disk_of_volume(tx, v.volume_id);
      }
      disks.push_back(std::make_unique<DiskIoThread>(
          v,
          DiskIoConfig{.cycle = std::chrono::milliseconds(cfg.cycle_ms), .chunk_bytes = cfg.chunk_bytes,
                       .depth = cfg.io_depth, .policy = *admission::policy_from_name(cfg.admission_policy),
                       .model_check_cycles = cfg.model_check_cycles, .overbooking = cfg.overbooking},
          profile, &metrics.disk(v.path.string())));
      auto slot = std::make_unique<Disk>();
      slot->volume = &v;
      slot->io = disks.back().get();
      slot->disk_id = disk_id;
      slot->next_segment = next_segment;
      disk_slots.push_back(std::move(slot));
    }
  }
  {
    // Streams a previous run never ended (it was killed): ended now, the hole a gap.
    std::vector<std::int64_t> disk_ids;
    for (const auto& d : disk_slots) disk_ids.push_back(d->disk_id);
    pqxx::connection conn(conninfo);
    pqxx::work tx(conn);
    const auto restart = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
    if (const int n = catalog::end_streams_after_crash(tx, disk_ids, restart); n > 0) {
      log::warn("streams left recording by an unclean stop were ended; their gaps are recorded", {{"streams", n}});
    }
    tx.commit();
  }
  // Tokens: the admin token file for whoever started vigild (and the CLI beside it).
  if (cfg.auth) ensure_admin_token(conninfo, cfg.data_dir);
  else log::warn("--no-auth: every HTTP and wire request is allowed without a token");
  CatalogPool catalog(conninfo, cfg.catalog_threads);
  Authenticator auth(catalog, cfg.auth, cfg.metrics_auth);
  catalog.set_metrics(metrics.catalog_wait(), metrics.catalog_job(true), metrics.catalog_job(false));
  DiskSet disk_set(std::move(disk_slots), batcher);
  LiveFeeds live_feeds;
  RecordingService recording(disk_set, live_feeds, catalog, batcher, &metrics);
  PlaybackService playback(disk_set, live_feeds, catalog);
  // Retention: its own thread; stopped before the IO threads it hands reclaim work to.
  std::unique_ptr<RetentionService> retention;
  if (cfg.retention_interval_s > 0) {
    retention = std::make_unique<RetentionService>(
        conninfo, disk_set.disks(),
        RetentionOptions{.interval = std::chrono::milliseconds(static_cast<std::int64_t>(cfg.retention_interval_s * 1000)),
                         .reserve_seconds = cfg.retention_reserve_s});
  } else {
    log::warn("--retention-interval 0: retention is off; a full volume stalls recording");
  }
  // Sessions run on their own threads; the main io_context only accepts and takes signals.
  NetworkThreads network(NetworkThreads::default_count());
  ExportCache exports(256u << 20);
  HlsLive live_hls(live_feeds);
  // The web UI: read once now, served from memory (a missing directory is a warning, not a failure).
  const WebAssets web = WebAssets::load(cfg.web_root ? *cfg.web_root : default_web_root());
  if (web.empty()) log::warn("web UI not served (/ui/ answers 404)", {{"reason", web.problem()}});
  else log::info("web UI loaded", {{"root", fs::absolute(web.root()).string()}, {"files", web.size()}});
  HttpServer http(io, resolve_numeric(cfg.http_address, cfg.http_port, "http-address"),
                  with_request_metrics(make_http_routes(RouteContext{.catalog = catalog,
                                                                     .database_mode = mode,
                                                                     .disks = volumes.empty() ? nullptr : &disk_set,
                                                                     .exports = &exports,
                                                                     .auth = &auth,
                                                                     .metrics = &metrics,
                                                                     .live = volumes.empty() ? nullptr : &live_hls,
                                                                     .web = &web}),
                                       metrics),
                  HttpLimits{.read_timeout = std::chrono::seconds(cfg.http_timeout_s)}, &network);
  std::shared_ptr<boost::asio::ssl::context> tls;
  if (cfg.tls_cert) {
    tls = std::make_shared<boost::asio::ssl::context>(boost::asio::ssl::context::tls_server);
    tls->set_options(boost::asio::ssl::context::no_sslv2 | boost::asio::ssl::context::no_sslv3 |
                     boost::asio::ssl::context::no_tlsv1 | boost::asio::ssl::context::no_tlsv1_1);
    try {
      tls->use_certificate_chain_file(cfg.tls_cert->string());
      tls->use_private_key_file(cfg.tls_key->string(), boost::asio::ssl::context::pem);
    } catch (const std::exception& e) {
      throw std::runtime_error("TLS: cannot use --tls-cert " + cfg.tls_cert->string() + " / --tls-key " +
                               cfg.tls_key->string() + ": " + e.what());
    }
    // Pulled cameras' recorders connect to this server over TLS and trust its certificate.
    if (!std::getenv("VIGIL_TLS_CA")) ::setenv("VIGIL_TLS_CA", fs::absolute(*cfg.tls_cert).c_str(), 1);
  }
  WireServer wire(io, resolve_numeric(cfg.listen.host, cfg.listen.port, "listen"),
                  WireOptions{.max_payload_bytes = cfg.max_frame_bytes, .recording = volumes.empty() ? nullptr : &recording,
                              .playback = volumes.empty() ? nullptr : &playback, .tls = tls,
                              .sessions = &network, .auth = &auth});
  network.start();
  http.start();
  wire.start();
  write_endpoints(cfg.data_dir, wire.local_endpoint(), http.local_endpoint());
  log::info("vigild listening", {{"wire", std::string(tls ? "tls://" : "") + wire.local_endpoint().address().to_string() + ":" +
                                              std::to_string(wire.local_endpoint().port())},
                                 {"http", "http://" + http.local_endpoint().address().to_string() + ":" +
                                              std::to_string(http.local_endpoint().port())},
                                 {"data", fs::absolute(cfg.data_dir).string()},
                                 {"version", VIGIL_VERSION}});

  // Pulled cameras: recorders that connect to the wire port just opened.
  std::unique_ptr<CameraManager> cameras;
  if (cfg.pull_cameras && !volumes.empty()) {
    const auto ep = wire.local_endpoint();
    cameras = std::make_unique<CameraManager>(CameraManagerConfig{
        .conninfo = conninfo,
        .wire = std::string(tls ? "tls://" : "") + ep.address().to_string() + ":" + std::to_string(ep.port()),
        .recorder = cfg.recorder ? *cfg.recorder : default_recorder_path(),
        .log_dir = fs::absolute(cfg.data_dir) / "log",
        .token = cfg.auth ? make_recorder_token(conninfo) : std::string()});
  }

  // Stopping: recorders first (they end their streams cleanly through the still-running
  // network threads), then the listeners and the network threads.
  std::jthread stopper;
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    log::info("stopping", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
    stopper = std::jthread([&] {
      if (cameras) cameras->stop();
      boost::asio::post(io, [&] {
        http.stop();
        wire.stop();
        io.stop();
      });
    });
  });

  io.run();
  // The listeners' accepts, aborted by stop(), complete here: each holds a socket of a session
  // io_context, which must still exist when the handler runs (or is destroyed).
  io.restart();
  io.poll();
  // Open sessions end here, before the services they use; interactive reads still in flight
  // complete first (their completions are posted to the sessions' io_contexts).
  network.shutdown([] { ClipReader::wait_for_requests(); });
  stopper = {};        // joins

  catalog.stop();
  // The IO threads stop after their current cycle; what they and the recordings that just ended
  // queued for the catalog (segment closes, stream ends) is committed while the embedded
  // PostgreSQL still runs — otherwise the next start would take those streams for crashed ones.
  retention.reset();
  disks.clear();
  batcher.flush();
  std::error_code ignored;
  fs::remove(cfg.data_dir / "run" / "endpoints.json", ignored);
  if (embedded) embedded->stop();
  log::info("vigild stopped");
  return 0;
}

}  // namespace vigil::server
