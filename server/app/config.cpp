#include "server/app/config.hpp"

#include "admission/admission.hpp"
#include "server/disks/disk_latency_map.hpp"
#include "storage/faulty_device.hpp"

#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <charconv>
#include <fstream>
#include <sstream>

namespace po = boost::program_options;

namespace vigil::server {

Endpoint parse_endpoint(const std::string& text, const std::string& flag) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw ConfigError("--" + flag + ": expected ADDR:PORT, got '" + text + "'");
  }
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port_text = text.substr(colon + 1);
  std::size_t used = 0;
  unsigned long port = 0;
  try {
    port = std::stoul(port_text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != port_text.size() || port > 65535) {
    throw ConfigError("--" + flag + ": bad port '" + port_text + "' (0-65535)");
  }
  return Endpoint{host, static_cast<std::uint16_t>(port)};
}

namespace {

// Flags whose text is converted after parsing (into ServerConfig's types).
struct RawArgs {
  std::string listen, db_url, config_file, data_dir, archive_endpoint;
  std::vector<std::string> volumes;
  std::vector<std::string> fault_plans;
};

po::options_description server_options(ServerConfig& cfg, RawArgs& raw) {
  po::options_description d("Server");
  d.add_options()("data", po::value(&raw.data_dir)->value_name("DIR")->default_value(raw.data_dir),
                  "data directory: volumes, the embedded PostgreSQL cluster (DIR/pg), endpoints file")(
      "db", po::value(&raw.db_url)->value_name("URL"),
      "use an external PostgreSQL (libpq URL or key=value conninfo) instead of the embedded one")(
      "listen", po::value(&raw.listen)->value_name("ADDR:PORT")->default_value(raw.listen),
      "wire-protocol listen address (port 0 = any free port)")(
      "http-address", po::value(&cfg.http_address)->value_name("ADDR")->default_value(cfg.http_address),
      "HTTP listen address")("http-port", po::value(&cfg.http_port)->value_name("N")->default_value(cfg.http_port),
                             "HTTP port for the API and GET /healthz (0 = any free port)")(
      "pg-user", po::value(&cfg.pg_user)->value_name("NAME")->default_value(cfg.pg_user),
      "system user that runs the embedded PostgreSQL when vigild runs as root (created if missing)")(
      "max-frame-bytes", po::value(&cfg.max_frame_bytes)->value_name("N")->default_value(cfg.max_frame_bytes),
      "largest media payload accepted in one wire frame")(
      "stall-timeout", po::value(&cfg.stall_timeout_s)->value_name("S")->default_value(cfg.stall_timeout_s),
      "a recording whose recorder sends nothing for S seconds ends as stalled: its disk share is released and "
      "the hole is a source_stalled gap until the camera records again; 0 = never")(
      "segment-max", po::value(&cfg.segment_max_s)->value_name("S")->default_value(cfg.segment_max_s),
      "a recording's segment closes once its frames span S seconds (as well as at its size): a slow camera's "
      "segments stay small units for retention and recovery")(
      "hello-timeout", po::value(&cfg.hello_timeout_s)->value_name("S")->default_value(cfg.hello_timeout_s),
      "a wire connection must finish its TLS handshake and say hello within S seconds of being accepted")(
      "idle-timeout", po::value(&cfg.idle_timeout_s)->value_name("S")->default_value(cfg.idle_timeout_s),
      "a wire session that neither records nor plays back and sends nothing for S seconds is closed; 0 = never")(
      "http-timeout", po::value(&cfg.http_timeout_s)->value_name("S")->default_value(cfg.http_timeout_s),
      "seconds an HTTP request may take to arrive whole (headers and body): slow clients are cut off")(
      "export-memory-bytes",
      po::value(&cfg.export_memory_bytes)->value_name("BYTES")->default_value(cfg.export_memory_bytes),
      "an MP4 export of at most this much video is built in memory (index first, byte ranges, cached); a larger "
      "one is streamed as fragmented MP4 while it is read, in at most 3/8 of this (12 MiB) plus two GOPs")(
      "media-threads", po::value(&cfg.media_threads)->value_name("N")->default_value(cfg.media_threads),
      "threads that mux exports and HLS segments and decode thumbnails, apart from the network threads that "
      "carry recordings and their acknowledgements")(
      "thumbnail-builds", po::value(&cfg.thumbnail_builds)->value_name("N")->default_value(cfg.thumbnail_builds),
      "thumbnails decoded at once; one more is answered 503 with Retry-After (finished ones are cached)")(
      "catalog-threads", po::value(&cfg.catalog_threads)->value_name("N")->default_value(cfg.catalog_threads),
      "threads (and PostgreSQL connections) of the catalog pool")(
      "max-connections", po::value(&cfg.max_connections)->value_name("N")->default_value(cfg.max_connections),
      "open connections each listener (wire, HTTP) serves at once; more are refused (HTTP 503, wire Error)")(
      "max-connections-per-address",
      po::value(&cfg.max_connections_per_address)->value_name("N")->default_value(cfg.max_connections_per_address),
      "open connections each listener serves at once from one client address; more are refused alike")(
      "log-level", po::value(&cfg.log_level)->value_name("LEVEL")->default_value(cfg.log_level),
      "debug, info, warn or error");
  return d;
}

po::options_description access_options() {
  po::options_description d("Access");
  d.add_options()("no-auth", po::bool_switch(),
                  "accept every HTTP and wire request without a token (a lab, never production); by default\n"
                  "vigild writes an admin token to DATA/admin.token on first start and requires tokens")(
      "metrics-auth", po::bool_switch(),
      "/metrics needs a token (viewer role) like the API; by default it is open to scrapers")(
      "max-backdate", po::value<int>()->value_name("S")->default_value(5),
      "how far before now a token other than admin may date what it writes: a recording's first packet (an "
      "earlier one is dated now - S) or an event's end (an older one is refused); admin: up to an hour for "
      "recordings, any time for events")(
      "tls-cert", po::value<std::string>()->value_name("FILE"),
      "PEM certificate chain: the wire protocol is served over TLS only (clients use --server tls://HOST:PORT)")(
      "tls-key", po::value<std::string>()->value_name("FILE"), "PEM private key of --tls-cert")(
      "http-tls-cert", po::value<std::string>()->value_name("FILE"),
      "PEM certificate chain: the HTTP API, the web UI and HLS are served over HTTPS only (TLS 1.2+)")(
      "http-tls-key", po::value<std::string>()->value_name("FILE"), "PEM private key of --http-tls-cert");
  return d;
}

po::options_description disks_options(ServerConfig& cfg, RawArgs& raw) {
  po::options_description d("Disks and admission");
  d.add_options()("volume", po::value(&raw.volumes)->value_name("PATH")->composing(),
                  "a volume (file or block device) to store video on; repeatable. Recovered and reconciled with the "
                  "catalog at every start")("volume-size", po::value(&cfg.volume_create_bytes)->value_name("BYTES"),
                                            "create a missing --volume file of this size (preallocated) and format it")(
      "volume-fail-after", po::value(&cfg.volume_fail_after)->value_name("K")->default_value(cfg.volume_fail_after),
      "take a volume out of service after K failed writes or flushes in a row (each write already retried once): "
      "it is marked failed in the catalog and /healthz, gets no new streams, and its recordings continue on the "
      "other volumes")("extent-bytes",
                       po::value(&cfg.extent_bytes)->value_name("BYTES")->default_value(cfg.extent_bytes),
                       "extent size when formatting a new volume")(
      "cycle-ms", po::value(&cfg.cycle_ms)->value_name("MS")->default_value(cfg.cycle_ms),
      "cycle length T of each disk's scheduler: every admitted stream gets one IO of T x rate per cycle")(
      "chunk-bytes", po::value(&cfg.chunk_bytes)->value_name("BYTES")->default_value(cfg.chunk_bytes),
      "largest non-preemptible command: stream IO is issued in chunks of this size (interactive IO waits at most "
      "one); 0 = the disk profile's chunk size, 512 KiB without a profile")(
      "io-depth", po::value(&cfg.io_depth)->value_name("N")->default_value(cfg.io_depth),
      "chunks in flight per disk (1 or 2)")(
      "profile", po::value<std::string>()->value_name("FILE"),
      "disk profile (from `vigil profile`) for volumes whose disk has none in the catalog; stored there")(
      "admission-policy", po::value(&cfg.admission_policy)->value_name("NAME")->default_value(cfg.admission_policy),
      "conservative (Adm1, the default: never over-admits while the profile holds), statistical (what the "
      "running streams were measured to cost, plus a margin for a cycle's variation), aggressive (Adm2: mean "
      "curve, peak rates), adm3 (mean curve, declared average rates), analytic (safe, wasteful); see "
      "docs/admission.md")(
      "overbooking", po::value(&cfg.overbooking)->value_name("P")->default_value(cfg.overbooking),
      "for aggressive, adm3 and statistical: the accepted probability that a cycle's stream IO overruns "
      "(their margin is z(P) standard deviations of the cycle); e.g. 0.001 for a stricter guarantee")(
      "playback-share", po::value(&cfg.playback_share)->value_name("F")->default_value(cfg.playback_share),
      "playbacks may be predicted to use at most F of each disk's real-time share (recording comes first: "
      "recordings may use it while playbacks do not, are decided without counting playbacks, and end the newest "
      "playbacks if they need their time); 0 = no playback from disk")(
      "playback-pause-release",
      po::value(&cfg.playback_pause_release_s)->value_name("S")->default_value(cfg.playback_pause_release_s),
      "a playback paused for S seconds releases its disk share; resuming re-admits it (refused: an error, the "
      "playback stays paused); 0 = at once")(
      "model-check-cycles", po::value(&cfg.model_check_cycles)->value_name("K")->default_value(cfg.model_check_cycles),
      "when K cycles in a row take longer than the disk profile predicts, recalibrate the model from them and "
      "go on admitting under it (a device far slower than its profile pauses admission); 0 turns the check off "
      "(a profile known not to describe this device, e.g. in tests)")(
      "io-priority", po::value(&cfg.io_priority)->value_name("realtime|normal")->default_value(cfg.io_priority),
      "the disks' IO threads at real-time priority (SCHED_FIFO, capped by RLIMIT_RTTIME; IO buffers mlock'ed; "
      "without the privilege they stay normal and say so) or at normal priority")(
      "latency-map", po::value(&cfg.latency_map)->value_name("auto|on|off")->default_value(cfg.latency_map),
      "each disk's IO thread learns seed 004's latency map (the worst positioning time seen from one extent to "
      "another) from its own IOs and orders each cycle's stream IOs by it (FSATF-MAP, C-LOOK where the map's "
      "bound does not fit the cycle); the map is kept in VOLUME.latmap. auto: only on a rotating device (sysfs "
      "queue/rotational = 1, not a virtio or Xen disk, whose flag says nothing of the medium): on a non-rotating "
      "device service time does not depend on distance (`vigil bench latency-map` measured r = 0.00 on a virtio "
      "disk), so a map would learn only noise")(
      "latency-map-save-s", po::value(&cfg.latency_map_save_s)->value_name("S")->default_value(cfg.latency_map_save_s),
      "save each disk's latency map every S seconds (from a copy, off the IO thread) and at shutdown; 0: only at "
      "shutdown")("retention-interval",
                  po::value(&cfg.retention_interval_s)->value_name("S")->default_value(cfg.retention_interval_s),
                  "reclaim closed segments past their camera's retention_days at least every S seconds; free space is "
                  "watched every second and the oldest unlocked segments are reclaimed when it runs short; 0 turns "
                  "retention off (a full volume then stalls recording)")(
      "retention-reserve", po::value(&cfg.retention_reserve_s)->value_name("S")->default_value(cfg.retention_reserve_s),
      "free space retention keeps: S seconds of the admitted recording rate (at least 1 % of the volume)")(
      "scrub-days", po::value(&cfg.scrub_days)->value_name("N")->default_value(cfg.scrub_days),
      "the integrity scrubber re-reads every closed segment in the disks' slack and checks its CRCs at least every N "
      "days (a rolling epoch per volume); damage becomes a 'corruption' gap; 0 turns it off");
  return d;
}

po::options_description archive_options(ServerConfig& cfg, RawArgs& raw) {
  po::options_description d("Archive tier (S3-compatible object storage)");
  d.add_options()("archive-endpoint", po::value(&raw.archive_endpoint)->value_name("ADDR:PORT"),
                  "copy closed segments to the S3-compatible store at ADDR:PORT (plain HTTP, path-style requests); "
                  "each copy is verified (record CRCs, per-part CRC32C, size) before the catalog records it; "
                  "default: no archive")(
      "archive-bucket", po::value(&cfg.archive_bucket)->value_name("NAME")->default_value(cfg.archive_bucket),
      "the bucket segment copies go to (made with object lock if missing)")(
      "archive-region", po::value(&cfg.archive_region)->value_name("NAME")->default_value(cfg.archive_region),
      "the region requests are signed for (SigV4)")(
      "archive-credentials", po::value<std::string>()->value_name("FILE"),
      "a file holding the access key id on its first line and the secret key on its second (mode 0600); default: "
      "$AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY")(
      "archive-after", po::value(&cfg.archive_after_s)->value_name("S")->default_value(cfg.archive_after_s),
      "copy a segment once it has been closed S seconds (0: as soon as it closes; a camera's archive_after_s "
      "overrides it)")(
      "archive-retention",
      po::value(&cfg.archive_retention_days)->value_name("DAYS")->default_value(cfg.archive_retention_days),
      "delete archive copies (and segments only the archive holds) older than DAYS, never under an evidence lock "
      "(a camera's archive_retention_days overrides it; 0: kept)");
  return d;
}

po::options_description cameras_options() {
  po::options_description d("Cameras and web UI");
  d.add_options()("recorder", po::value<std::string>()->value_name("PATH"),
                  "the `vigil` binary that records pulled cameras (`vigil camera add`); default: beside vigild, or the "
                  "build tree's")("recorder-user", po::value<std::string>()->value_name("NAME"),
                                  "account the recorders run as when vigild runs as root (it must exist); default: "
                                  "vigil-recorder, created if missing")(
      "node", po::value<std::string>()->value_name("NAME"),
      "this vigild's node name, unique among the nodes sharing one catalog (--db-url): nodes hold leases and "
      "share the pulled cameras, and a dead node's cameras fail over to the others (docs/nodes.md); default: the "
      "host name")(
      "advertise", po::value<std::string>()->value_name("HOST"),
      "the host the other nodes and the playback proxy reach this node by, with its HTTP and wire ports (the "
      "front door proxies media to the node that holds it: docs/nodes.md); default: the listen address, or the "
      "host name when that is 0.0.0.0 or ::")(
      "ingest-workers", po::value<int>()->value_name("N"),
      "worker processes pulled cameras are spread over (each records many, up to 64, more workers beyond); "
      "default 2")("no-camera-pull", po::bool_switch(),
                   "do not record the cameras configured in the catalog (recording clients still can)")(
      "web-root", po::value<std::string>()->value_name("DIR"),
      "the web UI's files, served at /ui/ (read once at start); default: web/ beside vigild, or the build "
      "tree's");
  return d;
}

// Checks what Program_options cannot: ranges, pairs, names. Throws ConfigError naming the flag.
void check(const ServerConfig& cfg) {
  if (cfg.catalog_threads == 0) throw ConfigError("--catalog-threads must be at least 1");
  if (cfg.http_timeout_s < 1 || cfg.http_timeout_s > 3600)
    throw ConfigError("--http-timeout must be 1 to 3600 seconds");
  if (cfg.export_memory_bytes < (64u << 10)) throw ConfigError("--export-memory-bytes must be at least 64 KiB");
  if (cfg.media_threads < 1 || cfg.media_threads > 64) throw ConfigError("--media-threads must be 1..64");
  if (cfg.thumbnail_builds < 1 || cfg.thumbnail_builds > 1024) throw ConfigError("--thumbnail-builds must be 1..1024");
  if (cfg.segment_max_s < 1 || cfg.segment_max_s > 86400) throw ConfigError("--segment-max must be 1 to 86400 seconds");
  if (cfg.hello_timeout_s < 1 || cfg.hello_timeout_s > 3600)
    throw ConfigError("--hello-timeout must be 1 to 3600 seconds");
  if (cfg.idle_timeout_s < 0 || cfg.idle_timeout_s > 86400)
    throw ConfigError("--idle-timeout must be 0 (never) to 86400 seconds");
  if (cfg.extent_bytes < (1u << 20) || cfg.extent_bytes % 4096) {
    throw ConfigError("--extent-bytes must be a multiple of 4096 and at least 1 MiB");
  }
  if (cfg.max_frame_bytes < 1024) throw ConfigError("--max-frame-bytes must be at least 1024");
  if (cfg.max_connections < 1 || cfg.max_connections_per_address < 1)
    throw ConfigError("--max-connections and --max-connections-per-address must be at least 1");
  if (cfg.cycle_ms < 100 || cfg.cycle_ms > 60'000) throw ConfigError("--cycle-ms must be between 100 and 60000");
  if (cfg.tls_cert.has_value() != cfg.tls_key.has_value()) throw ConfigError("--tls-cert and --tls-key go together");
  if (cfg.http_tls_cert.has_value() != cfg.http_tls_key.has_value())
    throw ConfigError("--http-tls-cert and --http-tls-key go together");
  if (!admission::policy_from_name(cfg.admission_policy)) {
    throw ConfigError("--admission-policy: unknown policy '" + cfg.admission_policy +
                      "' (conservative, aggressive, adm3, statistical, analytic)");
  }
  if (!(cfg.retention_interval_s >= 0 && cfg.retention_interval_s <= 86400 * 30)) {
    throw ConfigError("--retention-interval must be between 0 (off) and 2592000 seconds");
  }
  if (!(cfg.retention_reserve_s >= 0 && cfg.retention_reserve_s <= 86400)) {
    throw ConfigError("--retention-reserve must be between 0 and 86400 seconds");
  }
  if (!(cfg.overbooking >= 1e-9 && cfg.overbooking <= 0.5)) {
    throw ConfigError("--overbooking must be a probability between 1e-9 and 0.5");
  }
  if (cfg.max_backdate_s < 0 || cfg.max_backdate_s > 3600)
    throw ConfigError("--max-backdate must be 0 to 3600 seconds");
  if (!(cfg.playback_share >= 0 && cfg.playback_share <= 1)) {
    throw ConfigError("--playback-share must be between 0 (no playback) and 1");
  }
  if (!(cfg.playback_pause_release_s >= 0 && cfg.playback_pause_release_s <= 86400)) {
    throw ConfigError("--playback-pause-release must be between 0 and 86400 seconds");
  }
  if (!(cfg.stall_timeout_s == 0 || (cfg.stall_timeout_s >= 0.5 && cfg.stall_timeout_s <= 3600))) {
    throw ConfigError("--stall-timeout must be 0 (off) or between 0.5 and 3600 seconds");
  }
  if (cfg.chunk_bytes % 4096) throw ConfigError("--chunk-bytes must be a multiple of 4096 (or 0 for the profile's)");
  if (cfg.io_depth < 1 || cfg.io_depth > 2) throw ConfigError("--io-depth must be 1 or 2");
  if (cfg.volume_fail_after < 1 || cfg.volume_fail_after > 1000) {
    throw ConfigError("--volume-fail-after must be between 1 and 1000");
  }
  for (const auto& [index, plan] : cfg.fault_plans) {
    if (index >= cfg.volumes.size()) throw ConfigError("--fault-plan: no volume " + std::to_string(index));
    if (!storage::parse_fault_plan(plan)) {
      throw ConfigError("--fault-plan: '" + plan +
                        "' is not a plan (KIND@N[+|!],...; KIND write, flush, read, torn, full, slow)");
    }
  }
  if (cfg.model_check_cycles < 0 || cfg.model_check_cycles > 1000) {
    throw ConfigError("--model-check-cycles must be between 0 (off) and 1000");
  }
  if (cfg.io_priority != "realtime" && cfg.io_priority != "normal") {
    throw ConfigError("--io-priority must be realtime or normal, not '" + cfg.io_priority + "'");
  }
  if (!latency_map_mode(cfg.latency_map)) {
    throw ConfigError("--latency-map must be auto, on or off, not '" + cfg.latency_map + "'");
  }
  if (cfg.latency_map_save_s < 0) throw ConfigError("--latency-map-save-s must be 0 (shutdown only) or more");
}

// The parsed flags into CFG (those Program_options could not store there itself), then checked.
void finish(const po::variables_map& vm, const RawArgs& raw, ServerConfig& cfg) {
  cfg.listen = parse_endpoint(raw.listen, "listen");
  cfg.data_dir = raw.data_dir;
  if (!raw.db_url.empty()) cfg.db_url = raw.db_url;
  if (!raw.archive_endpoint.empty()) cfg.archive_endpoint = parse_endpoint(raw.archive_endpoint, "archive-endpoint");
  if (vm.count("archive-credentials")) cfg.archive_credentials = vm["archive-credentials"].as<std::string>();
  if (cfg.archive_after_s < 0 || cfg.archive_after_s > 365 * 86400.0)
    throw ConfigError("--archive-after must be between 0 and 31536000 seconds");
  if (cfg.archive_bucket.empty()) throw ConfigError("--archive-bucket must not be empty");
  if (cfg.archive_poll_ms < 10) throw ConfigError("--archive-poll-ms must be at least 10");
  if (cfg.archive_retention_days < 0 || cfg.archive_retention_days > 36500)
    throw ConfigError("--archive-retention must be between 0 (kept) and 36500 days");
  if (cfg.retention_day_ms < 0) throw ConfigError("--retention-day-ms must not be negative");
  for (const auto& v : raw.volumes) cfg.volumes.emplace_back(v);
  for (const auto& f : raw.fault_plans) {
    const auto colon = f.find(':');
    std::size_t index = 0;
    const char* end = f.data() + (colon == std::string::npos ? 0 : colon);
    if (colon == std::string::npos || std::from_chars(f.data(), end, index).ptr != end || colon == 0) {
      throw ConfigError("--fault-plan takes VOLUME_INDEX:PLAN, e.g. 1:write@20,flush@3+");
    }
    cfg.fault_plans.emplace_back(index, f.substr(colon + 1));
  }
  auto path = [&](const char* flag, std::optional<std::filesystem::path>& to) {
    if (vm.count(flag)) to = vm[flag].as<std::string>();
  };
  path("profile", cfg.profile);
  path("recorder", cfg.recorder);
  path("web-root", cfg.web_root);
  path("tls-cert", cfg.tls_cert);
  path("tls-key", cfg.tls_key);
  if (vm.count("recorder-user")) cfg.recorder_user = vm["recorder-user"].as<std::string>();
  if (vm.count("node")) {
    cfg.node = vm["node"].as<std::string>();
    if (cfg.node.empty() || cfg.node.size() > 64 ||
        std::any_of(cfg.node.begin(), cfg.node.end(), [](unsigned char c) { return c <= 0x20 || c == 0x7f; })) {
      throw ConfigError("--node must be 1-64 bytes without spaces or control characters");
    }
  }
  if (vm.count("advertise")) {
    cfg.advertise = vm["advertise"].as<std::string>();
    if (cfg.advertise.empty() || cfg.advertise.size() > 253 ||
        cfg.advertise.find_first_of(" /?#@\t\r\n") != std::string::npos) {
      throw ConfigError("--advertise must be a host name or address (the ports are the listening ones)");
    }
  }
  if (vm.count("ingest-workers")) {
    cfg.ingest_workers = vm["ingest-workers"].as<int>();
    if (cfg.ingest_workers < 1 || cfg.ingest_workers > 256) throw ConfigError("--ingest-workers must be 1 to 256");
  }
  path("http-tls-cert", cfg.http_tls_cert);
  path("http-tls-key", cfg.http_tls_key);
  auto on = [&](const char* flag) { return vm.count(flag) && vm[flag].as<bool>(); };
  if (on("no-camera-pull")) cfg.pull_cameras = false;
  if (on("no-auth")) cfg.auth = false;
  if (on("metrics-auth")) cfg.metrics_auth = true;
  if (vm.count("max-backdate")) cfg.max_backdate_s = vm["max-backdate"].as<int>();
  check(cfg);
}

ParsedArgs usage_error(const std::string& what, bool hint) {
  ParsedArgs out;
  out.output = "vigild: " + what + (hint ? "\nTry 'vigild --help'.\n" : "\n");
  out.exit_code = 2;
  return out;
}

}  // namespace

ParsedArgs parse_server_args(int argc, const char* const argv[]) {
  ServerConfig cfg;
  RawArgs raw;
  raw.listen = cfg.listen.to_string();
  raw.data_dir = cfg.data_dir.string();
  po::options_description general("Options");
  general.add_options()("help,h", "show this help and exit")("version", "print the version and exit")(
      "config,c", po::value(&raw.config_file)->value_name("FILE"),
      "read options from FILE (INI: one `key = value` per line, same keys as the flags)");
  // Every option but the general ones may also come from the config file (flags win).
  po::options_description settings;
  settings.add(server_options(cfg, raw))
      .add(access_options())
      .add(disks_options(cfg, raw))
      .add(archive_options(cfg, raw))
      .add(cameras_options());
  // Test only, on the command line only, and not in --help: volumes that fail on purpose
  // (docs/durability.md, "Faults at runtime").
  po::options_description testing;
  testing.add_options()("fault-plan", po::value(&raw.fault_plans)->composing(),
                        "")("scrub-epoch-ms", po::value(&cfg.scrub_epoch_ms),
                            "")("archive-poll-ms", po::value(&cfg.archive_poll_ms),
                                "")("retention-day-ms", po::value(&cfg.retention_day_ms), "");
  po::options_description all;
  all.add(general).add(settings);
  po::options_description accepted;
  accepted.add(all).add(testing);

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(accepted).run(), vm);
    if (vm.count("config")) {
      std::ifstream in(vm["config"].as<std::string>());
      if (!in) throw ConfigError("cannot read config file '" + vm["config"].as<std::string>() + "'");
      po::store(po::parse_config_file(in, settings), vm);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    return usage_error(e.what(), true);
  } catch (const ConfigError& e) {
    return usage_error(e.what(), false);
  }

  ParsedArgs out;
  if (vm.count("help")) {
    std::ostringstream help;
    help << "vigild " VIGIL_VERSION " - Vigil video surveillance storage server\n\n"
         << "Usage: vigild [--data DIR] [--db URL] [--listen ADDR:PORT] [--http-port N] [options]\n\n"
         << "Without --db, vigild runs a private PostgreSQL cluster under DIR/pg (initialised on first\n"
         << "start, stopped on exit). It writes DIR/run/endpoints.json with the addresses it listens on.\n\n"
         << all;
    out.output = help.str();
    return out;
  }
  if (vm.count("version")) {
    out.output = "vigild " VIGIL_VERSION "\n";
    return out;
  }
  try {
    finish(vm, raw, cfg);
  } catch (const ConfigError& e) {
    return usage_error(e.what(), false);
  }
  if (cfg.node.empty()) {
    char host[256] = "localhost";
    ::gethostname(host, sizeof host - 1);
    cfg.node = host;
  }
  out.config = std::move(cfg);
  return out;
}

}  // namespace vigil::server
