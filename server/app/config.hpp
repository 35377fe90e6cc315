#pragma once
// vigild's configuration: command-line flags, optionally a config file with the same keys
// (INI style, `key = value`; flags win). Start-up code: throws ConfigError on bad input.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace vigil::server {

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
  std::string to_string() const { return host + ":" + std::to_string(port); }
};

// "ADDR:PORT" or "[v6]:PORT"; throws ConfigError naming the flag.
Endpoint parse_endpoint(const std::string& text, const std::string& flag);

struct ServerConfig {
  std::filesystem::path data_dir = "./data";
  std::optional<std::string> db_url;   // none = embedded PostgreSQL under data_dir/pg
  Endpoint listen{"127.0.0.1", 7070};  // wire protocol
  std::string http_address = "127.0.0.1";
  std::uint16_t http_port = 8080;
  std::string pg_user = "vigil";  // embedded cluster's account when running as root
  std::string log_level = "info";
  std::size_t max_frame_bytes = 16u << 20;
  std::size_t catalog_threads = 2;
  // Muxing and thumbnail decoding run on this many threads, off the network threads (media_pool.hpp);
  // at most thumbnail_builds thumbnails are decoded at once (more are answered 503).
  unsigned media_threads = 2;
  unsigned thumbnail_builds = 4;
  std::uint64_t export_memory_bytes = 512ull << 20;  // larger MP4 exports are streamed (fragmented MP4)
  int http_timeout_s = 15;                     // a request must arrive whole within this (slow clients are cut off)
  int segment_max_s = 600;                     // a segment closes once its frames span this long (and at its size)
  double stall_timeout_s = 5;                  // a recording that receives nothing this long ends as stalled; 0 off
  int hello_timeout_s = 10;                    // a wire connection must say hello this long after it is accepted
  int idle_timeout_s = 60;                     // a wire session doing nothing and sending nothing is closed; 0 off
  std::vector<std::filesystem::path> volumes;  // recovered and reconciled at start
  std::uint64_t volume_create_bytes = 0;       // create missing file volumes of this size
  std::uint64_t extent_bytes = 64ull << 20;
  std::uint32_t volume_fail_after = 3;  // failed writes/flushes in a row that take a volume out of service
  // Test only (--fault-plan, not in --help): volume index (in --volume order) → its fault plan
  // (storage/faulty_device.hpp).
  std::vector<std::pair<std::size_t, std::string>> fault_plans;
  std::uint32_t cycle_ms = 1000;                 // T of every disk's cycle scheduler
  std::size_t chunk_bytes = 0;                   // Semi-preemptible IO chunk; 0: the profile's (else 512 KiB)
  std::size_t io_depth = 2;                      // D: chunks in flight per disk
  std::optional<std::filesystem::path> profile;  // disk profile to use (and store) where the catalog has none
  std::string admission_policy = "conservative";
  int model_check_cycles = 5;            // online model check: K optimistic cycles recalibrate it; 0 off
  std::string io_priority = "realtime";  // IO threads: realtime (SCHED_FIFO, else normal) or normal
  // The latency map (docs/latency-map.md "In vigild"): auto (rotating devices), on or off; saved
  // next to each volume every latency_map_save_s seconds (0: only at shutdown).
  std::string latency_map = "auto";
  std::int64_t latency_map_save_s = 600;
  double overbooking = 0.01;         // adm2/adm3/statistical: accepted per-cycle overload probability
  double retention_interval_s = 60;  // a full retention pass (camera ages) at least this often; 0 off
  // The integrity scrubber: every closed segment verified at least every N days; 0 off. Tests
  // shorten the epoch with the hidden --scrub-epoch-ms (0: scrub_days decides).
  double scrub_days = 7;
  std::int64_t scrub_epoch_ms = 0;
  // The archive tier (docs/archive.md): closed segments copied to S3-compatible object storage
  // once closed for archive_after_s; no endpoint: no archive. Credentials come from a file (never
  // the command line, where `ps` shows them) or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
  std::optional<Endpoint> archive_endpoint;
  std::string archive_bucket = "vigil-archive";
  std::string archive_region = "us-east-1";
  std::optional<std::filesystem::path> archive_credentials;
  double archive_after_s = 0;
  int archive_retention_days = 0;  // archive copies older than this are deleted (cameras may say); 0: kept
  // Tests only (a hidden flag): how long retention's "day" is, for retention_days and
  // archive_retention_days alike; 0: a real day.
  std::int64_t retention_day_ms = 0;
  std::int64_t archive_poll_ms = 5000;            // tests only (a hidden flag): a faster catalog poll
  double retention_reserve_s = 120;               // free space kept, in seconds of admitted recording
  std::optional<std::filesystem::path> recorder;  // `vigil` binary for pulled cameras; none: beside vigild
  bool pull_cameras = true;                       // run the camera manager (needs a volume)
  std::optional<std::filesystem::path> web_root;  // the web UI's files; none: beside vigild or the build tree's
  bool auth = true;           // tokens required on HTTP (but /healthz, /metrics) and the wire protocol
  bool metrics_auth = false;  // /metrics needs a viewer token too
  int max_backdate_s = 5;     // how far before now a non-admin token may date a recording or an event
  std::optional<std::filesystem::path> tls_cert, tls_key;  // both: the wire protocol is TLS only
  // Playbacks' share of each disk's real-time budget (0: no playback); a playback paused this long
  // releases its share (re-admitted on resume). admission/playback_share.hpp.
  double playback_share = 0.25;
  double playback_pause_release_s = 10;
  // Pulled cameras' recorders run as this account when vigild runs as root; none: the default,
  // "vigil-recorder" (created if missing). A named one must exist.
  std::optional<std::string> recorder_user;
  // This vigild's node name among the nodes sharing the catalog (docs/nodes.md); the host name
  // unless --node gives one (filled in by parse_server_args).
  std::string node;
  // The host the other nodes and the playback proxy reach this node by (--advertise): with the
  // bound HTTP and wire ports, written into the node's row (docs/nodes.md, "One front door").
  // Empty: the listen address, or the host name when that is a wildcard (0.0.0.0, ::).
  std::string advertise;
  int ingest_workers =
      2;  // `vigil ingest` processes pulled cameras are spread over (server/recording/camera_manager.hpp)
  // Open connections each listener (wire, HTTP) serves at once, in all and from one address.
  std::size_t max_connections = 4096;
  std::size_t max_connections_per_address = 256;
  // Both: the HTTP API (and the web UI, HLS) is HTTPS only.
  std::optional<std::filesystem::path> http_tls_cert, http_tls_key;
};

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Result of parsing argv: either a config to run with, or text to print and an exit code
// (for --help, --version and errors).
struct ParsedArgs {
  std::optional<ServerConfig> config;
  std::string output;
  int exit_code = 0;
};

ParsedArgs parse_server_args(int argc, const char* const argv[]);

}  // namespace vigil::server
