#include "client/proxy/proxy_command.hpp"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <fstream>
#include <iostream>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>

#include "client/proxy/proxy_hub.hpp"
#include "client/proxy/proxy_nodes.hpp"
#include "client/proxy/proxy_server.hpp"
#include "common/command_line.hpp"
#include "common/exit_codes.hpp"
#include "common/tls_context.hpp"

namespace asio = boost::asio;
namespace po = boost::program_options;

namespace vigil::client {
namespace {

constexpr CommandHelp kHelp{
    "vigil proxy",
    "Usage: vigil proxy --upstream HOST:PORT[,HOST:PORT...] [--listen ADDR:PORT] [--cache-mb N]\n"
    "       [--tls-cert FILE --tls-key FILE] [--upstream-ca FILE]\n\n"
    "The playback proxy: viewers use it exactly as they would use vigild's HTTP port (same URLs, same\n"
    "tokens: Authorization: Bearer TOKEN or ?access_token=). Viewers asking for the same HLS segment,\n"
    "init segment, export or thumbnail share one upstream fetch, and finished media is kept in an LRU\n"
    "cache, so a hundred viewers of one recording cost vigild about what one does. Every viewer's token\n"
    "is checked with vigild (verdict kept a few seconds) before cached bytes go out. vigild's refusals\n"
    "(401, 403, 404, 413, 503 ...) reach the viewer with their reason; an unreachable node is a 502,\n"
    "a node that does not answer in time a 504.\n"
    "TLS: --tls-cert/--tls-key serve viewers over HTTPS; https:// upstreams and tls:// --wire nodes are\n"
    "reached over TLS, their certificates verified against --upstream-ca (default: VIGIL_TLS_CA, else\n"
    "the system's trust store) and their names against the address given.\n",
    "\nOpen: GET /healthz, GET /metrics (Prometheus text: vigil_proxy_upstream_requests_total{kind},\n"
    "cache hits/misses, coalesced waits, viewers connected, bytes served).\n"
    "Stops cleanly on SIGINT/SIGTERM. Exit: 0 stopped by a signal, 1 failed, 2 usage error.\n"};

// What the command line says, in its own units; checked and converted by proxy_settings().
struct ProxyArgs {
  std::string listen = "127.0.0.1:8090", upstream, address_file, wire;
  std::string tls_cert, tls_key, upstream_ca;  // viewers' HTTPS; trust for TLS upstreams
  // Signed, so that a negative count is refused rather than wrapped around.
  std::int64_t cache_mb = 256, playback_mb = 32, max_playbacks = 32;
  double upstream_timeout_s = 30, auth_ttl_s = 5, playback_rate = 4, read_ahead_s = 30, keep_behind_s = 30;
  bool access_log = false;
  bool nodes = false;  // learn the nodes from the catalog (GET /api/v1/nodes)
};

po::options_description proxy_options(ProxyArgs& a) {
  po::options_description o("Options");
  o.add_options()  //
      ("upstream", po::value(&a.upstream)->value_name("LIST"),
       "vigild HTTP address(es), HOST:PORT (https://HOST:PORT for a vigild with --http-tls-cert), comma-separated: "
       "tried in order, and the node that answered for a camera is asked first next time")  //
      ("nodes", po::bool_switch(&a.nodes),
       "learn the nodes from the catalog: at start, ask the --upstream nodes for the nodes sharing their catalog "
       "(GET /api/v1/nodes, with the token vigil was given) and add the live ones not given, HTTP (and with --wire, "
       "wire) addresses as each node advertises them")  //
      ("listen", po::value(&a.listen)->value_name("ADDR:PORT")->default_value(a.listen),
       "where viewers connect (port 0: any free port)")  //
      ("cache-mb", po::value(&a.cache_mb)->value_name("N")->default_value(a.cache_mb),
       "media cache budget in MiB (0: share fetches, keep nothing)")  //
      ("upstream-timeout", po::value(&a.upstream_timeout_s)->value_name("S")->default_value(a.upstream_timeout_s),
       "longest wait for a node's whole answer before a 504")  //
      ("auth-ttl", po::value(&a.auth_ttl_s)->value_name("S")->default_value(a.auth_ttl_s),
       "how long a token's verdict is kept")  //
      ("access-log", po::bool_switch(&a.access_log),
       "one line per request on stderr (target, status, hit/miss/shared/pass)")  //
      ("address-file", po::value(&a.address_file)->value_name("FILE"),
       "write the bound ADDR:PORT to FILE once listening (for scripts and tests)")  //
      ("wire", po::value(&a.wire)->value_name("LIST"),
       "vigild wire-protocol address(es) (tls://HOST:PORT for a vigild with --tls-cert), in the order of --upstream: HLS VOD segments are then cut from shared "
       "upstream playbacks (one per camera and position, however many viewers), not fetched over HTTP one by one")  //
      ("playback-rate", po::value(&a.playback_rate)->value_name("R")->default_value(a.playback_rate),
       "speed at which a shared playback fills its buffer")  //
      ("read-ahead", po::value(&a.read_ahead_s)->value_name("S")->default_value(a.read_ahead_s),
       "a shared playback pauses this far ahead of its furthest viewer")  //
      ("keep-behind", po::value(&a.keep_behind_s)->value_name("S")->default_value(a.keep_behind_s),
       "and keeps this much behind it; a viewer further behind gets keyframes only")  //
      ("playback-mb", po::value(&a.playback_mb)->value_name("N")->default_value(a.playback_mb),
       "buffer bound of one shared playback in MiB")  //
      ("max-playbacks", po::value(&a.max_playbacks)->value_name("N")->default_value(a.max_playbacks),
       "upstream playbacks open at once")  //
      ("tls-cert", po::value(&a.tls_cert)->value_name("FILE"),
       "PEM certificate chain: viewers connect over HTTPS only (TLS 1.2+)")                    //
      ("tls-key", po::value(&a.tls_key)->value_name("FILE"), "PEM private key of --tls-cert")  //
      ("upstream-ca", po::value(&a.upstream_ca)->value_name("FILE"),
       "PEM certificate(s) trusted for https:// upstreams and tls:// --wire nodes (default: VIGIL_TLS_CA, else "
       "the system's)");
  return o;
}

std::chrono::milliseconds to_ms(double s) { return std::chrono::milliseconds(static_cast<long long>(s * 1000)); }

asio::ip::tcp::endpoint parse_listen(const std::string& s) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument("--listen wants ADDR:PORT, got '" + s + "'");
  std::string host = s.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const int port = std::stoi(s.substr(colon + 1));
  if (port < 0 || port > 65535) throw std::invalid_argument("--listen port out of range");
  return {asio::ip::make_address(host.empty() ? "0.0.0.0" : host), static_cast<unsigned short>(port)};
}

// The proxy's and the hub's settings from A; throws std::invalid_argument naming the option.
void proxy_settings(const ProxyArgs& a, ProxyOptions& options, HubOptions& hub_options) {
  if (a.upstream.empty()) throw std::invalid_argument("--upstream HOST:PORT is required");
  options.upstreams = parse_upstreams(a.upstream);
  if (a.cache_mb < 0 || a.playback_mb < 1 || a.max_playbacks < 1) {
    throw std::invalid_argument("--cache-mb must not be negative; --playback-mb and --max-playbacks at least 1");
  }
  options.cache_bytes = static_cast<std::size_t>(a.cache_mb) << 20;
  options.upstream_timeout = to_ms(a.upstream_timeout_s);
  options.auth_ttl = to_ms(a.auth_ttl_s);
  if (options.upstream_timeout.count() <= 0) throw std::invalid_argument("--upstream-timeout must be positive");
  if (!a.wire.empty()) {
    hub_options.nodes = parse_upstreams(a.wire);
    if (hub_options.nodes.size() != options.upstreams.size()) {
      throw std::invalid_argument("--wire needs one address per --upstream, in the same order");
    }
  }
  auto& l = hub_options.limits;
  l.rate = a.playback_rate;
  l.read_ahead_us = static_cast<std::int64_t>(a.read_ahead_s * 1e6);
  l.keep_behind_us = static_cast<std::int64_t>(a.keep_behind_s * 1e6);
  l.max_bytes = static_cast<std::size_t>(a.playback_mb) << 20;
  hub_options.max_playbacks = static_cast<std::size_t>(a.max_playbacks);
  if (!(l.rate > 0 && l.rate <= 64)) throw std::invalid_argument("--playback-rate must be in (0, 64]");
  if (l.read_ahead_us < 0 || l.keep_behind_us < 0)
    throw std::invalid_argument("--read-ahead and --keep-behind must not be negative");
  hub_options.timeout = options.upstream_timeout;
  l.open_timeout = options.upstream_timeout;
  if (a.tls_cert.empty() != a.tls_key.empty()) throw std::invalid_argument("--tls-cert and --tls-key go together");
  // One client context for every TLS node, HTTP and wire alike.
  bool any_tls = false;
  for (const auto* nodes : {&options.upstreams, &hub_options.nodes})
    for (const auto& n : *nodes) any_tls = any_tls || n.tls;
  if (!a.upstream_ca.empty() && !any_tls) {
    throw std::invalid_argument("--upstream-ca needs an https:// --upstream or a tls:// --wire node");
  }
  if (any_tls) {
    auto ctx = make_client_tls_context(a.upstream_ca);  // throws naming an unreadable file
    for (auto* nodes : {&options.upstreams, &hub_options.nodes})
      for (auto& n : *nodes)
        if (n.tls) n.tls_context = ctx;
  }
}

// Adds the live nodes the catalog lists (LEARNED) that OPTIONS does not name yet: their HTTP
// addresses after the given upstreams, and with --wire their wire addresses in the same order (a
// node that advertises none is left out then, so the two lists stay paired).
void add_learned_nodes(const std::vector<LearnedNode>& learned, ProxyOptions& options, HubOptions& hub_options) {
  for (const auto& n : learned) {
    const bool known = std::any_of(options.upstreams.begin(), options.upstreams.end(),
                                   [&](const UpstreamNode& u) { return u.name() == n.http.name(); });
    if (known) continue;
    if (!hub_options.nodes.empty()) {
      if (n.wire.empty()) continue;
      auto wire = parse_upstreams(n.wire).front();
      if (wire.tls) {
        // Trusted as the given tls:// nodes are (--upstream-ca); none given: not reached.
        const auto given = std::find_if(hub_options.nodes.begin(), hub_options.nodes.end(),
                                        [](const UpstreamNode& u) { return u.tls_context != nullptr; });
        if (given == hub_options.nodes.end()) continue;
        wire.tls_context = given->tls_context;
      }
      hub_options.nodes.push_back(std::move(wire));
    }
    options.upstreams.push_back(n.http);
    std::cerr << "vigil proxy: node " << n.name << " learned from the catalog: " << n.http.name()
              << (hub_options.nodes.empty() ? std::string() : ", wire " + n.wire) << "\n";
  }
}

}  // namespace

int proxy_main(const std::vector<std::string>& args, const std::string& token) {
  ProxyArgs a;
  if (auto rc = parse_command_line(args, proxy_options(a), kHelp)) return *rc;
  ProxyOptions options;
  HubOptions hub_options;
  try {
    proxy_settings(a, options, hub_options);
  } catch (const std::exception& e) {
    return usage_error(kHelp, e.what());
  }
  if (a.nodes) {
    try {
      add_learned_nodes(learn_nodes(options.upstreams, token, options.upstream_timeout), options, hub_options);
    } catch (const std::exception& e) {
      std::cerr << "vigil proxy: " << e.what() << "\n";
      return exit_code::kFailed;
    }
  }
  const std::string &listen = a.listen, &upstream = a.upstream, &address_file = a.address_file, &wire = a.wire;
  const bool access_log = a.access_log;
  std::shared_ptr<asio::ssl::context> tls;
  if (!a.tls_cert.empty()) {
    try {
      tls = make_server_tls_context(a.tls_cert, a.tls_key, "--tls");
    } catch (const std::exception& e) {
      std::cerr << "vigil proxy: " << e.what() << "\n";
      return exit_code::kFailed;
    }
  }

  // METRICS and CORE outlive the io_context: the coroutine frames it destroys last (viewer
  // sessions, fetches) still refer to them.
  ProxyMetrics metrics;
  ProxyCore core(options, metrics);
  {
    asio::io_context io(1);
    std::unique_ptr<ProxyServer> server;
    try {
      server = std::make_unique<ProxyServer>(io, parse_listen(listen), core, std::chrono::seconds(15), access_log, tls);
    } catch (const std::exception& e) {
      std::cerr << "vigil proxy: cannot listen on " << listen << ": " << e.what() << "\n";
      return exit_code::kFailed;
    }
    // Shared upstream playbacks (--wire). Destroyed before the io_context, after shutdown() closed them.
    std::unique_ptr<PlaybackHub> hub;
    if (!hub_options.nodes.empty()) {
      hub = std::make_unique<PlaybackHub>(io.get_executor(), hub_options, metrics);
      core.use_hub(hub.get());
      hub->start();
    }
    const auto ep = server->local_endpoint();
    const std::string bound = ep.address().to_string() + ":" + std::to_string(ep.port());
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      std::cerr << "vigil proxy: " << (sig == SIGINT ? "SIGINT" : "SIGTERM") << ", stopping\n";
      server->stop();
      if (hub) hub->shutdown();  // the upstream playbacks end: vigild releases their disk time
      io.stop();                 // open viewer connections close as their sessions are destroyed with the io_context
    });
    server->start();
    if (!address_file.empty()) {
      const std::string tmp = address_file + ".tmp";
      std::ofstream(tmp) << bound << "\n";
      std::rename(tmp.c_str(), address_file.c_str());
    }
    std::cerr << "vigil proxy: listening on " << (tls ? "https://" : "") << bound << ", upstream " << upstream
              << ", cache " << (options.cache_bytes >> 20) << " MiB"
              << (wire.empty() ? std::string() : ", HLS VOD from shared playbacks over the wire protocol at " + wire)
              << "\n";
    io.run();
    core.drop_flights();
    core.use_hub(nullptr);
  }
  std::cerr << "vigil proxy: stopped (" << metrics.requests << " requests, " << metrics.bytes_served
            << " bytes served)\n";
  return exit_code::kOk;
}

}  // namespace vigil::client
