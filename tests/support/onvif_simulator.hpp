#pragma once
// An ONVIF camera on loopback for the discovery tests: a UDP socket answering a WS-Discovery
// Probe with a ProbeMatch that points at its HTTP port, and an HTTP server answering
// GetCapabilities, GetProfiles (two profiles: 1920x1080 H264 "main", 640x360 H264 "sub") and
// GetStreamUri (rtsp://127.0.0.1:RTSP_PORT/main and /sub). With a user configured it checks each
// request's WS-Security PasswordDigest and answers a NotAuthorized fault when it is wrong.
// Behaviours for the failure tests: `silent` (HTTP requests read and never answered), `malformed`
// (GetProfiles answered with broken XML).
// Thread: its own (one for UDP and accepting, one per HTTP connection); the destructor stops all.
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace vigil::test {

struct OnvifSimulatorOptions {
  std::string name = "Front Door";  // its scope onvif://www.onvif.org/name/ (percent-encoded)
  std::string hardware = "SIM-1080";
  std::string user;  // empty: no authentication
  std::string password;
  std::uint16_t rtsp_port = 8554;  // in the stream URIs
  // More devices in its ProbeMatches, one per HTTP port (other simulators): several cameras
  // answering one unicast probe, as a multicast one gets.
  std::vector<std::uint16_t> also_announce;
  bool silent = false;
  bool malformed = false;
};

class OnvifSimulator {
 public:
  explicit OnvifSimulator(OnvifSimulatorOptions options = {});
  ~OnvifSimulator();
  OnvifSimulator(const OnvifSimulator&) = delete;
  OnvifSimulator& operator=(const OnvifSimulator&) = delete;

  std::uint16_t udp_port() const { return udp_port_; }
  std::uint16_t http_port() const { return http_port_; }
  std::string probe_address() const { return "127.0.0.1:" + std::to_string(udp_port_); }
  int requests() const { return requests_.load(); }

 private:
  void receive_probe();
  void accept();
  void serve(boost::asio::ip::tcp::socket socket);
  std::string answer(const std::string& request, int& status);

  OnvifSimulatorOptions options_;
  boost::asio::io_context io_;
  boost::asio::ip::udp::socket udp_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t udp_port_ = 0;
  std::uint16_t http_port_ = 0;
  std::vector<char> datagram_;
  boost::asio::ip::udp::endpoint from_;
  std::atomic<int> requests_{0};
  std::mutex mutex_;
  std::condition_variable stopped_cv_;
  bool stopped_ = false;
  std::vector<std::thread> connections_;
  std::thread io_thread_;
};

}  // namespace vigil::test
