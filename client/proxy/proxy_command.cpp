#include "client/proxy/proxy_command.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <fstream>
#include <iostream>

#include "client/proxy/proxy_hub.hpp"
#include "client/proxy/proxy_server.hpp"

namespace asio = boost::asio;

namespace vigil::client {
namespace {

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2;

constexpr const char* kUsage =
    "Usage: vigil proxy --upstream HOST:PORT[,HOST:PORT...] [--listen ADDR:PORT] [--cache-mb N]\n\n"
    "The playback proxy: viewers use it exactly as they would use vigild's HTTP port (same URLs, same\n"
    "tokens: Authorization: Bearer TOKEN or ?access_token=). Viewers asking for the same HLS segment,\n"
    "init segment, export or thumbnail share one upstream fetch, and finished media is kept in an LRU\n"
    "cache, so a hundred viewers of one recording cost vigild about what one does. Every viewer's token\n"
    "is checked with vigild (verdict kept a few seconds) before cached bytes go out. vigild's refusals\n"
    "(401, 403, 404, 413, 503 ...) reach the viewer with their reason; an unreachable node is a 502,\n"
    "a node that does not answer in time a 504.\n\n"
    "  --upstream LIST       vigild HTTP address(es), HOST:PORT, comma-separated: tried in order, and the\n"
    "                        node that answered for a camera is asked first next time\n"
    "  --listen ADDR:PORT    where viewers connect (default 127.0.0.1:8090; port 0: any free port)\n"
    "  --cache-mb N          media cache budget in MiB (default 256; 0: share fetches, keep nothing)\n"
    "  --upstream-timeout S  longest wait for a node's whole answer (default 30) before a 504\n"
    "  --auth-ttl S          how long a token's verdict is kept (default 5)\n"
    "  --access-log          one line per request on stderr (target, status, hit/miss/shared/pass)\n"
    "  --address-file FILE   write the bound ADDR:PORT to FILE once listening (for scripts and tests)\n"
    "  --wire LIST           vigild wire-protocol address(es), in the order of --upstream: HLS VOD segments\n"
    "                        are then cut from shared upstream playbacks (one per camera and position,\n"
    "                        however many viewers), not fetched over HTTP one by one\n"
    "  --playback-rate R     speed at which a shared playback fills its buffer (default 4)\n"
    "  --read-ahead S        a shared playback pauses this far ahead of its furthest viewer (default 30)\n"
    "  --keep-behind S       and keeps this much behind it; a viewer further behind gets keyframes only\n"
    "                        (default 30)\n"
    "  --playback-mb N       buffer bound of one shared playback in MiB (default 32)\n"
    "  --max-playbacks N     upstream playbacks open at once (default 32)\n\n"
    "Open: GET /healthz, GET /metrics (Prometheus text: vigil_proxy_upstream_requests_total{kind},\n"
    "cache hits/misses, coalesced waits, viewers connected, bytes served).\n"
    "Stops cleanly on SIGINT/SIGTERM. Exit: 0 stopped by a signal, 1 failed, 2 usage error.\n";

asio::ip::tcp::endpoint parse_listen(const std::string& s) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument("--listen wants ADDR:PORT, got '" + s + "'");
  std::string host = s.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const int port = std::stoi(s.substr(colon + 1));
  if (port < 0 || port > 65535) throw std::invalid_argument("--listen port out of range");
  return {asio::ip::make_address(host.empty() ? "0.0.0.0" : host), static_cast<unsigned short>(port)};
}

}  // namespace

int proxy_main(const std::vector<std::string>& args) {
  ProxyOptions options;
  std::string listen = "127.0.0.1:8090", upstream, address_file, wire;
  HubOptions hub_options;
  bool access_log = false;
  try {
    for (std::size_t i = 0; i < args.size(); ++i) {
      const auto& a = args[i];
      if (a == "-h" || a == "--help") {
        std::cout << kUsage;
        return kExitOk;
      }
      if (a == "--access-log") {
        access_log = true;
        continue;
      }
      if (i + 1 >= args.size()) {
        std::cerr << "vigil proxy: unknown option or missing value: '" << a << "'\n" << kUsage;
        return kExitUsage;
      }
      const std::string& v = args[++i];
      if (a == "--upstream") upstream = v;
      else if (a == "--listen") listen = v;
      else if (a == "--cache-mb") options.cache_bytes = static_cast<std::size_t>(std::stoull(v)) << 20;
      else if (a == "--upstream-timeout") options.upstream_timeout = std::chrono::milliseconds(static_cast<long long>(std::stod(v) * 1000));
      else if (a == "--auth-ttl") options.auth_ttl = std::chrono::milliseconds(static_cast<long long>(std::stod(v) * 1000));
      else if (a == "--address-file") address_file = v;
      else if (a == "--wire") wire = v;
      else if (a == "--playback-rate") hub_options.limits.rate = std::stod(v);
      else if (a == "--read-ahead") hub_options.limits.read_ahead_us = static_cast<std::int64_t>(std::stod(v) * 1e6);
      else if (a == "--keep-behind") hub_options.limits.keep_behind_us = static_cast<std::int64_t>(std::stod(v) * 1e6);
      else if (a == "--playback-mb") hub_options.limits.max_bytes = static_cast<std::size_t>(std::stoull(v)) << 20;
      else if (a == "--max-playbacks") hub_options.max_playbacks = static_cast<std::size_t>(std::stoull(v));
      else {
        std::cerr << "vigil proxy: unknown option '" << a << "'\n" << kUsage;
        return kExitUsage;
      }
    }
    if (upstream.empty()) {
      std::cerr << "vigil proxy: --upstream HOST:PORT is required\n" << kUsage;
      return kExitUsage;
    }
    options.upstreams = parse_upstreams(upstream);
    if (options.upstream_timeout.count() <= 0) throw std::invalid_argument("--upstream-timeout must be positive");
    if (!wire.empty()) {
      hub_options.nodes = parse_upstreams(wire);
      if (hub_options.nodes.size() != options.upstreams.size()) {
        throw std::invalid_argument("--wire needs one address per --upstream, in the same order");
      }
    }
    const auto& l = hub_options.limits;
    if (!(l.rate > 0 && l.rate <= 64)) throw std::invalid_argument("--playback-rate must be in (0, 64]");
    if (l.read_ahead_us < 0 || l.keep_behind_us < 0) throw std::invalid_argument("--read-ahead and --keep-behind must not be negative");
    if (hub_options.max_playbacks == 0) throw std::invalid_argument("--max-playbacks must be at least 1");
    hub_options.timeout = options.upstream_timeout;
    hub_options.limits.open_timeout = options.upstream_timeout;
  } catch (const std::exception& e) {
    std::cerr << "vigil proxy: " << e.what() << "\n";
    return kExitUsage;
  }

  // METRICS and CORE outlive the io_context: the coroutine frames it destroys last (viewer
  // sessions, fetches) still refer to them.
  ProxyMetrics metrics;
  ProxyCore core(options, metrics);
  {
    asio::io_context io(1);
    std::unique_ptr<ProxyServer> server;
    try {
      server = std::make_unique<ProxyServer>(io, parse_listen(listen), core, std::chrono::seconds(15), access_log);
    } catch (const std::exception& e) {
      std::cerr << "vigil proxy: cannot listen on " << listen << ": " << e.what() << "\n";
      return kExitFailure;
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
      io.stop();  // open viewer connections close as their sessions are destroyed with the io_context
    });
    server->start();
    if (!address_file.empty()) {
      const std::string tmp = address_file + ".tmp";
      std::ofstream(tmp) << bound << "\n";
      std::rename(tmp.c_str(), address_file.c_str());
    }
    std::cerr << "vigil proxy: listening on " << bound << ", upstream " << upstream << ", cache "
              << (options.cache_bytes >> 20) << " MiB"
              << (wire.empty() ? std::string() : ", HLS VOD from shared playbacks over the wire protocol at " + wire)
              << "\n";
    io.run();
    core.drop_flights();
    core.use_hub(nullptr);
  }
  std::cerr << "vigil proxy: stopped (" << metrics.requests << " requests, " << metrics.bytes_served
            << " bytes served)\n";
  return kExitOk;
}

}  // namespace vigil::client
