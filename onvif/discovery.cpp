#include "onvif/discovery.hpp"

#include <poll.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/multicast.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json.hpp>
#include <atomic>
#include <set>
#include <thread>

namespace vigil::onvif {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using asio::ip::udp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kMulticastGroup = "239.255.255.250";
constexpr unsigned short kDiscoveryPort = 3702;

std::pair<std::string, std::string> split_host_port(const std::string& address, const std::string& default_port) {
  if (address.starts_with('[')) {
    const auto close = address.find(']');
    if (close == std::string::npos) throw OnvifError("bad address '" + address + "'");
    const auto rest = address.substr(close + 1);
    return {address.substr(1, close - 1), rest.starts_with(':') ? rest.substr(1) : default_port};
  }
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return {address, default_port};
  return {address.substr(0, colon), address.substr(colon + 1)};
}

struct HttpUrl {
  std::string host, port, target;
};

HttpUrl parse_http_url(const std::string& url) {
  constexpr std::string_view kHttp = "http://";
  if (!url.starts_with(kHttp)) throw OnvifError("not an http:// service address: " + without_credentials(url));
  const auto rest = url.substr(kHttp.size());
  const auto slash = rest.find('/');
  auto authority = rest.substr(0, slash);
  if (const auto at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  auto [host, port] = split_host_port(authority, "80");
  if (host.empty()) throw OnvifError("no host in " + without_credentials(url));
  return {host, port, slash == std::string::npos ? "/" : rest.substr(slash)};
}

std::chrono::milliseconds left(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

void read_profiles(Device& d, const std::string& device_url, const Credentials& credentials,
                   Clock::time_point deadline);

}  // namespace

std::vector<ProbeMatch> probe(const DiscoveryOptions& options) {
  asio::io_context io;
  udp::endpoint to;
  try {
    if (options.probe_address.empty()) {
      to = udp::endpoint(asio::ip::make_address(kMulticastGroup), kDiscoveryPort);
    } else {
      const auto [host, port] = split_host_port(options.probe_address, std::to_string(kDiscoveryPort));
      udp::resolver resolver(io);
      to = *resolver.resolve(udp::v4(), host, port).begin();
    }
  } catch (const boost::system::system_error& e) {
    throw OnvifError("bad probe address '" + options.probe_address + "': " + e.code().message());
  }
  udp::socket socket(io, to.protocol());
  socket.bind(udp::endpoint(to.protocol(), 0));
  if (to.address().is_multicast()) {
    // One hop: WS-Discovery is for the cameras' own segment (docs/onvif.md).
    socket.set_option(asio::ip::multicast::hops(1));
  }
  const auto message_id = new_message_id();
  const auto message = probe_message(message_id);
  boost::system::error_code ec;
  socket.send_to(asio::buffer(message), to, 0, ec);
  if (ec) throw OnvifError("cannot send the probe to " + to.address().to_string() + ": " + ec.message());

  std::vector<ProbeMatch> out;
  std::set<std::string> seen;
  std::vector<char> datagram(65536);
  const auto deadline = Clock::now() + options.timeout;
  while (Clock::now() < deadline && out.size() < kMaxProbeMatches) {
    pollfd p{socket.native_handle(), POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left(deadline).count()));
    if (ready <= 0) continue;  // the deadline (or EINTR): the loop's condition decides
    udp::endpoint from;
    const auto n = socket.receive_from(asio::buffer(datagram), from, 0, ec);
    if (ec) continue;  // e.g. ICMP unreachable from a unicast probe: wait out the timeout
    std::vector<ProbeMatch> matches;
    try {
      matches = parse_probe_matches(std::string_view(datagram.data(), n));
    } catch (const OnvifError&) {
      continue;  // not a ProbeMatches (another host's traffic, a broken device): not ours
    }
    for (auto& m : matches) {
      // An answer to another probe on the group is not ours to list.
      if (!m.relates_to.empty() && m.relates_to != message_id) continue;
      const auto key = m.endpoint.empty() ? m.xaddrs.front() : m.endpoint;
      if (!seen.insert(key).second) continue;
      out.push_back(std::move(m));
      if (out.size() == kMaxProbeMatches) break;
    }
  }
  return out;
}

std::string soap_post(const std::string& url, const std::string& body, std::chrono::milliseconds timeout) {
  const auto u = parse_http_url(url);
  asio::io_context io;
  beast::tcp_stream stream(io);
  const auto where = without_credentials(url);
  // Asynchronous operations run to completion here: tcp_stream's timeout applies only to them.
  http::request<http::string_body> req{http::verb::post, u.target, 11};
  req.set(http::field::host, u.host + ":" + u.port);
  req.set(http::field::content_type, "application/soap+xml; charset=utf-8");
  req.set(http::field::connection, "close");
  req.body() = body;
  req.prepare_payload();
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxReplyBytes);
  boost::system::error_code failure;
  asio::ip::tcp::resolver resolver(io);
  resolver.async_resolve(u.host, u.port, [&](boost::system::error_code ec, asio::ip::tcp::resolver::results_type r) {
    if (ec) return void(failure = ec);
    stream.expires_after(timeout);
    stream.async_connect(r, [&](boost::system::error_code ec, const asio::ip::tcp::endpoint&) {
      if (ec) return void(failure = ec);
      http::async_write(stream, req, [&](boost::system::error_code ec, std::size_t) {
        if (ec) return void(failure = ec);
        http::async_read(stream, buffer, parser, [&](boost::system::error_code ec, std::size_t) { failure = ec; });
      });
    });
  });
  io.run();
  if (failure == beast::error::timeout) {
    throw DeviceTimeout(where + " did not answer within " + std::to_string(timeout.count()) + " ms");
  }
  if (failure == http::error::body_limit) {
    throw OnvifError(where + " answered more than " + std::to_string(kMaxReplyBytes) + " bytes");
  }
  if (failure) throw OnvifError(where + ": " + failure.message());
  auto res = parser.release();
  // Faults come with 400 or 500; the body says which. Anything else without XML is an HTTP error.
  if (res.result_int() != 200 && res.body().find("Fault") == std::string::npos) {
    throw OnvifError(where + " answered HTTP " + std::to_string(res.result_int()) +
                     (res.result_int() == 401 ? " (HTTP authentication, not supported: docs/onvif.md)" : ""));
  }
  return std::move(res.body());
}

void choose_streams(Device& device) {
  const Profile* most = nullptr;
  const Profile* fewest = nullptr;
  for (const auto& p : device.profiles) {
    if (p.uri.empty()) continue;
    const auto pixels = static_cast<std::int64_t>(p.width) * p.height;
    if (most == nullptr || pixels > static_cast<std::int64_t>(most->width) * most->height) most = &p;
    if (fewest == nullptr || pixels < static_cast<std::int64_t>(fewest->width) * fewest->height) fewest = &p;
  }
  device.main_uri = most == nullptr ? "" : most->uri;
  device.substream_uri = fewest == nullptr || fewest == most ? "" : fewest->uri;
}

Device read_device(const ProbeMatch& match, const Credentials& credentials, std::chrono::milliseconds timeout) {
  Device d;
  d.match = match;
  const auto deadline = Clock::now() + timeout;
  std::string device_url;
  for (const auto& x : match.xaddrs) {
    if (x.starts_with("http://")) {
      device_url = x;
      break;
    }
  }
  if (device_url.empty()) throw OnvifError("the device lists no http:// service address");
  d.address = parse_http_url(device_url).host;
  try {
    read_profiles(d, device_url, credentials, deadline);
  } catch (const DeviceTimeout&) {
    // Said with the whole device's bound: what --device-timeout sets.
    throw DeviceTimeout(device_url + " did not answer within " + std::to_string(timeout.count()) + " ms");
  }
  choose_streams(d);
  return d;
}

namespace {
void read_profiles(Device& d, const std::string& device_url, const Credentials& credentials,
                   Clock::time_point deadline) {
  const auto media_url = parse_media_url(soap_post(device_url, get_capabilities_request(credentials), left(deadline)));
  d.profiles = parse_profiles(soap_post(media_url, get_profiles_request(credentials), left(deadline)));
  for (auto& p : d.profiles) {
    p.uri = parse_stream_uri(soap_post(media_url, get_stream_uri_request(credentials, p.token), left(deadline)));
    if (Clock::now() >= deadline) throw DeviceTimeout("the device took too long");
  }
}
}  // namespace

std::vector<Device> discover(const DiscoveryOptions& options) {
  const auto matches = probe(options);
  std::vector<Device> out(matches.size());
  // Devices are read kParallelDevices at a time: 200 cameras, a few of them silent, take seconds,
  // not 200 device timeouts one after another.
  std::atomic<std::size_t> next{0};
  auto read_some = [&] {
    for (std::size_t i = next++; i < matches.size(); i = next++) {
      try {
        out[i] = read_device(matches[i], options.credentials, options.device_timeout);
      } catch (const std::exception& e) {
        Device d;
        d.match = matches[i];
        try {
          d.address = parse_http_url(matches[i].xaddrs.front()).host;
        } catch (const OnvifError&) {}
        d.error = e.what();
        out[i] = std::move(d);
      }
    }
  };
  std::vector<std::thread> readers;
  for (std::size_t t = 0; t < std::min(kParallelDevices, matches.size()); ++t) readers.emplace_back(read_some);
  for (auto& r : readers) r.join();
  return out;
}

boost::json::value devices_json(const std::vector<Device>& devices) {
  namespace json = boost::json;
  json::array list;
  for (const auto& d : devices) {
    json::array profiles;
    for (const auto& p : d.profiles) {
      profiles.push_back(json::object{{"token", p.token},
                                      {"name", p.name},
                                      {"encoding", p.encoding},
                                      {"width", p.width},
                                      {"height", p.height},
                                      {"frame_rate", p.frame_rate},
                                      {"bitrate_kbps", p.bitrate_kbps},
                                      {"uri", without_credentials(p.uri)}});
    }
    json::array xaddrs;
    for (const auto& x : d.match.xaddrs) xaddrs.push_back(json::value(without_credentials(x)));
    json::object o{{"name", d.match.name},
                   {"hardware", d.match.hardware},
                   {"address", d.address},
                   {"endpoint", d.match.endpoint},
                   {"xaddrs", std::move(xaddrs)},
                   {"main_url", without_credentials(d.main_uri)},
                   {"substream_url", without_credentials(d.substream_uri)},
                   {"profiles", std::move(profiles)}};
    if (!d.error.empty()) o["error"] = d.error;
    list.push_back(std::move(o));
  }
  return json::object{{"devices", std::move(list)}};
}

}  // namespace vigil::onvif
